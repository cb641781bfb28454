"""Portable, pickle-free persistence: a generic codec and a registry of the estimators it may build.

A fitted mapping is meant to be learnt centrally and applied elsewhere (on a
user's device, in another service). Pickle is unsuitable for that: loading a
pickle runs arbitrary code. The format here is a ``.npz`` archive that is read
member by member with ``allow_pickle=False``:

* one ``.npy`` member per array (sparse matrices as ``data`` / ``indices`` /
  ``indptr``; string arrays as fixed-width unicode);
* ``__metadata__``: a JSON string with the format name and version, the class
  name (looked up in a registry; nothing is imported by name), the constructor
  parameters, the fitted state the estimator declared, the description of every
  array and a SHA-256 checksum of the contents (it detects accidental damage; it
  is *not* a defence against an editor, who can recompute it).

With a key, :func:`save` prefixes the archive with an HMAC-SHA256 tag over all
of its bytes; :func:`load` with the same key checks the tag before anything is
decoded, so a wrong key or any edit is refused.

The codec knows no estimator. A class becomes loadable by :func:`register`
(the mappers register themselves when :mod:`privrelease.mappers` is imported;
:func:`privrelease.load` imports it) and provides three methods:

``_persist_params()``
    Constructor parameters as plain values.
``_persist_state()``
    The fitted state as plain values (numbers, strings, None, ndarrays,
    scipy sparse matrices, lists, tuples, dicts with string keys).
``_restore(params, state)`` (classmethod)
    Build the estimator from decoded parameters and state, validating both
    (``ValueError`` saying where), and return it.

Threat model: see the README ("Files you can trust").
"""

import hashlib
import hmac
import io
import json
import math
import os
import stat
import tempfile
import zipfile
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from ._version import __version__

__all__ = ["save", "load", "register", "FORMAT_NAME", "FORMAT_VERSION", "DEFAULT_MAX_BYTES"]

FORMAT_NAME = "privrelease-estimator"
FORMAT_VERSION = 2
#: default cap on the bytes an archive may hold once inflated (members and file)
DEFAULT_MAX_BYTES = 256 * 2**20
#: members an archive may hold
MAX_MEMBERS = 4096
#: how deep the metadata may nest (dicts and lists inside the parameters and state)
MAX_DEPTH = 32
_META_KEY = "__metadata__"
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_SIGNED_MAGIC = b"PRIVRELEASE-HMAC-SHA256\n"
_TAG_BYTES = 32

_REGISTRY = {}


def register(cls):
    """Let :func:`load` build instances of ``cls`` (a class decorator).

    ``cls`` provides ``_persist_params``, ``_persist_state`` and the
    classmethod ``_restore`` (see the module notes).
    """
    for name in ("_persist_params", "_persist_state", "_restore"):
        if not callable(getattr(cls, name, None)):
            raise TypeError(f"{cls.__name__} cannot be registered for persistence: it has no {name}()")
    _REGISTRY[cls.__name__] = cls
    return cls


def registered_classes():
    """Names of the classes :func:`load` can build."""
    return sorted(_REGISTRY)


def _beyond_float64(n):
    """Whether the int ``n`` is beyond the float64 range (``float(n)`` overflows)."""
    try:
        float(n)
    except OverflowError:
        return True
    return False


def _refuse_constant(name):
    """``json.loads``' hook for NaN, Infinity and -Infinity, which JSON itself does not allow."""
    raise ValueError(f"the metadata holds {name}, which JSON does not allow and privrelease.save never writes")


