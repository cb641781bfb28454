"""Dask execution shared by the mappers: block seeds, the lazy block-wise ``transform``, fit helpers.

Nothing here knows a mapper class. A mapper supports dask through hooks of its own:

* ``fit`` (the template in :mod:`privrelease.mappers._base`) calls the mapper's
  ``_fit_prior_dask(X, y)`` when ``X`` is a dask collection
  (:func:`is_dask_collection`); that hook reduces the blocks with the helpers
  below (:func:`as_row_chunked_array`, :func:`y_blocks`, :func:`tree_reduce` ...)
  to the same prior estimate the in-memory fit computes;
* ``transform`` calls :func:`transform`, which applies the fitted mapper's own
  ``transform`` to every block (``map_blocks`` / ``map_partitions``) and asks
  the mapper's ``_release_meta`` for the dtypes of the released blocks.

``transform`` is lazy: the result has the input's shape, chunking, block type
and the released dtype. Each block draws its privacy randomness from its own
source (eq. 21 of Salamatian et al. is applied row by row, so blocks are independent):

* ``random_state=None`` -- every block reads the operating system's entropy
  on the worker that runs it (:class:`~privrelease.utils.SecureRandomSource`);
  nothing is seeded and nothing is shipped with the task graph.
* an integer ``s`` -- block ``i`` uses the stream seeded by
  ``numpy.random.SeedSequence(s, spawn_key=(i,))`` (:func:`block_random_state`),
  so the release is reproducible and does not depend on which worker runs
  which block. The fit's row subsample (:func:`sample_block`) draws from
  ``spawn_key=(_SAMPLE_STREAM, i)``, a stream of its own. :func:`transform_in_blocks` is the in-memory twin: with the
  same row blocks it returns exactly the same release.
* a :class:`~privrelease.utils.SecureRandomSource` -- as ``None``.
* a Generator or seeded RandomSource -- one integer is drawn from it
  (:meth:`RandomSource.spawn_seed`) when the graph is built and used as ``s``.

A mapper's ``transform`` warns through :func:`warn`: in a block-wise transform (dask, or
:func:`transform_in_blocks`) each warning is given once per call, by the first block that raises it
(once per process when the blocks run in several processes), not once per block.

References
----------
S. Salamatian et al., "Managing your Private and Public Data: Bringing down
Inference Attacks against your Privacy", Algorithm 2, eq. (19)-(21).
"""

import copy
import threading
import uuid
import warnings

import numpy as np
import scipy.sparse as sp

from ..utils import SeededRandomSource, check_private_labels, check_random_source
from ..utils._validation import check_same_index as _check_same_index, plain_value, user_stacklevel
from ._columns import check_column_labels

