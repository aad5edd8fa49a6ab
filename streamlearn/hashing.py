"""VW-compatible feature hashing: murmurhash3_x86_32 and VW's ``hashstring`` rule.

Vowpal Wabbit (``--hash strings``, the default) maps a feature to a slot as
follows (DESIGN.md section 4):

* namespace hash ``h_ns = hashstring(namespace, 0)``; the default namespace
  (``|`` followed by whitespace) has hash 0;
* feature hash ``hashstring(name, h_ns)``; a chain-hashed feature
  ``name:string`` has hash ``hashstring(string, hashstring(name, h_ns))``;
* slot = hash mod ``2**bits``.

``hashstring(s, seed)`` trims leading and trailing bytes ``<= 0x20``; if what
remains is all ASCII digits, the hash is its decimal value (wrapping at
``2**64``) plus ``seed``, otherwise ``murmurhash3_x86_32(s, seed)``.  An empty
remainder hashes to ``seed`` itself (the digit loop runs zero times), exactly
as VW's ``hashstring`` does.  All arithmetic here is modulo ``2**32``: only the
low 32 bits ever reach a slot (``bits <= 32``).

The numba functions work on byte spans ``buf[start:end]`` of a ``uint8`` array
so the parsers can hash names in place.  Integer arithmetic is done in
``uint64`` with explicit masks, because numba turns mixed signed/unsigned
64-bit arithmetic into floating point.

>>> hashstring_py("123", 5)
128
>>> feature_slot("house", "price", 18)
204953
>>> feature_slot("", "word", 18)
185504
>>> CONSTANT_HASH % 2**18
116060
"""

from __future__ import annotations

import mmh3
import numpy as np

from streamlearn.system.jit import jit_inline

CONSTANT_HASH = 11650396
"""Hash of VW's constant (bias) feature; its slot is ``CONSTANT_HASH % 2**bits``."""

_M32 = np.uint64(0xFFFFFFFF)
_C1 = np.uint64(0xCC9E2D51)
_C2 = np.uint64(0x1B873593)
_F1 = np.uint64(0x85EBCA6B)
_F2 = np.uint64(0xC2B2AE35)
_N1 = np.uint64(0xE6546B64)
_U1 = np.uint64(1)
_U2 = np.uint64(2)
_U3 = np.uint64(3)
_U5 = np.uint64(5)
_U10 = np.uint64(10)
_S8 = np.uint64(8)
_S13 = np.uint64(13)
_S15 = np.uint64(15)
_S16 = np.uint64(16)
_S17 = np.uint64(17)
_S19 = np.uint64(19)
_S24 = np.uint64(24)
_S32 = np.uint64(32)


@jit_inline
def _mix_k1(k: np.uint64) -> np.uint64:
    k = (k * _C1) & _M32
    k = ((k << _S15) | (k >> _S17)) & _M32
    return (k * _C2) & _M32


@jit_inline
def _round(h: np.uint64, k: np.uint64) -> np.uint64:
    """One 4-byte block of murmur3's body."""
    h ^= _mix_k1(k)
    h = ((h << _S13) | (h >> _S19)) & _M32
    return (h * _U5 + _N1) & _M32


@jit_inline
def _finish(h: np.uint64, n: int) -> np.uint32:
    """murmur3's finalizer: the length, then ``fmix32``."""
    h ^= np.uint64(n) & _M32
    h ^= h >> _S16
    h = (h * _F1) & _M32
    h ^= h >> _S13
    h = (h * _F2) & _M32
    h ^= h >> _S16
    return np.uint32(h)


