"""DCLEFEstimator: a regressor that buys privacy for every prediction it releases."""

import math
import secrets
import threading
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..accounting import PrivacyAccountant
from ..accounting._accountant import AccountedMixin
from ..exceptions import BudgetExceededError, PrivacyLeakWarning
from ..mappers._columns import _frame_columns, check_column_labels, record_column_labels
from ..utils import check_random_source
from ..utils._validation import (check_real_target, check_same_index, check_table, format_bound, is_sparse_frame,
                                refuse_missing_target, user_stacklevel)
from ..utils._constraints import RANDOM_STATE_CONSTRAINT, NumberInterval
from ..utils._fit import atomic_fit, check_params_unchanged
from ._dclef import DCLEF, _check_vector, check_data_range
from ._mechanism import _fair_inner_product_rows, fair_inner_product
from ._predictors import knn_weights, nadaraya_watson_weights, ridge_weights

#: per thread: (estimator, accountant) of the predict running in it, for _run_query
_HELD = threading.local()

__all__ = ["DCLEFEstimator"]


def _in_memory(X):
    """A dask collection computed; anything else unchanged.

    The estimator keeps the public features in memory (``X_fit_``) and each query's weights are computed against
    all of them, so nothing is gained by staying lazy; read as an array (through ``np.asarray``), a dask DataFrame
    lost its column names: ``feature_names_in_`` was not set and a query frame with the columns in another order
    was accepted (each feature read as another), where a pandas frame, or a mapper fitted on the same dask frame,
    refuses it.
    """
    if (type(X).__module__ or "").startswith("dask") and callable(getattr(X, "compute", None)):
        return X.compute()
    return X


def _check_features(X):
    """:func:`check_table`, and a DataFrame of sparse columns refused with advice that fits a DataFrame.

    scikit-learn reads such a frame as a scipy sparse matrix and refused it with "Use '.toarray()' to convert to a
    dense numpy array", a method a DataFrame does not have (the mappers name ``X.sparse.to_dense()``).
    """
    if is_sparse_frame(X):
        raise TypeError(f"DCLEFEstimator needs dense public features, got a DataFrame of sparse columns of shape "
                        f"{X.shape}: densify it first with X.sparse.to_dense()")
    check_table(X)


#: the parameters a fitted DCLEFEstimator's queries read at predict time, recorded at fit (``guarantee_params_``):
#: those of every predictor, and the weights' own parameter of the fitted predictor (a kNN predictor reads
#: ``n_neighbors``, never ``bandwidth`` or ``alpha``); ``data_range`` and ``epsilon_cap`` are read at fit only
#: (``data_range_``, ``epsilon_cap_``: a refit refused for them keeps the fitted ones, and predict goes on under those)
_GUARANTEE_PARAMS = ("budget", "predictor", "cap_policy")
_WEIGHT_PARAM = {"knn": "n_neighbors", "nadaraya_watson": "bandwidth", "ridge": "alpha"}


def _guarantee_params(est):
    """The values of the parameters ``est``'s queries read (:data:`_GUARANTEE_PARAMS` and its predictor's own)."""
    names = _GUARANTEE_PARAMS + ((_WEIGHT_PARAM[est.predictor],) if est.predictor in _WEIGHT_PARAM else ())
    return {name: getattr(est, name) for name in names}


