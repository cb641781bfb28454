"""The bad-input catalogue: every bad input of the public API, the error it gets, and docs/bad_inputs.md.

Each row calls the function for real and asserts the exception type and that
the message quotes the offending value. ``docs/bad_inputs.md`` is rendered from
these rows and a test checks it is up to date, so the document cannot go
stale. Regenerate it with::

    .venv/bin/python tests/faults/test_bad_inputs.py --write
"""

import atexit
import pathlib
import re
import shutil
import sys
import tempfile
import warnings

import numpy as np
import scipy.sparse as sp
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "bad_inputs.md"
#: numpy 2's scalar reprs (np.float64(1.1), np.int64(1), np.True_, np.str_('a')): a message shows the plain value
NUMPY_REPR = re.compile(r"\bnp\.(?:(?:(?:u?int|float|complex)\d+|bool_?|str_|bytes_|void|longdouble|clongdouble|"
                        r"datetime64|timedelta64)\(|True_|False_)")

PRIOR = np.array([[0.4, 0.1], [0.1, 0.4]])
D2 = 1.0 - np.eye(2)
X_SMALL = np.array([[5.0, 0, 1], [4, 1, 0], [0, 5, 5], [1, 4, 5]])
Y_SMALL = np.array([0, 0, 1, 1])


_CREATED = []  # temporary folders of the rows, removed when the process ends (pytest or --write)


def _tempdir(prefix=None):
    folder = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    _CREATED.append(folder)
    return folder


@atexit.register
def _remove_tempdirs():
    for folder in _CREATED:
        shutil.rmtree(folder, ignore_errors=True)


def _fitted_mapper():
    from privrelease.mappers import QuantizedPrivacyMapper

    return QuantizedPrivacyMapper(n_clusters=2, delta=5.0, space="raw", random_state=0).fit(X_SMALL, Y_SMALL)


def _pickle_file():
    import pickle

    path = _tempdir() / "mapper.npz"
    path.write_bytes(pickle.dumps({"not": "a mapper"}))
    return path


def _text_file():
    path = _tempdir() / "mapper.npz"
    path.write_text("hello")
    return path


def _out_dir(kind):
    """A temporary folder (prefix ``badinput-``, shown as ``<tmpdir>``) for the output-folder rows."""
    base = _tempdir(prefix="badinput-")
    if kind == "file":
        (base / "a_file").write_text("x")
        return base / "a_file"
    if kind == "under_file":
        (base / "a_file").write_text("x")
        return base / "a_file" / "out"
    out = base / "out"
    out.mkdir()
    if kind == "report":
        (out / "report.md").write_text("earlier")
    if kind == "symlink":
        (base / "outside.md").write_text("precious")
        (out / "report.md").symlink_to(base / "outside.md")
    return out


def _bad_file(name, text):
    """A file under a temporary folder (prefix ``badinput-``, shown as ``<tmpdir>``)."""
    base = _tempdir(prefix="badinput-")
    (base / name).write_text(text)
    return base / name


def _bytes_file(name, data):
    """A file of these bytes under a temporary folder (as :func:`_bad_file`)."""
    path = _bad_file(name, "")
    path.write_bytes(data)
    return path


def _rating_files():
    """A rating file and a users file (columns user, sex) for the ratings_file experiment."""
    return {"path": str(_bad_file("r.csv", "user,item,rating\n1,1,5\n2,1,3\n")),
            "users_path": str(_bad_file("u.csv", "user,sex\n1,F\n2,M\n"))}


def _bom_file():
    """A UTF-8 rating file starting with a byte-order mark."""
    path = _bad_file("r.csv", "")
    path.write_bytes(b"\xef\xbb\xbfuser,item,rating\n1,2,5\n")
    return path


def _fifo(name):
    """A FIFO (named pipe) under a temporary folder: reading it would block until someone writes."""
    import os

    base = _tempdir(prefix="badinput-")
    (base / name).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(base / name)
    return base / name


def _symlink_loop(name):
    base = _tempdir(prefix="badinput-")
    (base / name).symlink_to(base / name)
    return base / name


def _own_file_in_output():
    """A Report into a folder holding the user's own curve.csv (no earlier report), asked to write curve.csv."""
    import pandas as pd

    from privrelease.runner import Report

    folder = _bad_file("curve.csv", "my own data\n").parent
    Report(folder, title="t").table(pd.DataFrame({"a": [1]}), "curve")


def _report_name(name):
    """A Report into a new folder, asked to write the table ``name``.csv."""
    import pandas as pd

    from privrelease.runner import Report

    Report(_tempdir(prefix="badinput-") / "out", title="t").csv(pd.DataFrame({"a": [1]}), name)


def _dask_columns_unknown():
    import dask.array as da

    X = da.from_array(X_SMALL, chunks=(2, 3))
    return X[:, da.from_array(np.ones(3, dtype=bool), chunks=3)]


def _ml100k_folder(data):
    """A MovieLens 100k folder whose u.data is ``data`` (u.user and u.item well formed)."""
    folder = _bad_file("u.data", data).parent
    (folder / "u.user").write_text("1|24|M|technician|85711\n")
    (folder / "u.item").write_text("1|Toy Story (1995)\n")
    return folder


def _ml100k_user(line):
    """A MovieLens 100k folder whose u.user is ``line`` (u.data and u.item well formed)."""
    folder = _ml100k_folder("1\t1\t5\t881250949\n")
    (folder / "u.user").write_text(line)
    return folder


def _long_form_ratings():
    """The ratings of ``_ratings_and_labels`` in long form with MovieLens' column names (numeric ids)."""
    import pandas as pd

    coo = sp.coo_matrix(_ratings_and_labels()[0])
    return pd.DataFrame({"userId": coo.row + 1, "movieId": coo.col + 1, "rating": coo.data})


def _ambiguous_ratings():
    """A table with user and item columns whose ids 1-3 are also ratings: a tiny long form, or a 3-item matrix."""
    import pandas as pd

    return pd.DataFrame({"user": [1, 1, 2, 2, 3], "item": [1, 2, 1, 3, 2], "rating": [5, 3, 4, 1, 2]})


def _surprise_trainset():
    import pandas as pd
    import surprise

    df = pd.DataFrame({"user": [1, 2], "item": [1, 1], "rating": [5, 3]})
    return surprise.Dataset.load_from_df(df, surprise.Reader(rating_scale=(1, 5))).build_full_trainset()


def _ratings_and_labels():
    rng = np.random.default_rng(0)
    R = sp.csr_matrix(rng.integers(1, 6, size=(20, 6)).astype(float))
    return R, np.array([0, 1] * 10)


def _ratings_frame_empty():
    import pandas as pd

    from privrelease.recommender import RatingsFrame

    return RatingsFrame().fit(pd.DataFrame({"user": [], "item": [], "rating": []}))


def _ratings_frame_two_rating_columns():
    import pandas as pd

    from privrelease.recommender import RatingsFrame

    df = pd.DataFrame({"user": ["a", "b"], "item": [1, 1], "rating": [4.0, 3.0]})
    return RatingsFrame().fit(pd.concat([df, df[["rating"]]], axis=1))


def _swapped_attribute_columns():
    import pandas as pd

    from privrelease.evaluation import attribute_targets

    train = pd.DataFrame({"a": [0, 1], "b": [1, 0]})
    return attribute_targets(train, train[["b", "a"]])


