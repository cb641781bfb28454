"""Fold-in: predicting users the recommender never trained on.

A SurpriseRecommender is trained on 80 % of the users; the other 20 % are
described only by their (training) ratings at prediction time and folded in by
a closed-form ridge solve against the learned item factors. Their held-out
ratings are predicted about as well as by a model retrained with them, and far
better than by the global mean.
Run: python examples/plot_recommender_fold_in.py
"""

import numpy as np

from privrelease.datasets import make_ratings
from privrelease.recommender import SurpriseRecommender, holdout_split

X, attribute, _ = make_ratings(3000, 300, random_state=0)
X_train, X_test = holdout_split(X, 0.1, random_state=0)
new = np.arange(600)          # users kept out of training
old = np.arange(600, 3000)

rec = SurpriseRecommender("SVD", random_state=0).fit(X_train[old])
rmse_fold_in = rec.rmse(X_train[new], X_test[new])

everyone = SurpriseRecommender("SVD", random_state=0).fit(X_train)
rows = np.repeat(new, np.diff(X_test[new].indptr))
pred = everyone.predict_pairs(rows, X_test[new].indices)
rmse_retrained = np.sqrt(np.mean((pred - X_test[new].data) ** 2))

mu = X_train[old].data.mean()
rmse_global = np.sqrt(np.mean((X_test[new].data - mu) ** 2))
print(f"RMSE on new users' held-out ratings: fold-in {rmse_fold_in:.3f}, "
      f"retrained with them {rmse_retrained:.3f}, global mean {rmse_global:.3f}")
