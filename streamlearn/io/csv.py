"""VW's CSV input (``--csv``): a header line of names, then one example per line.

As VW 9.11's CSV parser (``vowpalwabbit/csv_parser/src/parse_example_csv.cc``),
read from its source and checked against ``vw --csv --audit``:

* **Cells** are separated by one byte (``--csv_separator``, default ``,``;
  ``\\t`` names a tab; ``"``, ``|`` and ``:`` are refused).  Each line loses a
  final ``\\n`` and ``\\r``, then the bytes ``\\r \\n \\f \\v`` and those of the
  UTF-8 byte-order mark at both ends.  A cell that *starts* with ``"`` is quoted:
  separators inside it are text, ``""`` stands for one ``"``, a lone ``"`` that
  does not end the cell is an error (a malformed line here), as is a quote left
  open at the end of the line.  Outer quotes are removed from a cell's text
  where VW removes them (labels, tags, string values, header names).
* **The header** is the first line of each file, unless ``--csv_header a,b,c``
  gives the names (split at ``,``; with ``--csv_no_file_header`` every line of
  the file is an example).  ``_label`` and ``_tag`` name the label and tag
  columns (the first of each counts); any other name is a feature,
  ``ns|name`` a feature of namespace ``ns`` (``name`` alone: the default
  namespace; an empty name: VW's anonymous features, hashed as namespace hash
  plus a counter).  Without a ``_label`` column every example is unlabeled.
* **A line** must have as many cells as the header.  The label cell holds VW's
  simple label (``label [importance [base]]``, split at spaces); the tag cell's
  leading ``'`` is dropped.  A feature cell that reads whole as a number (VW's
  ``parse_float``: the value of a cell that does not start with ``"``) is the
  value of the column's feature, times its namespace's ``--csv_ns_value``; any
  other non-empty cell is a string value: the feature ``hash(text, hash(name,
  namespace hash))`` with value 1, as ``name:text`` in VW text.  Empty cells and
  zero values add nothing.  Namespaces come in the order VW's ``unordered_map``
  walks them (libstdc++'s hashing and buckets: :func:`unordered_map_order`; for
  up to 8 names the last named first), grouped by their first byte as VW's
  feature groups are (the order of the sums; ``-q`` matches first bytes, as VW).
  Then the constant feature.

What differs from VW, on purpose: a line VW stops the run on (a wrong number
of cells, bad quotes, an empty line) and a label VW would read as 0 with a
warning are malformed lines here, skipped with a reason and ``file:line``.  A
tag cell holding ``""`` keeps both quotes in ``-p``.  A number that needs C's
``strtof`` (``+5``, ``1e+3``) is read correctly rounded to float32 (as
``strtof``), except in the rare exact halfway cases, rounded once more.

The kernel (:func:`parse_csv_block`) writes the same arrays as the VW text
kernel (:func:`streamlearn.io.vw.parse_vw_block`), so crosses, n-grams and
everything after parsing are shared.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

import mmh3
import numpy as np

from streamlearn.hashing import CONSTANT_HASH, hashstring, hashstring_py, murmur3_32
from streamlearn.io._numbers import NUM_OK, NUM_SLOW, scan_number
from streamlearn.io._scan import CONSTANT_NS, DEFAULT_NS
from streamlearn.io.batch import CSV_CELLS, CSV_EMPTY, CSV_QUOTES, TOO_LARGE
from streamlearn.io.vwfloat import _vw_scale, strtof_of
from streamlearn.system.jit import jit, jit_inline

F32 = np.float32
F64 = np.float64
_CONSTANT = np.uint64(CONSTANT_HASH)
_M32 = np.uint64(0xFFFFFFFF)

_TRIM = frozenset(b"\r\n\xef\xbb\xbf\f\v")

BAD_LABEL = 1
BAD_WEIGHT = 2
NEG_WEIGHT = 3
BAD_BASE = 4
LABEL_TOKENS = 5
NON_FINITE = 7


class CsvError(ValueError):
    """A CSV option or header VW refuses (VW stops the run)."""


@dataclass(frozen=True)
class CsvOptions:
    """VW's ``--csv_*`` options, checked as VW checks them."""

    separator: str = ","
    header: str = ""
    no_file_header: bool = False
    ns_value: str = ""

    def __post_init__(self) -> None:
        sep = self.separator
        if len(sep) > 1:
            if sep == "\\t":
                sep = "\t"
            else:
                raise CsvError(f"--csv_separator {self.separator!r}: one character is expected")
        if len(sep) != 1 or len(sep.encode("utf-8")) != 1:
            raise CsvError(f"--csv_separator {self.separator!r}: one ASCII character is expected")
        if sep in '"|:':
            raise CsvError(f'--csv_separator {sep!r} is not allowed (", | and : are reserved)')
        object.__setattr__(self, "separator", sep)
        if self.no_file_header and not self.header:
            raise CsvError("--csv_no_file_header needs --csv_header (the names of the columns)")
        self.scales()  # checked now

    @property
    def sep_byte(self) -> int:
        return self.separator.encode("ascii")[0]

    def scales(self) -> dict[bytes, float]:
        """``--csv_ns_value a:0.5,b:2,:8``: each namespace's factor (``''``: the default)."""
        out: dict[bytes, float] = {}
        if not self.ns_value:
            return out
        for i, item in enumerate(split_cells(self.ns_value.encode("utf-8"), ord(","), True)):
            pair = split_cells(item, ord(":"), True)
            if len(pair) != 2 or not pair[1]:
                raise CsvError(f"--csv_ns_value: malformed namespace value pair at cell {i + 1}: "
                               f"{item.decode('utf-8', 'replace')!r}")  # fmt: skip
            v = cell_number_py(pair[1])
            if v is None or math.isnan(v):
                raise CsvError(f"--csv_ns_value: not a number at cell {i + 1}: "
                               f"{item.decode('utf-8', 'replace')!r}")  # fmt: skip
            out[pair[0]] = v
        return out