def _finite_float(text):
    """``json.loads``' hook for numbers with a fraction or an exponent: refused beyond float64 (``1e400`` read as
    inf and failed later in the checksum, "Out of range float values are not JSON compliant", naming nothing)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the metadata holds the number {text[:40]!r}, beyond the float64 range, which "
                         "privrelease.save never writes")
    return value


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
        if a.dtype.kind not in "biufcUS":
            raise TypeError(f"cannot save {key!r}: unsupported dtype {a.dtype}")
        self.arrays[key] = np.ascontiguousarray(a)
        return node

    def encode(self, value, key):
        if value is None or isinstance(value, (bool, str)):
            return {"t": "value", "v": value}
        if isinstance(value, np.bool_):
            return {"t": "value", "v": bool(value)}
        if isinstance(value, (Integral, np.integer)):
            if _beyond_float64(int(value)):  # load refuses it (the numbers of a file are read as float64)
                raise TypeError(f"cannot save {key!r}: an integer of {len(str(abs(int(value))))} digits, beyond the "
                                "float64 range, has no portable encoding")
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
        raise TypeError(f"cannot save {key!r}: values of type {type(value).__name__} have no portable encoding")


def _field(node, name, where, kinds):
    if not isinstance(node, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(node).__name__}")
    if name not in node:
        raise ValueError(f"{where}: the entry has no {name!r} field")
    value = node[name]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _as_tuple(kinds)):
        names = "/".join(k.__name__ for k in _as_tuple(kinds))
        raise ValueError(f"{where}.{name}: expected {names}, got {type(value).__name__} {value!r:.60}")
    return value


def _as_tuple(kinds):
    return kinds if isinstance(kinds, tuple) else (kinds,)


_SPARSE_FORMATS = ("csr", "csc", "coo", "lil", "dok", "bsr", "dia")


def _decode(node, arrays, where, depth=0):
    if depth > MAX_DEPTH:
        raise ValueError(f"{where}: the metadata nests deeper than {MAX_DEPTH} levels")
    t = _field(node, "t", where, str)
    if t == "value":
        v = _field(node, "v", where, (type(None), bool, int, str))
        if isinstance(v, int) and not isinstance(v, bool) and _beyond_float64(v):
            # JSON holds any integer: 10**400 escaped load as an OverflowError from the first check that made it a
            # float (a budget, a leakage claim, a count)
            raise ValueError(f"{where}: an integer of {len(str(abs(v)))} digits, beyond the float64 range; "
                             "privrelease.save writes none")
        return v
    if t == "float":
        text = _field(node, "v", where, str)
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{where}: {text!r:.60} is not a number") from None
    if t == "array":
        key = _field(node, "key", where, str)
        if key not in arrays:
            raise ValueError(f"{where}: array {key!r} described in the metadata is missing from the file")
        a = arrays[key]
        if not a.dtype.isnative:
            # a file written on a host of the other byte order: the same values in this host's order (scipy.sparse
            # and numpy's compiled routines refuse or slow down on swapped dtypes such as >f8)
            a = a.astype(a.dtype.newbyteorder("="))
        if node.get("object"):
            if a.dtype.kind != "U":
                raise ValueError(f"{where}: array {key!r} is marked as strings but has dtype {a.dtype}")
            return a.astype(object)
        return a
    if t == "objarray":
        items = _field(node, "items", where, list)
        decoded = [_decode(v, arrays, f"{where}[{i}]", depth + 1) for i, v in enumerate(items)]
        out = np.empty(len(decoded), dtype=object)
        out[:] = decoded
        return out
    if t == "sparse":
        shape = _field(node, "shape", where, list)
        if len(shape) != 2 or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
            raise ValueError(f"{where}.shape: expected two non-negative integers, got {shape!r:.60}")
        fmt = _field(node, "format", where, str)
        if fmt not in _SPARSE_FORMATS:
            raise ValueError(f"{where}.format: {fmt!r:.40} is not a scipy sparse format {_SPARSE_FORMATS}")
        parts = {}
        for k in ("data", "indices", "indptr"):
            parts[k] = _decode(_field(node, k, where, dict), arrays, f"{where}.{k}", depth + 1)
            if not isinstance(parts[k], np.ndarray) or parts[k].ndim != 1:
                raise ValueError(f"{where}.{k}: expected a 1-D array")
        data, indices, indptr = parts["data"], parts["indices"], parts["indptr"]
        if indices.dtype.kind not in "iu" or indptr.dtype.kind not in "iu" or data.dtype.kind not in "biuf":
            raise ValueError(f"{where}: sparse arrays have dtypes {data.dtype}, {indices.dtype}, {indptr.dtype}; "
                             "expected numbers, integer indices and integer indptr")
        if indptr.size != shape[0] + 1:
            raise ValueError(f"{where}: sparse indptr has {indptr.size} entries, expected {shape[0] + 1} "
                             f"for shape {tuple(shape)}")
        if (data.shape != indices.shape or int(indptr[0]) != 0 or int(indptr[-1]) != data.size
                or np.any(np.diff(indptr) < 0)):
            raise ValueError(f"{where}: sparse data, indices and indptr are inconsistent "
                             f"({data.size} values, {indices.size} indices, indptr ends at {int(indptr[-1])})")
        if indices.size and (indices.min() < 0 or indices.max() >= shape[1]):
            raise ValueError(f"{where}: a column index is outside [0, {shape[1]})")
        if data.dtype == np.float16:  # built, then refused by scipy's first copy with a message naming no entry
            raise ValueError(f"{where}.data: dtype float16, which scipy.sparse cannot store; expected float64 as "
                             "privrelease.save writes (or another dtype scipy.sparse stores)")
        M = sp.csr_matrix((data, indices, indptr), shape=tuple(shape))
        if node.get("sparray"):
            M = sp.csr_array(M)
        return M.asformat(fmt) if fmt != "csr" else M
    if t == "dict":
        items = _field(node, "items", where, dict)
        return {k: _decode(v, arrays, f"{where}.{k}", depth + 1) for k, v in items.items()}
    if t == "list":
        items = _field(node, "items", where, list)
        decoded = [_decode(v, arrays, f"{where}[{i}]", depth + 1) for i, v in enumerate(items)]
        return tuple(decoded) if node.get("tuple") else decoded
    raise ValueError(f"{where}: unknown entry type {t!r:.40}")


# ----------------------------------------------------------------------------- checksum, signature
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


def _check_key(key):
    if key is None:
        return None
    if not isinstance(key, (bytes, bytearray)):
        raise TypeError(f"key must be bytes (a secret shared by the writer and the reader), got "
                        f"{type(key).__name__}")
    if len(key) < 16:
        raise ValueError(f"key must hold at least 16 bytes, got {len(key)}; use for example secrets.token_bytes(32)")
    return bytes(key)


def _tag(key, body):
    return hmac.new(key, body, hashlib.sha256).digest()


def _archive_bytes(meta, arrays, *, redigest=True):
    meta = dict(meta)
    if redigest:
        meta["sha256"] = _digest(meta, arrays)
    payload = dict(arrays)
    payload[_META_KEY] = np.array(json.dumps(meta, sort_keys=True, allow_nan=False))
    buf = io.BytesIO()
    np.savez(buf, **payload)
    return buf.getvalue()


def _checked_path(path, action):
    """``path`` as a str; bytes (``b'/tmp/m.npz'``) and other objects are refused with a TypeError naming them.

    A bytes path reached ``tempfile`` ("Can't mix bytes and non-bytes in path components").
    """
    text = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(text, str):
        raise TypeError(f"cannot {action} {path!r}: path must be a str or path-like naming a file, got "
                        f"{type(path).__name__}" + (" (decode it first: path.decode())" if isinstance(text, bytes)
                                                    else ""))
    return text


def _write_bytes(path, data):
    path = _checked_path(path, "save to")
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot save to {path!r}: it is a folder; expected the path of a file "
                                f"(for example {os.path.join(path, 'mapper.npz')!r})")
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"cannot save to {path!r}: the folder {directory!r} does not exist "
                                "(create it first)")
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return path


def _write(path, meta, arrays, *, redigest=True, key=None):
    """Write an archive (``redigest=False`` keeps ``meta['sha256']`` as given: for tests)."""
    body = _archive_bytes(meta, arrays, redigest=redigest)
    key = _check_key(key)
    if key is not None:
        body = _SIGNED_MAGIC + _tag(key, body) + body
    return _write_bytes(path, body)


def _check_max_bytes(max_bytes):
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, Integral) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive integer (bytes), got {max_bytes!r}")
    return int(max_bytes)


def _unwrap(path, raw, key):
    """The archive bytes of a file, after checking its HMAC when a key is given."""
    signed = raw.startswith(_SIGNED_MAGIC)
    if key is not None:
        if not signed:
            raise ValueError(f"{path!r} is not signed, but a key was given: only a file saved with "
                             "save(path, key=...) can be checked against a key")
        start = len(_SIGNED_MAGIC)
        tag, body = raw[start:start + _TAG_BYTES], raw[start + _TAG_BYTES:]
        if not hmac.compare_digest(tag, _tag(key, body)):
            raise ValueError(f"{path!r}: the HMAC-SHA256 tag does not match: the key is wrong or the file "
                             "was altered; nothing in it was decoded")
        return body
    if signed:
        return raw[len(_SIGNED_MAGIC) + _TAG_BYTES:]
    return raw


def _described_arrays(raw_meta):
    """The array names the metadata member lists (its ``"arrays"`` object), or None when it cannot be read so:
    the metadata's own checks (in :func:`_read` and :func:`load`) then say what is wrong with it."""
    if raw_meta.dtype.kind != "U" or raw_meta.ndim != 0:
        return None
    try:
        meta = json.loads(str(raw_meta), parse_constant=_refuse_constant, parse_float=_finite_float)
    except (ValueError, RecursionError):
        return None
    described = meta.get("arrays") if isinstance(meta, dict) else None
    return set(described) if isinstance(described, dict) else None


