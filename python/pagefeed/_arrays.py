"""Numpy views of Arrow C Data Interface arrays, without pyarrow.

Every view's base chain ends in a _View that holds the Batch, so the
batch's memory stays valid for as long as any array made from it lives.
"""

import ctypes

import numpy as np

_FIXED = {
    b"c": "i1", b"C": "u1", b"s": "<i2", b"S": "<u2", b"i": "<i4", b"I": "<u4",
    b"l": "<i8", b"L": "<u8", b"e": "<f2", b"f": "<f4", b"g": "<f8",
    b"tdD": "<i4", b"tdm": "<M8[ms]", b"tts": "<i4", b"ttm": "<i4", b"ttu": "<i8", b"ttn": "<i8",
    b"tDs": "<m8[s]", b"tDm": "<m8[ms]", b"tDu": "<m8[us]", b"tDn": "<m8[ns]",
}
_TS = {b"tss": "<M8[s]", b"tsm": "<M8[ms]", b"tsu": "<M8[us]", b"tsn": "<M8[ns]"}


class _View:
    """Exposes len bytes at addr to numpy and keeps owner alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, owner, addr, shape, typestr, readonly):
        self.owner = owner
        self.__array_interface__ = {"version": 3, "shape": shape, "typestr": typestr,
                                    "data": (addr, readonly)}


_typestr = {}  # dtype -> its array-interface typestr (dtype.str is not free)


def view(owner, addr, shape, dtype, readonly=True):
    """A numpy array over memory at addr, alive while owner is."""
    typestr = _typestr.get(dtype)
    if typestr is None:
        dtype = np.dtype(dtype)
        typestr = _typestr.setdefault(dtype, dtype.str)
    elif not isinstance(dtype, np.dtype):
        dtype = np.dtype(dtype)
    if not addr or 0 in shape:
        return np.empty(shape, dtype)
    a = np.asarray(_View(owner, addr, shape, typestr, readonly))
    if dtype.names is None and a.dtype != dtype:
        a = a.view(dtype)
    return a


_buftypes = {}  # size in bytes -> ctypes.c_char * size


def fixed(owner, addr, shape, dtype, readonly=True, nbytes=0):
    """view() for memory whose size repeats from batch to batch (a loader's
    token matrices): numpy reads a ctypes buffer, which costs less than
    parsing an array interface, through one ctypes array type per size,
    kept for reuse (so never for sizes that vary). nbytes maps more than
    the shape needs (an array's capacity, so that one type serves every
    length of it); the view is the shape's start of it. dtype is a
    numpy.dtype. A read-only view is over a read-only buffer, so that
    numpy refuses to make it writable, as it does view()'s."""
    n = dtype.itemsize
    for d in shape:
        n *= d
    if not addr or not n:
        return np.empty(shape, dtype)
    nbytes = max(n, nbytes)
    t = _buftypes.get(nbytes)
    if t is None:
        t = _buftypes.setdefault(nbytes, ctypes.c_char * nbytes)
    buf = t.from_address(addr)
    buf.owner = owner  # the array's base (or its memoryview's) is buf: owner lives as long as the array
    a = np.frombuffer(memoryview(buf).toreadonly() if readonly else buf, dtype, n // dtype.itemsize)
    if len(shape) != 1:
        a.shape = shape
    return a


def _fixed_dtype(fmt):
    if fmt in _FIXED:
        return np.dtype(_FIXED[fmt])
    if fmt[:3] in _TS:
        return np.dtype(_TS[fmt[:3]])
    if fmt.startswith(b"w:"):
        return np.dtype("S%d" % int(fmt[2:]))
    return None


class ListArray:
    """A list column of fixed-width values: row i is
    values[offsets[i]:offsets[i+1]]. offsets start at 0 (torch's jagged
    layout); valid is None or a bool array, False where the row is null."""

    __slots__ = ("values", "offsets", "valid")

    def __init__(self, values, offsets, valid=None):
        self.values, self.offsets, self.valid = values, offsets, valid

    def __len__(self):
        return len(self.offsets) - 1

    def to_pylist(self):
        v, o = self.values, self.offsets
        out = []
        for i in range(len(o) - 1):
            if self.valid is not None and not self.valid[i]:
                out.append(None)
            else:
                out.append(v[o[i]:o[i + 1]].tolist())
        return out


class StringArray:
    """A string (utf8) or binary column: row i is data[offsets[i]:offsets[i+1]]
    (offsets start at 0); valid is None or a bool array, False where null."""

    __slots__ = ("offsets", "data", "valid", "binary")

    def __init__(self, offsets, data, valid=None, binary=False):
        self.offsets, self.data, self.valid, self.binary = offsets, data, valid, binary

    def __len__(self):
        return len(self.offsets) - 1

    def to_pylist(self):
        o, d = self.offsets, self.data
        out = []
        for i in range(len(o) - 1):
            if self.valid is not None and not self.valid[i]:
                out.append(None)
                continue
            b = d[o[i]:o[i + 1]].tobytes()
            out.append(b if self.binary else b.decode("utf-8"))
        return out


def _buf(arr, i):
    return arr.buffers[i] if arr.n_buffers > i else None


def _valid(owner, arr):
    """The validity of arr's rows as a bool array, or None without nulls."""
    if arr.null_count == 0 or not _buf(arr, 0):
        return None
    off, n = arr.offset, arr.length
    nbytes = (off + n + 7) // 8
    bits = view(owner, _buf(arr, 0), (nbytes,), "u1")
    return np.unpackbits(bits, bitorder="little")[off:off + n].astype(bool)


def _offsets(owner, arr, wide, readonly):
    """arr's offsets rebased to start at 0, and the first one."""
    dt = "<i8" if wide else "<i4"
    o = view(owner, _buf(arr, 1), (arr.offset + arr.length + 1,), dt, readonly)[arr.offset:]
    first = int(o[0]) if len(o) else 0
    if first:
        o = o - first
    return o, first


def _values(owner, arr, fmt, schema, readonly):
    """Fixed-width values of arr as an ndarray (masked where null)."""
    n, off = arr.length, arr.offset
    if fmt == b"b":
        nbytes = (off + n + 7) // 8
        bits = view(owner, _buf(arr, 1), (nbytes,), "u1")
        vals = np.unpackbits(bits, bitorder="little")[off:off + n].astype(bool)
    else:
        dt = _fixed_dtype(fmt)
        if dt is None:
            raise TypeError("pagefeed: Arrow format %r has no numpy view; use Batch.to_arrow() (pyarrow)" % fmt.decode())
        vals = view(owner, _buf(arr, 1), (off + n,), dt, readonly)[off:]
    valid = _valid(owner, arr)
    if valid is not None:
        return np.ma.MaskedArray(vals, mask=~valid)
    return vals


def chunk(owner, arr, schema, readonly=True):
    """One exported chunk as an ndarray, MaskedArray, ListArray or StringArray."""
    fmt = schema.format
    if fmt in (b"u", b"z", b"U", b"Z"):
        wide = fmt in (b"U", b"Z")
        o, first = _offsets(owner, arr, wide, readonly)
        size = int(o[-1]) if len(o) else 0
        data = view(owner, _buf(arr, 2), (first + size,), "u1", readonly)[first:]
        return StringArray(o, data, _valid(owner, arr), binary=fmt in (b"z", b"Z"))
    if fmt in (b"+l", b"+L"):
        o, first = _offsets(owner, arr, fmt == b"+L", readonly)
        child = arr.children[0].contents
        cfmt = schema.children[0].contents.format
        size = int(o[-1]) if len(o) else 0
        vals = _values(owner, child, cfmt, schema.children[0].contents, readonly)
        return ListArray(vals[first:first + size], o, _valid(owner, arr))
    return _values(owner, arr, fmt, schema, readonly)


def concat(parts):
    """Chunks of one column joined into one array (a copy unless one chunk)."""
    if len(parts) == 1:
        return parts[0]
    p0 = parts[0]
    if isinstance(p0, (ListArray, StringArray)):
        offs = [np.zeros(1, p0.offsets.dtype)]
        base = 0
        for p in parts:
            offs.append(p.offsets[1:] + base)
            base += int(p.offsets[-1])
        valid = None
        if any(p.valid is not None for p in parts):
            valid = np.concatenate([p.valid if p.valid is not None else np.ones(len(p), bool) for p in parts])
        if isinstance(p0, ListArray):
            vals = [p.values for p in parts]
            join = np.ma.concatenate if any(isinstance(v, np.ma.MaskedArray) for v in vals) else np.concatenate
            return ListArray(join(vals), np.concatenate(offs), valid)
        return StringArray(np.concatenate(offs), np.concatenate([p.data for p in parts]), valid, p0.binary)
    if any(isinstance(p, np.ma.MaskedArray) for p in parts):
        return np.ma.concatenate(parts)
    return np.concatenate(parts)
