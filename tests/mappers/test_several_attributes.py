"""Several private attributes: 2-D y, protect="joint" / "marginal", per-attribute and joint leakage."""

import itertools

import cvxpy as cp
import numpy as np
import pandas as pd
import pytest

import privrelease
from privrelease.mappers import ErasureMapper, QuantizedPrivacyMapper
from privrelease.mappers._base import stack_marginal_priors
from privrelease.mapping import erasure_alphabet, erasure_distortion, mutual_information

_LN2 = np.log(2.0)


def _xor_table(reps=25):
    """Exactly balanced: x = a1 XOR a2, so x is independent of each a_i but reveals the pair."""
    rows = [(a1, a2) for a1, a2 in itertools.product([0, 1], [0, 1]) for _ in range(reps)]
    Y = np.array(rows)
    X = pd.DataFrame({"x": Y[:, 0] ^ Y[:, 1]})
    return X, Y


def _ratings(n=360, m=16, seed=1):
    rng = np.random.default_rng(seed)
    Y = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 3, n)])
    R = np.clip(np.rint(3 + 0.9 * (Y[:, [0]] - 0.5) * (np.arange(m) < 3)
                        + 0.6 * (Y[:, [1]] - 1) * ((np.arange(m) >= 3) & (np.arange(m) < 6))
                        + rng.normal(0, 1, (n, m))), 1, 5)
    R[rng.random((n, m)) > 0.5] = 0
    R[np.arange(n), rng.integers(0, m, n)] = 3
    return R, Y


# ---------------------------------------------------------------------- the stacked prior
def test_stacked_prior_mi_is_the_average_marginal_mi_and_pp_constraints_coincide():
    rng = np.random.default_rng(0)
    q_b = rng.dirichlet(np.ones(5))
    joints = [rng.dirichlet(np.ones(k * 5)).reshape(k, 5) for k in (2, 3, 4)]
    Q = stack_marginal_priors(q_b, joints)
    np.testing.assert_allclose(Q.sum(axis=0), q_b, atol=1e-15)
    for _ in range(5):
        M = rng.dirichlet(np.ones(4), size=5)
        # each attribute's prior under the common q(b): q(b) q_i(a | b)
        fitted = [J / J.sum(axis=0) * q_b for J in joints]
        marg = [mutual_information(P @ M) for P in fitted]
        assert mutual_information(Q @ M) == pytest.approx(np.mean(marg), abs=1e-12)
        # p'(a_i, c_hat) - p'(a_i) p(c_hat) on each block is (1/m) of the marginal's deviation
        dev = Q @ M - np.outer(Q.sum(axis=1), (Q @ M).sum(axis=0))
        offs = np.cumsum([0, 2, 3, 4])
        for i, P in enumerate(fitted):
            J = P @ M
            np.testing.assert_allclose(3 * dev[offs[i]:offs[i + 1]], J - np.outer(J.sum(1), J.sum(0)), atol=1e-14)


def test_stacked_prior_uses_the_attribute_marginal_where_a_block_has_no_mass():
    q_b = np.array([0.5, 0.5])
    J = np.array([[0.3, 0.0], [0.7, 0.0]])  # nobody who disclosed this attribute has input 1
    Q = stack_marginal_priors(q_b, [J, np.array([[0.25, 0.25], [0.25, 0.25]])])
    np.testing.assert_allclose(Q[:2, 1], 0.5 * 0.5 * np.array([0.3, 0.7]))
    # input 0 is also (0.3, 0.7): the fallback invents no leakage
    assert mutual_information(Q[:2] / Q[:2].sum()) == pytest.approx(0.0, abs=1e-15)


