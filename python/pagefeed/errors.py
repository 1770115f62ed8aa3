"""The exceptions of pagefeed, one per status code of the library."""

import errno as _errno


class Error(RuntimeError):
    """A pagefeed failure that no more specific exception names."""


class ConfigError(Error, ValueError):
    """An invalid configuration: an unknown option or column, a bad value."""


class StateError(Error, ValueError):
    """A checkpoint that does not belong to this loader (another dataset,
    seed, shuffle or world), or a malformed one."""


class CorruptPageError(Error):
    """Bytes that are not valid Parquet (a corrupt page, footer or index)."""


class ClosedError(Error, ValueError):
    """The loader is closed (also raised by a next() that close() ended)."""


class ForkError(Error):
    """The library was loaded in a parent process before this one was
    forked; the Go runtime does not survive fork()."""


def from_status(rc, msg):
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
    return Error(msg)
