"""Shared by the two Politics-and-TV experiments: the quantized privacy-distortion curve (Fig. 10, 11)."""

import numpy as np


def quantized_curve(X, a, n_clusters, n_deltas, seed, **mapper_params):
    """Fit the quantizer with no privacy constraint, then sweep delta up to perfect privacy.

    Returns ``(mapper, curve, perfect_privacy_delta)``; the grid starts at the
    smallest feasible distortion (the quantization distortion) and ends just
    past the perfect-privacy point found by the engine's linear program.
    """
    from ...mappers import QuantizedPrivacyMapper
    from ...mapping import privacy_distortion_curve

    m = QuantizedPrivacyMapper(n_clusters=n_clusters, release="representative", smoothing=0.0,
                               max_leakage=50.0, random_state=seed, **mapper_params).fit(X, a)
    probe = privacy_distortion_curve(m.prior_, m.cost_matrix_, [np.inf])
    hi = float(probe.attrs["perfect_privacy_delta"])
    deltas = np.unique(np.r_[np.linspace(m.smallest_delta_, hi, n_deltas), hi * 1.0001])
    return m, privacy_distortion_curve(m.prior_, m.cost_matrix_, deltas), hi


def plot_curve(m, curve, xlabel):
    """Leakage against expected distortion, with the quantization distortion marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(curve["distortion"], curve["leakage_bits"], marker="o", ms=3)
    ax.axvline(m.quantization_distortion_, ls=":", c="0.5", label="quantization alone")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("leakage I(A; released) [bits]")
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


def fitted_clusters(requested, fitted):
    """How many clusters a report shows: the fitted mapper's ``n_clusters_`` (``fitted``), with the
    ``requested`` value (a count or a rule such as ``"auto"``) when the mapper used another number: it caps
    the count at the users it is fitted on, ``class_bins`` splits clusters into finer cells, empty ones are
    dropped (a heading said "k=1218" while 609 clusters were used)."""
    fitted = int(fitted)
    if isinstance(requested, str):
        return f"{fitted} clusters (n_clusters={requested!r})"
    if fitted != requested:
        return (f"{fitted} fitted clusters, not the {requested} requested (n_clusters is capped at the users "
                "the mapper is fitted on; class_bins splits clusters into finer cells; empty ones are dropped)")
    return f"{fitted} clusters"
