"""Model files: checksummed, versioned, sparse, written atomically, never pickled.

Layout (all integers little-endian)::

    b"SLMODEL\\0"            8 bytes magic
    version                  uint32
    header length H          uint32
    header                   H bytes of UTF-8 JSON (options, learner, counters,
                             and the name, dtype, shape, offset of each array)
    payload                  the arrays, back to back
    sha256                   32 bytes over everything before it

Arrays: ``slots`` (uint32, the slots whose primary state is non-zero, sorted),
``state`` (float32 or float64 [m, ncols], the learner's per-slot state in its
table's own type, *as it was during training*, not flushed, so that continuing
gives exactly the weights of one uninterrupted run), ``weights`` (float64[m],
the same slots' weights brought current: what prediction uses), ``gstate`` and
``stats`` (global learner state and progressive counters).  The file size
follows the number of touched, non-zero slots, not ``2**bits``.

Versions: 2 stores a float32 table's state as float32 (gd, FTRL: a third
less file than version 1's float64 copy of the same numbers); this sl reads
both, and an older sl refuses a version 2 file by its version.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
from dataclasses import dataclass, field

import numpy as np

from streamlearn._version import __version__
from streamlearn.config import TrainConfig
from streamlearn.errors import Diverged, ModelError
from streamlearn.io import vwmodel
from streamlearn.system.sources import describe

MAGIC = b"SLMODEL\0"
VERSION = 2
READS = (1, 2)
"""The format versions this sl reads."""
_PREFIX = struct.Struct("<8sII")
_DIGEST = 32
_DTYPES = {"uint32": np.uint32, "float32": np.float32, "float64": np.float64}


@dataclass
class Model:
    """A trained model: options, resume state and current weights."""

    config: TrainConfig
    learner: str
    slots: np.ndarray
    state: np.ndarray
    weights: np.ndarray
    gstate: np.ndarray
    stats: np.ndarray
    names: dict[int, list[str]] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    @property
    def nnz(self) -> int:
        return int(np.count_nonzero(self.weights))

    def dense_weights(self) -> np.ndarray:
        from streamlearn.system.memory import zeros

        w = zeros((1 << self.config.bits,), f"2^{self.config.bits} weights x 8 bytes")
        w[self.slots] = self.weights
        return w

    def table(self, fresh: tuple[float, ...], dtype=np.float64) -> np.ndarray:
        """The training table (of ``dtype``, the learner's) with the saved rows in place."""
        if self.state.shape[1] != len(fresh):
            raise ModelError(
                f"model state has {self.state.shape[1]} columns, learner expects {len(fresh)}"
            )
        from streamlearn.learners.base import fresh_table  # (imports numba)

        table = fresh_table(self.config.bits, fresh, dtype)
        table[self.slots] = self.state
        return table


def from_training(
    config: TrainConfig,
    spec,
    table: np.ndarray,
    gstate: np.ndarray,
    stats: np.ndarray,
    params: np.ndarray,
    names: dict[int, list[str]] | None = None,
    meta: dict | None = None,
    final: bool = False,
) -> Model:
    """Capture a training run's state without disturbing it; with ``final``, the run is
    over and its table is not used again (:func:`~streamlearn.learners.base.final_rows`
    may move the model's rows within it)."""
    from streamlearn.learners.base import final_rows, stored_slots

    slots = stored_slots(table, spec.stored_cols)
    weights = np.empty(slots.shape[0])
    spec.current_weights(table, gstate, params, slots, weights)
    # np.take: a quarter of table[slots]'s copying time
    state = final_rows(table, slots) if final else np.take(table, slots, axis=0)
    return Model(
        config=config,
        learner=spec.name,
        slots=slots,
        state=state,
        weights=weights,
        gstate=gstate.copy(),
        stats=stats.copy(),
        names=dict(names or {}),
        meta=dict(meta or {}),
    )


def _encode(model: Model) -> bytes:
    """The file's bytes (:func:`_encode_parts` joined)."""
    return b"".join(_encode_parts(model))


def _encode_parts(model: Model) -> list:
    """The file in pieces: the prefix and header, each array's memory (not copied; the
    state in its own float type), the digest.

    Written piece by piece, a model is neither copied nor joined in memory
    (three copies of the payload before: 0.05 s for 27 MB at ``-b 22``).
    """
    state = model.state
    arrays = {
        "slots": np.ascontiguousarray(model.slots, dtype=np.uint32),
        "state": np.ascontiguousarray(
            state, dtype=state.dtype if state.dtype in _STATE_DTYPES else np.float64
        ),
        "weights": np.ascontiguousarray(model.weights, dtype=np.float64),
        "gstate": np.ascontiguousarray(model.gstate, dtype=np.float64),
        "stats": np.ascontiguousarray(model.stats, dtype=np.float64),
    }
    table, offset = [], 0
    for name, arr in arrays.items():
        table.append(
            {"name": name, "dtype": arr.dtype.name, "shape": list(arr.shape), "offset": offset}
        )
        offset += arr.nbytes
    header = {
        "format": "streamlearn model",
        "sl_version": __version__,
        "learner": model.learner,
        "config": model.config.to_dict(),
        "nnz": model.nnz,
        "names": {str(k): v for k, v in sorted(model.names.items())},
        "meta": model.meta,
        "arrays": table,
        "payload_bytes": offset,
    }
    head = json.dumps(header, sort_keys=True).encode()
    parts = [_PREFIX.pack(MAGIC, VERSION, len(head)) + head]
    parts += [memoryview(a).cast("B") for a in arrays.values() if a.nbytes]
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    return [*parts, digest.digest()]


FORMATS = ("sl", "vw", "vw_predict_only")
"""The formats :func:`save` writes: sl's; VW's with its resume state (VW 9's default,
``--save_resume``); VW's with the weights only (``--predict_only_model``)."""


def save(model: Model, path: str | os.PathLike, format: str = "sl",  # noqa: A002
         link: str = "identity") -> None:  # fmt: skip
    """Write ``model`` to ``path`` atomically (:func:`streamlearn.system.outputs.write_bytes`).

    The bytes go to a temporary file in the directory of the path's real
    target, which is fsynced and then renamed over it: a crash leaves the old
    file or the new one, never a mix; a symlink stays a symlink; a device or
    FIFO is written through.  ``format`` is one of :data:`FORMATS` (VW's:
    :func:`streamlearn.model_vw.encode`, which keeps the run's ``link`` with the model
    as VW keeps ``--link``).
    """
    from streamlearn.system.outputs import write_bytes

    bad = non_finite(model)
    if bad is not None:  # every path that saves (sl train, the server, the API) comes here
        raise Diverged(f"the model's {bad} holds a NaN or an inf: the training diverged "
                       f"(no model written to {path})")  # fmt: skip
    if format == "sl":
        parts = _encode_parts(model)
    elif format in ("vw", "vw_predict_only"):
        from streamlearn import model_vw

        try:
            parts = model_vw.encode(model, weights_only=format == "vw_predict_only", link=link)
        except ValueError as e:
            raise ModelError(f"cannot write {path} as a VW model: {e}") from None
    else:
        raise ValueError(f"model format {format!r}: one of {', '.join(FORMATS)}")
    write_bytes(str(path), parts, "model")


def writable_as(config: TrainConfig, format: str) -> str | None:  # noqa: A002
    """Why a model of ``config`` cannot be saved in ``format``, or None (checked before a
    run, so that it does not fail at its end)."""
    if format == "sl":
        return None
    from streamlearn import model_vw

    return model_vw.writable(config)


def with_link(model: Model, outputs):  # noqa: ANN001, ANN201 - run.options.Outputs
    """``outputs`` with the ``--link`` a VW model keeps when the run names none (VW applies
    the link of its model's options)."""
    link = model.meta.get("vw_model", {}).get("link")
    if link is None or outputs.link != "identity":
        return outputs
    from dataclasses import replace

    return replace(outputs, link=link)


def learned_weight(model: Model, config: TrainConfig) -> float | None:
    """A VW model's learned weight for a run of ``config``
    (:func:`streamlearn.model_vw.learned_weight`), None for others."""
    if not is_vw(model):
        return None
    from streamlearn import model_vw

    return model_vw.learned_weight(model, config)


def is_vw(model: Model) -> bool:
    """Whether ``model`` was read from a VW model file."""
    return "vw_model" in model.meta


def unrecorded(model: Model | None) -> tuple[str, ...]:
    """The options ``model``'s file did not record (a VW model's loss, ...): the command
    line's value holds, without a conflict."""
    if model is None:
        return ()
    return tuple(model.meta.get("vw_model", {}).get("unrecorded", ()))


_CHUNK = 64 << 20
"""Bytes read at a time: Python runs between reads, so a signal stops a long one."""
MAX_COLS = 16
"""The most state columns a learner keeps per slot (gd and l0: four at most today)."""
_ARRAYS = {"slots": (("uint32",), 1), "state": (("float64", "float32"), 2),
           "weights": (("float64",), 1), "gstate": (("float64",), 1),
           "stats": (("float64",), 1)}  # fmt: skip
"""The arrays of a model file: the dtypes it may have and its number of dimensions
(a float32 state only from version 2 on)."""
_STATE_DTYPES = tuple(np.dtype(_DTYPES[d]) for d in _ARRAYS["state"][0])


def load(path: str | os.PathLike) -> Model:
    """Read and validate a model file; :class:`ModelError` says what is wrong.

    Besides :func:`decode`'s checks, every number must be finite
    (:func:`non_finite`): a NaN weight would score ``nan`` for every line, an
    inf in the state would freeze the weights it touches.

    A regular file is read to its size; anything else (a FIFO, a device,
    ``/dev/stdin``) only as far as its own header says, after its magic
    bytes have been checked: ``sl inspect /dev/zero`` is refused at once.
    """
    name = str(path)
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISREG(st.st_mode):
                data = _read_exactly(f, st.st_size)
            else:
                data = _read_stream(f, name)
    except OSError as e:
        raise ModelError(f"cannot read model {path}: {describe(e)}") from None
    model = decode(data, name)
    bad = non_finite(model)
    if bad is not None:
        raise ModelError(f"{path} holds non-finite numbers in its {bad} (NaN or inf): unusable")
    return model


FINITE_ARRAYS = {"weights": "weights", "state": "per-slot state", "gstate": "global state",
                 "stats": "counters"}  # fmt: skip
"""The arrays of a model that must hold finite numbers only, and their names in messages."""


def non_finite(model: Model) -> str | None:
    """The name of the first array of ``model`` holding a NaN or an inf, or None.

    ``sl train`` never saves such a model (``run.train.check_model``) and
    :func:`load` never returns one.  O(stored slots).
    """
    for attr, shown in FINITE_ARRAYS.items():
        a = getattr(model, attr)
        # min and max are NaN if any element is, else ±inf if any is: no array of flags
        if a.size and not (np.isfinite(a.min()) and np.isfinite(a.max())):
            return shown
    return None


def _read_exactly(f, n: int) -> bytes:  # noqa: ANN001 - a binary file
    """Up to ``n`` bytes of ``f`` (fewer at its end), read in chunks."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = f.readinto(view[got : got + _CHUNK])
        if not k:
            break
        got += k
    del view
    if got < n:
        del buf[got:]
    return bytes(buf)


def _read_stream(f, name: str) -> bytes:  # noqa: ANN001 - a binary file
    """The bytes of a model read from a stream, as many as its header says it holds."""
    prefix = _read_exactly(f, _PREFIX.size)
    if prefix[:8] != MAGIC and vwmodel.sniff(prefix):
        return _read_vw_stream(f, prefix, name)
    if len(prefix) < _PREFIX.size or prefix[:8] != MAGIC:
        return prefix  # decode() says what is wrong
    _, version, hlen = _PREFIX.unpack(prefix)
    if version not in READS:
        return prefix
    head = _read_exactly(f, hlen)
    if len(head) < hlen:
        return prefix + head
    try:
        payload = _header(head)["payload_bytes"]
    except (ValueError, KeyError, TypeError):
        return prefix + head  # decode() says what is wrong
    if not isinstance(payload, int) or payload < 0:
        return prefix + head
    bound = _stream_bound(_header(head))
    if payload > bound:
        raise ModelError(f"model {name}: its header declares {payload:,} bytes of arrays, more "
                         f"than its own list of arrays and bits allow ({bound:,}): not a model "
                         "sl wrote; nothing more was read")  # fmt: skip
    return prefix + head + _read_growing(f, payload + _DIGEST)


_SMALL_ARRAY = 1 << 16
"""The most entries of the global state and the counters (a few dozen today)."""


def _stream_bound(header: dict) -> int:
    """The most payload bytes a model with this header can hold: what its arrays declare,
    each checked against the model's bits (slots) and :data:`MAX_COLS` (state columns),
    or 0 when the header cannot be a model's."""
    try:
        bits = header["config"]["bits"]
        slots = 1 << bits if isinstance(bits, int) and 1 <= bits <= 32 else 0
        total = 0
        for spec in header["arrays"]:
            name, shape = spec["name"], spec["shape"]
            count = _count(shape, _ARRAYS[name][1], f"array {name}")
            rows = shape[0]
            if name in ("gstate", "stats"):
                rows = count if count <= _SMALL_ARRAY else slots + 1
            elif name == "state" and shape[1] > MAX_COLS:
                rows = slots + 1
            if rows > slots:
                return 0
            total += count * np.dtype(_DTYPES[spec["dtype"]]).itemsize
        return total
    except (KeyError, TypeError, ValueError, IndexError):
        return 0


def _read_growing(f, n: int) -> bytes:  # noqa: ANN001 - a binary file
    """Up to ``n`` bytes of a stream, read a chunk at a time: memory follows the bytes
    that arrive, not the number a header claims."""
    parts, got = [], 0
    while got < n:
        part = f.read(min(_CHUNK, n - got))
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _read_vw_stream(f, prefix: bytes, name: str) -> bytes:  # noqa: ANN001 - a binary file
    """A VW model from a stream: VW's files have no length, so to their end, but no
    further than a full table of its header's bits could take (memory follows the bytes
    that arrive, :func:`_read_growing`)."""
    data = prefix + _read_growing(f, 1 << 20)
    try:
        header = vwmodel.read_header(data)
    except ValueError:
        return data  # decode() says what is wrong (a header of more than 1 MiB too)
    most = header.end + (1 << min(header.bits, 30)) * vwmodel.MAX_RECORD + (4 << 10)
    data += _read_growing(f, max(0, most + 1 - len(data)))
    if len(data) > most:
        raise ModelError(f"model {name}: more bytes than a VW model of 2^{header.bits} slots "
                         "holds: not a VW model; nothing more was read")  # fmt: skip
    return data


def _header(raw: bytes) -> dict:
    """The JSON header, a dict; ValueError when it is not one (deep nesting included)."""
    try:
        header = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ValueError("its JSON is nested too deeply") from None
    except UnicodeDecodeError:
        raise ValueError("it is not UTF-8") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"it is not JSON ({e.msg})") from None
    if not isinstance(header, dict):
        raise ValueError("it is not a JSON object")
    return header


