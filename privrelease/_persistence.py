"""Portable, pickle-free persistence of fitted mappers: ``save(estimator, path)`` / ``load(path)``.

A fitted mapping is meant to be learnt centrally and applied elsewhere (on a
user's device, in another service). Pickle is unsuitable for that: loading a
pickle runs arbitrary code. The format here is a single ``.npz`` archive that
:func:`numpy.load` reads with ``allow_pickle=False``:

* one array per fitted numeric array (sparse matrices as ``data`` /
  ``indices`` / ``indptr``; string arrays as fixed-width unicode);
* ``__metadata__``: a JSON string with the format name and version, the class
  name (from a fixed allow-list; nothing is imported by name), the constructor
  parameters, every scalar fitted attribute, the privrelease version, the
  description of every array, and a SHA-256 digest of the canonical contents
  (the JSON without the digest, then every array's name, dtype, shape and bytes
  in name order).

:func:`load` validates everything before returning an estimator: known format
and version, known class, a digest that matches, shapes that agree with each
other, a row-stochastic ``mapping_`` (non-negative, rows summing to 1 within
``1e-9``), a ``prior_`` that is a probability distribution, finite cluster
centres. Each violation raises a :class:`ValueError` that says what is wrong
(``"mapping_ row 3 sums to 1.2, expected 1"``). Semantic checks run before the
digest check, so a damaged file is reported by what is wrong with it; a file
that is valid but altered is caught by the digest.

Per-user training information (``labels_``, the cluster of every training user)
is not saved: a released mapping must not carry data about the users it was
learnt from beyond the aggregated prior.
"""

import dataclasses
import hashlib
import json
import os
import tempfile
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

__all__ = ["save", "load", "FORMAT_NAME", "FORMAT_VERSION"]

FORMAT_NAME = "privrelease-estimator"
FORMAT_VERSION = 1
_META_KEY = "__metadata__"
_ROW_SUM_TOL = 1e-9
#: fitted attributes never written (per-training-user data)
_EXCLUDED = frozenset({"labels_"})


# ----------------------------------------------------------------------------- allow-list
def _estimator_classes():
    from . import mappers

    out = {"QuantizedPrivacyMapper": mappers.QuantizedPrivacyMapper}
    erasure = getattr(mappers, "ErasureMapper", None)
    if erasure is not None:
        out["ErasureMapper"] = erasure
    return out


def _helper_classes():
    from .mappers._quantize import TasteEmbedding
    from .mapping import MappingResult

    return {"TasteEmbedding": TasteEmbedding, "MappingResult": MappingResult}


def _privrelease_version():
    from . import __version__

    return __version__


# ----------------------------------------------------------------------------- encoding
class _Encoder:
    def __init__(self):
        self.arrays = {}

    def _array(self, key, a):
        a = np.asarray(a)
        node = {"t": "array", "key": key}
        if a.dtype == object:
            if not all(isinstance(v, str) for v in a.ravel()):
                if a.ndim != 1:
                    raise TypeError(f"cannot save {key!r}: {a.ndim}-D object array holding non-strings")
                return {"t": "objarray", "items": [self.encode(v, f"{key}/{i}") for i, v in enumerate(a)]}
            a = a.astype(str)
            node["object"] = True
        if a.dtype.kind not in "biufcU":
            raise TypeError(f"cannot save {key!r}: unsupported dtype {a.dtype}")
        self.arrays[key] = np.ascontiguousarray(a)
        return node

    def encode(self, value, key):
        if value is None or isinstance(value, (bool, str)):
            return {"t": "value", "v": value}
        if isinstance(value, (Integral, np.integer)):
            return {"t": "value", "v": int(value)}
        if isinstance(value, (Real, np.floating)):
            return {"t": "float", "v": repr(float(value))}
        if isinstance(value, np.ndarray):
            return self._array(key, value)
        if sp.issparse(value):
            csr = value.tocsr()
            return {
                "t": "sparse", "format": value.format, "sparray": isinstance(value, sp.sparray),
                "shape": [int(s) for s in csr.shape],
                "data": self._array(key + "/data", csr.data),
                "indices": self._array(key + "/indices", csr.indices),
                "indptr": self._array(key + "/indptr", csr.indptr),
            }
        if isinstance(value, dict):
            if not all(isinstance(k, str) for k in value):
                raise TypeError(f"cannot save {key!r}: dictionary keys must be strings")
            return {"t": "dict", "items": {k: self.encode(v, f"{key}/{k}") for k, v in value.items()}}
        if isinstance(value, (list, tuple)):
            return {"t": "list", "tuple": isinstance(value, tuple),
                    "items": [self.encode(v, f"{key}/{i}") for i, v in enumerate(value)]}
        name = type(value).__name__
        if _helper_classes().get(name) is type(value):
            if dataclasses.is_dataclass(value):
                state = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            else:
                state = dict(vars(value))
            return {"t": "object", "class": name,
                    "state": {k: self.encode(v, f"{key}/{k}") for k, v in state.items()}}
        raise TypeError(f"cannot save {key!r}: values of type {name} have no portable encoding")


