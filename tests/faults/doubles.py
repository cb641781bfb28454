"""Test doubles shared by the hostile-input tests."""

import numpy as np
import scipy.sparse as sp


class ItemMean:
    """Predicts every rating by its item's mean: a tiny deterministic recommender that costs nothing (the
    rmse_cost docstring's)."""

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X):
        X = sp.csr_matrix(X)
        self.mean_ = np.asarray(X.sum(axis=0)).ravel() / np.maximum(X.getnnz(axis=0), 1)
        return self

    def rmse(self, X, y):
        y = sp.coo_matrix(y)
        return float(np.sqrt(np.mean((y.data - self.mean_[y.col]) ** 2)))
