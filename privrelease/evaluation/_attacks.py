"""Inference attacks: how well can somebody guess the private attribute from released ratings?

The paper measures inference defeat with the ROC curve of a logistic regression
trained on the users' ratings (Salamatian et al., Sec. VI-C, Fig. 12). Here an
attacker is any probabilistic classifier; two are built in (a logistic
regression and a random forest), and each sees either the rating values or only
the rated / not-rated indicators (the paper's "binarized" ratings: Sec. VI-C
notes that the indicators alone classify almost as well as the values).

Two threat models matter (see :func:`evaluate_attacks`):

* a FIXED attacker, trained once on the opted-in users' original ratings and
  then applied to whatever is released (the paper's setting);
* an ADAPTIVE attacker, trained on the opted-in users' RELEASED ratings, i.e. one
  who knows the release mechanism. This is the honest measure: a mapping that
  only fools the fixed attacker has not removed the information.
"""

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import DataConversionWarning
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, roc_auc_score, roc_curve
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..mappers._base import check_sample_weight
from ..mappers._dask import computed
from ..utils import check_private_labels, check_random_source
from ..utils._constraints import RANDOM_STATE_CONSTRAINT
from ..utils._fit import atomic_fit
from ..utils._threads import single_threaded_blas
from ..utils._validation import (UNDISCLOSED_SHORT, canonical_sparse, check_rating_container, check_same_index,
                                 check_table, is_sparse_frame, plain_labels, refuse_nan_ratings, undisclosed_note,
                                 zero_fill_sparse_frame, user_stacklevel)
from ._chance import chance_folded_auc
from ._targets import attribute_targets

__all__ = [
    "AttackResult",
    "InferenceAttack",
    "attack",
    "evaluate_attacks",
    "ATTACK_MODELS",
    "ATTACK_FEATURES",
]

#: Built-in attacker models.
ATTACK_MODELS = ("logistic", "forest")
#: What the attacker looks at: the rating values, or only which items were rated.
ATTACK_FEATURES = ("values", "indicators")


def _features(X, features):
    """Rating values as they are, or 0/1 indicators of 'rated'."""
    if features == "values":
        return X
    if sp.issparse(X):
        out = X.copy()
        out.data = (out.data != 0).astype(np.float64)
        out.eliminate_zeros()
        return out
    return (np.asarray(X) != 0).astype(np.float64)


def _take_rows(X, rows):
    """Rows ``rows`` (positions) of ratings given as a pandas frame, a sparse matrix, an array or a list:
    ``X[rows]`` picked a frame's COLUMNS (a frame of 300 items lost 200 of them, or a KeyError)."""
    if hasattr(X, "iloc"):
        return X.iloc[rows]
    if sp.issparse(X):
        return X.tocsr()[rows]  # COO has no rows to index
    return np.asarray(X)[rows]


def _make_model(model, seed):
    if model == "logistic":
        # scale-free on sparse input; C=1 is a fair default for rating matrices
        return make_pipeline(MaxAbsScaler(), LogisticRegression(C=1.0, max_iter=2000))
    if model == "forest":
        return RandomForestClassifier(
            n_estimators=200, min_samples_leaf=2, max_features="sqrt", n_jobs=1, random_state=seed
        )
    from ._protocol import _seed_unset

    # every random_state left None, the nested ones too (a forest inside a Pipeline, the trees of a bagging): only
    # the top level was seeded, and InferenceAttack(model=make_pipeline(scaler, forest), random_state=0) gave
    # another attacker at every fit
    return _seed_unset(clone(model), seed)


