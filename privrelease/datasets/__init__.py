"""Data sets: the shipped UCI Adult file, synthetic rating generators, MovieLens readers."""

from ._adult import ADULT_COLUMNS, load_adult

__all__ = ["ADULT_COLUMNS", "load_adult"]
