"""Privacy accounting: who spent how much differential privacy, against which budget.

* :class:`PrivacyAccountant`: sequential composition of epsilon-DP releases with a
  total budget that refuses a release past it, and per-individual ledgers for
  personalised guarantees (a DCLEF's ``eps_i``, with the payments made);
* :func:`get_default_accountant` / :func:`set_default_accountant`: the accountant
  used when none is passed (``with PrivacyAccountant(epsilon=1.0): ...`` sets it
  for a block);
* :func:`check_accountant`: ``None`` -> the default, else a validated accountant.

Mechanisms keep no spending state of their own: an estimator's ``predict`` is
pure with respect to the estimator, and the privacy it spends is written on the
accountant.
"""

from ._accountant import (
    PrivacyAccountant,
    check_accountant,
    get_default_accountant,
    set_default_accountant,
)

__all__ = [
    "PrivacyAccountant",
    "check_accountant",
    "get_default_accountant",
    "set_default_accountant",
]
