"""Dask execution for the mappers: out-of-core ``fit`` and lazy, block-wise ``transform``.

The mappers' ``fit`` and ``transform`` dispatch here when ``X`` is a dask
collection (:func:`is_dask_collection`): a row-chunked :class:`dask.array.Array`
whose blocks are ndarrays or ``scipy.sparse`` CSR matrices, or a
:class:`dask.dataframe.DataFrame` (one row per user).

``transform``
    Lazy: ``map_blocks`` / ``map_partitions`` apply the fitted mapper to every
    block; the result has the input's shape, chunking, block type and dtype.
    Each block draws its privacy randomness from its own source (eq. 21 of
    Salamatian et al. is applied row by row, so blocks are independent):

    * ``random_state=None`` -- every block reads the operating system's entropy
      on the worker that runs it (:class:`~privrelease.utils.SecureRandomSource`);
      nothing is seeded and nothing is shipped with the task graph.
    * an integer ``s`` -- block ``i`` uses the stream seeded by
      ``numpy.random.SeedSequence(s, spawn_key=(i,))`` (:func:`block_random_state`),
      so the release is reproducible and does not depend on which worker runs
      which block. :func:`transform_in_blocks` is the in-memory twin: with the
      same row blocks it returns exactly the same release.
    * a :class:`~privrelease.utils.SecureRandomSource` -- as ``None``.
    * a Generator or seeded RandomSource -- one integer is drawn from it
      (:meth:`RandomSource.spawn_seed`) when the graph is built and used as ``s``.

``fit`` (:class:`QuantizedPrivacyMapper`)
    Algorithm 2 needs (i) a quantizer (taste embedding + cluster centres) and
    (ii) the joint prior ``q(a, c)`` and the distortion of the lift, both sums
    over the labeled users. (i) is learnt in memory on a sample of at most
    ``sample_size`` labeled users, drawn block by block (k-means on a sample);
    (ii) is one pass over all blocks: every labeled user is assigned to her
    nearest centre and per-block sufficient statistics (class x cluster counts,
    summed distances to every output symbol, per-cluster item counts and rating
    sums, a histogram of profile lengths) are added up in a tree reduction.
    The convex program (19) is then solved on the aggregated prior. When the
    sample holds every labeled user, the result equals the in-memory ``fit``
    (same clustering, same counts; sums agree to rounding).

``fit`` (any other mapper, e.g. :class:`ErasureMapper`)
    The collection is computed and fitted in memory (categorical tables such as
    UCI Adult are small); ``transform`` is lazy as above.

References
----------
S. Salamatian et al., "Managing your Private and Public Data: Bringing down
Inference Attacks against your Privacy", Algorithm 2, eq. (19)-(21).
"""

import copy
import warnings

import numpy as np
import scipy.sparse as sp

from ..utils import SeededRandomSource, check_private_labels, check_random_source

__all__ = [
    "is_dask_collection",
    "block_random_state",
    "fit",
    "transform",
    "transform_in_blocks",
    "DEFAULT_SAMPLE_SIZE",
]

#: labeled users used to learn the quantizer when fitting on a dask collection
DEFAULT_SAMPLE_SIZE = 100_000


def is_dask_collection(X):
    """True for a dask array / dataframe / series (dask is imported only if ``X`` comes from it)."""
    module = type(X).__module__ or ""
    if not module.startswith("dask"):
        return False
    from dask.base import is_dask_collection as _is

    return bool(_is(X))


_is_dask_collection = is_dask_collection


# ----------------------------------------------------------------------------- seeding
def _base_seed(random_state):
    """None (secure, per block) or the integer every block seed is derived from."""
    if random_state is None or getattr(random_state, "secure", False):
        return None  # a secure source stays secure: every block reads its worker's entropy
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        check_random_source(random_state)  # refuses negative seeds with the usual message
        return int(random_state)
    return check_random_source(random_state).spawn_seed()