def _decode(node, arrays, where):
    t = node.get("t") if isinstance(node, dict) else None
    if t == "value":
        return node["v"]
    if t == "float":
        return float(node["v"])
    if t == "array":
        key = node["key"]
        if key not in arrays:
            raise ValueError(f"array {key!r} described in the metadata is missing from the file")
        a = arrays[key]
        return a.astype(object) if node.get("object") else a
    if t == "objarray":
        items = [_decode(v, arrays, f"{where}[{i}]") for i, v in enumerate(node["items"])]
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out
    if t == "sparse":
        shape = tuple(int(s) for s in node["shape"])
        data, indices, indptr = (_decode(node[k], arrays, where) for k in ("data", "indices", "indptr"))
        if indptr.ndim != 1 or indptr.size != shape[0] + 1:
            raise ValueError(f"{where}: sparse indptr has {indptr.size} entries, expected {shape[0] + 1} "
                             f"for shape {shape}")
        if data.shape != indices.shape or int(indptr[-1]) != data.size or np.any(np.diff(indptr) < 0):
            raise ValueError(f"{where}: sparse data, indices and indptr are inconsistent "
                             f"({data.size} values, {indices.size} indices, indptr ends at {int(indptr[-1])})")
        if indices.size and (indices.min() < 0 or indices.max() >= shape[1]):
            raise ValueError(f"{where}: a column index is outside [0, {shape[1]})")
        M = sp.csr_matrix((data, indices, indptr), shape=shape)
        if node.get("sparray"):
            M = sp.csr_array(M)
        return M.asformat(node["format"]) if node["format"] != "csr" else M
    if t == "dict":
        return {k: _decode(v, arrays, f"{where}.{k}") for k, v in node["items"].items()}
    if t == "list":
        items = [_decode(v, arrays, f"{where}[{i}]") for i, v in enumerate(node["items"])]
        return tuple(items) if node.get("tuple") else items
    if t == "object":
        cls = _helper_classes().get(node.get("class"))
        if cls is None:
            raise ValueError(f"{where}: unknown helper class {node.get('class')!r}; "
                             f"known: {sorted(_helper_classes())}")
        for k in node["state"]:
            if not (isinstance(k, str) and k.isidentifier() and not k.startswith("__")):
                raise ValueError(f"{where}: {k!r} is not an attribute name")
        state = {k: _decode(v, arrays, f"{where}.{k}") for k, v in node["state"].items()}
        if dataclasses.is_dataclass(cls):
            return cls(**state)
        obj = cls.__new__(cls)
        obj.__dict__.update(state)
        return obj
    raise ValueError(f"{where}: unreadable metadata entry {node!r:.80}")


# ----------------------------------------------------------------------------- digest
def _canonical_json(meta):
    body = {k: v for k, v in meta.items() if k != "sha256"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _digest(meta, arrays):
    h = hashlib.sha256()
    h.update(_canonical_json(meta).encode("utf-8"))
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\n{name}|{a.dtype.str}|{a.shape}\n".encode("utf-8"))
        h.update(a.tobytes())
    return h.hexdigest()


def _write(path, meta, arrays, *, redigest=True):
    """Write an archive (``redigest=False`` keeps ``meta['sha256']`` as given: for tests)."""
    meta = dict(meta)
    if redigest:
        meta["sha256"] = _digest(meta, arrays)
    payload = dict(arrays)
    payload[_META_KEY] = np.array(json.dumps(meta, sort_keys=True, allow_nan=False))
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **payload)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return path