def split_cells(line: bytes, sep: int, quotes: bool = False) -> list[bytes]:
    """VW's ``split`` of a line into cells (quoted cells keep their outer quotes).

    >>> split_cells(b'1,"a,b","x""y"', ord(","), True)
    [b'1', b'"a,b"', b'"x"y"']
    >>> split_cells(b"a,b,", ord(","))
    [b'a', b'b', b'']
    """
    lo, hi = 0, len(line)
    while lo < hi and line[lo] in _TRIM:
        lo += 1
    while hi > lo and line[hi - 1] in _TRIM:
        hi -= 1
    sv = line[lo:hi]
    n = len(sv)
    if n == 0:
        return [b""]
    out: list[bytes] = []
    pointer = 0
    inside = False
    escaped: list[int] = []
    i = 0
    while i <= n:
        if i == n and inside:
            raise CsvError("unclosed quote at the end of the line")
        if quotes and not inside and i == pointer and i < n and sv[i] == 34:
            inside = True
        elif quotes and inside and i < n - 1 and sv[i] == 34 and sv[i + 1] == 34:
            escaped.append(i - pointer)
            i += 1
        elif quotes and inside and ((i < n - 1 and sv[i] == 34 and sv[i + 1] == sep)
                                    or (i == n - 1 and sv[i] == 34)):  # fmt: skip
            inside = False
        elif quotes and inside and i < n and sv[i] == 34:
            raise CsvError(f"unescaped quote at position {i + 1}")
        elif i == n or (not inside and sv[i] == sep):
            element = sv[pointer:i]
            if i == n and sv[i - 1] == sep:
                element = b""
            if escaped:
                element = bytes(c for j, c in enumerate(element) if j not in set(escaped))
            out.append(element)
            escaped = []
            if i < n - 1:
                pointer = i + 1
        i += 1
    return out


def _unquote(b: bytes) -> bytes:
    return b[1:-1] if len(b) > 1 and b[0] == 34 and b[-1] == 34 else b


def cell_number_py(cell: bytes) -> float | None:
    """A cell's value as VW's CSV parser reads it, or None when it is no number."""
    buf = np.frombuffer(cell + b"\0", dtype=np.uint8)
    ok, v = cell_float(buf, 0, len(cell))
    return float(v) if ok else None


@dataclass(frozen=True)
class CsvHeader:
    """A header compiled for the kernel: what each column is, the namespaces' order."""

    ncols: int
    label_col: int
    tag_col: int
    order: np.ndarray  # int64: feature columns, namespace by namespace
    group_ptr: np.ndarray  # int64[groups + 1]
    group_hash: np.ndarray  # uint32: each namespace's hash
    group_ns: np.ndarray  # uint8: its first byte (' ' for the default namespace)
    group_scale: np.ndarray  # float32: --csv_ns_value
    col_hash: np.ndarray  # uint32[ncols]: hash(name, namespace hash)
    col_named: np.ndarray  # bool[ncols]: the name is not empty
    names: tuple = ()  # (namespace, name) per column, None for _label/_tag