def block_random_state(random_state, block_index):
    """The random source of row block ``block_index`` of a block-wise transform.

    Parameters
    ----------
    random_state : None or int
        ``None``: ``None`` is returned and the block reads the operating
        system's entropy where it runs. An integer ``s``: a
        :class:`~privrelease.utils.SeededRandomSource` seeded with
        ``numpy.random.SeedSequence(s, spawn_key=(block_index,))`` -- streams of
        different blocks are statistically independent, and reproducible.
    block_index : int
        Position of the block along the rows (0, 1, ...).

    Returns
    -------
    None or SeededRandomSource
    """
    if random_state is None:
        return None
    seq = np.random.SeedSequence(int(random_state), spawn_key=(int(block_index),))
    return SeededRandomSource(np.random.Generator(np.random.PCG64(seq)))


def _with_source(mapper, source):
    m = copy.copy(mapper)  # shallow: fitted arrays are shared, only random_state differs
    m.random_state = source
    return m


# ----------------------------------------------------------------------------- transform
def _transform_block(block, mapper, seed, block_info=None):
    index = 0 if block_info is None else block_info[0]["chunk-location"][0]
    return _with_source(mapper, block_random_state(seed, index)).transform(block)


def _transform_partition(part, mapper, seed, partition_info=None):
    import pandas as pd

    index = 0 if partition_info is None else partition_info["number"]
    out = _with_source(mapper, block_random_state(seed, index)).transform(part)
    if not isinstance(out, pd.DataFrame):
        out = pd.DataFrame(out, index=part.index, columns=part.columns)
    if _is_erasure(mapper):
        return out  # erased cells are missing values: dtypes as in ErasureMapper.transform
    return out.astype(part.dtypes.to_dict())


def _is_erasure(mapper):
    return type(mapper).__name__ == "ErasureMapper"


def _array_meta(mapper, X):
    """dtype and meta of the released blocks of a dask array."""
    if _is_erasure(mapper):
        # ErasureMapper releases numeric input as float (NaN = erased), anything else as object
        dtype = np.dtype(np.float64) if X.dtype.kind in "fiub" else np.dtype(object)
        return dtype, np.empty((0, X.shape[1]), dtype=dtype)
    return X.dtype, X._meta


def _frame_meta(mapper, meta):
    """Empty dataframe with the released dtypes (ErasureMapper: nullable integers and booleans)."""
    if not _is_erasure(mapper):
        return meta
    import pandas as pd

    out = meta.copy()
    for col in out.columns:
        s = out[col]
        if pd.api.types.is_bool_dtype(s.dtype):
            out[col] = s.astype("boolean")
        elif pd.api.types.is_integer_dtype(s.dtype):
            out[col] = s.astype("Int64")
    return out


def _check_row_chunked(X, mapper):
    if X.ndim != 2:
        raise ValueError(f"expected a 2-D dask array of users x items, got {X.ndim} dimension(s)")
    n_features = getattr(mapper, "n_features_in_", None)
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(mapper).__name__} is expecting "
            f"{n_features} features as input"
        )
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})  # blocks must hold whole users (rows)
    return X


