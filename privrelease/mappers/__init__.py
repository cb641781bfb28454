"""scikit-learn transformers that release data through privacy-preserving mappings.

* :class:`QuantizedPrivacyMapper` -- rating matrices, quantized mapping
  (Salamatian et al., Algorithm 2), releases designed for recommenders.
* :class:`ErasureMapper` -- categorical features, erasure-only mapping (Sec. VI-A).
"""

from ._erasure import ErasureMapper
from ._quantized import QuantizedPrivacyMapper

__all__ = ["ErasureMapper", "QuantizedPrivacyMapper"]
