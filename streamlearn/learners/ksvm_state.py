"""What a ``--ksvm`` run keeps between its kernel's calls (:class:`State`: the arrays of
:mod:`streamlearn.learners.ksvm`, grown as the model grows) and its support vectors in the
two model files: sl's (:meth:`State.dump`, a list of numbers after the learner's global
state) and VW's (:func:`vw_section`, :func:`read_vw_section`: its ``save_load``).  Plain
Python and numpy, apart from the kernel module so that its compiled kernels do not depend
on it."""

from __future__ import annotations

import numpy as np

from streamlearn.learners.ksvm import (
    FEAT_END,
    FEAT_LIVE,
    K_POOL,
    N_EVENTS,
    N_FREE,
    N_RFREE,
    N_SUPPORT,
    NI,
    NSI,
    S_COUNTER,
    S_LEN,
    S_LO,
    S_NFEAT,
    S_ROW,
    S_USED,
)

VW_VERSION = "9.6.0"
"""The version sl's VW files of a ksvm model say: VW reads none older (its support vectors'
tags were written otherwise before 9.6)."""


def rng_of(saved: np.ndarray) -> int:
    """VW's generator's state in a :meth:`State.dump` (two 32-bit halves after the count)."""
    return int(saved[1]) | (int(saved[2]) << 32)


def _head(n: int, rng: int) -> np.ndarray:
    """A :meth:`State.dump`'s first numbers: the support vectors' count, the generator."""
    return np.array([float(n), float(rng & 0xFFFFFFFF), float(rng >> 32)])


def _grown(stack: np.ndarray, ints: np.ndarray, count: int, old: int, new: int) -> np.ndarray:
    """A free stack of ``old`` ids (``ints[count]`` of them free) grown to ``new`` ids: the
    new ones at its bottom, the free ones above."""
    n_free = int(ints[count])
    out = np.zeros(new, dtype=np.int64)
    out[: new - old] = np.arange(new - 1, old - 1, -1)
    out[new - old : new - old + n_free] = stack[:n_free]
    ints[count] = n_free + new - old
    return out