def _count(shape: object, ndim: int, what: str) -> int:
    """The number of entries of a ``shape`` read from a header, checked."""
    if not isinstance(shape, list) or len(shape) != ndim:
        raise ValueError(f"{what} must have {ndim} dimension{'s' * (ndim > 1)}")
    n = 1
    for d in shape:
        if not isinstance(d, int) or isinstance(d, bool) or d < 0:
            raise ValueError(f"{what} has a bad shape {shape!r}"[:120])
        n *= d  # Python integers: a shape of 10**30 does not overflow, it fails below
    return n


def _arrays(header: dict, payload: bytes, version: int) -> dict[str, np.ndarray]:
    """The arrays the header lists, each checked for name, dtype, shape and place."""
    table = header.get("arrays")
    if not isinstance(table, list):
        raise ValueError("no list of arrays")
    arrays: dict[str, np.ndarray] = {}
    for spec in table:
        if not isinstance(spec, dict):
            raise ValueError("an array entry is not an object")
        name = spec.get("name")
        if not isinstance(name, str) or name not in _ARRAYS or name in arrays:
            raise ValueError(f"unknown or repeated array {name!r}"[:120])
        allowed, ndim = _ARRAYS[name]
        allowed = allowed if version > 1 else allowed[:1]
        dtype = spec.get("dtype")
        if dtype not in allowed:
            raise ValueError(f"array {name} must be {' or '.join(allowed)}")
        count = _count(spec.get("shape"), ndim, f"array {name}")
        start = spec.get("offset")
        itemsize = np.dtype(_DTYPES[dtype]).itemsize
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:
            raise ValueError(f"array {name} has a bad offset")
        if start + count * itemsize > len(payload):
            raise ValueError(f"array {name} is out of range")
        arr = np.frombuffer(payload, dtype=_DTYPES[dtype], count=count, offset=start)
        arrays[name] = arr.reshape(spec["shape"]).copy()
    missing = [n for n in _ARRAYS if n not in arrays]
    if missing:
        raise ValueError(f"array {missing[0]} is missing")
    return arrays