# ---------------------------------------------------------------------- against plain cvxpy
def _cvxpy_marginal(joints_by_b, cost, delta):
    """min (1/m) sum_i I(A_i; B_hat) s.t. E[d] <= delta, each I_i under its own prior (rel_entr form)."""
    n_in, n_out = cost.shape
    allowed = np.isfinite(cost)
    M = cp.Variable((n_in, n_out), nonneg=True)
    cons = [cp.sum(M, axis=1) == 1, M[~allowed] == 0]
    q_b = joints_by_b[0].sum(axis=0)
    cons.append(cp.sum(cp.multiply(q_b[:, None] * np.where(allowed, cost, 0.0), M)) <= delta)
    obj = 0
    for P in joints_by_b:
        J = P @ M
        out = q_b @ M
        pa = P.sum(axis=1)
        obj += cp.sum(cp.rel_entr(J, cp.vstack([pa[a] * out for a in range(P.shape[0])])))
    prob = cp.Problem(cp.Minimize(obj / len(joints_by_b) / _LN2), cons)
    prob.solve(solver=cp.CLARABEL)
    return prob.value


@pytest.mark.parametrize("seed,delta", [(0, 0.3), (1, 0.6)])
def test_marginal_mode_matches_a_plain_cvxpy_sum_of_marginal_mis(seed, delta):
    rng = np.random.default_rng(seed)
    # every (x1, x2, a1, a2) with random weights; some cells undisclosed
    grid = np.array(list(itertools.product([0, 1], [0, 1, 2], [0, 1], [0, 1, 2])))
    w = rng.gamma(1.0, 1.0, len(grid)) * (1 + 3 * (grid[:, 0] == grid[:, 2]) + 2 * (grid[:, 1] == grid[:, 3]))
    X = pd.DataFrame({"x1": grid[:, 0], "x2": grid[:, 1]})
    Y = grid[:, 2:].astype(float)
    drop = rng.random(Y.shape) < 0.15
    Y[drop] = -1
    est = ErasureMapper(delta=delta, protect="marginal", random_state=0).fit(X, Y, sample_weight=w)
    # independent computation of the marginal priors: q(b) of every row, q_i(a | b) of the rows disclosing i
    tuples = est.input_tuples_
    labeled = (Y >= 0).any(axis=1)
    b_of = np.array([np.flatnonzero((tuples == r).all(axis=1))[0] for r in grid[:, :2]])
    q_b = np.bincount(b_of[labeled], weights=w[labeled], minlength=len(tuples))
    joints = []
    for i, k in ((0, 2), (1, 3)):
        rows = Y[:, i] >= 0
        J = np.zeros((k, len(tuples)))
        np.add.at(J, (Y[rows, i].astype(int), b_of[rows]), w[rows])
        cond = J / J.sum(axis=0)
        joints.append(cond * q_b / q_b.sum())
    cost = erasure_distortion(tuples, erasure_alphabet(tuples))
    ref = _cvxpy_marginal(joints, cost, delta)
    assert est.leakage_ == pytest.approx(ref, abs=2e-5)
    assert np.mean(est.leakage_per_attribute_) == pytest.approx(est.leakage_, abs=1e-9)
    for P, got in zip(joints, est.leakage_per_attribute_):
        assert mutual_information(P @ est.mapping_) == pytest.approx(got, abs=1e-9)
    assert est.distortion_ <= delta + 1e-6


# ---------------------------------------------------------------------- joint vs marginal
def test_marginal_perfect_privacy_can_leave_the_joint_leaking_xor():
    X, Y = _xor_table()
    marg = ErasureMapper(protect="marginal", random_state=0).fit(X, Y)
    np.testing.assert_allclose(marg.leakage_per_attribute_, 0.0, atol=1e-9)
    assert marg.leakage_ == pytest.approx(0.0, abs=1e-9)
    assert marg.distortion_ == pytest.approx(0.0, abs=1e-9)  # x is independent of each a_i: nothing erased
    assert marg.joint_leakage_ == pytest.approx(1.0, abs=1e-9)  # x = a1 XOR a2 gives one bit of the pair
    joint = ErasureMapper(protect="joint", random_state=0).fit(X, Y)
    assert joint.joint_leakage_ == pytest.approx(0.0, abs=1e-9)
    assert joint.leakage_ == joint.joint_leakage_
    np.testing.assert_allclose(joint.leakage_per_attribute_, 0.0, atol=1e-9)
    assert joint.distortion_ == pytest.approx(1.0, abs=1e-6)  # x must be erased