def _read(path, key=None, *, max_bytes=DEFAULT_MAX_BYTES):
    """``(meta, arrays)`` of an archive, refusing anything that is not a plain ``.npz``.

    Every member's declared inflated size is checked against ``max_bytes``
    before it is inflated; reading stops at the declared size.
    """
    key = _check_key(key)
    max_bytes = _check_max_bytes(max_bytes)
    path = _checked_path(path, "load")
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot load {path!r}: it is a folder, not a file saved by privrelease.save")
    if not os.path.exists(path):
        if os.path.islink(path):
            raise FileNotFoundError(f"cannot load {path!r}: it is a symbolic link to {os.readlink(path)!r}, "
                                    "which leads to no file (a missing target or a loop of links)")
        raise FileNotFoundError(f"cannot load {path!r}: no such file")
    not_regular = (f"cannot load {path!r}: it is not a regular file (a FIFO, socket or device); expected a file "
                   "saved by privrelease.save")
    if not stat.S_ISREG(os.stat(path).st_mode):  # a socket cannot even be opened: said here
        raise ValueError(not_regular)
    # opened without blocking (a FIFO's open waits for a writer) and checked again on the open descriptor: a path
    # swapped for a FIFO or a device after the check above is refused too; a regular file ignores O_NONBLOCK
    fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):  # a FIFO blocks a read forever; /dev/zero would be read up to max_bytes
            raise ValueError(not_regular)
        if st.st_size > max_bytes:
            raise ValueError(f"{path!r} holds {st.st_size} bytes, more than max_bytes={max_bytes}; "
                             "raise the cap with load(..., max_bytes=...) if the file is expected to be that large")
        raw = fh.read(max_bytes + 1)
    body = _unwrap(path, raw, key)
    head = body[:4]
    if head[:1] == b"\x80":
        raise ValueError(f"{path!r} is a pickle file, not a privrelease .npz archive; pickle files are "
                         "never loaded (they can run arbitrary code)")
    if head != b"PK\x03\x04":
        raise ValueError(f"{path!r} is not a privrelease .npz archive (it does not start with a zip "
                         f"header; first bytes {head!r})")
    arrays = {}
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_MEMBERS:
                raise ValueError(f"{path!r} holds {len(infos)} archive members, more than {MAX_MEMBERS}")
            total = 0
            for info in infos:
                total += info.file_size
                if info.file_size > max_bytes or total > max_bytes:
                    raise ValueError(
                        f"{path!r}: member {info.filename!r} inflates to {info.file_size} bytes "
                        f"({total} in all so far), more than max_bytes={max_bytes}; nothing was inflated. "
                        "Raise the cap with load(..., max_bytes=...) if the file is expected to be that large"
                    )
            if _META_KEY + ".npy" not in {info.filename for info in infos}:
                raise ValueError(f"{path!r} has no {_META_KEY!r} entry: not written by privrelease.save")
            for info in infos:
                if not info.filename.endswith(".npy"):
                    raise ValueError(f"{path!r}: member {info.filename!r} is not a .npy array")
            # the metadata first: a member it does not describe is named before its bytes are parsed (a junk
            # 'evil.npy' added to a saved file was reported as "truncated or corrupt ... reading magic string")
            infos.sort(key=lambda info: info.filename != _META_KEY + ".npy")
            described = None
            for info in infos:
                if described is not None and info.filename != _META_KEY + ".npy" \
                        and info.filename[:-4] not in described:
                    shown = sorted(described)
                    raise ValueError(f"{path!r}: member {info.filename!r} is not one the file's metadata describes "
                                     f"(it lists {shown[:8]!r}{' ...' if len(shown) > 8 else ''}); a file written "
                                     "by privrelease.save holds no other member, so this one was added afterwards")
                with zf.open(info) as member:
                    data = member.read(info.file_size + 1)
                if len(data) != info.file_size:
                    raise ValueError(f"{path!r}: member {info.filename!r} holds {len(data)} bytes, its header "
                                     f"says {info.file_size}")
                a = np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)
                if a.dtype.itemsize == 0 and a.size:
                    # elements of zero bytes (<U0, |S0, |V0) take no room in the file whatever the shape, and
                    # turning them into objects took 8 bytes each: 16 kB declared 1e15 of them (a raw MemoryError)
                    raise ValueError(f"{path!r}: member {info.filename!r} declares {a.size:,} elements of dtype "
                                     f"{a.dtype.str} (zero bytes each); privrelease.save writes none")
                arrays[info.filename[:-4]] = a
                if info.filename == _META_KEY + ".npy":
                    described = _described_arrays(a)
    except ValueError as exc:
        msg = str(exc)
        if msg.startswith(repr(path)):
            raise
        if "pickle" in msg:
            raise ValueError(f"{path!r} holds pickled (object) data, which is never loaded: {exc}") from None
        raise ValueError(f"{path!r} is truncated or corrupt and cannot be read as a .npz archive "
                         f"(ValueError: {exc})") from None
    except Exception as exc:  # noqa: BLE001 - zip/npy parsing fails in many ways on damaged files
        raise ValueError(f"{path!r} is truncated or corrupt and cannot be read as a .npz archive "
                         f"({type(exc).__name__}: {exc})") from None
    raw_meta = arrays.pop(_META_KEY)
    if raw_meta.dtype.kind != "U" or raw_meta.ndim != 0:
        raise ValueError(f"{path!r}: {_META_KEY!r} must be a JSON string, got an array of dtype {raw_meta.dtype}")
    try:
        # NaN and Infinity were read, and the checksum's encoder failed later ("Out of range float values")
        meta = json.loads(str(raw_meta), parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path!r}: the metadata is not valid JSON ({exc})") from None
    except ValueError as exc:
        raise ValueError(f"{path!r}: {exc}") from None
    except RecursionError:
        raise ValueError(f"{path!r}: the metadata nests too deeply to be read") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path!r}: the metadata must be a JSON object, got {type(meta).__name__}")
    return meta, arrays


