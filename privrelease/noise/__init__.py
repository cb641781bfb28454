"""Noise samplers for privacy paths: secure by default, floating-point safe.

Plain classes, no scikit-learn: see :class:`Laplace` and :class:`VectorLaplace`
(both accept ``epsilon=np.inf``: no noise, with a ``PrivacyLeakWarning``), and
:func:`uniform_full_precision` (the uniform behind the snapping mechanism).
"""

from ._laplace import Laplace, VectorLaplace, laplace_noise, uniform_full_precision

__all__ = ["Laplace", "VectorLaplace", "laplace_noise", "uniform_full_precision"]