def test_marginal_perfect_privacy_gives_every_marginal_zero_on_ratings():
    R, Y = _ratings()
    Y = Y.astype(object)
    Y[::6, 0] = None
    Y[1::5, 1] = ""
    est = QuantizedPrivacyMapper(n_clusters=6, protect="marginal", random_state=0).fit(R, Y)
    assert est.leakage_per_attribute_.shape == (2,)
    np.testing.assert_allclose(est.leakage_per_attribute_, 0.0, atol=1e-6)
    assert [list(c) for c in est.classes_] == [[0, 1], [0, 1, 2]]
    assert est.prior_.shape[0] == 5
    assert est.n_labeled_per_attribute_.tolist() == [360 - 60, 360 - 72]
    both_hidden = sum(1 for i in range(360) if i % 6 == 0 and i % 5 == 1)
    assert est.n_labeled_ == 360 - both_hidden  # users who disclosed at least one attribute
    assert np.isfinite(est.joint_leakage_)


def test_max_leakage_in_marginal_mode_caps_the_average():
    R, Y = _ratings()
    est = QuantizedPrivacyMapper(n_clusters=6, space="raw", max_leakage=0.01, protect="marginal",
                                 random_state=0).fit(R, Y)
    assert est.leakage_ <= 0.01 + 1e-6
    assert np.mean(est.leakage_per_attribute_) == pytest.approx(est.leakage_, abs=1e-9)


@pytest.mark.parametrize("make", ["erasure", "quantized"])
def test_joint_mode_equals_one_dimensional_mode_on_the_tuple_labels(make):
    if make == "erasure":
        rng = np.random.default_rng(3)
        Y = np.column_stack([rng.integers(0, 2, 300), rng.integers(0, 3, 300)])
        X = pd.DataFrame({"u": np.where(rng.random(300) < 0.7, Y[:, 0], 1 - Y[:, 0]),
                          "v": np.where(rng.random(300) < 0.6, Y[:, 1], rng.integers(0, 3, 300))})
        params = dict(delta=0.4, random_state=0)
        cls = ErasureMapper
    else:
        X, Y = _ratings()
        params = dict(n_clusters=5, delta=1.0, random_state=0)
        cls = QuantizedPrivacyMapper
    Y = Y.astype(float)
    Y[::9, 1] = -1
    tup = np.where((Y >= 0).all(axis=1), Y[:, 0] * 3 + Y[:, 1], -1)
    a = cls(protect="joint", **params).fit(X, Y)
    b = cls(**params).fit(X, tup)
    np.testing.assert_allclose(a.prior_, b.prior_, atol=1e-15)
    np.testing.assert_allclose(a.mapping_, b.mapping_, atol=1e-12)
    assert a.leakage_ == pytest.approx(b.leakage_, abs=1e-12)
    assert a.joint_leakage_ == pytest.approx(b.leakage_, abs=1e-12)
    assert a.n_labeled_ == b.n_labeled_
    # the tuple codes name the prior's rows
    np.testing.assert_array_equal(a.attribute_tuples_[:, 0] * 3 + a.attribute_tuples_[:, 1], b.classes_)
    # each attribute's leakage is that of the joint prior summed over the other attribute
    for j in range(2):
        P = np.zeros((a.classes_[j].size, a.prior_.shape[1]))
        np.add.at(P, a.attribute_tuples_[:, j], a.prior_)
        assert a.leakage_per_attribute_[j] == pytest.approx(mutual_information(P @ a.mapping_), abs=1e-12)
        assert a.leakage_per_attribute_[j] <= a.joint_leakage_ + 1e-12  # I(A_j; C_hat) <= I(A_1, A_2; C_hat)


def test_multi_class_one_dimensional_y_reports_one_attribute():
    R, Y = _ratings()
    est = QuantizedPrivacyMapper(n_clusters=6, delta=0.6, clustering="plain", random_state=0).fit(R, Y[:, 1])
    assert list(est.classes_) == [0, 1, 2]
    np.testing.assert_allclose(est.leakage_per_attribute_, [est.leakage_])
    assert est.joint_leakage_ == est.leakage_
    assert 0 < est.leakage_ < est.prior_leakage_