@dataclass
class AttackResult:
    """How one attacker did on one set of users.

    Attributes
    ----------
    auc : float
        Area under the ROC curve (for more than two classes the one-vs-rest
        macro average over the classes present among the scored users, each
        class ranked by the attacker's probability of it). 0.5 is an
        uninformed guess.
    accuracy : float
        Accuracy of the attacker's most probable class.
    majority_accuracy : float
        Accuracy of always guessing the class most frequent among the
        attacker's TRAINING labels: the uninformed baseline.
    advantage : float
        ``accuracy - majority_accuracy``.
    n_samples : int
        Number of users attacked.
    folded_auc : float
        How much the attacker's ranking reveals, whichever way it points: for
        two classes ``max(auc, 1 - auc)``; for more, the mean over the classes
        present of ``max(AUC_k, 1 - AUC_k)``, ``AUC_k`` the one-vs-rest AUC of
        class ``k`` (``class_aucs``). Folding the macro average instead hid
        leakage: classes ranked reliably backwards (AUC 0.2) beside a class
        found outright (AUC 1.0) averaged to 0.47, folded to 0.53: near chance.
    class_aucs : dict
        One-vs-rest AUC of each class present among the scored users (for two
        classes, both equal ``auc``); empty when fewer than two are present.
    fpr, tpr, thresholds : ndarray
        The ROC curve for ``positive_class`` (empty arrays for more than two classes).
    positive_class : object
        The class scored by the ROC curve (the larger label for two classes).
    chance_folded_auc : float
        The expected ``folded_auc`` of an attacker whose scores carry no information, for the class sizes of
        the scored users (the same classes as ``folded_auc``; :func:`chance_folded_auc`, from the Mann-Whitney
        null distribution). Folding keeps the upper half of the AUC's scatter around 0.5, so chance is ABOVE
        0.5 on finitely many users (about 0.56 for a class of 17 users among 170): a ``folded_auc`` near this
        figure is what an attacker that learns nothing shows (for untied scores: where the release makes many
        users' scores tie, an uninformed attacker folds lower, so a figure near this level can still hide some
        leakage). NaN with fewer than two classes present. It is the chance level of
        ONE attacker: the worst over several attackers on the same users has a higher one (see
        :func:`chance_folded_auc`).
    """

    auc: float
    accuracy: float
    majority_accuracy: float
    advantage: float
    n_samples: int
    folded_auc: float = float("nan")
    class_aucs: dict = field(repr=False, default_factory=dict)
    fpr: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    tpr: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    thresholds: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    positive_class: object = None
    chance_folded_auc: float = float("nan")

    def as_dict(self):
        """The scalar figures as a dict."""
        return {
            "auc": self.auc,
            "accuracy": self.accuracy,
            "majority_accuracy": self.majority_accuracy,
            "advantage": self.advantage,
            "n_samples": self.n_samples,
            "folded_auc": self.folded_auc,
            "chance_folded_auc": self.chance_folded_auc,
        }