def compile_header(cells: list[bytes], opts: CsvOptions, hash_all: bool = False,
                   hash_seed: int = 0) -> CsvHeader:  # fmt: skip
    """The header from its cells (VW's ``parse_header``)."""

    def h(b: bytes, seed: int) -> int:
        return mmh3.hash(b, seed, signed=False) if hash_all else hashstring_py(b, seed)

    scales = opts.scales()
    label_col = tag_col = -1
    groups: dict[bytes, list[int]] = {}
    col_hash = np.zeros(len(cells), dtype=np.uint32)
    col_named = np.zeros(len(cells), dtype=np.bool_)
    names: list = []
    ns_hash: dict[bytes, int] = {}
    for i, raw in enumerate(cells):
        cell = _unquote(raw)
        if cell in (b"_tag", b"_label"):
            if cell == b"_tag" and tag_col < 0:
                tag_col = i
            if cell == b"_label" and label_col < 0:
                label_col = i
            names.append(None)
            continue
        parts = split_cells(cell, ord("|"))
        if len(parts) == 1:
            ns, name = b"", cell
        elif len(parts) == 2:
            ns, name = parts
        else:
            raise CsvError(f"malformed header at cell {i + 1}: {cell.decode('utf-8', 'replace')!r} "
                           "(more than one '|')")  # fmt: skip
        if ns not in ns_hash:
            if ns:
                ns_hash[ns] = h(ns, hash_seed)
            else:
                ns_hash[ns] = 0 if hash_seed == 0 else mmh3.hash(b"", hash_seed, signed=False)
        groups.setdefault(ns, []).append(i)
        col_hash[i] = h(name, ns_hash[ns])
        col_named[i] = bool(name)
        names.append((ns.decode("utf-8", "replace"), name.decode("utf-8", "replace")))
    # VW keeps the columns in an unordered_map by namespace, walked in libstdc++'s order,
    # into its feature groups by first byte (a group's place: its first namespace's)
    walked = unordered_map_order(list(groups))
    rank: dict[int, int] = {}
    for k in walked:
        rank.setdefault(k[0] if k else DEFAULT_NS, len(rank))
    keys = sorted(walked, key=lambda k: rank[k[0] if k else DEFAULT_NS])
    order = np.array([c for k in keys for c in groups[k]], dtype=np.int64)
    ptr = np.zeros(len(keys) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(groups[k]) for k in keys])
    return CsvHeader(
        ncols=len(cells), label_col=label_col, tag_col=tag_col, order=order, group_ptr=ptr,
        group_hash=np.array([ns_hash[k] for k in keys], dtype=np.uint32),
        group_ns=np.array([k[0] if k else DEFAULT_NS for k in keys], dtype=np.uint8),
        group_scale=np.array([scales.get(k, 1.0) for k in keys], dtype=np.float32),
        col_hash=col_hash, col_named=col_named, names=tuple(names),
    )  # fmt: skip


_M64 = (1 << 64) - 1
_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79,
           83, 89, 97, 103, 109, 113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241,
           257, 277, 293, 313, 337, 359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709, 761,
           823, 887, 953, 1031, 1109, 1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029, 2179, 2357,
           2549)  # fmt: skip
"""The start of libstdc++'s ``__prime_list`` (bucket counts of its hash tables)."""
_FAST_BKT = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)


def _hash_bytes(b: bytes, seed: int = 0xC70F6907) -> int:
    """libstdc++'s ``std::_Hash_bytes`` on a 64-bit machine (``std::hash<std::string>``)."""
    mul = (0xC6A4A793 << 32) + 0x5BD1E995

    def shift_mix(v: int) -> int:
        return v ^ (v >> 47)

    n = len(b)
    h = (seed ^ (n * mul)) & _M64
    aligned = n & ~7
    for i in range(0, aligned, 8):
        data = (shift_mix((int.from_bytes(b[i : i + 8], "little") * mul) & _M64) * mul) & _M64
        h = ((h ^ data) * mul) & _M64
    if n & 7:
        h = ((h ^ int.from_bytes(b[aligned:], "little")) * mul) & _M64
    h = (shift_mix(h) * mul) & _M64
    return shift_mix(h)