class State:
    """The arrays of one run (see the module), grown as the model grows."""

    def __init__(self, kp: np.ndarray, seed: int, slots: int = 64, feats: int = 4096) -> None:
        pool = int(kp[K_POOL])
        self.ints = np.zeros(NI, dtype=np.int64)
        self.kp = kp
        self.rng = np.array([seed], dtype=np.uint64)
        self.slot_i = np.zeros((slots, NSI), dtype=np.int64)
        self.tags: dict[int, bytes] = {}
        """Each stored example's tag (VW keeps it with a support vector), when it has one."""
        self.slot_f = np.zeros((slots, 4))
        self.f_idx = np.zeros(feats, dtype=np.uint64)
        self.f_val = np.zeros(feats, dtype=np.float32)
        self.krow = np.zeros((4, slots), dtype=np.float32)
        """A row of kernel values per stored example that has needed one (rows by
        ``rfree``'s stack), a column per position of the model (its capacity: ``slots``)."""
        self.rfree = np.arange(3, -1, -1, dtype=np.int64)
        self.ints[N_RFREE] = 4
        self.sv = np.zeros(slots, dtype=np.int64)
        self.alpha = np.zeros(slots, dtype=np.float32)
        self.delta = np.zeros(slots, dtype=np.float32)
        self.pool = np.zeros(max(pool, 1), dtype=np.int64)
        self.free = np.arange(slots - 1, -1, -1, dtype=np.int64)
        self.ints[N_FREE] = slots
        self.events = np.zeros((64, 6))

    def arrays(self) -> tuple:
        return (self.ints, self.kp, self.rng, self.slot_i, self.slot_f, self.f_idx, self.f_val,
                self.krow, self.sv, self.alpha, self.delta, self.pool, self.free, self.rfree,
                self.events)

    def make_room(self, need_feats: int, learning: bool = True) -> None:
        """Room for one more example of ``need_feats`` features: the features compacted
        when half are garbage, each array doubled when still short; learning, a kernel row
        for every stored example (VW's rows: the support vectors' grow to their number,
        n² values in all, bounded by the memory available: exit 8 rather than a crash)."""
        ints = self.ints
        if ints[FEAT_END] + need_feats > self.f_idx.shape[0]:
            self._compact()
            while ints[FEAT_END] + need_feats > self.f_idx.shape[0]:
                self.f_idx = np.concatenate([self.f_idx, np.zeros_like(self.f_idx)])
                self.f_val = np.concatenate([self.f_val, np.zeros_like(self.f_val)])
        s = self.slot_i.shape[0]
        if ints[N_FREE] < 2 or ints[N_SUPPORT] + self.pool.shape[0] + 1 > self.sv.shape[0]:
            self._grow(2 * s)
        rows = self.krow.shape[0]
        if ints[N_RFREE] < 2 or (learning and rows < self.slot_i.shape[0]):
            self._grow_rows(max(2 * rows, self.slot_i.shape[0] if learning else 0))
        ints[N_EVENTS] = 0

    def _room_for(self, rows: int, cols: int) -> None:
        """Refuse (exit 8) kernel rows that would pass the memory available."""
        from streamlearn.system.memory import refuse_above

        refuse_above(4 * rows * cols, f"--ksvm's kernel rows ({int(self.ints[N_SUPPORT]):,} "
                     "support vectors)", "a larger --l2 or fewer examples keep fewer support "
                     "vectors")  # fmt: skip

    def _grow_rows(self, r: int) -> None:
        old, cols = self.krow.shape
        self._room_for(r, cols)
        krow = np.zeros((r, cols), dtype=np.float32)
        krow[:old] = self.krow
        self.krow = krow
        self.rfree = _grown(self.rfree, self.ints, N_RFREE, old, r)

    def _compact(self) -> None:
        ints = self.ints
        if ints[FEAT_LIVE] * 2 > ints[FEAT_END]:
            return
        used = np.flatnonzero(self.slot_i[:, S_USED])
        used = used[np.argsort(self.slot_i[used, S_LO], kind="stable")]
        at = 0
        for e in used.tolist():
            lo, n = int(self.slot_i[e, S_LO]), int(self.slot_i[e, S_LEN])
            self.f_idx[at : at + n] = self.f_idx[lo : lo + n]
            self.f_val[at : at + n] = self.f_val[lo : lo + n]
            self.slot_i[e, S_LO] = at
            at += n
        ints[FEAT_END] = at
        ints[FEAT_LIVE] = at

    def _grow(self, s: int) -> None:
        old = self.slot_i.shape[0]
        self.slot_i = np.concatenate([self.slot_i, np.zeros((s - old, NSI), dtype=np.int64)])
        self.slot_f = np.concatenate([self.slot_f, np.zeros((s - old, 4))])
        rows = self.krow.shape[0]
        self._room_for(rows, s)
        krow = np.zeros((rows, s), dtype=np.float32)
        krow[:, :old] = self.krow
        self.krow = krow
        for name in ("sv", "alpha", "delta"):
            a = getattr(self, name)
            setattr(self, name, np.concatenate([a, np.zeros(s - old, dtype=a.dtype)]))
        self.free = _grown(self.free, self.ints, N_FREE, old, s)

    # -- the model: its support vectors, in order ------------------------------------------

    def take_tags(self, batch) -> None:  # noqa: ANN001 - an io.batch.Batch, or None
        """The tags of the examples the last call stored from ``batch`` (its rows' tags)."""
        rows = self.slot_i[:, S_ROW]
        for e in np.flatnonzero((rows >= 0) & (self.slot_i[:, S_USED] != 0)).tolist():
            i = int(rows[e])
            tag = b""
            if batch is not None and getattr(batch, "block", None) is not None:
                tag = bytes(batch.block.data[int(batch.tag_start[i]) : int(batch.tag_end[i])])
            if tag:
                self.tags[e] = tag
            else:
                self.tags.pop(e, None)
        rows[:] = -1

    def dump(self) -> np.ndarray:
        """float64[]: VW's generator, then the support vectors in order (each: label, weight,
        initial, Σx², features' count, example counter, merged count m, tag length t, m
        indices, m values, t bytes), then alpha and delta (what the model files keep)."""
        n = int(self.ints[N_SUPPORT])
        r = int(self.rng[0])
        out = [_head(n, r)]
        for k in range(n):
            e = int(self.sv[k])
            lo, m = int(self.slot_i[e, S_LO]), int(self.slot_i[e, S_LEN])
            tag = self.tags.get(e, b"")
            out.append(np.array([*self.slot_f[e], float(self.slot_i[e, S_NFEAT]),
                                 float(self.slot_i[e, S_COUNTER]), float(m), float(len(tag))]))
            out.append(self.f_idx[lo : lo + m].astype(np.float64))
            out.append(self.f_val[lo : lo + m].astype(np.float64))
            out.append(np.frombuffer(tag, dtype=np.uint8).astype(np.float64))
        out += [self.alpha[:n].astype(np.float64), self.delta[:n].astype(np.float64)]
        return np.concatenate(out)

    def load(self, saved: np.ndarray) -> None:
        """The model :meth:`dump` wrote (checked by :func:`check_dump`), kernel rows empty."""
        n, _ = check_dump(saved)
        self.rng[0] = np.uint64(rng_of(saved))
        while self.slot_i.shape[0] < n + self.pool.shape[0] + 2:
            self._grow(2 * self.slot_i.shape[0])
        at = 3
        for k in range(n):
            label, weight, initial, sq, nfeat, counter, m, t = saved[at : at + _FIELDS]
            m, t = int(m), int(t)
            at += _FIELDS
            idx, val = saved[at : at + m], saved[at + m : at + 2 * m]
            tag = saved[at + 2 * m : at + 2 * m + t].astype(np.uint8).tobytes()
            at += 2 * m + t
            self.make_room(m, learning=False)
            ints = self.ints
            ints[N_FREE] -= 1
            e = int(self.free[ints[N_FREE]])
            lo = int(ints[FEAT_END])
            self.f_idx[lo : lo + m] = idx.astype(np.uint64)
            self.f_val[lo : lo + m] = val.astype(np.float32)
            ints[FEAT_END] += m
            ints[FEAT_LIVE] += m
            self.slot_i[e] = (lo, m, int(nfeat), int(counter), 0, 1, -1, -1)
            self.slot_f[e] = (label, weight, initial, sq)
            if tag:
                self.tags[e] = tag
            self.sv[k] = e
        self.alpha[:n] = saved[at : at + n]
        self.delta[:n] = saved[at + n : at + 2 * n]
        self.ints[N_SUPPORT] = n