def _read(path):
    """``(meta, arrays)`` of an archive, refusing anything that is not a plain ``.npz``."""
    path = os.fspath(path)
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head[:1] == b"\x80":
        raise ValueError(f"{path!r} is a pickle file, not a privrelease .npz archive; pickle files are "
                         "never loaded (they can run arbitrary code)")
    if head != b"PK\x03\x04":
        raise ValueError(f"{path!r} is not a privrelease .npz archive (it does not start with a zip "
                         f"header; first bytes {head!r})")
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except ValueError as exc:
        if "pickle" in str(exc):
            raise ValueError(f"{path!r} holds pickled (object) data, which is never loaded: {exc}") from None
        raise ValueError(f"{path!r} is truncated or corrupt and cannot be read as a .npz archive "
                         f"(ValueError: {exc})") from None
    except Exception as exc:  # noqa: BLE001 - zip/npy parsing fails in many ways on damaged files
        raise ValueError(f"{path!r} is truncated or corrupt and cannot be read as a .npz archive "
                         f"({type(exc).__name__}: {exc})") from None
    if _META_KEY not in arrays:
        raise ValueError(f"{path!r} has no {_META_KEY!r} entry: not written by privrelease.save")
    raw = arrays.pop(_META_KEY)
    if raw.dtype.kind != "U" or raw.ndim != 0:
        raise ValueError(f"{path!r}: {_META_KEY!r} must be a JSON string, got an array of dtype {raw.dtype}")
    try:
        meta = json.loads(str(raw))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path!r}: the metadata is not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path!r}: the metadata must be a JSON object, got {type(meta).__name__}")
    return meta, arrays


# ----------------------------------------------------------------------------- public API
def save(estimator, path):
    """Save a fitted mapper to a portable ``.npz`` archive (no pickle).

    Parameters
    ----------
    estimator : fitted QuantizedPrivacyMapper or ErasureMapper
        ``random_state`` must be None or a SecureRandomSource (the production
        setting, saved as None: a loaded mapper draws from the operating
        system's entropy) or an integer (reproducible tests); a Generator or
        seeded RandomSource has no portable form and is refused.
    path : str or path-like
        File to write (written to a temporary file, then renamed).

    Returns
    -------
    path : str

    See Also
    --------
    load : read it back, with validation.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from privrelease.mappers import QuantizedPrivacyMapper
    >>> from privrelease._persistence import save, load
    >>> X = np.repeat(np.eye(4) * 5, 10, axis=0); y = np.tile([0, 1], 20)
    >>> m = QuantizedPrivacyMapper(n_clusters=4, space="raw", random_state=0).fit(X, y)
    >>> path = os.path.join(tempfile.mkdtemp(), "mapper.npz")
    >>> _ = save(m, path)
    >>> m2 = load(path)
    >>> bool(np.array_equal(m2.transform(X), m.transform(X)))
    True
    """
    from sklearn.utils.validation import check_is_fitted

    classes = _estimator_classes()
    name = type(estimator).__name__
    if classes.get(name) is not type(estimator):
        raise TypeError(f"save supports {sorted(classes)}, got an instance of {type(estimator).__name__}")
    check_is_fitted(estimator)
    params = estimator.get_params(deep=False)
    rs = params.get("random_state")
    if getattr(rs, "secure", False):
        params["random_state"] = rs = None  # a SecureRandomSource is what None means
    if rs is not None and not (isinstance(rs, Integral) and not isinstance(rs, bool)):
        raise ValueError(
            f"random_state of type {type(rs).__name__} cannot be saved portably; use random_state=None (operating-system "
            "entropy, the production setting) or an integer seed (tests) before saving"
        )
    enc = _Encoder()
    param_nodes = {k: enc.encode(v, f"params/{k}") for k, v in params.items()}
    fitted = {}
    for key, value in vars(estimator).items():
        if key.endswith("_") and not key.startswith("_") and key not in _EXCLUDED:
            fitted[key] = enc.encode(value, f"fitted/{key}")
    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "class": name,
        "privrelease_version": _privrelease_version(),
        "params": param_nodes,
        "fitted": fitted,
        "arrays": {k: {"dtype": a.dtype.str, "shape": list(a.shape)} for k, a in sorted(enc.arrays.items())},
    }
    return _write(path, meta, enc.arrays)