def test_dataframe_y_with_pandas_markers_per_cell():
    X, Y = _xor_table()
    df = pd.DataFrame({"a": pd.array(Y[:, 0], dtype="Int64"), "b": np.where(Y[:, 1] == 1, "yes", "no")})
    df.loc[::4, "a"] = pd.NA
    df.loc[1::4, "b"] = "-1"
    est = ErasureMapper(protect="marginal", random_state=0).fit(X, df)
    assert [list(c) for c in est.classes_] == [[0, 1], ["no", "yes"]]
    assert est.n_labeled_per_attribute_.tolist() == [75, 75]
    joint = ErasureMapper(protect="joint", random_state=0).fit(X, df)
    assert joint.n_labeled_ == 50


def test_errors_name_the_attribute_and_the_mode():
    X, Y = _xor_table()
    Y1 = Y.copy()
    Y1[:, 1] = 0
    with pytest.raises(ValueError, match=r"y\[:, 1\] has a single class"):
        ErasureMapper().fit(X, Y1)
    Y2 = Y.astype(float)
    Y2[::2, 0] = -1
    Y2[1::2, 1] = -1
    with pytest.raises(ValueError, match="no user disclosed every column"):
        ErasureMapper(protect="joint").fit(X, Y2)
    with pytest.warns(UserWarning, match="joint_leakage_ is NaN"):
        est = ErasureMapper(protect="marginal", random_state=0).fit(X, Y2)
    assert np.isnan(est.joint_leakage_)
    with pytest.raises(ValueError, match="protect"):
        ErasureMapper(protect="both").fit(X, Y)


# ---------------------------------------------------------------------- persistence
@pytest.mark.parametrize("protect", ["joint", "marginal"])
@pytest.mark.parametrize("make", ["erasure", "quantized"])
def test_save_load_round_trip_of_a_two_dimensional_fit(tmp_path, protect, make):
    if make == "erasure":
        X, Y = _xor_table()
        est = ErasureMapper(protect=protect, delta=0.2, random_state=0).fit(X, Y)
    else:
        X, Y = _ratings()
        Y = Y.astype(float)
        Y[::5, 0] = np.nan
        est = QuantizedPrivacyMapper(n_clusters=5, protect=protect, random_state=0).fit(X, Y)
    path = est.save(tmp_path / "m.npz")
    with pytest.warns(privrelease.exceptions.PrivacyLeakWarning):
        back = privrelease.load(path)
    assert back.protect == protect
    assert len(back.classes_) == 2
    for c0, c1 in zip(est.classes_, back.classes_):
        np.testing.assert_array_equal(c0, c1)
    np.testing.assert_allclose(back.leakage_per_attribute_, est.leakage_per_attribute_)
    assert back.joint_leakage_ == est.joint_leakage_
    np.testing.assert_array_equal(back.attribute_tuples_, est.attribute_tuples_)
    np.testing.assert_array_equal(back.transform(X), est.transform(X))
    # a false per-attribute claim is refused
    est.leakage_per_attribute_ = est.leakage_per_attribute_ + 0.01
    with pytest.raises(ValueError, match="leakage_per_attribute_"):
        est.save(tmp_path / "bad.npz")