class DCLEFEstimator(AccountedMixin, RegressorMixin, BaseEstimator):
    """Predict a new individual's private value with a privacy auction per query.

    ``fit(Y_public, d, unit_costs=v)`` stores the public features ``Y_public`` of
    ``n`` individuals, their private values ``d`` (for example their ratings of
    one item) and their reported unit costs ``v``. Each row ``y`` passed to
    :meth:`predict` is a query: the weights ``w = w(y, Y_public)`` of the chosen
    linear predictor (Sec. 5) are computed from public data only, the auction
    :func:`~privrelease.auctions.fair_inner_product` (Algorithm 1) decides whom
    to buy and what to pay within ``budget``, and the released prediction is a
    draw of the resulting DCLEF (eq. 4)::

        s_hat = sum_i w_i d_i x_i + R_bar sum_i w_i (1 - x_i) + Lap(Delta sum_i |w_i| (1 - x_i))

    Each query gives individual ``i`` an ``eps_i``-differential-privacy guarantee
    (eq. 8), so the release is ``max_i eps_i``-DP for the data set. ``predict``
    keeps no record on the estimator: every query is checked against and written
    on a :class:`~privrelease.accounting.PrivacyAccountant` (the one passed as
    ``accountant``, else the process-wide default one), which composes the
    guarantees sequentially, per individual and for the data set, keeps the
    payments, and refuses a query past its budget.

    Parameters
    ----------
    budget : float, default=1.0
        Budget ``B`` of each query's auction (``>= 0``).
    predictor : {"knn", "nadaraya_watson", "ridge"}, default="knn"
        Linear predictor of Section 5 giving the weights.
    n_neighbors : int, default=5
        ``k`` for ``predictor="knn"`` (capped at the number of individuals).
    bandwidth : float, default=1.0
        Gaussian-kernel bandwidth for ``predictor="nadaraya_watson"``.
    alpha : float, default=1.0
        Ridge penalty ``lambda`` for ``predictor="ridge"`` (eq. 10).
    data_range : pair of float or None, default=None
        The public interval ``[R_min, R_max]`` holding every private value (for
        ratings, the rating scale). ``None`` takes the min and max of the
        training ``d`` and emits a :class:`~privrelease.exceptions.PrivacyLeakWarning`:
        bounds computed from the private data are not covered by the guarantee
        (a constant ``d = c`` gives ``[c - 0.5, c + 0.5]``).
    epsilon_cap : float, array-like of shape (n_samples,) or None, default=None
        Optional cap on each individual's composed ``eps_i`` over all queries
        recorded for this fitted population (one value for everybody, or one
        per individual). Decided exactly on the recorded guarantees: no slack, not even an ulp.
    cap_policy : {"exclude", "raise"}, default="exclude"
        What a query does when buying someone would take her over the cap.
        ``"exclude"``: she is left out of this query's auction (as if her unit
        cost were infinite; her weight still sets the noise scale) and the
        auction is rerun, until nobody bought exceeds the cap; individuals whose
        allowance is used up never take part again. ``"raise"``: raise
        :class:`~privrelease.exceptions.BudgetExceededError` before releasing the
        query (queries answered earlier in the same call stay recorded). The
        auction's choice depends on public weights and reported costs only,
        never on ``d``, so refusing or excluding reveals nothing about ``d``.
        Exclusion keeps each individual auction truthful given who takes part, but
        a participant's report can change who is excluded; the composite is not
        proved truthful.
    accountant : PrivacyAccountant or None, default=None
        Where the spending is recorded. ``None`` uses
        :func:`~privrelease.accounting.get_default_accountant` at each
        ``predict``. A query that would take the accountant past its budget
        ``epsilon`` raises :class:`~privrelease.exceptions.BudgetExceededError`
        before anything is released. Cloning the estimator shares the accountant.
    random_state : None, int, numpy Generator or RandomState, or RandomSource, default=None
        Source of the Laplace noise. ``None`` reads the operating system's
        entropy (use this in production). An integer makes the noise
        reproducible from ``fit`` on: for tests and experiments only (each
        record of the accountant says ``secure_noise=False``).

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``Y_public`` has string column names.
    feature_labels_in_ : ndarray of object
        Only when ``Y_public`` is a DataFrame whose column labels are not all strings
        (integer item ids, a MultiIndex's tuples): a query DataFrame must carry the same
        labels in the same order (columns are read by position); another one is refused.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Public features of the individuals.
    d_ : ndarray of shape (n_samples,)
        Their private values. The fitted estimator holds private data: do not
        publish or pickle it to untrusted parties.
    unit_costs_ : ndarray of shape (n_samples,)
    data_range_ : tuple of float
    epsilon_cap_ : ndarray of shape (n_samples,) or None
        The validated per-individual cap.
    population_ : str
        Name, drawn at ``fit``, under which the accountant keeps this fitted
        population's per-individual guarantees and payments (a refit starts a
        new population; the data-set-level total keeps counting).
    noise_source_ : privrelease.utils.RandomSource
        Source of the Laplace noise of the releases.
    guarantee_params_ : dict
        ``budget``, ``predictor``, ``cap_policy`` and the fitted predictor's own
        parameter (``n_neighbors``, ``bandwidth`` or ``alpha``) as fitted: :meth:`predict`
        and :meth:`auction_weights` refuse to run when ``set_params`` changed one of them
        after fit (call fit again).
        ``data_range`` and ``epsilon_cap`` hold as fitted (``data_range_``,
        ``epsilon_cap_``).

        See Also
    --------
    privrelease.auctions.fair_inner_product : the auction run for each query.
    privrelease.auctions.DCLEF : the released estimator.
    privrelease.accounting.PrivacyAccountant : where the privacy spent is recorded.

    References
    ----------
    P. Dandekar, N. Fawaz and S. Ioannidis, "Privacy Auctions for Recommender
    Systems", WINE 2012: eqs. (4)-(8), Algorithm 1, Section 5.

    Examples
    --------
    >>> import numpy as np
    >>> from privrelease.accounting import PrivacyAccountant
    >>> from privrelease.auctions import DCLEFEstimator
    >>> rng = np.random.default_rng(0)
    >>> Y = rng.normal(size=(200, 3))                      # public profiles
    >>> d = np.clip(np.round(3 + Y[:, 0]), 1, 5)           # private ratings in [1, 5]
    >>> est = DCLEFEstimator(budget=5.0, predictor="knn", n_neighbors=20,
    ...                      data_range=(1, 5), random_state=0)
    >>> est = est.fit(Y, d, unit_costs=rng.exponential(size=200))
    >>> with PrivacyAccountant() as acc:        # record on acc (the default inside the block)
    ...     pred = est.predict(Y[:3])
    >>> acc.payments(est.population_).shape, bool(acc.records.total_payment.sum() <= 3 * 5.0)
    ((3, 200), True)
    >>> bool(acc.spent == acc.records.epsilon.sum() > 0)   # sequential composition
    True
    """

    _parameter_constraints: dict = {
        "budget": [NumberInterval(Real, 0, None, closed="left")],
        "predictor": [StrOptions({"knn", "nadaraya_watson", "ridge"})],
        "n_neighbors": [NumberInterval(Integral, 1, None, closed="left")],
        "bandwidth": [NumberInterval(Real, 0, None, closed="neither")],
        "alpha": [NumberInterval(Real, 0, None, closed="left")],
        "data_range": ["array-like", None],
        "epsilon_cap": [NumberInterval(Real, 0, None, closed="left"), "array-like", None],
        "cap_policy": [StrOptions({"exclude", "raise"})],
        "accountant": [PrivacyAccountant, None],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(self, *, budget=1.0, predictor="knn", n_neighbors=5, bandwidth=1.0, alpha=1.0,
                 data_range=None, epsilon_cap=None, cap_policy="exclude", accountant=None,
                 random_state=None):
        self.budget = budget
        self.predictor = predictor
        self.n_neighbors = n_neighbors
        self.bandwidth = bandwidth
        self.alpha = alpha
        self.data_range = data_range
        self.epsilon_cap = epsilon_cap
        self.cap_policy = cap_policy
        self.accountant = accountant
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y, *, unit_costs=None):
        """Store public features, private values and unit costs.

        Parameters
        ----------
        X : array-like, DataFrame or dask collection of shape (n_samples, n_features)
            Public features ``Y_public`` of the individuals. A dask collection (here, in
            :meth:`predict` and :meth:`auction_weights`) is computed: the features are kept in
            memory, and a dask DataFrame's column names are recorded and checked like a pandas one's.
        y : array-like of shape (n_samples,)
            Their private values ``d``.
        unit_costs : array-like of shape (n_samples,), default=None
            Reported unit costs ``v_i >= 0`` (``inf`` = never sells). ``None``
            means 1 for everybody.

        Returns
        -------
        self
        """
        X, y, unit_costs = _in_memory(X), _in_memory(y), _in_memory(unit_costs)
        _check_features(X)
        # a frame's non-string column labels (integer item ids of a pivot): scikit-learn records string names only,
        # so a query frame of the same ids in another order was read by position, each feature as another
        record_column_labels(self, _frame_columns(X))
        check_table(y, "y")
        check_same_index(X, y)
        # each individual's cost and cap are paired with her row by position: a Series of them in another order
        # gave one individual's cap of 0 to another (she was bought at eps = 1)
        for other, name in ((unit_costs, "unit_costs"), (self.epsilon_cap, "epsilon_cap")):
            check_same_index(X, other, name)
            check_same_index(y, other, name, x_name="y")
        refuse_missing_target(y, "y", "the private values d as real numbers")
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        check_real_target(y, "y", "the private values d as real numbers", finite=True)
        n = X.shape[0]
        if unit_costs is None:
            costs = np.ones(n)
        else:
            costs = _check_vector(unit_costs, "unit_costs", allow_inf=True, nonnegative=True)
            if costs.shape[0] != n:
                raise ValueError(f"unit_costs has {costs.shape[0]} entries but X has {n} samples")
        if self.data_range is None:
            low, high = float(y.min()), float(y.max())
            if low == high:
                low, high = low - 0.5, high + 0.5
            warnings.warn(
                f"data_range=None: the interval [{low}, {high}] was computed from the private "
                "values themselves, which the privacy guarantee does not cover; pass the public "
                "data_range (for ratings, the rating scale)", PrivacyLeakWarning,
                stacklevel=user_stacklevel())
            self.data_range_ = (low, high)
        else:
            self.data_range_ = check_data_range(self.data_range)
            low, high = self.data_range_
            out = (y < low) | (y > high)
            if out.any():
                raise ValueError(
                    f"{int(out.sum())} private value(s) lie outside data_range {self.data_range!r} "
                    f"(for example {float(y[out][0])!r}); the guarantee needs every value inside"
                )
        if self.epsilon_cap is None:
            self.epsilon_cap_ = None
        else:
            cap = _check_vector(np.broadcast_to(np.asarray(self.epsilon_cap, dtype=float), (n,))
                                if np.ndim(self.epsilon_cap) == 0 else self.epsilon_cap,
                                "epsilon_cap", allow_inf=True, nonnegative=True)
            if cap.shape[0] != n:
                raise ValueError(f"epsilon_cap has {cap.shape[0]} entries but X has {n} samples")
            self.epsilon_cap_ = cap
        self.X_fit_ = X
        self.d_ = y.astype(np.float64)
        self.unit_costs_ = costs
        self.population_ = f"DCLEFEstimator-{secrets.token_hex(8)}"
        self.noise_source_ = check_random_source(self.random_state)
        self.guarantee_params_ = _guarantee_params(self)
        return self

    def _check_guarantee_unchanged(self):
        """Refuse to release (or weigh queries) when ``set_params`` changed, after fit, a parameter the queries'
        auctions, weights or caps follow.

        :meth:`predict` read ``budget``, ``predictor``, ``n_neighbors``, ``bandwidth``, ``alpha`` and ``cap_policy``
        at each call: ``set_params(budget=100)`` after a fit at ``budget=1`` bought at the new budget without a
        word (eps 5.0 spent on five queries where the fitted estimator spends 1.67). As the mappers do
        (``guarantee_params_``), the values recorded at fit are the ones that hold: another one is refused, naming
        it. ``data_range`` and ``epsilon_cap`` are read at fit only (``data_range_``, ``epsilon_cap_``). An
        estimator fitted by a version that kept no record has its current parameters recorded.
        """
        if not hasattr(self, "guarantee_params_"):
            self.guarantee_params_ = _guarantee_params(self)
        check_params_unchanged(self, self.guarantee_params_, "its queries would be bought, weighed or capped under a "
                               "setting the fit did not check")

    def _weights(self, X):
        if self.predictor == "knn":
            return knn_weights(self.X_fit_, X, n_neighbors=self.n_neighbors)
        if self.predictor == "nadaraya_watson":
            return nadaraya_watson_weights(self.X_fit_, X, bandwidth=self.bandwidth)
        return ridge_weights(self.X_fit_, X, alpha=self.alpha)

    def auction_weights(self, X):
        """The public weights ``w(y, Y_public)`` of each query row (no privacy spent).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Public features of the queries.

        Returns
        -------
        W : ndarray of shape (n_queries, n_samples)
        """
        check_is_fitted(self)
        self._check_guarantee_unchanged()
        X = _in_memory(X)
        _check_features(X)
        check_column_labels(self, _frame_columns(X))
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._weights(X)

    def epsilon_spent(self, accountant=None):
        """Each individual's composed guarantee ``sum over queries of eps_i``.

        Read from the accountant (``accountant``, else the estimator's
        ``accountant`` parameter, else the default one) for this fitted
        population.

        Parameters
        ----------
        accountant : PrivacyAccountant, default=None
            The accountant to read; None: the estimator's ``accountant``, else the
            default accountant.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        acc = self._accountant(accountant)
        return acc.individual_spent(self.population_, self.X_fit_.shape[0])

    def _over_cap(self, res, spent, history):
        """Individuals bought by ``res`` whose composed guarantee would exceed their cap, decided exactly.

        ``spent + eps_i > cap_i`` in floating point, with a tolerance of ``1e-12 cap_i``, let a query take an
        individual over her cap: with ``epsilon_cap=1/3`` a k-NN query giving her ``eps_i = fl(1/3)`` plus an ulp
        (the level its noise delivers) was bought, and her recorded total was ``1.7e-16`` above the cap. Close
        calls are decided on the exact sum of her recorded guarantees (``history(i)``, the accountant's) and
        ``eps_i``: ``math.fsum`` of them minus the cap is correctly rounded, so its sign is exact.
        """
        cap = self.epsilon_cap_
        eps = res.epsilons
        with np.errstate(over="ignore", invalid="ignore"):
            total = spent + eps
            over = res.selected & (total > cap)
            near = (res.selected & (eps > 0) & np.isfinite(total) & np.isfinite(cap)
                    & (np.abs(total - cap) <= 1e-6 * cap))
        for i in np.flatnonzero(near).tolist():
            over[i] = math.fsum(history(i) + [float(eps[i]), -float(cap[i])]) > 0
        return over

    def _history(self, acc):
        """``history(i)``: individual ``i``'s guarantees recorded on ``acc`` so far (earlier calls and this one's
        earlier queries), for :meth:`_over_cap`."""
        def history(i):
            try:
                col = acc.individual_epsilons(self.population_)[:, [i]]
            except KeyError:   # no release of this population yet
                return []
            return col.data.tolist()
        return history

    def _run_query(self, w, spent, acc=None):
        """One auction, honouring the cap; returns the AuctionResult and the exclusions.

        The cap is decided on ``acc``'s history, by default the accountant this thread's :meth:`predict` holds: read
        again here, a with-block entered by another thread in between swapped the process default, and the decision
        read another ledger's history.
        """
        if acc is None:
            held = getattr(_HELD, "acc", None)
            acc = held[1] if held is not None and held[0] is self else None
        history = self._history(acc if acc is not None else self._accountant())
        v = self.unit_costs_.copy()
        excluded = np.zeros(v.size, dtype=bool)
        cap = self.epsilon_cap_
        if cap is not None:
            excluded |= spent >= cap
            v[excluded] = np.inf
        while True:
            res = fair_inner_product(v, w, self.budget, data_range=self.data_range_)
            if cap is None:
                return res, excluded
            over = self._over_cap(res, spent, history)
            if not over.any():
                return res, excluded
            if self.cap_policy == "raise":
                i = int(np.flatnonzero(over)[0])
                raise BudgetExceededError(
                    f"query refused: individual {i} has spent {spent[i]:.6g} and "
                    f"would receive eps = {res.epsilons[i]:.6g} more, above epsilon_cap={format_bound(cap[i])} "
                    f"({int(over.sum())} individual(s) affected)"
                )
            excluded |= over
            v[over] = np.inf

    def predict(self, X):
        """Release one DCLEF estimate per query row, recording the privacy it uses.

        The estimator is not modified. Each query is written on the accountant
        (see ``accountant``) before its estimate is drawn: the release's
        ``epsilon = max_i eps_i``, each individual's ``eps_i`` and payment, and the
        auction's ``branch``, ``n_selected``, ``value`` (``w(O)``),
        ``total_weight``, ``sigma``, ``distortion`` (eq. 6), ``total_payment``,
        ``max_epsilon``, ``n_excluded`` (for the cap) and ``secure_noise`` (False when
        the noise comes from a seed, ``random_state``). Two calls on the same rows
        give different (fresh) noise and both are paid for. Calls from several threads on one
        accountant run one after the other (:meth:`PrivacyAccountant.atomic`), so that
        ``epsilon_cap`` holds for their sum.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Public features of the new individuals.

        Returns
        -------
        y_pred : ndarray of shape (n_queries,)

        Raises
        ------
        BudgetExceededError
            When a query would take the accountant past its budget, or, with
            ``cap_policy="raise"``, an individual past ``epsilon_cap``. Queries
            answered earlier in the same call stay recorded.
        """
        check_is_fitted(self)
        self._check_guarantee_unchanged()
        X = _in_memory(X)
        _check_features(X)
        check_column_labels(self, _frame_columns(X))
        X = validate_data(self, X, reset=False, dtype=np.float64)
        acc = self._accountant()
        Wq = self._weights(X)
        with acc.atomic():  # the spent read here and the spends below: no other thread's release in between
            return self._predict_queries(Wq, acc)

    def _predict_queries(self, Wq, acc):
        """The auctions, releases and records of :meth:`predict`, given the query weights (``acc`` held)."""
        # _run_query (which subclasses override as ``_run_query(self, w, spent)``) finds ``acc`` here
        outer, _HELD.acc = getattr(_HELD, "acc", None), (self, acc)
        try:
            return self._predict_queries_held(Wq, acc)
        finally:
            _HELD.acc = outer

    def _predict_queries_held(self, Wq, acc):
        spent = acc.individual_spent(self.population_, self.X_fit_.shape[0])
        preds = np.empty(Wq.shape[0])
        cap = self.epsilon_cap_
        history = self._history(acc)
        # The auctions run in batches (the same outcome per row as one fair_inner_product per query): a query's
        # first auction depends on the earlier queries only through the individuals already at their cap, so a
        # batch computed for one excluded set serves every query that finds the same set; a query that finds
        # another set, or whose auction would take someone past the cap, goes through _run_query as before.
        # Spends and noise draws stay one by one, in order: seeded predictions are unchanged.
        batched = Wq.shape[0] > 1 and np.isfinite(Wq).all()
        batch, batch_excluded = None, None
        for q in range(Wq.shape[0]):
            res = None
            if batched:
                excluded = np.zeros(Wq.shape[1], dtype=bool) if cap is None else spent >= cap
                if batch is None or not np.array_equal(excluded, batch_excluded):
                    v = self.unit_costs_.copy()
                    v[excluded] = np.inf
                    batch = _fair_inner_product_rows(v, Wq[q:], self.budget, data_range=self.data_range_,
                                                     first_block=None if cap is None else 4)
                    batch_excluded = excluded
                res = next(batch)
                if cap is not None and self._over_cap(res, spent, history).any():
                    res = None
            if res is None:
                res, excluded = self._run_query(Wq[q], spent)
            est = DCLEF(Wq[q], res.x, self.data_range_)
            # the noise is checked before the spend: a scale whose noise could overflow float64 (data_range of
            # 1e307) was refused after the query was recorded, a release that never happened on the ledger
            draw = est._release(self.d_, random_state=self.noise_source_)
            max_eps = float(res.epsilons.max()) if res.epsilons.size else 0.0
            acc.spend(max_eps, population=self.population_, individual_epsilons=res.epsilons,
                      payments=res.payments, mechanism="DCLEFEstimator", branch=res.branch,
                      n_selected=int(res.selected.sum()), value=res.value,
                      total_weight=res.total_weight, sigma=est.sigma, distortion=est.distortion,
                      max_epsilon=max_eps, n_excluded=int(excluded.sum()), secure_noise=self.noise_source_.secure)
            spent = spent + res.epsilons
            preds[q] = draw()
        return preds

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # every predict call draws fresh Laplace noise (and spends privacy on the accountant)
        tags.non_deterministic = True
        tags.input_tags.sparse = False
        # the released predictions are deliberately noisy
        tags.regressor_tags.poor_score = True
        return tags