def transform(mapper, X):
    """Lazy block-wise release of a dask collection (see the module notes for seeding).

    Parameters
    ----------
    mapper : fitted QuantizedPrivacyMapper or ErasureMapper
    X : dask Array (dense or CSR blocks) or dask DataFrame

    Returns
    -------
    dask Array or DataFrame
        Same shape, chunking, block type and dtype as ``X``; nothing is computed.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(mapper)
    seed = _base_seed(mapper.random_state)
    import dask.array as da

    if isinstance(X, da.Array):
        X = _check_row_chunked(X, mapper)
        dtype, meta = _array_meta(mapper, X)
        return X.map_blocks(_transform_block, mapper, seed, dtype=dtype, meta=meta)
    if hasattr(X, "map_partitions") and hasattr(X, "columns"):
        n_features = getattr(mapper, "n_features_in_", None)
        if n_features is not None and len(X.columns) != n_features:
            raise ValueError(
                f"X has {len(X.columns)} features, but {type(mapper).__name__} is expecting "
                f"{n_features} features as input"
            )
        return X.map_partitions(_transform_partition, mapper, seed, meta=_frame_meta(mapper, X._meta))
    raise TypeError(
        f"expected a dask Array or a dask DataFrame of users x items, got {type(X).__name__}"
    )


def _row_bounds(n_rows, block_rows):
    if np.iterable(block_rows):
        sizes = [int(s) for s in block_rows]
        if sum(sizes) != n_rows:
            raise ValueError(f"block sizes {tuple(sizes)!r} add up to {sum(sizes)}, expected {n_rows} rows")
    else:
        b = int(block_rows)
        if b < 1:
            raise ValueError(f"block_rows must be a positive integer, got {block_rows!r}")
        sizes = [min(b, n_rows - s) for s in range(0, n_rows, b)]
    edges = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return list(zip(edges[:-1], edges[1:]))


def transform_in_blocks(mapper, X, block_rows):
    """In-memory twin of the dask ``transform``: same blocks, same seeds, same release.

    Parameters
    ----------
    mapper : fitted mapper
    X : {ndarray, sparse matrix}
    block_rows : int or sequence of int
        Rows per block (as ``chunks=(block_rows, ...)``) or the block sizes
        themselves (``dask_array.chunks[0]``).

    Returns
    -------
    X_released : same type, format and dtype as ``mapper.transform(X)``
    """
    seed = _base_seed(mapper.random_state)
    if sp.issparse(X) and X.format not in ("csr", "csc", "coo", "lil", "dok", "bsr", "dia"):
        raise TypeError(f"unsupported sparse format {X.format!r}")
    Xr = X.tocsr() if sp.issparse(X) else X
    parts = []
    for i, (start, stop) in enumerate(_row_bounds(X.shape[0], block_rows)):
        parts.append(_with_source(mapper, block_random_state(seed, i)).transform(Xr[start:stop]))
    if hasattr(parts[0], "iloc"):  # dataframes (e.g. ErasureMapper on a DataFrame)
        import pandas as pd

        return pd.concat(parts)
    if sp.issparse(X):
        out = sp.vstack(parts, format="csr")
        if isinstance(X, sp.sparray) and not isinstance(out, sp.sparray):
            out = sp.csr_array(out)
        return out.asformat(X.format) if X.format != "csr" else out
    return np.concatenate(parts, axis=0)


# ----------------------------------------------------------------------------- fit helpers
def _as_array(X):
    """A row-chunked dask array and the column names (dataframes), with known chunk sizes."""
    import dask.array as da

    columns = None
    if not isinstance(X, da.Array):
        if hasattr(X, "to_dask_array") and hasattr(X, "columns"):
            columns = list(X.columns)
            X = X.to_dask_array(lengths=True)
        else:
            raise TypeError(f"expected a dask Array or DataFrame of users x items, got {type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"expected a 2-D dask array of users x items, got {X.ndim} dimension(s)")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X, columns


def _y_blocks(y, X):
    """Split ``y`` along the row chunks of ``X``: a list of arrays or delayed arrays."""
    import dask.array as da

    if y is None:
        raise ValueError("fit needs y, the private attribute (-1 for undisclosed); got None")
    n = X.shape[0]
    if hasattr(y, "to_dask_array"):
        y = y.to_dask_array(lengths=True)
    if isinstance(y, da.Array):
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must have shape ({n},) to match X, got {y.shape}")
        return list(y.rechunk((X.chunks[0],)).to_delayed().ravel())
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must have shape ({n},) to match X, got {y.shape}")
    edges = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    return [y[a:b] for a, b in zip(edges[:-1], edges[1:])]


def _labeled(yb):
    yb = np.asarray(yb)
    y, mask = check_private_labels(yb, yb.shape[0])
    return y, mask


def _label_summary(yb):
    y, mask = _labeled(yb)
    return int(mask.sum()), np.unique(y[mask])


def _take_rows(Xb, idx):
    return Xb.tocsr()[idx] if sp.issparse(Xb) else np.asarray(Xb)[idx]


def _sample_block(Xb, yb, n_take, seed, index):
    y, mask = _labeled(yb)
    rows = np.flatnonzero(mask)
    if n_take < rows.size:
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(index,))))
        rows = np.sort(rng.choice(rows, size=n_take, replace=False))
    return _take_rows(Xb, rows), y[rows]


def _tree_reduce(parts, combine):
    from dask import delayed

    parts = list(parts)
    while len(parts) > 1:
        parts = [delayed(combine)(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    return parts[0]


def _vstack(blocks):
    if any(sp.issparse(b) for b in blocks):
        return sp.vstack([sp.csr_matrix(b) for b in blocks], format="csr")
    return np.concatenate([np.asarray(b) for b in blocks], axis=0)


# ----------------------------------------------------------------------------- statistics pass
def _block_stats(Xb, yb, sub, classes, n_out):
    """Sufficient statistics of one block for the prior, costs and profiles (labeled users only)."""
    y, mask = _labeled(yb)
    rows = np.flatnonzero(mask)
    k = sub.n_clusters_
    n_items = sub.n_features_in_
    Xl = _take_rows(Xb, rows)
    a_idx = np.searchsorted(classes, y[rows])
    stats = {
        "counts": np.zeros((classes.size, k)),
        "dist_sum": np.zeros((k, n_out)),
        "own_max": np.full(1, -np.inf),
        "own_sum": np.zeros(1),
        "size": np.zeros(k),
        "item_counts": np.zeros((k, n_items)),
        "item_sums": np.zeros((k, n_items)),
        "length_hist": np.zeros((k, n_items + 1)),
        "lo_hi_absmin": np.array([np.inf, -np.inf, np.inf]),
    }
    if rows.size == 0:
        return stats
    E = sub._embed(Xl)
    D = sub._distances(E, sub._output_points())
    labels = sub._distances(E, sub.cluster_centers_).argmin(axis=1)
    n = rows.size
    np.add.at(stats["counts"], (a_idx, labels), 1.0)
    onehot = sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(k, n))
    stats["dist_sum"] = np.asarray(onehot @ D)
    own = D[np.arange(n), labels]
    stats["own_max"][0] = own.max()
    stats["own_sum"][0] = own.sum()
    stats["size"] = np.bincount(labels, minlength=k).astype(np.float64)
    Xs = Xl.tocsr().astype(np.float64) if sp.issparse(Xl) else sp.csr_matrix(np.asarray(Xl, dtype=np.float64))
    Xs.eliminate_zeros()
    pattern = Xs.copy()
    pattern.data = np.ones_like(pattern.data)
    stats["item_counts"] = np.asarray((onehot @ pattern).todense())
    stats["item_sums"] = np.asarray((onehot @ Xs).todense())
    n_u = np.diff(Xs.indptr)
    np.add.at(stats["length_hist"], (labels, n_u), 1.0)
    if Xs.data.size:
        stats["lo_hi_absmin"] = np.array([Xs.data.min(), Xs.data.max(), np.abs(Xs.data).min()])
    return stats


def _combine_stats(s, t):
    out = {}
    for key in s:
        if key == "own_max":
            out[key] = np.maximum(s[key], t[key])
        elif key == "lo_hi_absmin":
            out[key] = np.array([min(s[key][0], t[key][0]), max(s[key][1], t[key][1]),
                                 min(s[key][2], t[key][2])])
        else:
            out[key] = s[key] + t[key]
    return out


def _median_from_hist(hist):
    """``np.median`` of the integers described by a histogram (bin ``v`` counts value ``v``)."""
    m = int(hist.sum())
    if m == 0:
        return 0.0
    cum = np.cumsum(hist)
    lo = int(np.searchsorted(cum, (m - 1) // 2 + 1))
    hi = int(np.searchsorted(cum, m // 2 + 1))
    return 0.5 * (lo + hi)


def _profiles_from_stats(mapper, st, dtype):
    """``release_profiles_`` from aggregated statistics, through the mapper's own construction."""
    k = mapper.n_clusters_
    lo, hi, absmin = st["lo_hi_absmin"]
    lengths = np.array([int(np.rint(_median_from_hist(st["length_hist"][j]))) for j in range(k)], dtype=np.int64)
    value_range = (lo, hi, absmin) if np.isfinite(absmin) else None
    return mapper._profiles_from_stats(st["item_counts"], st["item_sums"], st["size"], lengths, value_range, dtype)