def test_mapping_table_names_the_prior_rows_of_a_two_dimensional_fit():
    X, Y = _xor_table()
    joint = ErasureMapper(protect="joint", delta=0.0, random_state=0).fit(X, Y)
    t = joint.mapping_table()
    cols = [c for c in t.columns if c.startswith("p(") and c != "p(release)"]
    assert cols == ["p((0, 0))", "p((0, 1))", "p((1, 0))", "p((1, 1))"]
    np.testing.assert_allclose(t[cols].sum(axis=1), 1.0)
    # x = 0 means a1 == a2: the pairs (0, 0) and (1, 1), half each
    row = t[t["x"] == 0].iloc[0]
    assert row["p((0, 0))"] == pytest.approx(0.5) and row["p((0, 1))"] == 0.0
    marg = ErasureMapper(protect="marginal", delta=0.0, random_state=0).fit(X, Y)
    t = marg.mapping_table()
    assert [c for c in t.columns if c.startswith("p(") and c != "p(release)"] == ["p(0=0)", "p(0=1)",
                                                                                  "p(1=0)", "p(1=1)"]
    np.testing.assert_allclose(t[["p(0=0)", "p(0=1)"]].sum(axis=1), 1.0)  # each attribute's conditional
    assert (t["skew"] == "N").all()  # x says nothing about either attribute alone


def test_two_dimensional_y_refused_on_dask():
    dd = pytest.importorskip("dask.dataframe")
    X, Y = _xor_table()
    with pytest.raises(ValueError, match="2-D y .* not supported when X is a dask collection"):
        ErasureMapper().fit(dd.from_pandas(X, npartitions=2), Y)


def test_marginal_maximal_leakage_bounds_every_marginal():
    """Under Q' the conditional of row (i, a_i) is p_i(c_hat | a_i): its maximal leakage is >= each marginal's."""
    R, Y = _ratings()
    est = QuantizedPrivacyMapper(n_clusters=5, space="raw", delta=6.5, leakage="maximal_leakage",
                                 protect="marginal", random_state=0).fit(R, Y)
    assert est.leakage_per_attribute_.max() <= est.leakage_ + 1e-12
    assert est.leakage_per_attribute_.max() > 0  # the budget leaves some leakage to bound


def test_long_form_round_trip_through_ratings_frame_with_two_attributes():
    """RatingsFrame.fit(df) -> mapper.fit(rf.to_matrix(df), rf.align(labels)) -> rf.from_matrix(release)."""
    from privrelease.recommender import RatingsFrame

    R, Y = _ratings(n=200)
    rng = np.random.default_rng(5)
    users = np.array([f"user-{i:03d}" for i in rng.permutation(200)])
    items = 1000 + 7 * np.arange(R.shape[1])  # ids that are not column numbers
    r, c = np.nonzero(R)
    df = pd.DataFrame({"who": users[r], "what": items[c], "stars": R[r, c]}).sample(frac=1.0, random_state=0)
    labels = pd.DataFrame({"gender": Y[:, 0], "age": Y[:, 1]}, index=users).iloc[::2]  # half disclosed
    rf = RatingsFrame("who", "what", "stars").fit(df)
    X = rf.to_matrix(df)
    # no user, item or rating lost, ids kept
    back = rf.from_matrix(X)
    key = ["who", "what"]
    pd.testing.assert_frame_equal(back.sort_values(key).reset_index(drop=True),
                                  df.sort_values(key).reset_index(drop=True), check_dtype=False)
    y = rf.align(labels)
    assert y.shape == (200, 2) and (y == -1).all(axis=1).sum() == 100
    est = QuantizedPrivacyMapper(n_clusters=4, protect="marginal", random_state=0).fit(X, y)
    assert est.n_labeled_ == 100 and [list(cl) for cl in est.classes_] == [[0, 1], [0, 1, 2]]
    released = est.transform(X)
    long = rf.from_matrix(released)
    assert set(long["who"]) <= set(users) and set(long["what"]) <= set(items)
    # the long release is exactly the released matrix: every released rating kept, under its own ids
    assert (rf.to_matrix(long) != released).nnz == 0
    assert len(long) == released.nnz


def test_refined_output_points_keep_the_stacked_marginal_prior():
    R, Y = _ratings()
    est = QuantizedPrivacyMapper(n_clusters=5, metric="sqeuclidean", max_leakage=0.02, n_refine=2,
                                 protect="marginal", random_state=0).fit(R, Y)
    assert est.prior_.shape[0] == 2 + 3
    assert est.leakage_ <= 0.02 + 1e-6
    assert np.mean(est.leakage_per_attribute_) == pytest.approx(est.leakage_, abs=1e-9)