# ----------------------------------------------------------------------------- public API
def save(estimator, path, key=None):
    """Save a fitted, registered estimator to a portable ``.npz`` archive (no pickle).

    Parameters
    ----------
    estimator : fitted QuantizedPrivacyMapper or ErasureMapper
        Any registered class (see :func:`register`).
    path : str or path-like
        File to write (written to a temporary file, then renamed).
    key : bytes, optional
        Secret of at least 16 bytes. The file is then prefixed with an
        HMAC-SHA256 tag over all its bytes, and ``load(path, key=key)`` refuses
        any file whose tag does not match.

    Returns
    -------
    path : str

    See Also
    --------
    load : read it back, with validation.

    Examples
    --------
    >>> import numpy as np, tempfile, os, shutil, privrelease
    >>> from privrelease.mappers import QuantizedPrivacyMapper
    >>> X = np.repeat(np.eye(4) * 5, 10, axis=0); y = np.tile([0, 1], 20)
    >>> m = QuantizedPrivacyMapper(n_clusters=4, space="raw", random_state=None).fit(X, y)
    >>> folder = tempfile.mkdtemp()
    >>> path = m.save(os.path.join(folder, "mapper.npz"), key=b"0123456789abcdef")
    >>> m2 = privrelease.load(path, key=b"0123456789abcdef")
    >>> bool(np.array_equal(m2.mapping_, m.mapping_))
    True
    >>> shutil.rmtree(folder)
    """
    _checked_path(path, "save to")  # before any work on the estimator
    cls = _REGISTRY.get(type(estimator).__name__)
    if cls is not type(estimator):
        raise TypeError(f"save supports {registered_classes()}, got an instance of {type(estimator).__name__}")
    params = estimator._persist_params()
    state = estimator._persist_state()
    enc = _Encoder()
    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "class": type(estimator).__name__,
        "privrelease_version": __version__,
        "params": {k: enc.encode(v, f"params/{k}") for k, v in params.items()},
        "fitted": {k: enc.encode(v, f"fitted/{k}") for k, v in state.items()},
    }
    meta["arrays"] = {k: {"dtype": a.dtype.str, "shape": list(a.shape)} for k, a in sorted(enc.arrays.items())}
    return _write(path, meta, enc.arrays, key=key)