def _names(raw: object, bits: int) -> dict[int, list[str]]:
    if not isinstance(raw, dict):
        raise ValueError("names must be an object")
    names = {}
    for k, v in raw.items():
        if not (k.isascii() and k.isdigit() and int(k) < 1 << bits):
            raise ValueError(f"names: {k!r} is not a slot"[:120])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ValueError(f"names of slot {k} must be a list of strings")
        names[int(k)] = v
    return names


def decode(data: bytes, name: str = "<model>") -> Model:
    """The model in ``data`` (a model file's bytes), every field checked before use.

    Magic, version and checksum first; then the header, whose every field is
    checked for type and range, and every array for dtype and shape, so that a
    crafted file with a valid checksum is one :class:`ModelError`, never a
    traceback later.
    """
    from streamlearn.learners.base import (
        GSTATE_SIZE,
        S_HO_N,
        S_HO_W,
        S_N,
        S_SHOWN_N,
        S_SHOWN_W,
        S_WEX,
        STATS_SIZE,
    )

    if not data:  # what a failed producer leaves: say so, not "bad magic bytes"
        raise ModelError(f"{name} is empty (0 bytes), not an sl model file")
    if data[:8] != MAGIC and vwmodel.sniff(data[:16]):
        return _decode_vw(data, name)
    if len(data) < _PREFIX.size + _DIGEST or data[:8] != MAGIC:
        raise ModelError(f"{name} is not an sl model file (bad magic bytes), nor a VW model")
    _, version, hlen = _PREFIX.unpack_from(data)
    if version not in READS:
        raise ModelError(
            f"{name} is model format version {version}; this sl reads versions "
            f"{', '.join(map(str, READS))}"
        )
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    if hashlib.sha256(body).digest() != digest:
        raise ModelError(f"{name} is corrupt or truncated (checksum mismatch)")
    try:
        if _PREFIX.size + hlen > len(body):
            raise ValueError("header longer than the file")
        header = _header(body[_PREFIX.size : _PREFIX.size + hlen])
        payload = body[_PREFIX.size + hlen :]
        if header.get("payload_bytes") != len(payload):
            raise ValueError("payload size")
        arrays = _arrays(header, payload, version)
        config = TrainConfig.from_dict(header.get("config"))
        slots, state, weights = arrays["slots"], arrays["state"], arrays["weights"]
        gstate, stats = arrays["gstate"], arrays["stats"]
        m = slots.shape[0]
        if state.shape[0] != m or weights.shape != (m,):
            raise ValueError("array shapes disagree")
        if not 1 <= state.shape[1] <= MAX_COLS:
            raise ValueError(f"state has {state.shape[1]} columns")
        if gstate.shape[0] < GSTATE_SIZE or stats.shape != (STATS_SIZE,):
            raise ValueError("global state or counters of the wrong size")
        if m and (int(slots.max()) >= 1 << config.bits or np.any(np.diff(slots) <= 0)):
            raise ValueError("slots out of range or unsorted")
        if stats[S_SHOWN_N] == 0.0 and stats[S_N] > 0.0:
            # saved before the table counted its examples apart (in two spare counters):
            # all but the held-out ones, as the table shows them
            stats = stats.copy()
            stats[S_SHOWN_N] = stats[S_N] - stats[S_HO_N]
            stats[S_SHOWN_W] = stats[S_WEX] - stats[S_HO_W]
        names = _names(header.get("names", {}), config.bits)
        learner = header.get("learner")
        if not isinstance(learner, str) or not learner:
            raise ValueError("learner is not a name")
        if learner == "autolink_gd":  # (before --autolink moved into config.stack: gd's table)
            learner = "gd"
        meta = header.get("meta", {})
        if not isinstance(meta, dict):
            raise ValueError("meta is not an object")
        if "multiline" in meta:  # (a bandit's reduction: data, checked as a VW model's are)
            from streamlearn import model_sizes, model_vw

            model_vw.check_sl_multiline(meta["multiline"])
            model_sizes.check_sizes(meta["multiline"], model_sizes.SIZE_NAMES,
                                    origin=f"{name}: from its options, ")
        if learner == "l0" and config.algo == "l0":  # a heap the kernel indexes with
            from streamlearn.learners.l0 import check_state

            check_state(slots, state, gstate, config.top_k, config.bits)
    except ValueError as e:  # ConfigError included
        raise ModelError(f"{name} has an invalid header: {e}") from None
    return Model(
        config=config,
        learner=learner,
        slots=slots,
        state=state,
        weights=weights,
        gstate=gstate,
        stats=stats,
        names=names,
        meta=meta,
    )


def _decode_vw(data: bytes, name: str) -> Model:
    """The VW model in ``data`` (:mod:`streamlearn.model_vw`), or one :class:`ModelError`."""
    from streamlearn import model_vw

    try:
        config, learner, slots, state, weights, gstate, stats, meta = model_vw.decode(data)
    except model_vw.Unsupported as e:
        raise ModelError(f"{name} is a VW model sl cannot use: {e}") from None
    except ValueError as e:  # ConfigError included
        raise ModelError(f"{name} is not a usable VW model: {e}") from None
    return Model(config=config, learner=learner, slots=slots, state=state, weights=weights,
                 gstate=gstate, stats=stats, meta=meta)  # fmt: skip