def _align(values):
    """``RatingsFrame.align(values)`` on a frame of users ``'a'`` and ``'b'``."""
    import pandas as pd

    from privrelease.recommender import RatingsFrame

    rf = RatingsFrame().fit(pd.DataFrame({"user": ["a", "b"], "item": [1, 1], "rating": [4.0, 3.0]}))
    return rf.align(values)


def _align_repeated_user():
    """``RatingsFrame.align`` given a Series that names user ``'a'`` twice."""
    import pandas as pd

    return _align(pd.Series([0, 1], index=["a", "a"]))


def _misaligned_labels():
    """A mapper fitted on ratings indexed a-d and labels indexed d-a (rows are paired by position)."""
    import pandas as pd

    from privrelease.mappers import QuantizedPrivacyMapper

    X, y = pd.DataFrame(X_SMALL, index=list("abcd")), pd.Series(Y_SMALL, index=list("dcba"))
    return QuantizedPrivacyMapper(n_clusters=2).fit(X, y)


def _ratings_frame_fit(users):
    """``RatingsFrame().fit`` on two ratings by ``users``, items 1 and 2."""
    import pandas as pd

    from privrelease.recommender import RatingsFrame

    return RatingsFrame().fit(pd.DataFrame({"user": pd.Series(users, dtype=object), "item": [1, 2],
                                            "rating": [4.0, 3.0]}))


def _accountant_of(population):
    """A PrivacyAccountant holding one release of ``population`` (two individuals)."""
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant()
    acc.spend(0.1, population=population, individual_epsilons=[0.1, 0.05])
    return acc


