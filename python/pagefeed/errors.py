"""The exceptions of pagefeed, one per status code of the library, and
the argument checks that raise them."""

import errno as _errno
import json as _json
import numbers as _numbers


class Error(RuntimeError):
    """A pagefeed failure that no more specific exception names."""


class ConfigError(Error, ValueError):
    """An invalid configuration: an unknown option or column, a bad value."""


class StateError(Error, ValueError):
    """A checkpoint that does not belong to this loader (another dataset,
    seed, shuffle or world), or a malformed one."""


class CorruptPageError(Error):
    """Bytes that are not valid Parquet (a corrupt page, footer or index)."""


class FileChangedError(CorruptPageError):
    """A file written, truncated or replaced since the loader indexed it
    (its size, modification or status-change time, or inode differ): the
    loader does not read it through the old page map. A CorruptPageError,
    which it was reported as before it had its own class."""


class ClosedError(Error, ValueError):
    """The loader is closed (also raised by a next() that close() ended)."""


class ForkError(Error):
    """The library was loaded in a parent process before this one was
    forked; the Go runtime does not survive fork()."""


def from_status(rc, msg, eno=0):
    """The exception for a status code; eno, the errno behind it when the
    library gives one, becomes the exception's errno (OSError's own)."""
    e = _from_status(rc, msg, eno)
    if eno and not isinstance(e, OSError):
        e.errno = eno
    return e


def _from_status(rc, msg, eno):
    if rc == -2:
        return ConfigError(msg)
    if rc == -3:
        return StateError(msg)
    if rc == -4:
        return FileNotFoundError(_errno.ENOENT, msg)
    if rc == -5:
        return CorruptPageError(msg)
    if rc == -6:
        return MemoryError(msg)
    if rc == -7:
        return ClosedError(msg)
    if rc == -9:
        return FileChangedError(msg)
    if rc == -8 and eno:
        return OSError(eno, msg)  # the subclass for its errno (PermissionError, ...)
    return Error(msg)


INT64 = (-(1 << 63), (1 << 63) - 1)


def check_int(name, v, lo=INT64[0], hi=INT64[1], note=""):
    """v as an int, or ConfigError naming the argument and its range: a bool,
    a float (1.5, NaN) or a str is not an integer."""
    if isinstance(v, bool) or not isinstance(v, _numbers.Integral):
        raise ConfigError("pagefeed: %s=%r: want an integer in %d..%d%s" % (name, v, lo, hi, note))
    v = int(v)
    if not lo <= v <= hi:
        raise ConfigError("pagefeed: %s=%d: want %d..%d%s" % (name, v, lo, hi, note))
    return v


def check_bool(name, v):
    """v as a bool, or ConfigError: only True and False (numpy's too)."""
    if v is True or v is False or type(v).__name__ == "bool_":
        return bool(v)
    raise ConfigError("pagefeed: %s=%r: want True or False" % (name, v))


def check_str(name, v, choices=None):
    """v as a str, or ConfigError naming the argument (and its choices)."""
    if not isinstance(v, str) or (choices and v.lower() not in choices):
        want = " or ".join(repr(c) for c in choices) if choices else "a string"
        raise ConfigError("pagefeed: %s=%r: want %s" % (name, v, want))
    return v


def dumps(v, name):
    """JSON bytes of v; ConfigError naming it if it holds what JSON cannot
    (NaN, infinities, objects)."""
    try:
        return _json.dumps(v, allow_nan=False).encode()
    except (TypeError, ValueError) as e:
        raise ConfigError("pagefeed: %s: %s" % (name, e)) from None
