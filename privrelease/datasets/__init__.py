"""Data sets: the shipped UCI Adult file, synthetic rating generators, MovieLens readers."""

from ._adult import ADULT_COLUMNS, load_adult
from ._synthetic import POLITICS_TV_GENRES, make_politics_tv, make_ratings

__all__ = [
    "ADULT_COLUMNS",
    "POLITICS_TV_GENRES",
    "load_adult",
    "make_politics_tv",
    "make_ratings",
]