def _next_bkt(n: int) -> tuple[int, int]:
    """libstdc++'s prime rehash policy: (bucket count, next resize) for at least ``n``."""
    if n < len(_FAST_BKT):
        return _FAST_BKT[n], _FAST_BKT[n]
    import bisect

    i = bisect.bisect_left(_PRIMES, n, lo=6)
    if i == len(_PRIMES):  # (beyond the primes kept here: any prime will not do; rare)
        raise CsvError(f"more than {_PRIMES[-1]} namespaces in a CSV header")
    return _PRIMES[i], _PRIMES[i]


def unordered_map_order(keys: list[bytes]) -> list[bytes]:
    """The order in which VW's ``std::unordered_map<std::string, ...>`` (libstdc++, 64-bit)
    walks ``keys`` inserted in this order: each new key goes first in its bucket's run,
    or first of all in an empty bucket, and a rehash relinks the nodes the same way.

    >>> unordered_map_order([b"a", b"b", b"c"])
    [b'c', b'b', b'a']
    """
    nbkt, resize = 1, 0
    order: list[bytes] = []
    hashes = {k: _hash_bytes(k) for k in keys}

    def link(lst: list[bytes], key: bytes, n: int) -> None:
        b = hashes[key] % n
        for i, other in enumerate(lst):
            if hashes[other] % n == b:
                lst.insert(i, key)
                return
        lst.insert(0, key)

    for key in keys:
        size = len(order)
        if size + 1 > resize:
            need = max(size + 1, 0 if resize else 11)
            if need >= nbkt:
                nbkt, resize = _next_bkt(max(need + 1, nbkt * 2))
                rehashed: list[bytes] = []
                for k in order:
                    link(rehashed, k, nbkt)
                order = rehashed
            else:
                resize = nbkt
        link(order, key, nbkt)
    return order


@dataclass
class CsvReader:
    """A run's CSV state: the options and each source's header, taken from its first
    line by whichever parser thread gets the source's first block (later blocks of the
    source wait for it: a block is parsed only after every earlier block was started)."""

    opts: CsvOptions
    hash_all: bool = False
    hash_seed: int = 0
    _headers: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.fixed = None
        if self.opts.header:
            cells = split_cells(self.opts.header.encode("utf-8"), ord(","))
            self.fixed = compile_header(cells, self.opts, self.hash_all, self.hash_seed)

    def header(self, source: str, first_line: int, data: np.ndarray) -> tuple[CsvHeader, bool]:
        """The header of ``source``'s lines and whether ``data``'s first line is it."""
        is_header_line = first_line == 1 and not self.opts.no_file_header
        if self.fixed is not None:
            HEADERS[source] = self.fixed
            return self.fixed, is_header_line
        if first_line == 1:
            end = _line_end(data)
            line = data[:end].tobytes()
            if line.endswith(b"\r"):
                line = line[:-1]
            try:
                cells = split_cells(line, self.opts.sep_byte, True)
                hdr = compile_header(cells, self.opts, self.hash_all, self.hash_seed)
            except CsvError as e:
                hdr = e
            with self._lock:
                ev = self._headers.get(source)
                if not isinstance(ev, threading.Event) or ev.is_set():
                    ev = threading.Event()
                self._headers[source] = ev
                ev.value = hdr
                ev.set()
        else:
            with self._lock:
                ev = self._headers.setdefault(source, threading.Event())
            ev.wait()
            hdr = ev.value
        if isinstance(hdr, CsvError):
            raise CsvError(f"{source}:1: CSV header: {hdr}")
        HEADERS[source] = hdr
        return hdr, is_header_line


HEADERS: dict[str, CsvHeader] = {}
"""The header each source was last read with, for the feature names of ``--audit`` and
``--invert_hash`` (:func:`csv_names`)."""