def load(path, key=None, *, max_bytes=DEFAULT_MAX_BYTES):
    """Load an estimator written by :func:`save`, validating every part of the file.

    Parameters
    ----------
    path : str or path-like
    key : bytes, optional
        The key given to :func:`save`. The HMAC-SHA256 tag is checked before
        anything is decoded: a wrong key, an unsigned file or any edit is refused.
    max_bytes : int, default=256 MiB
        Cap on the file's size and on the bytes its members inflate to (checked
        before inflating). Raise it for very large mappers.

    Returns
    -------
    estimator
        A fitted estimator whose stored claims (leakage, distortion, attacker
        accuracy ...) were recomputed from its stored arrays and found true.

    Raises
    ------
    ValueError
        The file is not a privrelease archive (a pickle, another zip, a
        truncated file), exceeds ``max_bytes``, has an unknown format, version
        or class, a malformed structure, a state that its class refuses (a claim
        that does not hold, a mapping that is not row-stochastic ...), or a
        checksum that does not match its contents. The message says where.
    """
    meta, arrays = _read(path, key, max_bytes=max_bytes)
    fmt = meta.get("format")
    if fmt != FORMAT_NAME:
        raise ValueError(f"unknown file format {fmt!r:.60}, expected {FORMAT_NAME!r}")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise ValueError(f"unsupported format version {version!r:.20}; this privrelease reads version "
                         f"{FORMAT_VERSION}")
    name = meta.get("class")
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"unknown estimator class {name!r:.60}; known classes: {registered_classes()}")
    for entry, kind in (("params", dict), ("fitted", dict), ("arrays", dict), ("sha256", str)):
        if entry not in meta:
            raise ValueError(f"the metadata has no {entry!r} entry")
        if not isinstance(meta[entry], kind):
            raise ValueError(f"the metadata's {entry!r} entry must be a JSON {'object' if kind is dict else 'string'}, "
                             f"got {type(meta[entry]).__name__}")
    described = meta["arrays"]
    if set(described) != set(arrays):
        missing = sorted(set(described) - set(arrays))
        extra = sorted(set(arrays) - set(described))
        raise ValueError(f"arrays in the file do not match the metadata (missing {missing}, unexpected {extra})")
    for key_, desc in described.items():
        a = arrays[key_]
        shape = _field(desc, "shape", f"arrays.{key_}", list)
        dtype = _field(desc, "dtype", f"arrays.{key_}", str)
        if list(a.shape) != shape or a.dtype.str != dtype:
            raise ValueError(f"array {key_!r} has shape {a.shape} and dtype {a.dtype.str}, the metadata says "
                             f"shape {tuple(shape)} and dtype {dtype}")
    params = {k: _decode(v, arrays, f"params.{k}") for k, v in meta["params"].items()}
    state = {k: _decode(v, arrays, f"fitted.{k}") for k, v in meta["fitted"].items()}
    est = _REGISTRY[name]._restore(params, state)
    digest = _digest(meta, arrays)
    if digest != meta["sha256"]:
        raise ValueError(f"SHA-256 checksum mismatch: the file says {meta['sha256']!r:.70} but its contents hash to "
                         f"{digest!r}; the file was damaged")
    return est