_FIELDS = 8
"""The numbers before a support vector's features in :meth:`State.dump`."""


def check_dump(saved: np.ndarray) -> tuple[int, int]:
    """(support vectors, where their coefficients start) of a :meth:`State.dump` read from
    a file; ValueError when its counts do not add up (numba does not check bounds: the
    kernel never sees a bad one)."""
    if saved.ndim != 1 or saved.shape[0] < 3 or not np.all(np.isfinite(saved)):
        raise ValueError("its support vectors are not a list of numbers")
    n = saved[0]
    if n != int(n) or not 0 <= n <= saved.shape[0]:
        raise ValueError("its count of support vectors is wrong")
    for half in saved[1:3]:
        if half != int(half) or not 0 <= half < 2**32:
            raise ValueError("its generator's state is wrong")
    at = 3
    for _ in range(int(n)):
        if at + _FIELDS > saved.shape[0]:
            raise ValueError("its support vectors are cut short")
        m, t = saved[at + 6], saved[at + 7]
        for c in (m, t, saved[at + 4], saved[at + 5]):
            if c != int(c) or c < 0:
                raise ValueError("a support vector's counts are wrong")
        m, t = int(m), int(t)
        at += _FIELDS
        if at + 2 * m + t > saved.shape[0]:
            raise ValueError("a support vector's features are cut short")
        idx = saved[at : at + m]
        if np.any(idx < 0) or np.any(idx >= 2**32) or np.any(idx != np.floor(idx)):
            raise ValueError("a support vector's features are out of range")
        if np.any(np.diff(idx) <= 0):
            raise ValueError("a support vector's features are not sorted")
        tag = saved[at + 2 * m : at + 2 * m + t]
        if np.any(tag < 0) or np.any(tag > 255) or np.any(tag != np.floor(tag)):
            raise ValueError("a support vector's tag is not bytes")
        at += 2 * m + t
    if at + 2 * int(n) != saved.shape[0]:
        raise ValueError("its coefficients do not match its support vectors")
    if np.any(np.abs(saved[3:]) > np.finfo(np.float32).max):
        raise ValueError("a number does not fit a float32")
    return int(n), at