class InferenceAttack(ClassifierMixin, BaseEstimator):
    """An attacker that infers a private attribute from a user's ratings.

    Parameters
    ----------
    model : {"logistic", "forest"} or classifier, default="logistic"
        ``"logistic"``: max-abs scaling then an L2 logistic regression (C=1), the
        classifier of Salamatian et al., Sec. VI-C, Fig. 12. ``"forest"``: a
        random forest (200 trees, min_samples_leaf=2), a stronger nonlinear
        attacker that also accepts sparse input. Any unfitted scikit-learn
        classifier with ``predict_proba`` is accepted too (it is cloned).
    features : {"values", "indicators"}, default="values"
        ``"values"``: the rating values (0 = not rated). ``"indicators"``: only
        whether each item was rated (the paper's binarized ratings).
    random_state : None, int, numpy Generator or RandomState, or RandomSource, default=None
        Seed of the nonlinear model (not a privacy path: the attacker is ours).
        ``None`` draws a seed from the operating system's entropy.

    Attributes
    ----------
    classes_ : ndarray
        The private attribute's values seen in ``fit``.
    model_ : estimator
        The fitted classifier.
    majority_class_ : object
        The most frequent training label (the uninformed guess).
    n_features_in_ : int

    See Also
    --------
    evaluate_attacks : fixed and adaptive attackers, all models and features.

    References
    ----------
    .. [1] S. Salamatian et al., "Managing your Private and Public Data: Bringing
       down Inference Attacks against your Privacy", Sec. VI-C (Fig. 12).

    Examples
    --------
    >>> import numpy as np
    >>> from privrelease.evaluation import InferenceAttack
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 200)
    >>> X = rng.integers(1, 6, (200, 8)) * (rng.random((200, 8)) < 0.5)
    >>> X[:, 0] = np.where(y == 1, 5, 1)          # a planted give-away item
    >>> res = InferenceAttack(random_state=0).fit(X[:100], y[:100]).evaluate(X[100:], y[100:])
    >>> bool(res.auc > 0.95)
    True
    """

    _parameter_constraints = {
        "model": [StrOptions(set(ATTACK_MODELS)), HasMethods(["fit", "predict_proba"])],
        "features": [StrOptions(set(ATTACK_FEATURES))],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(self, model="logistic", features="values", *, random_state=None):
        self.model = model
        self.features = features
        self.random_state = random_state

    def _validate_X(self, X, reset):
        X = computed(X)  # a dask array of sparse blocks: "setting an array element with a sequence"
        check_rating_container(X)
        check_table(X)
        X = zero_fill_sparse_frame(X)  # NaN-filled sparse columns: pandas' "fill value must be 0" in scikit-learn
        refuse_nan_ratings(X)  # a pivot table: scikit-learn's "consider HistGradientBoostingClassifier"
        return validate_data(
            self, X, reset=reset, accept_sparse="csr", dtype=np.float64, ensure_all_finite=True
        )

    @atomic_fit
    def fit(self, X, y):
        """Train the attacker on ratings ``X`` and the true attribute ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_users, n_items)
            Ratings, 0 = not rated.
        y : array-like of shape (n_users,)
            The private attribute (at least two classes). Users whose label is
            undisclosed (:func:`privrelease.utils.undisclosed_mask`: ``-1``,
            ``"-1"``, ``None``, NaN, ``pd.NA``, ``""``) are left out: an
            undisclosed label is never a class.

        Returns
        -------
        self
        """
        self._validate_params()
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None: it learns the "
                "private attribute from users who disclosed it"
            )
        X, y = computed(X), computed(y)  # a dask array of sparse blocks: "setting an array element with a sequence"
        check_rating_container(X)
        check_table(X)
        check_same_index(X, y)
        X = zero_fill_sparse_frame(X)
        refuse_nan_ratings(X)  # a pivot table: scikit-learn's "consider HistGradientBoostingClassifier"
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=True)
        shape = getattr(y, "shape", None) or np.asarray(y).shape
        if len(shape) == 2 and shape[1] == 1:
            warnings.warn("A column-vector y was passed when a 1d array was expected; it is used as "
                          f"y.ravel() (shape {shape})", DataConversionWarning, stacklevel=user_stacklevel())
        y, labeled = check_private_labels(y, X.shape[0])
        note = undisclosed_note(y, labeled)
        if not labeled.all():
            # undisclosed users (utils.undisclosed_mask) are never a class: leave them out
            X, y = X[np.flatnonzero(labeled)], y[labeled]
        if y.shape[0] == 0:
            raise ValueError("an attacker needs users who disclosed the private attribute; every label is "
                             f"undisclosed ({UNDISCLOSED_SHORT})")
        y = plain_labels(y)  # the mapper's classes: 2**53 + 1 beside 0.0 stays a class of its own
        check_classification_targets(y)
        self.classes_, counts = np.unique(y, return_counts=True)
        if self.classes_.size < 2:
            raise ValueError(
                "an attacker needs at least two classes of the private attribute, got only one class: "
                f"{self.classes_.tolist()!r}" + note
            )
        self.majority_class_ = self.classes_[np.argmax(counts)]
        seed = check_random_source(self.random_state).spawn_seed()
        with single_threaded_blas():  # L-BFGS on sparse rows: 2 BLAS threads were up to 58x slower
            self.model_ = _make_model(self.model, seed).fit(_features(X, self.features), y)
        return self

    def predict_proba(self, X):
        """Posterior of each class of the private attribute, columns in ``classes_`` order.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_users, n_items)
            Ratings (or released ratings), 0 = not rated, with ``fit``'s items.

        Returns
        -------
        proba : ndarray of shape (n_users, n_classes)
        """
        check_is_fitted(self, "model_")
        X = self._validate_X(X, reset=False)
        with single_threaded_blas():
            proba = self.model_.predict_proba(_features(X, self.features))
        model_classes = np.asarray(self.model_.classes_)
        if not np.array_equal(model_classes, self.classes_):  # pragma: no cover - defensive
            order = np.searchsorted(model_classes, self.classes_)
            proba = proba[:, order]
        return proba

    def predict(self, X):
        """The most probable value of the private attribute for each user.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_users, n_items)
            Ratings (or released ratings), 0 = not rated, with ``fit``'s items.

        Returns
        -------
        y_pred : ndarray of shape (n_users,)
            Values from ``classes_``.
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def evaluate(self, X, y):
        """Attack users ``X`` whose true attribute is ``y``: AUC, ROC, accuracy.

        Users whose label is undisclosed (see :meth:`fit`) are not scored.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_users, n_items)
            Ratings (or released ratings), 0 = not rated, with ``fit``'s items.
        y : array-like of shape (n_users,)
            The users' true attribute (undisclosed labels allowed, see :meth:`fit`).

        Raises
        ------
        ValueError
            ``y`` holds a class the attacker never saw in ``fit``, or a pandas ``y`` is indexed
            differently from a pandas ``X`` (rows are paired by position).
        TypeError
            ``y`` holds labels of another kind than ``fit``'s (strings against numbers).

        Returns
        -------
        AttackResult
        """
        X, y, _ = self._scored_users(X, y)
        proba = self.predict_proba(X)
        return _score(y, proba, self.classes_, self.majority_class_)

    def score(self, X, y, sample_weight=None):
        """Accuracy of the attacker on users ``X`` whose true attribute is ``y``.

        Users whose label is undisclosed are not scored, and ``y`` must name the classes as ``fit`` saw
        them (see :meth:`evaluate`): scikit-learn's score compared ``"0"`` with ``0`` as two classes
        ("Mix of label input types"), and an accuracy of 0.0 against classes the attacker never saw was
        no measurement.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_users, n_items)
            Ratings (or released ratings), 0 = not rated, with ``fit``'s items.
        y : array-like of shape (n_users,)
            The users' true attribute (undisclosed labels allowed, see :meth:`fit`).
        sample_weight : array-like of shape (n_users,), default=None
            Weight of each user (those of undisclosed users are dropped with them).

        Returns
        -------
        accuracy : float
        """
        from sklearn.metrics import accuracy_score

        X, y, labeled = self._scored_users(X, y)
        if sample_weight is not None:
            if np.shape(sample_weight) != labeled.shape:
                raise ValueError(f"sample_weight has shape {np.shape(sample_weight)} but y has {labeled.size} labels")
            # the mappers' check: None in an object array reached accuracy_score ("unsupported operand type(s) for
            # +: 'NoneType' and 'float'"), and a negative weight was used (an accuracy of 0.69 from a weight of -5)
            sample_weight = check_sample_weight(sample_weight, labeled.size)[labeled]
            if not sample_weight.sum() > 0:
                raise ValueError(f"sample_weight gives the {sample_weight.size} users who disclosed the attribute a "
                                 "total weight of 0; expected a positive total (undisclosed users are not scored)")
        return float(accuracy_score(y, self.predict(X), sample_weight=sample_weight))

    def _scored_users(self, X, y):
        """The rows of ``X`` and labels of ``y`` of the users who disclosed the attribute, and which they are;
        refuses labels of another kind than ``classes_`` (strings against numbers) and classes ``fit`` never saw."""
        check_is_fitted(self, "model_")
        X, y = computed(X), computed(y)
        check_same_index(X, y)
        n = X.shape[0] if hasattr(X, "shape") else len(X)
        y, labeled = check_private_labels(y, n)
        if not labeled.any():
            raise ValueError(f"no user to score: every label is undisclosed ({UNDISCLOSED_SHORT})")
        y = plain_labels(y[labeled])
        kinds = {_kind_of(y.dtype), _kind_of(self.classes_.dtype)}
        if len(kinds) > 1:
            raise TypeError(
                f"y holds {_kind_of(y.dtype)} (for example {y[0].item()!r}) but the attacker was fitted on "
                f"{_kind_of(self.classes_.dtype)} {self.classes_.tolist()!r}: give the classes as in fit "
                "('1' and 1 are two different classes)"
            )
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError(
                f"the private attribute has class(es) {unseen.tolist()!r} that the attacker never saw "
                f"in fit (it knows {self.classes_.tolist()!r}); train it on users from every class"
            )
        if not labeled.all():
            X = _take_rows(X, np.flatnonzero(labeled))
        return X, y, labeled

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _check_fixed_attackers(fixed_attackers):
    """``fixed_attackers`` as a dict of fitted :class:`InferenceAttack` keyed by ``(model, features)`` (or
    ``(model, features, target)``); a list or a text failed inside ``dict()``, a number as ``.evaluate``."""
    if fixed_attackers is None:
        return {}
    if not isinstance(fixed_attackers, Mapping):
        raise TypeError("fixed_attackers must be a dict of fitted InferenceAttack keyed by (model, features), as "
                        f"evaluate_attacks returns it, got {type(fixed_attackers).__name__}")
    for key, attacker in fixed_attackers.items():
        if not isinstance(key, tuple) or len(key) not in (2, 3):
            raise TypeError(f"fixed_attackers key {key!r:.80} must be a tuple (model, features) or (model, features, "
                            "target)")
        if not isinstance(attacker, InferenceAttack):
            raise TypeError(f"fixed_attackers[{key!r:.80}] must be a fitted InferenceAttack, got "
                            f"{type(attacker).__name__}")
        check_is_fitted(attacker, "model_")
    return dict(fixed_attackers)


def _check_fixed_matches(attacker, key, model):
    """The attacker under ``key`` is that model on those features: a forest on indicators filed under ("logistic",
    "values") was reported as the logistic attacker on values (AUC 0.66 where that attacker scores 0.88)."""
    if isinstance(model, str) or isinstance(attacker.model, str):
        same_model = attacker.model == model
    else:  # an estimator given as the model: the same kind (the caller's own object, or a copy of it)
        same_model = type(attacker.model) is type(model)
    if not same_model or attacker.features != key[1]:
        raise ValueError(f"fixed_attackers[{key!r:.80}] is InferenceAttack(model={attacker.model!r:.40}, "
                         f"features={attacker.features!r}), not the attacker its key names; its rows would be "
                         "labelled with the key's model and features")


def _n_rows(X):
    """Number of users (rows) of a rating matrix, frame or array-like."""
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) else len(X)


def _n_items(X):
    """Number of items (columns) of a 2-D rating matrix, frame or array-like; None when it has no two axes."""
    shape = getattr(X, "shape", None)
    if shape is None and isinstance(X, (list, tuple)):
        try:
            shape = np.shape(X)
        except ValueError:  # ragged rows: refused where the matrix is read
            return None
    return int(shape[1]) if shape is not None and len(shape) == 2 else None


def _kind_of(dtype):
    """``"strings"``, ``"booleans"`` or ``"numbers"``: the kind of labels an array of ``dtype`` holds."""
    return {"U": "strings", "S": "strings", "b": "booleans"}.get(np.dtype(dtype).kind, "numbers")


def _score(y, proba, classes, majority_class):
    pred = classes[np.argmax(proba, axis=1)]
    acc = float(accuracy_score(y, pred))
    maj = float(np.mean(y == majority_class))
    present, counts = np.unique(y, return_counts=True)
    empty = np.zeros(0)
    fpr = tpr = thr = empty
    positive = None
    class_aucs = {}
    if present.size < 2:
        auc = folded = float("nan")
    elif classes.size == 2:
        positive = classes[1]
        auc = float(roc_auc_score(y == positive, proba[:, 1]))
        fpr, tpr, thr = roc_curve(y == positive, proba[:, 1])
        class_aucs = {c.item() if hasattr(c, "item") else c: auc for c in classes}
        folded = max(auc, 1.0 - auc)
    else:
        # macro one-vs-rest over the classes present, each ranked by the attacker's own probability of it: the
        # columns of the present classes renormalised (sklearn's multi_class="ovr" needs rows summing to 1) rank
        # users otherwise (0.9643 where the attacker's one-vs-rest AUC is 0.9529 with one of four classes absent)
        cols = np.searchsorted(classes, present)
        per = np.array([roc_auc_score(y == c, proba[:, k]) for c, k in zip(present, cols)], dtype=float)
        auc = float(np.mean(per))
        class_aucs = {c.item() if hasattr(c, "item") else c: float(a) for c, a in zip(present, per)}
        # folded class by class: a class ranked backwards is as exposed as one ranked forwards (the binary fold),
        # and folding the mean let the two cancel ([0.2, 0.2, 1.0] gave 0.53 where each class is found at >= 0.8)
        folded = float(np.mean(np.maximum(per, 1.0 - per)))
    return AttackResult(auc=auc, accuracy=acc, majority_accuracy=maj, advantage=acc - maj,
                        n_samples=int(y.shape[0]), folded_auc=folded, class_aucs=class_aucs,
                        fpr=fpr, tpr=tpr, thresholds=thr, positive_class=positive,
                        # the same classes as folded_auc: those present among the scored users
                        chance_folded_auc=chance_folded_auc(counts))


def attack(X_train, y_train, X_test, y_test, *, model="logistic", features="values", random_state=None):
    """Train an attacker on ``(X_train, y_train)`` and attack ``X_test``.

    A shortcut for ``InferenceAttack(model, features).fit(X_train, y_train).evaluate(X_test, y_test)``.

    Parameters
    ----------
    X_train : {array-like, sparse matrix} of shape (n_train, n_items)
        Ratings the attacker learns from (0 = not rated).
    y_train : array-like of shape (n_train,)
        Their private attribute (undisclosed labels are left out).
    X_test : {array-like, sparse matrix} of shape (n_test, n_items)
        Ratings (typically released ones) of the users attacked.
    y_test : array-like of shape (n_test,)
        Their true attribute, for scoring.
    model : {"logistic", "forest"} or classifier, default="logistic"
        See :class:`InferenceAttack`.
    features : {"values", "indicators"}, default="values"
        See :class:`InferenceAttack`.
    random_state : None, int, numpy Generator or RandomState, or RandomSource, default=None
        Seed of the attacker's model (see :class:`InferenceAttack`).

    Returns
    -------
    AttackResult
    """
    return InferenceAttack(model=model, features=features, random_state=random_state).fit(
        X_train, y_train).evaluate(X_test, y_test)


def _check_attackers(models, features, *, names=("models", "features")):
    """The attack models and views as lists, checked before anything is fitted.

    A single model or view (``"logistic"``, a classifier, ``"values"``) is a list of one: a string was read
    letter by letter ("Got 'l' instead"), and privacy_utility_curve only said so after fitting every mapper.

    Raises
    ------
    ValueError
        A name that is neither a built-in model (:data:`ATTACK_MODELS`) nor view (:data:`ATTACK_FEATURES`).
    TypeError
        Not a sequence, or a model that is neither a name nor a classifier with ``fit`` and ``predict_proba``.
    """
    out = []
    for values, name, options, custom in ((models, names[0], ATTACK_MODELS, True),
                                          (features, names[1], ATTACK_FEATURES, False)):
        expected = " or ".join(map(repr, options)) + (" or a classifier with fit and predict_proba" if custom else "")
        if isinstance(values, str) or (custom and hasattr(values, "fit")):
            values = [values]
        try:
            values = list(values)
        except TypeError:
            raise TypeError(f"{name} must be a list of {expected}, got {values!r}") from None
        for v in values:
            if isinstance(v, str):
                if v not in options:
                    raise ValueError(f"{name} holds {v!r}, expected {expected}, in {values!r}")
            elif not (custom and hasattr(v, "fit") and hasattr(v, "predict_proba")):
                raise TypeError(f"{name} holds {v!r} of type {type(v).__name__}, expected {expected}, in {values!r}")
        out.append(values)
    return out


def _model_names(models):
    """The name of each attack model in tables, curve columns and keys: a built-in's own name, a custom
    classifier's class name; a repeated name gets ``_2``, ``_3`` ... in order, so two models never share a
    fixed attacker (two LogisticRegression of other C showed the first one's figures twice)."""
    names = []
    for m in models:
        base = m if isinstance(m, str) else type(m).__name__
        name, k = base, 1
        while name in names:
            k += 1
            name = f"{base}_{k}"
        names.append(name)
    return names


@contextlib.contextmanager
def _naming_target(target, columns, main):
    """Say which target of a 2-D attribute a label error is about ("got only one class: [0]" named no column)."""
    try:
        yield
    except ValueError as exc:
        if not columns:  # a 1-D attribute: its one target needs no name
            raise
        what = (f"the joint attribute (the tuples of the columns {columns!r}, numbered by joint_attribute)"
                if main else f"column {target!r} of the attribute")
        raise ValueError(f"{what}: {exc}") from exc


def evaluate_attacks(X_train_original, X_train_released, y_train, X_test_released, y_test, *,
                     models=ATTACK_MODELS, features=ATTACK_FEATURES, fixed_attackers=None,
                     random_state=None, attribute_names=None, verbose=1):
    """Fixed and adaptive attackers against released ratings.

    Parameters
    ----------
    X_train_original : {array-like, sparse matrix} of shape (n_train, n_items)
        The opted-in users' ORIGINAL ratings: the fixed attacker learns from them
        (Salamatian et al., Sec. VI-C: the classifier is trained on undistorted data).
    X_train_released : {array-like, sparse matrix} of shape (n_train, n_items) or None
        The same users' RELEASED ratings: the adaptive attacker learns from them
        (it knows the release mechanism). ``None`` skips the adaptive attacker.
    y_train : array-like of shape (n_train,) or (n_train, n_attributes)
        The opted-in users' disclosed attribute: binary, multi-class, or one
        column per attribute. Undisclosed labels (-1, NaN, ...) are left out.
    X_test_released : {array-like, sparse matrix} of shape (n_test, n_items)
        What the protected users release.
    y_test : array-like of shape (n_test,) or (n_test, n_attributes)
        Their true attribute, used ONLY to score the attackers.
    models, features : sequences, or one model and one view
        Attacker models (see :class:`InferenceAttack`) and views of the data;
        a single one (``models="logistic"``) is a list of one, and a name that
        is not an attacker is refused before anything is fitted. A model is
        named by its own name (``"logistic"``) or a custom classifier's class
        name; a repeated name gets ``_2``, ``_3`` ... in order
        (``[LogisticRegression(C=0.1), LogisticRegression(C=10)]`` gives
        ``LogisticRegression`` and ``LogisticRegression_2``), so each model
        has its own rows, keys and fixed attacker.
    fixed_attackers : dict or None
        Already fitted fixed attackers keyed by ``(model, features)`` (and
        ``(model, features, target)`` for the marginals of a 2-D attribute),
        for example from a previous call's second return value, to avoid
        refitting them when only the release changes.
    random_state : None or int
        Seeds of the nonlinear attackers.
    attribute_names : sequence of str or None
        Names of the columns of a 2-D attribute (default: a DataFrame's
        column names, else ``attr0, attr1, ...``): one per column, distinct, and
        not ``"joint"`` (the joint attribute's target). A column may be named
        ``"attribute"``: it is scored as a marginal like any other.
    verbose : int, default=1
        A progress bar over the attackers (tqdm, on stderr, only when stderr is a terminal); 0 for none.

    Raises
    ------
    ValueError
        A pandas ``y_train`` or ``X_train_released`` indexed differently from a pandas
        ``X_train_original``, or a pandas ``y_test`` from ``X_test_released``: rows are paired by
        position, so users would be scored against other users' labels.

    Returns
    -------
    table : pandas.DataFrame
        One row per (target, attacker, model, features): ``auc`` (macro
        one-vs-rest for more than two classes), ``accuracy``,
        ``majority_accuracy``, ``advantage``, ``n_samples``, ``folded_auc``,
        ``chance_folded_auc`` (the folded AUC an uninformed attacker is
        expected to score on these users, the same on every row of a target:
        see :class:`AttackResult`). ``target`` is
        ``"attribute"`` for a 1-D attribute; for a 2-D one, ``"joint"`` (the
        tuple of the columns, :func:`joint_attribute`) then one row per column
        (the marginals).
    results : dict
        ``(attacker, model, features) -> AttackResult`` (with ROC curves) for a
        1-D attribute or the joint one, ``(attacker, model, features, target)``
        for the marginals, plus the fitted fixed attackers under the key
        ``"fixed_attackers"``.
    """
    # read into memory (a dask array of sparse blocks was "setting an array element with a sequence")
    X_train_original, X_train_released, X_test_released = map(computed, (X_train_original, X_train_released,
                                                                          X_test_released))
    y_train, y_test = computed(y_train), computed(y_test)
    # a long-form table was read as one "user" per rating, a Surprise Trainset failed inside numpy
    for x_name, X_ in (("X_train_original", X_train_original), ("X_train_released", X_train_released),
                       ("X_test_released", X_test_released)):
        check_rating_container(X_, x_name)  # Surprise data and long form: refused with their conversion
        if X_ is None and x_name != "X_train_released" or X_ is not None and getattr(X_, "shape", None) is None \
                and not isinstance(X_, (list, tuple)):
            # None or a number reached len() ("object of type 'NoneType' has no len()")
            raise TypeError(f"{x_name} must be a users x items rating matrix (array-like, sparse matrix or "
                            f"DataFrame), got {type(X_).__name__}"
                            + (" (only X_train_released may be None: no adaptive attacker)" if X_ is None else ""))
        if X_ is not None and not is_sparse_frame(X_):  # a NaN-filled sparse column reads its unstored cells as 0
            refuse_nan_ratings(X_, x_name)
    # warned of once, here: a pair stored twice is read as its sum (scipy's reading) by every attacker
    X_train_original, X_train_released, X_test_released = map(canonical_sparse, (X_train_original, X_train_released,
                                                                                 X_test_released))
    # rows are paired by position: a y (or a release) indexed in another order gave users other users' labels
    check_same_index(X_train_original, y_train, "y_train", x_name="X_train_original")
    if X_train_released is not None:
        check_same_index(X_train_original, X_train_released, "X_train_released", x_name="X_train_original")
    check_same_index(X_test_released, y_test, "y_test", x_name="X_test_released")
    for y_name, y_, x_name, X_ in (("y_train", y_train, "X_train_original", X_train_original),
                                   ("y_test", y_test, "X_test_released", X_test_released)):
        if y_ is not None and np.ndim(y_) and _n_rows(y_) != _n_rows(X_):  # was blamed on "y" by the attacker
            raise ValueError(f"{y_name} has {_n_rows(y_)} labels but {x_name} has {_n_rows(X_)} users; give one "
                             "label (or one row of labels) per user")
    if X_train_released is not None and _n_rows(X_train_released) != _n_rows(X_train_original):
        # the adaptive attacker's fit found it first, blaming y ("y has 30 labels but X has 20 users")
        raise ValueError(f"X_train_released has {_n_rows(X_train_released)} users but X_train_original has "
                         f"{_n_rows(X_train_original)}: the release of the training users must keep every user")
    for x_name, X_ in (("X_train_released", X_train_released), ("X_test_released", X_test_released)):
        if X_ is not None and _n_items(X_) is not None and _n_items(X_train_original) is not None \
                and _n_items(X_) != _n_items(X_train_original):
            # the attacker's "X has 11 features, but InferenceAttack is expecting 10" named neither
            raise ValueError(f"{x_name} has {_n_items(X_)} items but X_train_original has "
                             f"{_n_items(X_train_original)}: a release keeps the item columns of the ratings (an item "
                             "rated only by some users is a column of every matrix, 0 where not rated)")
    models, features = _check_attackers(models, features)
    rs = check_random_source(random_state)
    fixed_attackers = _check_fixed_attackers(fixed_attackers)
    rows, results = [], {}
    targets = attribute_targets(y_train, y_test, attribute_names)
    columns = [t for t, _, _ in targets[1:]]
    from ._protocol import _progress

    combos = [(m, name, f) for m, name in zip(models, _model_names(models)) for f in features]
    for m, name, f in _progress(combos, len(combos), verbose, "attackers"):
        # one seed per (model, features), shared by every target and both attackers
        seed = rs.spawn_seed()
        for k, (target, ytr, yte) in enumerate(targets):
            # the first target is the main one (the 1-D attribute, or the joint): a column named "attribute"
            # is a marginal and keeps its own key, never the main one's attacker
            key = (name, f) if k == 0 else (name, f, target)
            with _naming_target(target, columns, main=k == 0):
                fixed = fixed_attackers.get(key)
                if fixed is not None:
                    _check_fixed_matches(fixed, key, m)
                if fixed is None:
                    fixed = InferenceAttack(model=m, features=f, random_state=seed).fit(X_train_original, ytr)
                    fixed_attackers[key] = fixed
                res = fixed.evaluate(X_test_released, yte)
                results[("fixed",) + key] = res
                rows.append({"target": target, "attacker": "fixed", "model": name, "features": f,
                             **res.as_dict()})
                if X_train_released is not None:
                    adaptive = InferenceAttack(model=m, features=f, random_state=seed).fit(X_train_released, ytr)
                    res = adaptive.evaluate(X_test_released, yte)
                    results[("adaptive",) + key] = res
                    rows.append({"target": target, "attacker": "adaptive", "model": name, "features": f,
                                 **res.as_dict()})
    results["fixed_attackers"] = fixed_attackers
    table = pd.DataFrame(rows)
    if len(targets) > 1:
        order = {t: k for k, (t, _, _) in enumerate(targets)}
        table = table.sort_values("target", key=lambda c: c.map(order), kind="stable").reset_index(drop=True)
    return table, results
