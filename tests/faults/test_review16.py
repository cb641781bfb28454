"""Findings of the review of the sixteenth audit's fixes (lead)."""

import warnings

import numpy as np

from privrelease import QuantizedPrivacyMapper, load
from privrelease.utils._validation import check_private_labels


def test_heldout_class_removal_in_a_one_dimensional_space_saves_and_loads(tmp_path):
    # no direction may be removed from a 1-D clustering space: the held-out rule chose a share of 1.0 while the
    # projection kept 0, and the saved state contradicted itself ("the held-out figures choose 1.0"): save refused
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 300)
    X = np.clip(np.round(1 + y + rng.normal(0, 1, 300)), 1, 5)[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = QuantizedPrivacyMapper(space="raw", clustering="attribute_free", class_removal="heldout", n_clusters=3,
                                   random_state=0).fit(X, y)
    assert m.class_removal_ == 0.0 and m.attribute_directions_.shape[0] == 0
    m.save(tmp_path / "m.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an integer random_state: the loaded mapper replays the same draws
        loaded = load(tmp_path / "m.npz")
    assert np.array_equal(loaded.transform(X), m.transform(X))


def test_the_text_numpy_writes_for_a_missing_label_is_not_warned_as_a_class():
    # np.array([..., np.nan], dtype=str) holds 'nan': undisclosed, as documented, and never a class's name
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        check_private_labels(np.array(["F", "M", np.nan, "F"], dtype=str), 4)
