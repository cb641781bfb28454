"""Data sets: the shipped UCI Adult file, synthetic rating generators, MovieLens readers (100k, 1M)."""

from ._adult import ADULT_COLUMNS, load_adult
from ._movielens import (
    ML1M_AGE_CODES,
    load_movielens_100k,
    load_movielens_1m,
    load_ratings_csv,
    movielens_100k_search_paths,
    movielens_1m_search_paths,
)
from ._synthetic import (
    POLITICS_TV_GENRES,
    REALISTIC_ATTRIBUTES,
    REALISTIC_ENTANGLED,
    make_politics_tv,
    make_ratings,
    make_realistic_ratings,
)

__all__ = [
    "ADULT_COLUMNS",
    "ML1M_AGE_CODES",
    "POLITICS_TV_GENRES",
    "REALISTIC_ATTRIBUTES",
    "REALISTIC_ENTANGLED",
    "load_adult",
    "load_movielens_100k",
    "load_movielens_1m",
    "load_ratings_csv",
    "make_politics_tv",
    "make_ratings",
    "make_realistic_ratings",
    "movielens_100k_search_paths",
    "movielens_1m_search_paths",
]