def csv_names(line: bytes, source: str, bits: int, sep: int, hash_all: bool = False,
              values: list[float] | None = None) -> list[tuple[int, str, int]]:  # fmt: skip
    """(slot, name, namespace byte) of each feature of a well-formed CSV ``line`` of
    ``source``, in the kernel's order (the constant aside), named as VW's audit names
    them: ``ns^name``, ``ns^name^text`` for a string value (no ``ns^`` in the default
    namespace); ``values``: each feature's value is appended to it.  Plain Python, the
    kernel's reference."""
    hdr = HEADERS.get(source)
    if hdr is None:
        return []
    if line.endswith(b"\r"):
        line = line[:-1]
    if line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    try:
        cells = split_cells(line, sep, True)
    except CsvError:
        return []
    if len(cells) != hdr.ncols:
        return []
    mask = (1 << bits) - 1
    out = []
    for g in range(hdr.group_ptr.shape[0] - 1):
        anon = 0
        scale = hdr.group_scale[g]
        for c in hdr.order[hdr.group_ptr[g] : hdr.group_ptr[g + 1]].tolist():
            cell = cells[c]
            if not cell:
                continue
            ns, name = hdr.names[c]
            v = cell_number_py(cell) if cell[:1] != b'"' else None
            if v is None or math.isnan(v):
                text = _unquote(cell)
                seed = int(hdr.col_hash[c])
                h = mmh3.hash(text, seed, signed=False) if hash_all else hashstring_py(text, seed)
                shown = f"{name}^{text.decode('utf-8', 'surrogateescape')}"
                x = 1.0
            else:
                if name:
                    h = int(hdr.col_hash[c])
                else:
                    h = (int(hdr.group_hash[g]) + anon) & 0xFFFFFFFF
                    anon += 1
                shown = name
                x = float(F32(scale) * F32(v))
            if x == 0.0:
                continue
            out.append((h & mask, f"{ns}^{shown}" if ns else shown, int(hdr.group_ns[g])))
            if values is not None:
                values.append(x)
    return out


def _line_end(data: np.ndarray) -> int:
    nl = np.flatnonzero(data == 10)
    return int(nl[0]) if nl.shape[0] else int(data.shape[0])


# ---------------------------------------------------------------------------
# the kernel


@jit_inline
def cell_float(buf, s, e):
    """``(is a number, value)``: VW's ``parse_float`` over the cell ``buf[s:e]``, which
    must read the whole cell (``buf[e]`` is readable: VW's parser peeks at it)."""
    p = s
    while p < e and buf[p] == 32:
        p += 1
    neg = False
    if p < e and buf[p] == 45:
        neg = True
        p += 1
    acc = F32(0.0)
    while p < e and buf[p] >= 48 and buf[p] <= 57:
        acc = F32(F32(F32(acc * F32(10.0)) + F32(np.int64(buf[p]))) - F32(48.0))
        p += 1
    nf = 0
    if p < e and buf[p] == 46:
        p += 1
        while p < e and buf[p] >= 48 and buf[p] <= 57:
            if nf < 35:
                acc = F32(F32(acc * F32(10.0)) + F32(np.int64(buf[p]) - 48))
                nf += 1
            p += 1
    ex = 0
    if p < e and (buf[p] == 101 or buf[p] == 69):
        p += 1
        eneg = False
        if p < e and buf[p] == 45:
            eneg = True
            p += 1
        while p < e and buf[p] >= 48 and buf[p] <= 57:
            ex = (ex * 10 + np.int64(buf[p]) - 48) & 0xFFFF
            p += 1
        if eneg:
            ex = -ex
    if p == e or buf[p] == 32 or buf[p] == 10 or buf[p] == 9:  # VW's easy case
        if p != e:
            return False, 0.0
        v = F32(acc * _vw_scale((ex - nf) & 0xFF))
        return True, F64(-v if neg else v)
    # strtof: leading white space, then a number that must end the cell
    q = s
    while q < e and (buf[q] == 32 or (buf[q] >= 9 and buf[q] <= 13)):
        q += 1
    code, v, j = scan_number(buf, q, e)
    if (code != NUM_OK and code != NUM_SLOW) or j != e or q == e:
        return False, 0.0
    f, _ = strtof_of(v)
    return True, f


