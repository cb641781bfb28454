"""Privacy against recommendation quality on the Politics-and-TV preset.

Sweeps the leakage cap of the quantized privacy mapping (Salamatian et al.,
Alg. 2), and at every cap measures

* the leakage and distortion the mapper reports,
* how well a logistic-regression attacker guesses the political affiliation,
  FIXED (trained on original ratings) and ADAPTIVE (trained on released ones),
* the RMSE of an SVD recommender on held-out TRUE ratings (Table I protocol),
  with the two reference releases: everything (original) and nothing.

Prints the curve and writes ``privacy_utility.png`` (frontier and ROC).
Run: ``MPLBACKEND=Agg python examples/plot_privacy_utility.py`` (``--quick``: two
privacy targets, two folds, one process; used by the tests).
"""

import os
import sys
import warnings

os.environ.setdefault("PYTHONWARNINGS", "ignore")  # also in the joblib workers
import matplotlib.pyplot as plt  # noqa: E402

from privrelease.datasets import make_politics_tv  # noqa: E402
from privrelease.evaluation import privacy_utility_curve  # noqa: E402
from privrelease.mappers import QuantizedPrivacyMapper  # noqa: E402
from privrelease.recommender import SurpriseRecommender  # noqa: E402

warnings.simplefilter("ignore")  # solver tolerance notices of the mapper

QUICK = "--quick" in sys.argv[1:]
ratings, party, shows = make_politics_tv(random_state=0)
curve = privacy_utility_curve(
    QuantizedPrivacyMapper(n_clusters=5) if QUICK else QuantizedPrivacyMapper(),
    ratings, party,
    max_leakages=[0.0, 0.2] if QUICK else [0.0, 0.01, 0.05, 0.2],
    cv=2 if QUICK else 3,
    recommender=SurpriseRecommender(rating_scale=(1, 5), algo_params={"reg_all": 0.1}),
    attack_models=["logistic"],
    random_state=0,
    n_jobs=1 if QUICK else 2,
)
cols = ["max_leakage", "leakage_bits", "auc_fixed_logistic_values", "auc_adaptive_logistic_values",
        "rmse_released", "rmse_original", "rmse_release_nothing", "rel_increase_released"]
print(curve.frame[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))

fig, axes = plt.subplots(1, 2, figsize=(11, 4))
curve.plot_frontier(ax=axes[0])
curve.plot_roc(0.0, ax=axes[1])
fig.savefig("privacy_utility.png", dpi=100, bbox_inches="tight")
print("wrote privacy_utility.png")