def _catalogue():
    """Rows ``(area, call, thunk, exception type, text the message must contain)``."""
    from privrelease import _persistence
    from sklearn.preprocessing import FunctionTransformer

    from privrelease.auctions import (DCLEF, DCLEFEstimator, fair_inner_product, ghosh_roth, optimal_dclef,
                                      privacy_index)
    from privrelease.contracts import BiasedLaplaceMechanism, design_contract, design_menu
    from privrelease.datasets import load_movielens_100k, load_ratings_csv, make_ratings
    from privrelease.evaluation import check_privacy_grid, evaluate_attacks, lowest_rmse_within, rmse_cost
    from privrelease.exceptions import InfeasibleBudgetError
    import pandas as pd

    from privrelease.mappers import ErasureMapper, QuantizedPrivacyMapper, _dask
    from privrelease.mapping import (empirical_prior, erasure_alphabet, erasure_distortion, leakage,
                                     privacy_distortion_curve, solve_mapping, squared_euclidean_distortion)
    from privrelease.noise import Laplace, VectorLaplace, laplace_noise
    from privrelease.recommender import SurpriseRecommender
    from privrelease.regression import (TruthfulRegressionMechanism, brier_payment, parameter_schedule,
                                        ridge_sensitivity)
    from privrelease.runner import (OutputFolderError, ParameterTypeError, PipelineError, check_run, load_pipeline,
                                    prepare_output_folder)
    from privrelease.utils import check_number, check_private_labels, check_random_source, check_rating_matrix

    m = _fitted_mapper()
    rows = [
        # --- mapping engine
        ("mapping", "solve_mapping(prior=[[0.5, 0.6], [0, 0]], d, 0.5)",
         lambda: solve_mapping([[0.5, 0.6], [0, 0]], D2, 0.5), ValueError, "1.1"),
        ("mapping", "solve_mapping(prior with a negative entry, d, 0.5)",
         lambda: solve_mapping([[0.6, -0.1], [0.1, 0.4]], D2, 0.5), ValueError, "-0.1"),
        ("mapping", "solve_mapping(prior, d of shape (3, 3), 0.5)",
         lambda: solve_mapping(PRIOR, 1 - np.eye(3), 0.5), ValueError, "3"),
        ("mapping", "solve_mapping(prior, d with a negative entry, 0.5)",
         lambda: solve_mapping(PRIOR, [[0, -1.0], [1, 0]], 0.5), ValueError, "-1"),
        ("mapping", "solve_mapping(prior, d, delta=-0.1)",
         lambda: solve_mapping(PRIOR, D2, -0.1), ValueError, "-0.1"),
        ("mapping", "solve_mapping(prior, d + 1, delta=0.5) (below the smallest feasible distortion)",
         lambda: solve_mapping(PRIOR, D2 + 1, 0.5), InfeasibleBudgetError, "delta=0.5"),
        ("mapping", "solve_mapping(prior, d, delta='0.5')",
         lambda: solve_mapping(PRIOR, D2, "0.5"), TypeError, "'0.5'"),
        ("mapping", "solve_mapping(prior, d) (neither delta nor max_leakage)",
         lambda: solve_mapping(PRIOR, D2), ValueError, "delta=None"),
        ("mapping", "solve_mapping(prior, d, 0.5, max_leakage=0.1) (both)",
         lambda: solve_mapping(PRIOR, D2, 0.5, max_leakage=0.1), ValueError, "max_leakage=0.1"),
        ("mapping", "solve_mapping(prior, d, 0.5, solver='gurobi')",
         lambda: solve_mapping(PRIOR, D2, 0.5, solver="gurobi"), ValueError, "'gurobi'"),
        ("mapping", "solve_mapping(prior, d, 0.5, leakage='entropy')",
         lambda: solve_mapping(PRIOR, D2, 0.5, leakage="entropy"), ValueError, "'entropy'"),
        ("mapping", "solve_mapping(prior, d, 0.5, tol=0)",
         lambda: solve_mapping(PRIOR, D2, 0.5, tol=0), ValueError, "0"),
        ("mapping", "solve_mapping(prior, d, max_leakage=-1)",
         lambda: solve_mapping(PRIOR, D2, max_leakage=-1), ValueError, "-1"),
        ("mapping", "solve_mapping(prior, d, 0.5, warm_start=np.eye(3))",
         lambda: solve_mapping(PRIOR, D2, 0.5, warm_start=np.eye(3)), ValueError, "(3, 3)"),
        ("mapping", "solve_mapping(prior, d, 0.5, warm_start=[[1, nan], [0, 1]])",
         lambda: solve_mapping(PRIOR, D2, 0.5, warm_start=[[1.0, np.nan], [0.0, 1.0]]), ValueError, "nan at (0, 1)"),
        ("mapping", "solve_mapping(prior, d, 0.5, warm_start=[[1.5, -0.5], [0, 1]])",
         lambda: solve_mapping(PRIOR, D2, 0.5, warm_start=[[1.5, -0.5], [0.0, 1.0]]), ValueError, "-0.5 at (0, 1)"),
        ("mapping", "solve_mapping(prior=[[0.5], [0.5]], d=[[0, 1]], 0.5) (k = 1)",
         lambda: solve_mapping([[0.5], [0.5]], [[0.0, 1.0]], 0.5), ValueError, "(2, 1)"),
        ("mapping", "solve_mapping(prior=[[0.5, 0.5]], d, 0.5) (|A| = 1)",
         lambda: solve_mapping([[0.5, 0.5]], D2, 0.5), ValueError, "(1, 2)"),
        ("mapping", "solve_mapping(prior, sparse d storing (0, 0) twice, 0.5)",
         lambda: solve_mapping(PRIOR, sp.coo_array(([0.0, 1.0, 1.0], ([0, 0, 1], [0, 0, 1])), shape=(2, 2)), 0.5),
         ValueError, "(0, 0)"),
        ("mapping", "solve_mapping(prior, sparse d with a NaN entry, 0.5)",
         lambda: solve_mapping(PRIOR, sp.csr_array(np.array([[np.nan, 1.0], [1.0, 0.0]])), 0.5), ValueError,
         "nan"),
        ("mapping", "solve_mapping(prior, sparse d storing nothing in row 1, 0.5)",
         lambda: solve_mapping(PRIOR, sp.csr_array(([0.0], ([0], [0])), shape=(2, 2)), 0.5),
         InfeasibleBudgetError, "row 1"),
        ("mapping", "solve_mapping(prior, sparse d, 0.5, solver='fast')",
         lambda: solve_mapping(PRIOR, sp.csr_array(D2), 0.5, solver="fast"), ValueError, "'fast'"),
        ("mapping", "privacy_distortion_curve(prior, d, deltas=[-0.1, 0.5])",
         lambda: privacy_distortion_curve(PRIOR, D2, [-0.1, 0.5]), ValueError, "-0.1"),
        ("mapping", "privacy_distortion_curve(prior, d, deltas='abc')",
         lambda: privacy_distortion_curve(PRIOR, D2, "abc"), TypeError, "'abc'"),
        ("mapping", "leakage(prior, mapping=[[0.5, 0.6], [0, 1]])",
         lambda: leakage(PRIOR, [[0.5, 0.6], [0, 1]]), ValueError, "1.1"),
        ("mapping", "leakage(prior, kind='entropy')",
         lambda: leakage(PRIOR, kind="entropy"), ValueError, "'entropy'"),
        ("mapping", "empirical_prior([0, 1], [0, 1, 1])",
         lambda: empirical_prior([0, 1], [0, 1, 1]), ValueError, "3"),
        ("mapping", "empirical_prior([inf, 1], [0, 1])",
         lambda: empirical_prior([np.inf, 1.0], [0, 1]), ValueError, "inf"),
        ("mapping", "empirical_prior([-1, 2**63], [0, 1]) (numpy reads the list as float64)",
         lambda: empirical_prior([-1, 2**63], [0, 1]), ValueError, "got 9223372036854775808"),
        ("mapping", "erasure_alphabet(uint64 codes [[2**64 - 1, 0]])",
         lambda: erasure_alphabet(np.array([[2**64 - 1, 0]], dtype=np.uint64)), ValueError, "18446744073709551615"),
        ("mapping", "squared_euclidean_distortion([[0], [1e200]]) (squared distance overflows)",
         lambda: squared_euclidean_distortion([[0.0], [1e200]]), ValueError, "1e+200"),
        ("mapping", "squared_euclidean_distortion([['a'], ['b']])",
         lambda: squared_euclidean_distortion([["a"], ["b"]]), TypeError, "'a'"),
        ("mapping", "privacy_distortion_curve(prior, d, [0.1, 0.2], n_jobs=2.5)",
         lambda: privacy_distortion_curve(PRIOR, D2, [0.1, 0.2], n_jobs=2.5), TypeError, "2.5"),
        ("mapping", "squared_euclidean_distortion([[0], [1]], [[nan]])",
         lambda: squared_euclidean_distortion([[0.0], [1.0]], [[np.nan]]), ValueError, "centers_out"),
        ("mapping", "erasure_distortion([[1, 2]], [[-2, 1]]) (an output code below -1)",
         lambda: erasure_distortion([[1, 2]], [[-2, 1]]), ValueError, "-2"),
        ("mapping", "erasure_alphabet(scipy sparse codes)",
         lambda: erasure_alphabet(sp.csr_matrix([[1, 2]])), TypeError, "csr_matrix"),
        ("mapping", "leakage(prior, mapping=[['0.5', '0.5'], ['0.5', '0.5']])",
         lambda: leakage(PRIOR, [["0.5", "0.5"], ["0.5", "0.5"]]), TypeError, "strings"),
        # --- mappers
        ("mappers", "QuantizedPrivacyMapper().fit(DataFrame X indexed a-d, Series y indexed d-a)",
         _misaligned_labels, ValueError, "'d'"),
        ("mappers", "QuantizedPrivacyMapper(n_clusters=0).fit(X, y)",
         lambda: QuantizedPrivacyMapper(n_clusters=0).fit(X_SMALL, Y_SMALL), ValueError, "0"),
        ("mappers", "QuantizedPrivacyMapper(delta=-1).fit(X, y)",
         lambda: QuantizedPrivacyMapper(delta=-1).fit(X_SMALL, Y_SMALL), ValueError, "-1"),
        ("mappers", "QuantizedPrivacyMapper(metric='cosine').fit(X, y)",
         lambda: QuantizedPrivacyMapper(metric="cosine").fit(X_SMALL, Y_SMALL), ValueError, "'cosine'"),
        ("mappers", "QuantizedPrivacyMapper(delta=1, max_leakage=0.1).fit(X, y)",
         lambda: QuantizedPrivacyMapper(delta=1.0, max_leakage=0.1, space="raw").fit(X_SMALL, Y_SMALL),
         ValueError, "max_leakage"),
        ("mappers", "QuantizedPrivacyMapper(delta=0.01, space='raw').fit(X, y) (budget below quantization)",
         lambda: QuantizedPrivacyMapper(n_clusters=1, delta=0.01, space="raw").fit(X_SMALL, Y_SMALL),
         InfeasibleBudgetError, "delta=0.01"),
        ("mappers", "QuantizedPrivacyMapper().fit(X, None)",
         lambda: QuantizedPrivacyMapper().fit(X_SMALL, None), ValueError, "None"),
        ("mappers", "QuantizedPrivacyMapper().fit(X, [-1, -1, -1, -1]) (nobody labeled)",
         lambda: QuantizedPrivacyMapper().fit(X_SMALL, [-1, -1, -1, -1]), ValueError, "no labeled users"),
        ("mappers", "QuantizedPrivacyMapper().fit(X, [1, 1, 1, 1]) (one class)",
         lambda: QuantizedPrivacyMapper().fit(X_SMALL, [1, 1, 1, 1]), ValueError, "single class"),
        ("mappers", "QuantizedPrivacyMapper().fit(X with NaN, y)",
         lambda: QuantizedPrivacyMapper().fit(np.where(X_SMALL == 0, np.nan, X_SMALL), Y_SMALL),
         ValueError, "NaN"),
        ("mappers", "QuantizedPrivacyMapper().fit(X, y of length 3)",
         lambda: QuantizedPrivacyMapper().fit(X_SMALL, Y_SMALL[:3]), ValueError, "3"),
        ("mappers", "QuantizedPrivacyMapper().fit(X, 2-D y of shape (3, 2)) (X has 4 users)",
         lambda: QuantizedPrivacyMapper().fit(X_SMALL, np.column_stack([Y_SMALL, Y_SMALL])[:3]), ValueError,
         "3 rows"),
        ("mappers", "fitted.transform(X with 5 columns)",
         lambda: m.transform(np.zeros((2, 5))), ValueError, "5 features"),
        ("mappers", "fitted.transform(X of dtype bool) (fitted on ratings 1-5)",
         lambda: m.transform(X_SMALL > 0), ValueError, "dtype bool"),
        ("mappers", "QuantizedPrivacyMapper().fit(a surprise Trainset, y)",
         lambda: QuantizedPrivacyMapper().fit(_surprise_trainset(), [0, 1]), TypeError, "Trainset"),
        ("mappers", "QuantizedPrivacyMapper().transform(X) (not fitted)",
         lambda: QuantizedPrivacyMapper().transform(X_SMALL), ValueError, "not fitted"),
        ("mappers", "QuantizedPrivacyMapper(n_clusters=True).fit(X, y)",
         lambda: QuantizedPrivacyMapper(n_clusters=True).fit(X_SMALL, Y_SMALL), ValueError, "Got True"),
        ("mappers", "QuantizedPrivacyMapper().fit(X, y, sample_weight=[1e308] * n)",
         lambda: QuantizedPrivacyMapper().fit(X_SMALL, Y_SMALL, sample_weight=np.full(Y_SMALL.size, 1e308)),
         ValueError, "overflows"),
        ("mappers", "ErasureMapper().fit(DataFrame of sparse columns, y)",
         lambda: ErasureMapper().fit(pd.DataFrame.sparse.from_spmatrix(sp.csr_matrix(X_SMALL)), Y_SMALL),
         TypeError, "X.sparse.to_dense()"),
        ("mappers", "ErasureMapper().fit(a sparse matrix of shape (2**16, 2**15), y) (16 GiB dense)",
         lambda: ErasureMapper().fit(sp.csr_matrix((2**16, 2**15)), np.zeros(2**16)), TypeError, "do not densify"),
        ("mappers", "QuantizedPrivacyMapper().fit(DataFrame with two columns named 'a', y)",
         lambda: QuantizedPrivacyMapper().fit(pd.DataFrame(X_SMALL, columns=["a", "b", "a"]), Y_SMALL), ValueError,
         "'a' (2 times)"),
        ("mappers (dask)", "fitted.transform(dask array with 7 columns)",
         lambda: m.transform(_dask_zeros((4, 7))), ValueError, "7 features"),
        ("mappers (dask)", "QuantizedPrivacyMapper().fit(dask X of 4 rows, y of 3)",
         lambda: QuantizedPrivacyMapper().fit(_dask_zeros((4, 3)), np.zeros(3)), ValueError, "(3,)"),
        ("mappers (dask)", "QuantizedPrivacyMapper().fit(dask X, y, sample_weight=w)",
         lambda: QuantizedPrivacyMapper().fit(_dask_zeros((4, 3)), Y_SMALL, sample_weight=np.ones(4)),
         ValueError, "ndarray"),
        ("mappers (dask)", "_dask.transform_in_blocks(fitted, X, block_rows=0)",
         lambda: _dask.transform_in_blocks(m, X_SMALL, 0), ValueError, "0"),
        ("mappers (dask)", "_dask.transform_in_blocks(fitted, X, block_rows=2.5)",
         lambda: _dask.transform_in_blocks(m, X_SMALL, 2.5), TypeError, "2.5"),
        ("mappers (dask)", "fitted.transform(dask X whose columns were selected by a dask mask)",
         lambda: m.transform(_dask_columns_unknown()), ValueError, "compute_chunk_sizes"),
        # --- persistence
        ("persistence", "QuantizedPrivacyMapper().save(path) (not fitted)",
         lambda: QuantizedPrivacyMapper().save("/nonexistent/m.npz"), ValueError, "not fitted"),
        ("persistence", "QuantizedPrivacyMapper(random_state=np.random.default_rng(0)).fit(X, y).save(path)",
         lambda: QuantizedPrivacyMapper(n_clusters=2, delta=5.0, space="raw",
                                        random_state=np.random.default_rng(0)).fit(X_SMALL, Y_SMALL).save("/x.npz"),
         ValueError, "Generator"),
        ("persistence", "save({}, path)",
         lambda: _persistence.save({}, "/nonexistent/m.npz"), TypeError, "dict"),
        ("persistence", "load(a pickle file renamed .npz)",
         lambda: _persistence.load(_pickle_file()), ValueError, "pickle"),
        ("persistence", "load(a text file)",
         lambda: _persistence.load(_text_file()), ValueError, "b'hell'"),
        ("persistence", "load(a FIFO named mapper.npz)",
         lambda: _persistence.load(_fifo("mapper.npz")), ValueError, "not a regular file"),
        ("persistence", "load(a symbolic link to itself)",
         lambda: _persistence.load(_symlink_loop("mapper.npz")), FileNotFoundError, "loop of links"),
        # --- noise
        ("noise", "Laplace(epsilon=0)", lambda: Laplace(epsilon=0), ValueError, "0"),
        ("noise", "Laplace(epsilon=-1)", lambda: Laplace(epsilon=-1), ValueError, "-1"),
        ("noise", "Laplace(epsilon='1')", lambda: Laplace(epsilon="1"), TypeError, "'1'"),
        ("noise", "Laplace(epsilon=1, scale=1) (both)", lambda: Laplace(epsilon=1, scale=1), ValueError, "scale"),
        ("noise", "Laplace(epsilon=1, sensitivity=-1)", lambda: Laplace(epsilon=1, sensitivity=-1),
         ValueError, "-1"),
        ("noise", "laplace_noise(scale=-2)", lambda: laplace_noise(-2), ValueError, "-2"),
        ("noise", "laplace_noise(1, size=-1)", lambda: laplace_noise(1, size=-1), ValueError, "-1"),
        ("noise", "VectorLaplace(dimension=0, epsilon=1, sensitivity=1)",
         lambda: VectorLaplace(dimension=0, epsilon=1, sensitivity=1), ValueError, "0"),
        ("noise", "Laplace(epsilon=5e-324) (scale overflows)", lambda: Laplace(epsilon=5e-324), ValueError,
         "5e-324"),
        ("noise", "Laplace(epsilon=1).randomise('1')", lambda: Laplace(epsilon=1).randomise("1"), TypeError, "'1'"),
        ("noise", "laplace_noise(scale=1e308) (finite, but its draws overflow)",
         lambda: laplace_noise(1e308), ValueError, "1e+308"),
        ("noise", "Laplace(scale=1e308, snapping_bound=1.7e308) (the snapping grid overflows)",
         lambda: Laplace(scale=1e308, snapping_bound=1.7e308), ValueError, "1e+308"),
        # --- utils
        ("utils", "check_random_source(0).categorical([[0.5, nan]])",
         lambda: check_random_source(0).categorical(np.array([[0.5, np.nan]])), ValueError, "nan"),
        ("utils", "check_random_source(-1)", lambda: check_random_source(-1), ValueError, "-1"),
        ("utils", "check_random_source('seed')", lambda: check_random_source("seed"), TypeError, "'seed'"),
        ("utils", "check_number(float('nan'), 'epsilon')", lambda: check_number(float("nan"), "epsilon"),
         ValueError, "NaN"),
        ("utils", "check_number(5, 'p', high=1)", lambda: check_number(5, "p", high=1), ValueError, "5"),
        ("utils", "check_number(10**400, 'n')", lambda: check_number(10**400, "n"), ValueError, "1329 bits"),
        ("utils", "check_rating_matrix([[1, 2], [3]]) (ragged rows)",
         lambda: check_rating_matrix([[1.0, 2.0], [3.0]]), ValueError, "rectangular"),
        ("utils", "check_rating_matrix(a masked array with masked entries)",
         lambda: check_rating_matrix(np.ma.masked_array(np.ones((2, 2)), mask=[[1, 0], [0, 0]])), ValueError,
         "masked"),
        ("utils", "check_rating_matrix(X with 7 on a 1-5 scale, rating_range=(1, 5))",
         lambda: check_rating_matrix(np.array([[7.0, 0], [1, 2]]), rating_range=(1, 5)), ValueError, "7"),
        ("utils", "check_private_labels([0, 1], n_samples=3)",
         lambda: check_private_labels([0, 1], 3), ValueError, "2"),
        ("utils", "check_private_labels([0, 1, inf], n_samples=3)",
         lambda: check_private_labels([0.0, 1.0, np.inf], 3), ValueError, "inf"),
        ("utils", "check_private_labels(a masked array with masked entries, n_samples=3)",
         lambda: check_private_labels(np.ma.masked_array([0, 1, 1], mask=[0, 0, 1]), 3), ValueError, "1 masked"),
        ("utils", "check_private_labels(csr_matrix of shape (3, 1), n_samples=3)",
         lambda: check_private_labels(sp.csr_matrix(np.ones((3, 1))), 3), TypeError, "(3, 1)"),
        ("utils", "check_rating_matrix(complex X)", lambda: check_rating_matrix(np.array([[1 + 2j, 0], [3, 4]])),
         TypeError, "complex128"),
        # --- auctions
        ("auctions", "fair_inner_product([1, 2], [1, 1, 1], 1)",
         lambda: fair_inner_product([1, 2], [1, 1, 1], 1), ValueError, "3"),
        ("auctions", "fair_inner_product([-1, 2], [1, 1], 1)",
         lambda: fair_inner_product([-1, 2], [1, 1], 1), ValueError, "-1"),
        ("auctions", "fair_inner_product([1, 2], [1, 1], budget=-1)",
         lambda: fair_inner_product([1, 2], [1, 1], -1), ValueError, "-1"),
        ("auctions", "fair_inner_product([], [], 1)",
         lambda: fair_inner_product([], [], 1), ValueError, "n = 0"),
        ("auctions", "fair_inner_product([1, nan], [1, 1], 1)",
         lambda: fair_inner_product([1, np.nan], [1, 1], 1), ValueError, "nan"),
        ("auctions", "ghosh_roth([1, 2], 1, data_range=(1, 0))",
         lambda: ghosh_roth([1, 2], 1, data_range=(1, 0)), ValueError, "(1, 0)"),
        ("auctions", "optimal_dclef([1, 2], [1, 1], 1, method='magic')",
         lambda: optimal_dclef([1, 2], [1, 1], 1, method="magic"), ValueError, "'magic'"),
        ("auctions", "DCLEF([1, 1], [1, 0], (0, 1)).sample([0.5, 2.0]) (outside data_range)",
         lambda: DCLEF([1.0, 1.0], [1.0, 0.0], (0.0, 1.0)).sample([0.5, 2.0]), ValueError, "2"),
        ("auctions", "privacy_index([0.1, 0.2], [1, 1], threshold=-1)",
         lambda: privacy_index([0.1, 0.2], [1, 1], threshold=-1), ValueError, "-1"),
        ("auctions", "privacy_index(200 epsilons of 0.001, w, max_exact=10**6)",
         lambda: privacy_index(np.full(200, 1e-3), np.ones(200), max_exact=10**6), ValueError, "1000000"),
        ("auctions", "fair_inner_product(['1', '2'], [1, 1], 1)",
         lambda: fair_inner_product(["1", "2"], [1, 1], 1), TypeError, "'1'"),
        ("auctions", "DCLEFEstimator(data_range=(0, 1)).fit(X, y with NaN)",
         lambda: DCLEFEstimator(data_range=(0, 1)).fit(np.eye(2), np.array([0.5, np.nan])), ValueError,
         "position 1"),
        ("auctions", "DCLEFEstimator(data_range=(0, 1)).fit(X, y of strings)",
         lambda: DCLEFEstimator(data_range=(0, 1)).fit(np.eye(2), np.array(["a", "b"])), TypeError, "<U1"),
        ("auctions", "optimal_dclef([1, 2], [1.7e308, -1.7e308], 1) (sum |w_i| beyond float64)",
         lambda: optimal_dclef([1.0, 2.0], [1.7e308, -1.7e308], 1.0), ValueError, "1.7e+308"),
        # --- contracts
        ("contracts", "BiasedLaplaceMechanism([1.5, 0.5], b=1)",
         lambda: BiasedLaplaceMechanism([1.5, 0.5], b=1), ValueError, "1.5"),
        ("contracts", "BiasedLaplaceMechanism([1, 0.5], b=0)",
         lambda: BiasedLaplaceMechanism([1.0, 0.5], b=0), ValueError, "0"),
        ("contracts", "design_contract([1, 2], accuracy=-1)",
         lambda: design_contract([1.0, 2.0], -1), ValueError, "-1"),
        ("contracts", "design_contract([1, 2], 1, cost='cubic')",
         lambda: design_contract([1.0, 2.0], 1.0, cost="cubic"), ValueError, "'cubic'"),
        ("contracts", "design_menu(v_low=2, v_high=1, prob_high=0.5, accuracy=1)",
         lambda: design_menu(2.0, 1.0, 0.5, 1.0), ValueError, "2"),
        ("contracts", "design_contract([1, 2], accuracy=5e-324)",
         lambda: design_contract([1.0, 2.0], 5e-324), ValueError, "5e-324"),
        ("contracts", "design_contract([1, 2], 0.5, cost=lambda v, e: nan * v * e)",
         lambda: design_contract([1.0, 2.0], 0.5, cost=lambda v, e: np.nan * v * e), ValueError, "nan"),
        ("contracts", "design_contract([1, 2], 0.5, cost=lambda v, e: v * e * exp(-e)) (decreasing in eps)",
         lambda: design_contract([1, 2], 0.5, cost=lambda v, e: v * e * np.exp(-e)), ValueError, "decreasing in eps"),
        ("contracts", "design_contract([1, 2], 0.5, cost=lambda v, e: 1 + v * e) (not 0 at eps = 0)",
         lambda: design_contract([1, 2], 0.5, cost=lambda v, e: 1 + v * e), ValueError, "cost(1, 0) = 1, expected 0"),
        ("contracts", "design_contract([1e308], 0.02) (payments overflow float64)",
         lambda: design_contract([1e308], 0.02), ValueError, "1e+308"),
        ("contracts", "design_menu(1, 1e308, 0.5, 0.02) (payments overflow float64)",
         lambda: design_menu(1.0, 1e308, 0.5, 0.02), ValueError, "v_high = 1e+308"),
        ("contracts", "design_menu(1e-323, 1e-323, 0.5, 0.25) (subnormal valuations)",
         lambda: design_menu(1e-323, 1e-323, 0.5, 0.25), ValueError, "1e-323"),
        # --- regression
        ("regression", "TruthfulRegressionMechanism(epsilon=0).fit(X, y)",
         lambda: TruthfulRegressionMechanism(epsilon=0).fit(np.eye(3), [0.1, 0.2, 0.3]), ValueError, "0"),
        ("regression", "TruthfulRegressionMechanism(alpha=-1).fit(X, y)",
         lambda: TruthfulRegressionMechanism(alpha=-1).fit(np.eye(3), [0.1, 0.2, 0.3]), ValueError, "-1"),
        ("regression", "TruthfulRegressionMechanism().fit(X with a row of norm 2, y)",
         lambda: TruthfulRegressionMechanism().fit(np.array([[2.0, 0], [0, 0.5], [0.1, 0.1]]),
                                                   [0.1, 0.2, 0.3]), ValueError, "2"),
        ("regression", "TruthfulRegressionMechanism(payment_offset=1e308, payment_scale=1e308).fit(X, y) "
                       "(payments overflow float64)",
         lambda: TruthfulRegressionMechanism(payment_offset=1e308, payment_scale=1e308).fit(
             np.eye(3) / 2, [0.1, 0.2, 0.3]), ValueError, "1e+308"),
        ("regression", "parameter_schedule(10**6, 2, epsilon_constant=1e308, cost_threshold=1e308)",
         lambda: parameter_schedule(10**6, 2, epsilon_constant=1e308, cost_threshold=1e308), ValueError, "1e+308"),
        ("regression", "ridge_sensitivity(0, 1)", lambda: ridge_sensitivity(0, 1.0), ValueError, "0"),
        ("regression", "ridge_sensitivity(10, alpha=5e-324)", lambda: ridge_sensitivity(10, 5e-324), ValueError,
         "5e-324"),
        ("regression", "brier_payment([1.0, -1.0, 0.5], [1.0]) (one prediction for three outcomes)",
         lambda: brier_payment([1.0, -1.0, 0.5], [1.0]), ValueError, "(3,) and (1,)"),
        ("accounting", "PrivacyAccountant().individual_spent([1]) (an unhashable population)",
         lambda: _accountant_of("a").individual_spent([1]), TypeError, "[1]"),
        ("accounting", "PrivacyAccountant().individual_spent('b') (no release of population 'b')",
         lambda: _accountant_of("a").individual_spent(np.str_("b")), KeyError, "'b'"),
        # --- recommender
        ("recommender", "RatingsFrame().fit(df).align(Series with user 'a' twice)",
         _align_repeated_user, ValueError, "'a'"),
        ("recommender", "RatingsFrame().fit(df of users 'a', 'b').align({'x': 0}) (no id is a user)",
         lambda: _align({"x": 0}), ValueError, "'x'"),
        ("recommender", "RatingsFrame().fit(df with users 1 and True)",
         lambda: _ratings_frame_fit([1, True]), TypeError, "True"),
        ("recommender", "RatingsFrame().fit(df with list user ids)",
         lambda: _ratings_frame_fit([[1, 2], [3]]), TypeError, "[1, 2]"),
        ("recommender", "RatingsFrame().fit(df with two columns named 'rating')",
         _ratings_frame_two_rating_columns, ValueError, "'rating'"),
        ("recommender", "RatingsFrame().fit(a frame of no rating)",
         _ratings_frame_empty, ValueError, "0 rows"),
        ("recommender", "RatingsFrame().fit(df with users 'ann' and 'an\\x00n' (a NUL))",
         lambda: _ratings_frame_fit(["ann", "an\x00n"]), ValueError, "'an\\x00n'"),
        ("recommender", "RatingsFrame().fit(df with bytes users b'ann' and b'an\\x00n' (a NUL))",
         lambda: _ratings_frame_fit([b"ann", b"an\x00n"]), ValueError, "U+0000"),
        ("recommender", "SurpriseRecommender().fit(X holding a subnormal rating 1e-320)",
         lambda: SurpriseRecommender().fit(np.array([[5.0, 1e-320], [4.0, 3.0]])), ValueError, "1e-320"),
        ("mappers", "QuantizedPrivacyMapper(delta=10**400).fit(X, y)",
         lambda: QuantizedPrivacyMapper(delta=10**400).fit(X_SMALL, Y_SMALL), ValueError, "1329 bits"),
        ("mappers", "QuantizedPrivacyMapper().fit(a record array with fields a, b, c, y)",
         lambda: QuantizedPrivacyMapper().fit(np.rec.fromarrays(X_SMALL.T, names="a,b,c"), Y_SMALL), ValueError,
         "['a', 'b', 'c']"),
        ("mappers", "QuantizedPrivacyMapper().fit(csr_matrix of shape (4, 2**31 + 5), y)",
         lambda: QuantizedPrivacyMapper().fit(sp.csr_matrix((4, 2**31 + 5)), Y_SMALL), ValueError,
         "(4, 2147483653)"),
        ("recommender", "SurpriseRecommender(algo_params={'lr_all': 1e10}).fit(X) (diverges)",
         lambda: SurpriseRecommender(algo_params={"lr_all": 1e10}, random_state=0).fit(_ratings_and_labels()[0]),
         ValueError, "10000000000.0"),
        ("recommender", "SurpriseRecommender(algo_params={'biased': 'no'}).fit(X)",
         lambda: SurpriseRecommender(algo_params={"biased": "no"}).fit(_ratings_and_labels()[0]), TypeError, "'no'"),
        ("recommender", "SurpriseRecommender('KNNBaseline', algo_params={'neighbours': 3}).fit(X)",
         lambda: SurpriseRecommender("KNNBaseline", algo_params={"neighbours": 3}).fit(_ratings_and_labels()[0]),
         ValueError, "'neighbours'"),
        ("recommender", "SurpriseRecommender('KNNBaseline', algo_params={'sim_options': {'name': 'cos'}}).fit(X)",
         lambda: SurpriseRecommender("KNNBaseline", algo_params={"sim_options": {"name": "cos"}}).fit(
             _ratings_and_labels()[0]), ValueError, "'cos'"),
        ("recommender", "SurpriseRecommender().fit(a pivot table, NaN where unrated)",
         lambda: SurpriseRecommender().fit(np.where(X_SMALL == 0, np.nan, X_SMALL)), ValueError, "fillna(0)"),
        ("recommender", "SurpriseRecommender(rating_scale=(0, 10)).fit(X) (0 means 'not rated')",
         lambda: SurpriseRecommender(rating_scale=(0, 10)).fit(_ratings_and_labels()[0]), ValueError, "(0, 10)"),
        # --- evaluation / datasets
        ("evaluation", "InferenceAttack().fit(X, y of 0/1).score(X, y as strings '0'/'1')",
         _attack_scored_with_strings, TypeError, "'0'"),
        ("evaluation", "lowest_rmse_within()(cv_results_ whose every mean RMSE is NaN)",
         lambda: lowest_rmse_within()({"mean_test_neg_rmse": [np.nan, np.nan]}), ValueError, "[nan, nan]"),
        ("evaluation", "check_privacy_grid([0.5, 0.1])", lambda: check_privacy_grid([0.5, 0.1]), ValueError, "0.1"),
        ("evaluation", "check_privacy_grid([-1, 0])", lambda: check_privacy_grid([-1, 0]), ValueError, "-1"),
        ("evaluation", "attribute_targets(y_train with columns a, b, y_test with columns b, a)",
         _swapped_attribute_columns, ValueError, "['b', 'a']"),
        ("evaluation", "rmse_cost(mapper, R, a, n_jobs=0)",
         lambda: rmse_cost(FunctionTransformer(), *_ratings_and_labels(), n_jobs=0), ValueError, "0"),
        ("evaluation", "rmse_cost(mapper, R, a, rating_range=(5, 1))",
         lambda: rmse_cost(FunctionTransformer(), *_ratings_and_labels(), rating_range=(5, 1)), ValueError,
         "(5, 1)"),
        ("evaluation", "rmse_cost(mapper, long-form DataFrame with columns userId, movieId, rating, a)",
         lambda: rmse_cost(FunctionTransformer(), _long_form_ratings(), _ratings_and_labels()[1]), TypeError,
         "'userId'"),
        ("evaluation", "rmse_cost(mapper, DataFrame with columns user, item, rating: ids 1-3, ratings 1-5)",
         lambda: rmse_cost(FunctionTransformer(), _ambiguous_ratings(), [0, 1, 0, 1, 0]), TypeError,
         "cannot be told"),
        ("evaluation", "evaluate_attacks(a surprise Trainset, None, y, X, y)",
         lambda: evaluate_attacks(_surprise_trainset(), None, [0, 1], X_SMALL, Y_SMALL), TypeError,
         "X_train_original is a surprise Trainset"),
        ("datasets", "make_ratings(n_users=0)", lambda: make_ratings(0, 10), ValueError, "0"),
        ("datasets", "load_movielens_100k(folder whose u.data has a 5th field)",
         lambda: load_movielens_100k(_ml100k_folder("1\t1\t5\t881250949\t7\n")), ValueError, "5 field(s)"),
        ("datasets", "load_movielens_100k(folder whose u.data has a rating of 7)",
         lambda: load_movielens_100k(_ml100k_folder("1\t1\t7\t881250949\n")), ValueError, "7.0"),
        ("datasets", "load_ratings_csv(file whose row has more fields than the header)",
         lambda: load_ratings_csv(_bad_file("r.csv", "user,item,rating\n1,2,5,9,9\n")), ValueError, "5 fields"),
        ("datasets", "load_ratings_csv(file holding only a header)",
         lambda: load_ratings_csv(_bad_file("r.csv", "user,item,rating\n")), ValueError, "r.csv"),
        ("datasets", "load_ratings_csv(file with a rating 0, e.g. Book-Crossing's implicit 0)",
         lambda: load_ratings_csv(_bad_file("r.csv", "user,item,rating\n1,2,5\n1,3,0\n")), ValueError,
         "drop_ratings=[0]"),
        ("datasets", "load_ratings_csv(file with a user id holding a NUL)",
         lambda: load_ratings_csv(_bad_file("r.csv", "user,item,rating\nan\x00n,2,5\n")), ValueError, "'an\\x00n'"),
        ("datasets", "load_ratings_csv(file with a rating 'NA')",
         lambda: load_ratings_csv(_bad_file("r.csv", "user,item,rating\n1,2,NA\n")), ValueError, "'NA'"),
        ("datasets", "make_ratings(attribute_proportion=1.5)",
         lambda: make_ratings(10, 10, attribute_proportion=1.5), ValueError, "1.5"),
        ("datasets", "make_ratings(activity_skew=1e300)",
         lambda: make_ratings(10, 10, mean_ratings_per_user=5, activity_skew=1e300), ValueError, "1e+300"),
        ("datasets", "load_ratings_csv(file starting with a UTF-8 byte-order mark, encoding='latin-1')",
         lambda: load_ratings_csv(_bom_file(), encoding="latin-1"), ValueError, "'latin-1'"),
        ("datasets", "load_ratings_csv(a gzip-compressed file)",
         lambda: load_ratings_csv(_bytes_file("r.csv.gz", __import__("gzip").compress(b"user,item,rating\n1,2,5\n"))),
         ValueError, "gzip-compressed"),
        ("datasets", "load_ratings_csv(a UTF-16 file) (encoding='utf-8')",
         lambda: load_ratings_csv(_bytes_file("r.csv", "user,item,rating\n1,2,5\n".encode("utf-16"))), ValueError,
         "encoding='utf-16'"),
        ("datasets", "load_ratings_csv(file with a line of 9 MiB)",
         lambda: load_ratings_csv(_bytes_file("r.csv", b"user,item,rating\n" + b"u" * 9 * 2**20 + b",1,5\n")),
         ValueError, "8 MiB"),
        ("datasets", "load_ratings_csv(path, encoding='rot13') (a codec, not a text encoding)",
         lambda: load_ratings_csv(_bad_file("r.csv", "user,item,rating\n1,2,5\n"), encoding="rot13"), ValueError,
         "'rot13'"),
        ("datasets", "load_ratings_csv(file with a user id of 200,000 characters)",
         lambda: load_ratings_csv(_bad_file("r.csv", "user,item,rating\n" + "u" * 200_000 + ",1,5\n")), ValueError,
         "r.csv' line 2"),
        ("datasets", "load_movielens_100k(u.user with gender 'f')",
         lambda: load_movielens_100k(_ml100k_user("1|24|f|technician|85711\n")), ValueError, "gender 'f'"),
        ("datasets", "load_movielens_100k(folder whose u.data is a FIFO)",
         lambda: load_movielens_100k(_fifo("ml/u.data").parent), FileNotFoundError, "u.data [not a regular file]"),
        # --- command line (runner): each prints on one line with exit status 2 (tests/runner/test_cli_safety.py)
        ("cli", "run census_erasure.toml --set top=-1",
         lambda: check_run("census_erasure", {"top": -1}), PipelineError, "top = -1"),
        ("cli", "run contract_design.toml --set monte_carlo=-1",
         lambda: check_run("contract_design", {"monte_carlo": -1}), PipelineError, "monte_carlo = -1"),
        ("cli", "run contract_design.toml --set n_points=0",
         lambda: check_run("contract_design", {"n_points": 0}), PipelineError, "n_points = 0"),
        ("cli", "run contract_design.toml --set n_points='ten'",
         lambda: check_run("contract_design", {"n_points": "ten"}), ParameterTypeError, "'ten'"),
        ("cli", "run census_erasure.toml --set random_state='x'",
         lambda: check_run("census_erasure", {"random_state": "x"}), ParameterTypeError, "'x'"),
        ("cli", "run privacy_auction.toml --set n_users=1e9",
         lambda: check_run("privacy_auction", {"n_users": 1e9}), PipelineError, "cap 200000"),
        ("cli", "run synthetic_ratings.toml --set n_users=1e9",
         lambda: check_run("synthetic_ratings", {"n_users": 1e9}), PipelineError, "cap 50000"),
        ("cli", "run synthetic_ratings.toml --set quick='no'",
         lambda: check_run("synthetic_ratings", {"quick": "no"}), ParameterTypeError, "'no'"),
        ("cli", "run census_erasure.toml --set no_such_param=1",
         lambda: check_run("census_erasure", {"no_such_param": 1}), PipelineError, "no_such_param"),
        ("cli", "run contract_design.toml --set v_low=6 (above v_high = 5)",
         lambda: check_run("contract_design", {"v_low": 6.0}), PipelineError, "v_low = 6.0"),
        ("cli", "run contract_design.toml --set v_high=1e308",
         lambda: check_run("contract_design", {"v_high": 1e308}), PipelineError, "v_high = 1e+308"),
        ("cli", "run movielens_gender.toml --set path='/no/such/folder'",
         lambda: check_run("movielens_gender", {"path": "/no/such/folder"}), PipelineError, "/no/such/folder"),
        ("cli", "run ratings_file.toml (no --set path=...)",
         lambda: check_run("ratings_file", {}), PipelineError, "path is not set"),
        ("cli", "run ratings_file.toml --set attribute='gender' (users file columns: user, sex)",
         lambda: check_run("ratings_file", {**_rating_files(), "attribute": "gender"}), PipelineError,
         "column 'gender'"),
        ("cli", "run ratings_file.toml --set rating_range=[-10, 10]",
         lambda: check_run("ratings_file", {**_rating_files(), "attribute": "sex", "rating_range": [-10, 10]}),
         PipelineError, "holds 0"),
        ("cli", "run ratings_file.toml --set cuts={age=[30, 100]} (users aged 21 to 60)",
         lambda: check_run("ratings_file", {**_rating_files(), "users_path": str(_bad_file(
             "u.csv", "user,age\n1,21\n2,60\n")), "attribute": "age", "cuts": {"age": [30, 100]}}),
         PipelineError, "[30, 100]"),
        ("cli", "run ratings_file.toml (users file naming user 1 as '1' and '1.0')",
         lambda: check_run("ratings_file", {**_rating_files(), "users_path": str(_bad_file(
             "u.csv", "user,sex\n1,F\n2,M\n1.0,M\n")), "attribute": "sex"}), PipelineError, "'1.0'"),
        ("cli", "run ratings_file.toml (users file row with more fields than its header)",
         lambda: check_run("ratings_file", {**_rating_files(), "users_path": str(_bad_file(
             "u.csv", "user,city,sex\n1,Paris, France,F\n2,Lyon,M\n")), "attribute": "sex"}), PipelineError,
         "line 2"),
        ("cli", "run no/such/pipeline.toml",
         lambda: load_pipeline("no/such/pipeline.toml"), PipelineError, "no/such/pipeline.toml"),
        ("cli", "run <a file nesting 5000 arrays>",
         lambda: load_pipeline(_bad_file("deep.toml", 'experiment = "census_erasure"\n[params]\ntop = '
                                         + "[" * 5000 + "]" * 5000 + "\n")), PipelineError, "too deeply"),
        ("cli", "run P -o ''", lambda: prepare_output_folder(""), OutputFolderError, "''"),
        ("cli", "run P -o /", lambda: prepare_output_folder("/"), OutputFolderError, "'/'"),
        ("cli", "run P -o <a file>", lambda: prepare_output_folder(_out_dir("file")), OutputFolderError, "a_file"),
        ("cli", "run P -o <a path under a file> (unwritable)",
         lambda: prepare_output_folder(_out_dir("under_file")), OutputFolderError, "a_file"),
        ("cli", "run P -o <folder holding report.md>",
         lambda: prepare_output_folder(_out_dir("report")), OutputFolderError, "--overwrite"),
        ("cli", "run P -o <folder whose report.md links outside> --overwrite",
         lambda: prepare_output_folder(_out_dir("symlink"), overwrite=True), OutputFolderError, "report.md"),
        ("cli", "run P -o <a folder name of 300 characters>",
         lambda: prepare_output_folder("x" * 300), OutputFolderError, "File name too long"),
        ("cli", "run P -o <folder holding the user's own curve.csv, no report>",
         _own_file_in_output, OutputFolderError, "curve.csv"),
        ("cli", "run synthetic_ratings.toml --set n_jobs=0",
         lambda: check_run("synthetic_ratings", {"n_jobs": 0}), PipelineError, "(-1 = every core)"),
        ("runner", "Report(folder).csv(df, 'a' * 300)",
         lambda: _report_name("a" * 300), ValueError, "304 bytes long"),
        ("runner", "Report(folder).table(df, 'x\\n# heading')",
         lambda: _report_name("x\n# heading"), ValueError, "'\\n'"),
    ]
    return rows