def load(path):
    """Load an estimator written by :func:`save`, validating every part of the file.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    estimator
        A fitted mapper that transforms exactly like the one saved (same
        ``random_state`` -> same output).

    Raises
    ------
    ValueError
        The file is not a privrelease archive (a pickle, another zip, a
        truncated file), has an unknown format, version or class, inconsistent
        shapes, a mapping that is not row-stochastic, a prior that is not a
        distribution, non-finite cluster centres, or a digest that does not
        match its contents. The message names what is wrong.
    """
    meta, arrays = _read(path)
    fmt = meta.get("format")
    if fmt != FORMAT_NAME:
        raise ValueError(f"unknown file format {fmt!r}, expected {FORMAT_NAME!r}")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise ValueError(f"unsupported format version {version!r}; this privrelease reads version "
                         f"{FORMAT_VERSION}")
    classes = _estimator_classes()
    name = meta.get("class")
    if name not in classes:
        raise ValueError(f"unknown estimator class {name!r}; known classes: {sorted(classes)}")
    for key in ("params", "fitted", "arrays", "sha256"):
        if key not in meta:
            raise ValueError(f"the metadata has no {key!r} entry")
    described = meta["arrays"]
    if set(described) != set(arrays):
        missing = sorted(set(described) - set(arrays))
        extra = sorted(set(arrays) - set(described))
        raise ValueError(f"arrays in the file do not match the metadata (missing {missing}, unexpected {extra})")
    for key, desc in described.items():
        a = arrays[key]
        if list(a.shape) != list(desc["shape"]) or a.dtype.str != desc["dtype"]:
            raise ValueError(f"array {key!r} has shape {a.shape} and dtype {a.dtype.str}, the metadata says "
                             f"shape {tuple(desc['shape'])} and dtype {desc['dtype']}")
    for key in meta["fitted"]:
        if not (isinstance(key, str) and key.isidentifier() and key.endswith("_") and not key.startswith("_")):
            raise ValueError(f"{key!r} is not a fitted attribute name (a public identifier ending in '_')")
    params = {k: _decode(v, arrays, f"params.{k}") for k, v in meta["params"].items()}
    fitted = {k: _decode(v, arrays, k) for k, v in meta["fitted"].items()}
    _validate_fitted(name, fitted)
    digest = _digest(meta, arrays)
    if digest != meta["sha256"]:
        raise ValueError(f"SHA-256 digest mismatch: the file says {meta['sha256']!r} but its contents hash to "
                         f"{digest!r}; the file was altered or damaged")
    est = classes[name]()
    try:
        est.set_params(**params)
    except ValueError as exc:
        raise ValueError(f"constructor parameters in the file are not valid for {name}: {exc}") from None
    for key, value in fitted.items():
        setattr(est, key, value)
    _after_load(name, est)
    return est


# ----------------------------------------------------------------------------- validation
def _check_matrix(fitted, key, ndim=2, allow_posinf=False):
    a = fitted.get(key)
    if a is None:
        return None
    if not isinstance(a, np.ndarray) or a.ndim != ndim or a.dtype.kind not in "biuf":
        raise ValueError(f"{key} must be a {ndim}-D numeric array, got {type(a).__name__} "
                         f"with shape {getattr(a, 'shape', None)}")
    ok = np.isfinite(a) | (allow_posinf & (a == np.inf))
    if not np.all(ok):
        bad = np.argwhere(~ok)[0]
        raise ValueError(f"{key} has a non-finite entry at {tuple(int(i) for i in bad)}: {float(a[tuple(bad)])!r}")
    return a