__all__ = [
    "is_dask_collection",
    "computed",
    "block_random_state",
    "transform",
    "transform_in_blocks",
    "as_row_chunked_array",
    "y_blocks",
    "label_summary",
    "sample_block",
    "tree_reduce",
    "block_lengths",
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


def computed(X):
    """``X`` itself, or a dask collection read into memory (``X.compute()``) for the code that needs every user at once.

    The evaluation (:func:`~privrelease.evaluation.rmse_cost`, the attackers, :class:`~privrelease.evaluation.BlurMe`)
    and the recommender work in memory. numpy read a dask array of dense blocks through ``np.asarray`` (so it worked),
    but one of scipy sparse blocks -- the form the mappers' dask path takes -- was read as an array of matrix
    objects: "ratings must hold numbers, got object", "setting an array element with a sequence" or "Expected 2D
    array, got scalar array". Computed, it is a scipy sparse matrix (a dense array, a pandas frame or series).

    Parameters
    ----------
    X : object
        Anything; only a dask collection is changed.

    Returns
    -------
    X : object
        ``X``, or ``X.compute()`` for a dask collection.
    """
    if not is_dask_collection(X):
        return X
    return X.compute()


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


def _with_source(mapper, source, gate=None):
    m = copy.copy(mapper)  # shallow: fitted arrays are shared, only random_state (and the gate) differ
    m.random_state = source
    if gate is not None:
        m._block_warnings = gate
    return m


# ----------------------------------------------------------------------------- warnings
class _WarnOnce:
    """The warnings of one block-wise transform: each one given once, whatever the number of blocks.

    The mapper's ``transform`` of each block warns through :func:`warn`: the off-scale ratings of a 4-block
    dask array used to be reported four times, each block with its own count. Thread-safe (dask's threaded
    scheduler runs blocks concurrently); a process scheduler gets a copy per process, so there it is
    once per process.
    """

    def __init__(self, n_blocks):
        self.n_blocks = int(n_blocks)
        self._token = uuid.uuid4().hex
        self._lock = threading.Lock()
        self._seen = set()

    def first(self, key):
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            return True

    def __getstate__(self):
        return {"n_blocks": self.n_blocks, "_token": self._token}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._seen = set()

    def __dask_tokenize__(self):
        return ("privrelease-warn-once", self._token)


def warn(mapper, message, category, *, key):
    """``warnings.warn`` for a mapper's ``transform``: once per block-wise transform (``key`` names the warning).

    Outside a block-wise transform it is ``warnings.warn(message, category)``; inside one, only the
    first block that raises the warning ``key`` gives it, saying that its figures are that block's.
    """
    gate = getattr(mapper, "_block_warnings", None)
    if gate is not None:
        if not gate.first((category, key)):
            return
        if gate.n_blocks > 1:
            message = (f"{message} [one row block of {gate.n_blocks}: this warning is given once per transform, "
                       "with the figures of the first block that raised it]")
    warnings.warn(message, category, stacklevel=user_stacklevel())


# ----------------------------------------------------------------------------- transform
def _empty_release(mapper, block):
    """The release of a block with no rows (a filtered dask collection has such blocks).

    A mapper's ``transform`` refuses zero rows (scikit-learn's "Found array with 0
    sample(s)"); an empty block of a larger collection releases nothing, in the
    released block type and dtypes (the mapper's ``_release_meta``).
    """
    n_features = getattr(mapper, "n_features_in_", None)
    if n_features is not None and block.ndim == 2 and block.shape[1] != n_features:
        raise ValueError(f"X has {block.shape[1]} features, but {type(mapper).__name__} is expecting "
                         f"{n_features} features as input")
    meta = mapper._release_meta(block)
    return meta.copy() if meta is block else meta


def _transform_block(block, mapper, seed, gate=None, block_info=None):
    index = 0 if block_info is None else block_info[0]["chunk-location"][0]
    if block.shape[0] == 0:
        return _empty_release(mapper, block)
    return _with_source(mapper, block_random_state(seed, index), gate).transform(block)


def _transform_partition(part, mapper, seed, gate=None, partition_info=None):
    import pandas as pd

    if len(part) == 0:
        out = _empty_release(mapper, part)
        if isinstance(out, pd.DataFrame):
            return out
        return pd.DataFrame(out, index=part.index, columns=part.columns).astype(
            mapper._release_meta(part).dtypes.to_dict())
    index = 0 if partition_info is None else partition_info["number"]
    out = _with_source(mapper, block_random_state(seed, index), gate).transform(part)
    if isinstance(out, pd.DataFrame):
        # the mapper chose the released dtypes (see its _release_meta); a dense frame released with the dtype of an
        # array release (QuantizedPrivacyMapper) takes the lazy meta's (pandas' nullable integers kept)
        meta = mapper._release_meta(part)
        if isinstance(meta, pd.DataFrame) and list(out.dtypes) != list(meta.dtypes):
            out = out.astype(meta.dtypes.to_dict())
        return out
    # the released dtypes are the mapper's (its _release_meta), not the input's: a categorical input column made
    # every released value outside its categories NaN
    released = pd.DataFrame(out, index=part.index, columns=part.columns)
    return released.astype(mapper._release_meta(part).dtypes.to_dict())


def _check_row_chunked(X, mapper):
    if X.ndim != 2:
        raise ValueError(f"expected a 2-D dask array of users x items, got {X.ndim} dimension(s)")
    if any(np.isnan(c) for c in X.chunks[1]):
        # columns selected by a dask mask: "X has nan features, but ... is expecting 6" said nothing useful
        raise ValueError("X has an unknown number of columns (dask chunks of unknown size, as after selecting "
                         "columns with a dask boolean mask); compute them first: X = X.compute_chunk_sizes()")
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
    mapper._check_release_state()  # before the graph is built, not when a block is computed
    seed = _base_seed(mapper.random_state)
    import dask.array as da

    if isinstance(X, da.Array):
        X = _check_row_chunked(X, mapper)
        meta = mapper._release_meta(X._meta)
        return X.map_blocks(_transform_block, mapper, seed, _WarnOnce(X.numblocks[0]), dtype=meta.dtype, meta=meta)
    if hasattr(X, "map_partitions") and hasattr(X, "columns"):
        n_features = getattr(mapper, "n_features_in_", None)
        if n_features is not None and len(X.columns) != n_features:
            raise ValueError(
                f"X has {len(X.columns)} features, but {type(mapper).__name__} is expecting "
                f"{n_features} features as input"
            )
        check_column_labels(mapper, list(X.columns))  # before the graph is built, not when a block is computed
        return X.map_partitions(_transform_partition, mapper, seed, _WarnOnce(X.npartitions),
                                meta=mapper._release_meta(X._meta))
    raise TypeError(
        f"expected a dask Array or a dask DataFrame of users x items, got {type(X).__name__}"
    )


def _is_count(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _row_bounds(n_rows, block_rows):
    if np.iterable(block_rows) and not isinstance(block_rows, (str, bytes)):
        sizes = list(block_rows)
        bad = [s for s in sizes if not _is_count(s)]
        if bad:
            raise TypeError(f"block sizes must be integers (as dask_array.chunks[0]), got {plain_value(bad[0])!r} "
                            f"in {plain_value(tuple(sizes))!r}")
        if any(s < 0 for s in sizes):
            raise ValueError(f"block sizes must be >= 0, got {plain_value(min(sizes))!r} in "
                             f"{plain_value(tuple(sizes))!r}")
        sizes = [int(s) for s in sizes]
        if sum(sizes) != n_rows:
            raise ValueError(f"block sizes {tuple(sizes)!r} add up to {sum(sizes)}, expected {n_rows} rows")
    else:
        if not _is_count(block_rows):
            raise TypeError(f"block_rows must be a positive integer (or a sequence of block sizes), got "
                            f"{block_rows!r} of type {type(block_rows).__name__}")
        if block_rows < 1:
            raise ValueError(f"block_rows must be a positive integer, got {block_rows!r}")
        b = int(block_rows)
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
    bounds = _row_bounds(X.shape[0], block_rows)
    gate = _WarnOnce(len(bounds))  # the same warnings as the dask transform: once
    for i, (start, stop) in enumerate(bounds):
        block = Xr[start:stop]
        parts.append(_empty_release(mapper, block) if stop == start
                     else _with_source(mapper, block_random_state(seed, i), gate).transform(block))
    if not parts:  # no rows at all: the empty release of X itself
        parts.append(_empty_release(mapper, Xr))
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
def as_row_chunked_array(X):
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


def y_blocks(y, X):
    """Split ``y`` along the row chunks of ``X``: a list of arrays or delayed arrays."""
    import dask.array as da

    if y is None:
        raise ValueError("fit needs y, the private attribute (-1 for undisclosed); got None")
    n = X.shape[0]
    if hasattr(y, "to_dask_array"):
        y = y.to_dask_array(lengths=True)
    if isinstance(y, da.Array):
        if y.ndim == 1 and any(np.isnan(c) for c in y.chunks[0]):
            # filtered by a dask mask (y[keep], like X[keep]): its length is unknown until computed, and the
            # shape check below refused it as "got (nan,)"
            y = y.compute_chunk_sizes()
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must have shape ({n},) to match X, got {y.shape}")
        return list(y.rechunk((X.chunks[0],)).to_delayed().ravel())
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must have shape ({n},) to match X, got {y.shape}")
    edges = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    return [y[a:b] for a, b in zip(edges[:-1], edges[1:])]


def labeled_block(yb):
    yb = np.asarray(yb)
    y, mask = check_private_labels(yb, yb.shape[0])
    return y, mask


def label_summary(yb):
    y, mask = labeled_block(yb)
    return int(mask.sum()), np.unique(y[mask])


def take_rows(Xb, idx):
    return Xb.tocsr()[idx] if sp.issparse(Xb) else np.asarray(Xb)[idx]


#: first spawn-key word of the streams of the fit's row subsample: block ``i`` draws it from ``SeedSequence(s,
#: spawn_key=(_SAMPLE_STREAM, i))``, never from the transform noise's ``SeedSequence(s, spawn_key=(i,))``
#: (:func:`block_random_state`); both used ``(i,)``, so the users a quantizer was learnt on were picked with the
#: very draws that then noised block ``i``. numpy pads the seed to four words before a spawn key, so keys of
#: different lengths never meet.
_SAMPLE_STREAM = 0x5A3B1E


def sample_generator(seed, index):
    """The numpy Generator of block ``index``'s row subsample under the integer ``seed`` (independent of every
    transform stream :func:`block_random_state` derives from the same seed)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed),
                                                                      spawn_key=(_SAMPLE_STREAM, int(index)))))


def sample_block(Xb, yb, n_take, seed, index):
    y, mask = labeled_block(yb)
    rows = np.flatnonzero(mask)
    if n_take < rows.size:
        rng = sample_generator(seed, index)
        rows = np.sort(rng.choice(rows, size=n_take, replace=False))
    return take_rows(Xb, rows), y[rows]


def tree_reduce(parts, combine):
    from dask import delayed

    parts = list(parts)
    while len(parts) > 1:
        parts = [delayed(combine)(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    return parts[0]


def vstack(blocks):
    if any(sp.issparse(b) for b in blocks):
        return sp.vstack([sp.csr_matrix(b) for b in blocks], format="csr")
    return np.concatenate([np.asarray(b) for b in blocks], axis=0)


def check_same_index(X, y, name="y"):
    """:func:`~privrelease.utils._validation.check_same_index` where ``X`` or ``y`` is a dask frame or series:
    their indexes are computed (one pass over the index alone) and compared as pandas indexes."""
    import types

    import pandas as pd

    def index_of(obj):
        ix = getattr(obj, "index", None)
        if ix is None or isinstance(ix, pd.Index):
            return ix
        return pd.Index(ix.compute()) if hasattr(ix, "compute") else None

    ix = index_of(X)
    iy = index_of(y) if ix is not None else None
    if ix is not None and iy is not None:
        _check_same_index(types.SimpleNamespace(index=ix), types.SimpleNamespace(index=iy), name)


def block_lengths(X):
    """Row blocks of a dask Array or DataFrame: ``(parts, lengths, columns, is_frame)``.

    ``parts`` are delayed blocks (whole rows), ``lengths`` their numbers of rows,
    ``columns`` the frame's column names (or ``range(n_features)``).
    """
    if hasattr(X, "columns") and hasattr(X, "to_delayed"):
        parts = X.to_delayed()
        lengths = [int(n) for n in X.map_partitions(len).compute()]
        return parts, lengths, list(X.columns), True
    Xd, _ = as_row_chunked_array(X)
    return list(Xd.to_delayed().ravel()), [int(n) for n in Xd.chunks[0]], list(range(Xd.shape[1])), False


def quantizer_sample_seed(random_state):
    """Seed of the (non-privacy) draw of the users a quantizer is learnt on."""
    seed = _base_seed(random_state)
    return check_random_source(None).spawn_seed() if seed is None else seed


def fit(mapper, X, y, *, sample_size=None, sample_weight=None):
    """``mapper.fit(X, y)`` on a dask collection; ``sample_size`` sets ``dask_sample_size`` first.

    Kept for scripts written against the first dask module; the public
    ``fit`` does the same (``QuantizedPrivacyMapper(dask_sample_size=...)``).
    """
    if sample_size is not None:
        mapper.set_params(dask_sample_size=sample_size)
    return mapper.fit(X, y, sample_weight=sample_weight)