@jit_inline
def _split(data, a, b, sep, cstart, cend, rstart, rend, scratch):
    """VW's split of ``data[a:b]`` into cells, de-escaped into ``scratch`` (same offsets):
    ``cstart/cend`` the cell text in ``scratch``, ``rstart/rend`` its raw span in ``data``.
    Returns the number of cells (counted past the arrays' room), or -1 for bad quotes."""
    while a < b and (data[a] == 13 or data[a] == 10 or data[a] == 0xEF or data[a] == 0xBB
                     or data[a] == 0xBF or data[a] == 12 or data[a] == 11):  # fmt: skip
        a += 1
    while b > a and (data[b - 1] == 13 or data[b - 1] == 10 or data[b - 1] == 0xEF
                     or data[b - 1] == 0xBB or data[b - 1] == 0xBF or data[b - 1] == 12
                     or data[b - 1] == 11):  # fmt: skip
        b -= 1
    room = cstart.shape[0]
    if a == b:
        cstart[0] = a
        cend[0] = a
        rstart[0] = a
        rend[0] = a
        return 1
    n = b - a
    nc = 0
    pointer = 0
    inside = False
    w = a  # where the current cell's de-escaped text goes
    i = 0
    while i <= n:
        c = data[a + i] if i < n else 0
        if i == n and inside:
            return -1
        if not inside and i == pointer and i < n and c == 34:
            inside = True
            scratch[w] = c
            w += 1
        elif inside and i < n - 1 and c == 34 and data[a + i + 1] == 34:
            scratch[w] = 34
            w += 1
            i += 1
        elif inside and ((i < n - 1 and c == 34 and data[a + i + 1] == sep)
                         or (i == n - 1 and c == 34)):  # fmt: skip
            inside = False
            scratch[w] = c
            w += 1
        elif inside and i < n and c == 34:
            return -1
        elif i == n or (not inside and c == sep):
            if nc < room:
                s0 = a + pointer
                if i == n and data[a + i - 1] == sep:
                    cstart[nc] = a + i
                    cend[nc] = a + i
                    rstart[nc] = a + i
                    rend[nc] = a + i
                else:
                    cstart[nc] = s0
                    cend[nc] = w
                    rstart[nc] = s0
                    rend[nc] = a + i
            nc += 1
            if i < n - 1:
                pointer = i + 1
                w = a + pointer
        else:
            scratch[w] = c
            w += 1
        i += 1
    return nc


@jit_inline
def _unquoted(buf, s, e):
    if e - s > 1 and buf[s] == 34 and buf[e - 1] == 34:
        return s + 1, e - 1
    return s, e


@jit_inline
def _put(indices, values, ns, k, slot, value, nsb):
    u = np.uint64(k)
    indices[u] = slot
    values[u] = value
    ns[u] = nsb
    return k + 1