def _validate_fitted(name, fitted):
    """Structural and probabilistic checks on the decoded fitted attributes."""
    M = _check_matrix(fitted, "mapping_")
    prior = _check_matrix(fitted, "prior_")
    centers = _check_matrix(fitted, "cluster_centers_")
    if name == "QuantizedPrivacyMapper":
        for key in ("mapping_", "prior_", "cluster_centers_", "release_profiles_", "n_features_in_",
                    "n_clusters_", "classes_"):
            if key not in fitted:
                raise ValueError(f"fitted attribute {key} is missing from the file")
    if M is not None:
        if np.any(M < 0):
            r, c = np.argwhere(M < 0)[0]
            raise ValueError(f"mapping_ entry ({r}, {c}) is negative ({float(M[r, c])!r}); a mapping holds probabilities")
        sums = M.sum(axis=1)
        bad = np.flatnonzero(np.abs(sums - 1.0) > _ROW_SUM_TOL)
        if bad.size:
            r = int(bad[0])
            raise ValueError(f"mapping_ row {r} sums to {sums[r]:.12g}, expected 1 (within {_ROW_SUM_TOL:g})")
    if prior is not None:
        if np.any(prior < 0):
            r, c = np.argwhere(prior < 0)[0]
            raise ValueError(f"prior_ entry ({r}, {c}) is negative ({float(prior[r, c])!r}); a prior is a distribution")
        total = prior.sum()
        if abs(total - 1.0) > _ROW_SUM_TOL:
            raise ValueError(f"prior_ sums to {total:.12g}, expected 1 (within {_ROW_SUM_TOL:g})")
        if M is not None and prior.shape[1] != M.shape[0]:
            raise ValueError(f"prior_ has {prior.shape[1]} columns but mapping_ has {M.shape[0]} rows; "
                             "both must count the clusters")
    classes = fitted.get("classes_")
    if prior is not None and classes is not None and len(classes) != prior.shape[0]:
        raise ValueError(f"prior_ has {prior.shape[0]} rows but classes_ has {len(classes)} values")
    k = fitted.get("n_clusters_")
    if k is not None and M is not None and M.shape[0] != k:
        raise ValueError(f"mapping_ has {M.shape[0]} rows, expected n_clusters_={k}")
    if centers is not None and M is not None and centers.shape[0] != M.shape[0]:
        raise ValueError(f"cluster_centers_ has {centers.shape[0]} rows but mapping_ has {M.shape[0]}")
    profiles = fitted.get("release_profiles_")
    if profiles is not None:
        if M is not None and profiles.shape[0] != M.shape[1]:
            raise ValueError(f"release_profiles_ has {profiles.shape[0]} rows but mapping_ has {M.shape[1]} "
                             "columns (one profile per output symbol)")
        n_features = fitted.get("n_features_in_")
        if n_features is not None and profiles.shape[1] != n_features:
            raise ValueError(f"release_profiles_ has {profiles.shape[1]} columns, expected n_features_in_="
                             f"{n_features}")
    for key in ("cost_matrix_", "center_cost_matrix_"):
        C = _check_matrix(fitted, key, allow_posinf=True)  # inf = forbidden transition
        if C is not None and M is not None and C.shape != M.shape:
            raise ValueError(f"{key} has shape {C.shape}, expected {M.shape} like mapping_")
        if C is not None and np.any(C < 0):
            r, c = np.argwhere(C < 0)[0]
            raise ValueError(f"{key} entry ({r}, {c}) is negative ({float(C[r, c])!r}); distortions are >= 0")
        if C is not None and M is not None and np.any(M[np.isinf(C)] != 0):
            r, c = np.argwhere(np.isinf(C) & (M != 0))[0]
            raise ValueError(f"mapping_ puts probability {float(M[r, c])!r} on the forbidden transition ({r}, {c}) "
                             f"(infinite {key}); a release may only erase, never change a value")
    if name == "ErasureMapper":
        _validate_erasure(fitted, M)
    names = fitted.get("feature_names_in_")
    n_features = fitted.get("n_features_in_")
    if names is not None and n_features is not None and len(names) != n_features:
        raise ValueError(f"feature_names_in_ has {len(names)} names, expected n_features_in_={n_features}")
    emb = fitted.get("embedding_")
    if emb is not None and centers is not None:
        chol = getattr(emb, "basis_chol_", None)
        if chol is None or np.shape(chol) != (centers.shape[1], centers.shape[1]):
            raise ValueError(f"embedding_.basis_chol_ has shape {np.shape(chol)}, expected "
                             f"{(centers.shape[1], centers.shape[1])} to match cluster_centers_")


def _validate_erasure(fitted, M):
    for key in ("categories_", "input_tuples_", "output_tuples_", "mapping_", "prior_", "classes_",
                "n_features_in_"):
        if key not in fitted:
            raise ValueError(f"fitted attribute {key} is missing from the file")
    cats = fitted["categories_"]
    n_features = fitted["n_features_in_"]
    if not isinstance(cats, list) or len(cats) != n_features:
        raise ValueError(f"categories_ must list the categories of each of the {n_features} features, "
                         f"got {type(cats).__name__} of length {len(cats) if hasattr(cats, '__len__') else '?'}")
    for key, rows in (("input_tuples_", M.shape[0]), ("output_tuples_", M.shape[1])):
        T = fitted[key]
        if not isinstance(T, np.ndarray) or T.ndim != 2 or T.shape != (rows, n_features) or T.dtype.kind not in "iu":
            raise ValueError(f"{key} must be an integer array of shape {(rows, n_features)} "
                             f"(one row per {'input' if key.startswith('input') else 'output'} symbol), "
                             f"got shape {getattr(T, 'shape', None)}")
        sizes = np.array([len(c) for c in cats])
        low = 0 if key == "input_tuples_" else -1  # -1 = erased
        if np.any(T < low) or np.any(T >= sizes[None, :]):
            r, f = np.argwhere((T < low) | (T >= sizes[None, :]))[0]
            raise ValueError(f"{key}[{r}, {f}] = {T[r, f]} is not a category code of feature {f} "
                             f"(expected {low} <= code < {sizes[f]})")


def _after_load(name, est):
    """Rebuild derived, non-saved state (lookup tables) of a loaded estimator."""
    if name == "ErasureMapper":
        est._index = {tuple(t): i for i, t in enumerate(est.input_tuples_.tolist())}
