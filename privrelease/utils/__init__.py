"""Shared helpers: validation and sources of randomness."""

from ._random import (
    RandomSource,
    SecureRandomSource,
    SeededRandomSource,
    check_random_source,
)
from ._validation import (
    check_number,
    check_private_labels,
    check_rating_matrix,
    check_rating_scale,
    restore_sparse_format,
    undisclosed_mask,
    UNDISCLOSED_MARKERS,
    UNDISCLOSED_TEXTS,
)

__all__ = [
    "RandomSource",
    "SecureRandomSource",
    "SeededRandomSource",
    "check_random_source",
    "check_number",
    "check_private_labels",
    "check_rating_matrix",
    "check_rating_scale",
    "restore_sparse_format",
    "undisclosed_mask",
    "UNDISCLOSED_MARKERS",
    "UNDISCLOSED_TEXTS",
]