@jit
def parse_csv_block(
    data,
    first_line,
    mask,
    constant,
    limit,
    hash_all,
    sep,
    skip_first,
    label_col,
    tag_col,
    order,
    group_ptr,
    group_hash,
    group_ns,
    group_scale,
    col_hash,
    col_named,
    cstart,
    cend,
    rstart,
    rend,
    scratch,
    arrays,
):
    """Parse the CSV lines of ``data`` into ``arrays`` (the VW kernel's output arrays).

    ``skip_first``: the block's first line is the header.  ``cstart``.. are room for
    one line's cells (as many as the header has, plus one); ``scratch`` a copy of
    ``data``'s size.  Returns the rows and features written.
    """
    (labels, weights, bases, tag_start, tag_end, indptr, indices, values, status, line,
     line_start, err_pos, ns) = arrays  # fmt: skip
    ncols = cstart.shape[0] - 1
    n = data.shape[0]
    nan = math.nan
    pos = 0
    row = 0
    k = 0
    indptr[0] = 0
    lineno = first_line - 1
    while pos < n:
        l0 = pos
        eol = pos
        while eol < n and data[eol] != 10:
            eol += 1
        pos = eol + 1
        lineno += 1
        if skip_first and l0 == 0:
            continue
        b = eol
        if b > l0 and data[b - 1] == 13:
            b -= 1
        a = l0
        if b - a >= 3 and data[a] == 0xEF and data[a + 1] == 0xBB and data[a + 2] == 0xBF:
            a += 3
        code = 0
        err = l0
        label = nan
        weight = 1.0
        base = 0.0
        tag_s = l0
        tag_e = l0
        k1 = k
        if a == b:
            code = CSV_EMPTY
        else:
            nc = _split(data, a, b, sep, cstart, cend, rstart, rend, scratch)
            if nc < 0:
                code = CSV_QUOTES
            elif nc != ncols:
                code = CSV_CELLS
        if code == 0 and label_col >= 0:
            s, e = _unquoted(scratch, cstart[label_col], cend[label_col])
            err = rstart[label_col]
            t = 0
            p = s
            while p < e and code == 0:
                while p < e and scratch[p] == 32:
                    p += 1
                if p >= e:
                    break
                q = p
                while q < e and scratch[q] != 32:
                    q += 1
                ok, v = cell_float(scratch, p, q)
                if t == 0:
                    if not ok or not math.isfinite(v):
                        code = BAD_LABEL if not ok else NON_FINITE
                    elif abs(v) > limit:
                        code = TOO_LARGE
                    label = v
                elif t == 1:
                    if not ok:
                        code = BAD_WEIGHT
                    elif not math.isfinite(v):
                        code = NON_FINITE
                    elif v < 0.0:
                        code = NEG_WEIGHT
                    elif v > limit:
                        code = TOO_LARGE
                    weight = v
                elif t == 2:
                    if not ok:
                        code = BAD_BASE
                    elif not math.isfinite(v):
                        code = NON_FINITE
                    elif abs(v) > limit:
                        code = TOO_LARGE
                    base = v
                else:
                    code = LABEL_TOKENS
                t += 1
                p = q
        if code == 0 and tag_col >= 0:
            s, e = _unquoted(data, rstart[tag_col], rend[tag_col])
            if s < e and data[s] == 39:
                s += 1
            tag_s = s
            tag_e = e
        if code == 0:
            for g in range(group_ptr.shape[0] - 1):
                nsh = np.uint64(group_hash[g])
                nsb = group_ns[g]
                scale = group_scale[g]
                anon = np.uint64(0)
                for c in order[group_ptr[g] : group_ptr[g + 1]]:
                    s = cstart[c]
                    e = cend[c]
                    if s == e:
                        continue
                    ok = False
                    v = 0.0
                    if scratch[s] != 34:
                        ok, v = cell_float(scratch, s, e)
                    if not ok:
                        s, e = _unquoted(scratch, s, e)
                        seed = np.uint32(col_hash[c])
                        if hash_all:
                            h = np.uint64(murmur3_32(scratch, s, e, seed))
                        else:
                            h = np.uint64(hashstring(scratch, s, e, seed))
                        v = 1.0
                    elif col_named[c]:
                        h = np.uint64(col_hash[c])
                        v = F64(F32(scale) * F32(v))
                    else:
                        h = (nsh + anon) & _M32
                        anon += np.uint64(1)
                        v = F64(F32(scale) * F32(v))
                    if v == 0.0:
                        continue
                    if not math.isfinite(v):
                        code = NON_FINITE
                        err = rstart[c]
                        break
                    if abs(v) > limit:
                        code = TOO_LARGE
                        err = rstart[c]
                        break
                    k1 = _put(indices, values, ns, k1, h & mask, v, nsb)
                if code != 0:
                    break
        if code == 0 and constant:
            k1 = _put(indices, values, ns, k1, _CONSTANT & mask, 1.0, CONSTANT_NS)
        status[row] = code
        line[row] = lineno
        line_start[row] = l0
        err_pos[row] = -1 if code == 0 else err
        tag_start[row] = tag_s
        tag_end[row] = tag_e
        if code == 0:
            k = k1
            labels[row] = label
            weights[row] = weight
            bases[row] = base
        else:
            labels[row] = nan
            weights[row] = 0.0
            bases[row] = 0.0
        row += 1
        indptr[row] = k
    return row, k


def run_csv_kernel(reader: CsvReader, data: np.ndarray, source: str, first_line: int,
                   mask: np.uint64, constant: bool, limit: float,
                   arrays: tuple) -> tuple[int, int]:  # fmt: skip
    """:func:`parse_csv_block` over one block of ``source``: (rows, features)."""
    hdr, skip = reader.header(source, first_line, data)
    room = hdr.ncols + 1
    cstart = np.empty(room, dtype=np.int64)
    cend = np.empty(room, dtype=np.int64)
    rstart = np.empty(room, dtype=np.int64)
    rend = np.empty(room, dtype=np.int64)
    scratch = np.empty(data.shape[0] + 1, dtype=np.uint8)
    return parse_csv_block(
        data, first_line, mask, constant, limit, reader.hash_all, reader.opts.sep_byte, skip,
        hdr.label_col, hdr.tag_col, hdr.order, hdr.group_ptr, hdr.group_hash, hdr.group_ns,
        hdr.group_scale, hdr.col_hash, hdr.col_named, cstart, cend, rstart, rend, scratch, arrays,
    )  # fmt: skip
