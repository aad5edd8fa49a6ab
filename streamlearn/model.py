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
``state`` (float64[m, ncols], the learner's per-slot state *as it was during
training*, not flushed, so that continuing gives exactly the weights of one
uninterrupted run), ``weights`` (float64[m], the same slots' weights brought
current: what prediction uses), ``gstate`` and ``stats`` (global learner state
and progressive counters).  The file size follows the number of touched,
non-zero slots, not ``2**bits``.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from streamlearn._version import __version__
from streamlearn.config import TrainConfig
from streamlearn.errors import ModelError

MAGIC = b"SLMODEL\0"
VERSION = 1
_PREFIX = struct.Struct("<8sII")
_DIGEST = 32
_DTYPES = {"uint32": np.uint32, "float64": np.float64}


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
) -> Model:
    """Capture a training run's state without disturbing it."""
    from streamlearn.learners.base import stored_slots

    slots = stored_slots(table, spec.stored_cols)
    weights = np.empty(slots.shape[0])
    spec.current_weights(table, gstate, params, slots, weights)
    return Model(
        config=config,
        learner=spec.name,
        slots=slots,
        state=np.ascontiguousarray(table[slots]),
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
    """The file in pieces: the prefix and header, each array's memory (not copied), the digest.

    Written piece by piece, a model is neither copied nor joined in memory
    (three copies of the payload before: 0.05 s for 27 MB at ``-b 22``).
    """
    arrays = {
        "slots": np.ascontiguousarray(model.slots, dtype=np.uint32),
        "state": np.ascontiguousarray(model.state, dtype=np.float64),
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


def save(model: Model, path: str | os.PathLike) -> None:
    """Write ``model`` to ``path`` atomically (:func:`streamlearn.system.outputs.write_bytes`).

    The bytes go to a temporary file in the directory of the path's real
    target, which is fsynced and then renamed over it: a crash leaves the old
    file or the new one, never a mix; a symlink stays a symlink; a device or
    FIFO is written through.
    """
    from streamlearn.system.outputs import write_bytes

    write_bytes(str(path), _encode_parts(model), "model")


def load(path: str | os.PathLike) -> Model:
    """Read and validate a model file; :class:`ModelError` says what is wrong.

    Besides :func:`decode`'s checks, every number must be finite
    (:func:`non_finite`): a NaN weight would score ``nan`` for every line, an
    inf in the state would freeze the weights it touches.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ModelError(f"cannot read model {path}: {e.strerror or e}") from None
    model = decode(data, str(path))
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
        if not np.all(np.isfinite(a)):
            return shown
    return None


def decode(data: bytes, name: str = "<model>") -> Model:
    if len(data) < _PREFIX.size + _DIGEST or data[:8] != MAGIC:
        raise ModelError(f"{name} is not an sl model file (bad magic bytes)")
    _, version, hlen = _PREFIX.unpack_from(data)
    if version != VERSION:
        raise ModelError(
            f"{name} is model format version {version}; this sl reads version {VERSION}"
        )
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    if hashlib.sha256(body).digest() != digest:
        raise ModelError(f"{name} is corrupt or truncated (checksum mismatch)")
    try:
        header = json.loads(body[_PREFIX.size : _PREFIX.size + hlen])
        payload = body[_PREFIX.size + hlen :]
        if len(payload) != header["payload_bytes"]:
            raise ValueError("payload size")
        arrays = {}
        for spec in header["arrays"]:
            dtype = np.dtype(_DTYPES[spec["dtype"]])
            count = int(np.prod(spec["shape"], dtype=np.int64))
            start = int(spec["offset"])
            if start < 0 or start + count * dtype.itemsize > len(payload):
                raise ValueError(f"array {spec['name']} out of range")
            arr = np.frombuffer(payload, dtype=dtype, count=count, offset=start)
            arrays[spec["name"]] = arr.reshape(spec["shape"]).copy()
        config = TrainConfig.from_dict(header["config"])
        slots, state, weights = arrays["slots"], arrays["state"], arrays["weights"]
        m = slots.shape[0]
        if state.ndim != 2 or state.shape[0] != m or weights.shape != (m,):
            raise ValueError("array shapes disagree")
        if m and (int(slots.max()) >= 1 << config.bits or np.any(np.diff(slots) <= 0)):
            raise ValueError("slots out of range or unsorted")
        names = {int(k): list(v) for k, v in header.get("names", {}).items()}
        learner = header["learner"]
        if not isinstance(learner, str):
            raise TypeError("learner is not a name")
    except (KeyError, ValueError, TypeError, AttributeError, json.JSONDecodeError) as e:
        raise ModelError(f"{name} has an invalid header: {e!r}") from None
    return Model(
        config=config,
        learner=learner,
        slots=slots,
        state=state,
        weights=weights,
        gstate=arrays["gstate"],
        stats=arrays["stats"],
        names=names,
        meta=header.get("meta", {}),
    )
