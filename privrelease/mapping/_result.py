"""The result object returned by :func:`solve_mapping`."""

from dataclasses import dataclass, field

import numpy as np

__all__ = ["MappingResult"]


@dataclass(frozen=True)
class MappingResult:
    """A privacy-preserving mapping and the evidence that it is optimal.

    Attributes
    ----------
    mapping : ndarray of shape (n_public, n_outputs)
        Row-stochastic ``p(c_hat | c)``; forbidden (infinite-distortion)
        transitions are exactly 0.
    leakage : float
        Leakage in bits of ``mapping`` under the prior (mutual information or
        maximal leakage, see ``kind``), recomputed from the returned mapping.
    distortion : float
        Expected distortion of ``mapping`` under the prior.
    status : str
        ``"optimal"`` (certified to ``tol``) or ``"inaccurate"`` (only with
        ``solver="auto"``, together with a ``ConvergenceWarning``).
    certificate : dict
        ``gap_bits``: a rigorous upper bound, in bits, on ``leakage`` minus the
        optimal leakage for the budget (a Lagrangian duality gap). In
        ``max_leakage`` mode also ``distortion_gap``: a rigorous upper bound on
        ``distortion`` minus the smallest distortion reaching the target.
        Other keys describe how the bound was obtained (``multiplier`` ...).
    solver : str
        Solver actually used (``"fast"``, ``"cvxpy-CLARABEL"``, ``"cvxpy-SCS"``,
        ``"highs"``, ``"exact"`` ...).
    delta : float or None
        The distortion budget asked for (None in ``max_leakage`` mode). ``inf``
        for the least-leakage mapping with no budget: this is how the mappers
        solve their default perfect-privacy target (``max_leakage=0`` or
        neither ``delta`` nor ``max_leakage``), through
        :func:`privacy_distortion_curve` at ``[np.inf]``.
    max_leakage : float or None
        The privacy target asked for (None in ``delta`` mode, hence also None
        in a mapper's ``solver_result_`` at perfect privacy, where ``delta`` is
        ``inf``). A mapper that solves again at a tighter cap than its own
        ``max_leakage`` (see ``QuantizedPrivacyMapper``'s ``smoothing``) records that cap.
    kind : str
        ``"mutual_information"`` or ``"maximal_leakage"``.
    """

    mapping: np.ndarray
    leakage: float
    distortion: float
    status: str
    certificate: dict = field(default_factory=dict)
    solver: str = ""
    delta: float = None
    max_leakage: float = None
    kind: str = "mutual_information"

    def __repr__(self):
        gap = self.certificate.get("gap_bits", float("nan"))
        return (
            f"MappingResult(shape={self.mapping.shape}, leakage={self.leakage:.6g} bits, "
            f"distortion={self.distortion:.6g}, status={self.status!r}, gap_bits={gap:.2g}, "
            f"solver={self.solver!r})"
        )