# ----------------------------------------------------------------------------- fit
_LABEL = "__privrelease_label__"


def _erasure_counts(part, yb, columns):
    """One partition's counts of each distinct (row, label) pair."""
    import pandas as pd

    if hasattr(part, "columns"):
        df = part.reset_index(drop=True)
    else:
        df = pd.DataFrame(np.asarray(part), columns=columns)
    df[_LABEL] = np.asarray(yb)
    return df.groupby(list(df.columns), observed=True, dropna=False, sort=False).size()


def _fit_erasure(mapper, X, y):
    """ErasureMapper on a dask collection: the prior is counted per partition.

    Each partition is reduced to the counts of its distinct (row, label) pairs;
    only that table (at most the number of distinct category combinations times
    the number of labels) comes back, and the mapper is fitted on it with the
    counts as sample weights, which gives the same prior as counting every row.
    """
    import types

    import dask
    import pandas as pd

    if hasattr(X, "columns") and hasattr(X, "to_delayed"):
        parts = X.to_delayed()
        lengths = [int(n) for n in X.map_partitions(len).compute()]
        columns, frame = list(X.columns), True
    else:
        Xd, _ = _as_array(X)
        parts = list(Xd.to_delayed().ravel())
        lengths = [int(n) for n in Xd.chunks[0]]
        columns, frame = list(range(Xd.shape[1])), False
    shim = types.SimpleNamespace(shape=(sum(lengths),), chunks=(tuple(lengths),))
    y_parts = _y_blocks(y, shim)
    tables = dask.compute(*[dask.delayed(_erasure_counts)(p, yb, columns) for p, yb in zip(parts, y_parts)])
    total = pd.concat(tables).groupby(level=list(range(len(columns) + 1)), observed=True, dropna=False,
                                      sort=False).sum()
    table = total.reset_index(name="__count__")
    rows = table[columns] if frame else table[columns].to_numpy()
    return mapper.fit(rows, table[_LABEL].to_numpy(), sample_weight=table["__count__"].to_numpy(float))