def _dask_zeros(shape):
    import dask.array as da

    return da.zeros(shape, chunks=(2, shape[1]))


def run_row(thunk, exc_type):
    """Call ``thunk``; return the exception raised (AssertionError if none or of the wrong type)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            thunk()
        except exc_type as exc:
            return exc
        except Exception as exc:  # noqa: BLE001 - reported with its type
            raise AssertionError(f"expected {exc_type.__name__}, got {type(exc).__name__}: {exc}") from exc
    raise AssertionError(f"expected {exc_type.__name__}, nothing was raised")


def _excerpt(message, limit=150):
    text = " ".join(str(message).split())
    text = re.sub(r"'[^' ]*/mapper\.npz'", "'<tmpdir>/mapper.npz'", text)
    text = re.sub(r"'[^' ]*/badinput-[^/' ]*/", "'<tmpdir>/", text)
    text = re.sub(r"(?<![\w'])/[^ ']*/badinput-[^/' ]*/", "<tmpdir>/", text)
    text = re.sub(r"'[^' ]*/badinput-[^/' ]*'", "'<tmpdir>'", text)  # the folder itself, quoted
    # sets print in hash order: sort their items so the document is reproducible
    text = re.sub(r"\{('[^{}]*')\}", lambda mo: "{" + ", ".join(sorted(mo.group(1).split(", "))) + "}", text)
    text = text.replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render():
    """docs/bad_inputs.md from the catalogue (messages obtained by calling the functions)."""
    lines = [
        "# Bad inputs and the errors they get",
        "",
        "Every row below was produced by calling the function (see `tests/faults/test_bad_inputs.py`, which",
        "asserts each row and fails when this file is out of date; regenerate it with",
        "`.venv/bin/python tests/faults/test_bad_inputs.py --write`). Errors subclass `ValueError` or",
        "`TypeError` (`InfeasibleBudgetError` is a `ValueError` carrying `.smallest_feasible`;",
        "`NotFittedError` is both a `ValueError` and an `AttributeError`, `ComplexDataError` both a `TypeError`",
        "and a `ValueError`) and quote the value received.",
        "Solver failures (`SolverError`, a `RuntimeError`) are covered in `tests/faults/test_solver_faults.py`.",
        "The `cli` rows are what `privrelease run` checks before anything runs: it prints the message on one",
        "line and exits with status 2 (`--debug` shows the traceback); see `tests/runner/test_cli_safety.py`.",
        "",
        "| Area | Call | Exception | Message (excerpt) |",
        "|---|---|---|---|",
    ]
    for area, call, thunk, exc_type, _ in _catalogue():
        exc = run_row(thunk, exc_type)
        lines.append(f"| {area} | `{call.replace('|', '/')}` | `{type(exc).__name__}` | {_excerpt(exc)} |")
    lines.append("")
    return "\n".join(lines)


_ROWS = None


def _attack_scored_with_strings():
    from privrelease.evaluation import InferenceAttack

    X, y = _ratings_and_labels()
    y = np.asarray(y)
    return InferenceAttack(random_state=0).fit(X, y).score(X, np.where(y == 0, "0", "1"))


def _rows():
    global _ROWS
    if _ROWS is None:
        _ROWS = _catalogue()
    return _ROWS


@pytest.mark.parametrize("index", range(len(_catalogue())))
def test_bad_input_row(index):
    area, call, thunk, exc_type, must_mention = _rows()[index]
    exc = run_row(thunk, exc_type)
    message = str(exc)
    assert message, f"{call}: empty error message"
    assert must_mention in message, f"{call}: message does not mention {must_mention!r}: {message!r}"
    # a numpy scalar quoted with !r reads np.float64(1.1) under numpy 2, where the user wrote 1.1
    assert not NUMPY_REPR.search(message), f"{call}: message quotes a numpy repr: {message!r}"


def test_document_is_up_to_date():
    assert DOC.exists(), "docs/bad_inputs.md is missing: run tests/faults/test_bad_inputs.py --write"
    assert DOC.read_text() == render(), (
        "docs/bad_inputs.md is stale: regenerate it with .venv/bin/python tests/faults/test_bad_inputs.py --write"
    )


if __name__ == "__main__":
    text = render()
    if "--write" in sys.argv:
        DOC.parent.mkdir(exist_ok=True)
        DOC.write_text(text)
        print(f"wrote {DOC}")
    else:
        print(text)