def vw_section(saved: np.ndarray) -> bytes:
    """VW's model of the support vectors in ``saved`` (a :meth:`State.dump`): their count,
    each as VW's cache writes an example (its label, tag, counter, offset, weight, feature
    count, Σx², namespace 0 and its features), then alpha and delta."""
    import struct

    n, _ = check_dump(saved)
    parts = [struct.pack("<Q", n)]
    at = 3
    for _ in range(n):
        label, weight, initial, sq, nfeat, counter, m, t = saved[at : at + _FIELDS]
        m, t = int(m), int(t)
        at += _FIELDS
        idx = saved[at : at + m].astype(np.uint64)
        val = saved[at + m : at + 2 * m].astype(np.float32)
        tag = saved[at + 2 * m : at + 2 * m + t].astype(np.uint8).tobytes()
        at += 2 * m + t
        parts.append(struct.pack("<fffI", label, weight, initial, t) + tag)
        parts.append(struct.pack("<QQfQfB", int(counter), 0, 0.0, int(nfeat), sq, 0))
        parts.append(_cache_features(idx, val))
    parts.append(saved[at : at + n].astype("<f4").tobytes())
    parts.append(saved[at + n : at + 2 * n].astype("<f4").tobytes())
    return b"".join(parts)


def _varint(x: int) -> bytes:
    out = bytearray()
    while x >= 0x80:
        out.append((x & 0x7F) | 0x80)
        x >>= 7
    out.append(x)
    return bytes(out)


def _cache_features(idx: np.ndarray, val: np.ndarray) -> bytes:
    """VW's ``cache_features``: each index as the zig-zag difference from the last, two
    flag bits (-1, or a value that follows), then the value when it is not ±1."""
    import struct

    body = bytearray()
    last = 0
    for i, v in zip(idx.tolist(), val.tolist(), strict=True):
        d = i - last
        last = i
        z = ((d << 1) ^ (d >> 63)) & 0xFFFFFFFFFFFFFFFF
        z = (z << 2) & 0xFFFFFFFFFFFFFFFF
        if v == 1.0:
            body += _varint(z)
        elif v == -1.0:
            body += _varint(z | 1)
        else:
            body += _varint(z | 2) + struct.pack("<f", v)
    return struct.pack("<Q", len(body)) + bytes(body)


def read_vw_section(data: bytes, pos: int, seed: int) -> np.ndarray:
    """:func:`vw_section` read back from a VW model file at ``pos`` (to its end): the
    support vectors as a :meth:`State.dump`, with ``seed`` (the header's ``--random_seed``)
    as the generator's state.  ValueError when the bytes are not VW's ksvm model."""
    import struct

    def take(fmt: str) -> tuple:
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(data):
            raise ValueError("its ksvm model is cut short")
        out = struct.unpack_from(fmt, data, pos)
        pos += size
        return out

    (n,) = take("<Q")
    if n > len(data):
        raise ValueError("its count of support vectors is wrong")
    out = [_head(n, seed)]
    for _ in range(n):
        label, weight, initial, tag_len = take("<fffI")
        if tag_len > len(data) - pos:
            raise ValueError("a support vector's tag is cut short")
        tag = data[pos : pos + tag_len]
        pos += tag_len
        counter, _offset, _gw, nfeat, sq, _index, storage = take("<QQfQfBQ")
        end = pos + storage
        if end > len(data):
            raise ValueError("a support vector's features are cut short")
        idx, val, last = [], [], 0
        while pos < end:
            z, shift = 0, 0
            while True:
                if pos >= end or shift > 63:
                    raise ValueError("a support vector's features are malformed")
                b = data[pos]
                pos += 1
                z |= (b & 0x7F) << shift
                shift += 7
                if b < 0x80:
                    break
            v = 1.0
            if z & 1:
                v = -1.0
            elif z & 2:
                if pos + 4 > end:
                    raise ValueError("a support vector's features are cut short")
                (v,) = struct.unpack_from("<f", data, pos)
                pos += 4
            d = z >> 2
            last += (d >> 1) ^ -(d & 1)
            idx.append(last)
            val.append(v)
        out.append(np.array([label, weight, initial, sq, float(nfeat), float(counter),
                             float(len(idx)), float(tag_len)]))  # fmt: skip
        out += [np.array(idx, dtype=np.float64), np.array(val, dtype=np.float64),
                np.frombuffer(tag, dtype=np.uint8).astype(np.float64)]
    alpha = take(f"<{n}f")
    delta = take(f"<{n}f")
    if pos != len(data):
        raise ValueError("bytes after its ksvm model")
    out += [np.array(alpha, dtype=np.float64), np.array(delta, dtype=np.float64)]
    saved = np.concatenate(out)
    check_dump(saved)
    return saved