def fit(mapper, X, y, *, sample_size=None, sample_weight=None):
    """Fit a mapper on a dask collection (see the module notes).

    Parameters
    ----------
    mapper : QuantizedPrivacyMapper or ErasureMapper
        Fitted in place.
    X : dask Array (dense or CSR blocks, row-chunked) or dask DataFrame
    y : array-like, dask Array or dask Series of shape (n_users,)
        Private attribute, ``-1`` (or NaN) for users who did not disclose it.
    sample_size : int, optional
        Labeled users on which the quantizer (taste embedding, k-means) is
        learnt (default :data:`DEFAULT_SAMPLE_SIZE`). The prior and the costs
        always use every labeled user.
    sample_weight : None
        Not supported on dask collections (weights are for small, discretised
        densities); anything else raises ``ValueError``.

    Returns
    -------
    mapper
    """
    import dask
    from sklearn.base import clone

    if sample_weight is not None:
        raise ValueError(
            f"sample_weight is not supported when X is a dask collection, got {type(sample_weight).__name__}; "
            "fit in memory to weight users"
        )

    if _is_erasure(mapper):
        return _fit_erasure(mapper, X, y)
    Xd, columns = _as_array(X)
    y_parts = _y_blocks(y, Xd)

    sample_size = DEFAULT_SAMPLE_SIZE if sample_size is None else int(sample_size)
    if sample_size < 2:
        raise ValueError(f"sample_size must be an integer >= 2, got {sample_size!r}")
    X_parts = list(Xd.to_delayed().ravel())
    summaries = dask.compute(*[dask.delayed(_label_summary)(yb) for yb in y_parts])
    n_lab = np.array([s[0] for s in summaries], dtype=np.int64)
    total = int(n_lab.sum())
    if total == 0:
        raise ValueError(
            f"no labeled users: all {Xd.shape[0]} entries of y are missing (-1 or NaN); "
            "the prior is estimated from users who disclosed the private attribute"
        )
    classes = np.unique(np.concatenate([s[1] for s in summaries]))

    # (i) quantizer on a sample of the labeled users (non-privacy randomness)
    sample_seed = _base_seed(mapper.random_state)
    if sample_seed is None:
        sample_seed = check_random_source(None).spawn_seed()
    if total <= sample_size:
        takes = n_lab
    else:
        takes = np.floor(n_lab * (sample_size / total)).astype(np.int64)
    picked = dask.compute(*[dask.delayed(_sample_block)(xb, yb, int(t), sample_seed, i)
                            for i, (xb, yb, t) in enumerate(zip(X_parts, y_parts, takes)) if t > 0])
    X_s = _vstack([p[0] for p in picked])
    y_s = np.concatenate([p[1] for p in picked])
    sub = clone(mapper)
    sub.fit(X_s, y_s)

    # (ii) one pass over every block: prior counts, costs, profile statistics
    n_out = sub._output_points().shape[0]
    sub_d = dask.delayed(sub, pure=True)
    parts = [dask.delayed(_block_stats)(xb, yb, sub_d, classes, n_out) for xb, yb in zip(X_parts, y_parts)]
    st = dask.compute(_tree_reduce(parts, _combine_stats))[0]

    for key, value in vars(sub).items():
        if key.endswith("_") and not key.startswith("__") and key != "labels_":
            setattr(mapper, key, value)
    if "labels_" in vars(mapper):
        del mapper.labels_  # per-user cluster labels are not gathered out of core
    if columns is not None and all(isinstance(c, str) for c in columns):
        mapper.feature_names_in_ = np.asarray(columns, dtype=object)
    mapper.classes_ = classes
    _finish_fit(mapper, st, total, np.dtype(Xd.dtype))
    return mapper


def _finish_fit(mapper, st, n_labeled, dtype):
    """Prior, costs, the convex program and the release profiles from aggregated statistics."""
    counts = st["counts"]
    size = st["size"]
    if np.any(size == 0):
        warnings.warn(
            f"{int(np.sum(size == 0))} cluster(s) learnt on the sample received no labeled user in "
            "the full pass; their cost rows are set to the centre distances",
            UserWarning,
        )
    outputs = mapper._output_points()
    mapper.center_cost_matrix_ = mapper._distances(mapper.cluster_centers_, outputs)
    if mapper._space() == "hamming":
        mapper.center_cost_matrix_ = np.rint(mapper.center_cost_matrix_)
    cost = st["dist_sum"] / np.maximum(size, 1)[:, None]
    cost[size == 0] = mapper.center_cost_matrix_[size == 0]
    mapper.quantization_radius_ = float(st["own_max"][0])
    mapper.quantization_distortion_ = float(st["own_sum"][0] / n_labeled)
    mapper._solve_on_clusters(counts, cost, n_labeled)
    mapper.release_profiles_ = _profiles_from_stats(mapper, st, dtype)
    mapper.n_labeled_ = int(n_labeled)