@jit_inline
def murmur3_32(buf: np.ndarray, start: int, end: int, seed: int) -> np.uint32:
    """murmurhash3_x86_32 of ``buf[start:end]`` (the hash VW calls ``uniform_hash``).

    Parameters
    ----------
    buf : uint8[:]
        Bytes to read; only ``buf[start:end]`` is touched.
    start, end : int
        Byte span, ``0 <= start <= end <= len(buf)``.
    seed : int
        Seed; only its low 32 bits are used.

    Returns
    -------
    numpy.uint32
        Equal to ``mmh3.hash(bytes(buf[start:end]), seed, signed=False)``.
    """
    h = np.uint64(seed) & _M32
    n = end - start
    i = start
    stop = start + (n // 4) * 4
    while i < stop:
        u = np.uint64(i)  # no negative-index check on the four reads
        k = (
            np.uint64(buf[u])
            | (np.uint64(buf[u + _U1]) << _S8)
            | (np.uint64(buf[u + _U2]) << _S16)
            | (np.uint64(buf[u + _U3]) << _S24)
        )
        h = _round(h, k)
        i += 4
    tail = n & 3
    if tail > 0:
        k = np.uint64(0)
        if tail == 3:
            k ^= np.uint64(buf[i + 2]) << _S16
        if tail >= 2:
            k ^= np.uint64(buf[i + 1]) << _S8
        k ^= np.uint64(buf[i])
        h ^= _mix_k1(k)
    return _finish(h, n)


@jit_inline
def murmur3_32_short(w0: np.uint64, w1: np.uint64, n: int, seed: int) -> np.uint32:
    """:func:`murmur3_32` of the first ``n`` (0-15) bytes of the words ``w0``, ``w1``.

    The words are the 16 bytes from the key's start, little-endian (bytes past
    ``n`` are ignored).  Every block is hashed and the right state selected, so
    a key's length costs no branch: on names of varying length the loop and
    the tail switch of :func:`murmur3_32` mispredict about twice per key.
    """
    nb = n >> 2
    h = np.uint64(seed) & _M32
    h1 = _round(h, w0 & _M32)
    h2 = _round(h1, w0 >> _S32)
    h3 = _round(h2, w1 & _M32)
    h = h if nb == 0 else (h1 if nb == 1 else (h2 if nb == 2 else h3))
    t = (w0 if nb < 2 else w1) >> (_S32 * np.uint64(nb & 1))
    h ^= _mix_k1(t & ((_U1 << np.uint64(8 * (n & 3))) - _U1))  # _mix_k1(0) == 0
    return _finish(h, n)


@jit_inline
def hashstring(buf: np.ndarray, start: int, end: int, seed: int) -> np.uint32:
    """VW's ``hashstring`` of ``buf[start:end]`` with ``seed``, modulo ``2**32``.

    Trims bytes ``<= 0x20`` at both ends; an all-ASCII-digit remainder hashes
    to its decimal value (wrapping at ``2**64``) plus ``seed``; anything else
    to :func:`murmur3_32` of the trimmed bytes.  An empty remainder gives
    ``seed`` (as VW).
    """
    while start < end and buf[start] <= 0x20:
        start += 1
    while end > start and buf[end - 1] <= 0x20:
        end -= 1
    acc = np.uint64(0)
    for i in range(start, end):
        c = buf[i]
        if c < 48 or c > 57:
            return murmur3_32(buf, start, end, seed)
        acc = acc * _U10 + np.uint64(c - 48)
    return np.uint32((acc + (np.uint64(seed) & _M32)) & _M32)


def _as_bytes(s: str | bytes) -> bytes:
    return s.encode("utf-8") if isinstance(s, str) else bytes(s)


def hashstring_py(s: str | bytes, seed: int = 0) -> int:
    """Python version of :func:`hashstring` (strings are hashed as UTF-8).

    Independent of the numba code (it uses :mod:`mmh3`), so tests can compare
    the two.

    >>> hashstring_py(" 42 ")
    42
    >>> hashstring_py("") == 0 and hashstring_py("", 7) == 7
    True
    """
    b = _as_bytes(s)
    lo, hi = 0, len(b)
    while lo < hi and b[lo] <= 0x20:
        lo += 1
    while hi > lo and b[hi - 1] <= 0x20:
        hi -= 1
    b = b[lo:hi]
    seed &= 0xFFFFFFFF
    if all(48 <= c <= 57 for c in b):
        return (int(b or b"0") + seed) & 0xFFFFFFFF
    return mmh3.hash(b, seed, signed=False)


def namespace_hash(namespace: str | bytes) -> int:
    """Seed for the features of a namespace: 0 for the default namespace.

    ``namespace`` is the name as written after ``|`` (``''`` or ``' '`` for the
    default namespace).
    """
    if namespace in ("", " ", b"", b" "):
        return 0
    return hashstring_py(namespace, 0)


def feature_slot(namespace: str, feature: str, bits: int, value: str | None = None) -> int:
    """Slot of feature ``feature`` in namespace ``namespace`` for a ``2**bits`` table.

    Parameters
    ----------
    namespace : str
        Namespace name as written after ``|``; ``''`` or ``' '`` is the default namespace.
    feature : str
        Feature name.
    bits : int
        Table size exponent, 1 to 32.
    value : str, optional
        For a chain-hashed feature ``feature:value`` (a non-numeric value).

    Returns
    -------
    int
        The slot, in ``[0, 2**bits)``.

    Examples
    --------
    >>> feature_slot("house", "123", 18)
    215497
    >>> feature_slot("f", "77", 18)
    34952
    """
    if not 1 <= bits <= 32:
        raise ValueError(f"bits must be in 1..32, got {bits}")
    h = hashstring_py(feature, namespace_hash(namespace))
    if value is not None:
        h = hashstring_py(value, h)
    return h & ((1 << bits) - 1)
