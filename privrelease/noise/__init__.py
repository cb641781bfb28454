"""Noise samplers for privacy paths: secure by default, floating-point safe.

Plain classes, no scikit-learn: see :class:`Laplace` and :class:`VectorLaplace`.
"""

from ._laplace import Laplace, VectorLaplace, laplace_noise

__all__ = ["Laplace", "VectorLaplace", "laplace_noise"]
