"""The ctypes binding of libpagefeed.so, loaded on first use.

The Go runtime inside the library does not survive fork(): a child forked
after the parent loaded it would hang on its first call. So the library is
loaded lazily, by the first call in the process that uses it, and every
call checks that it runs in that process.
"""

import ctypes
import json
import os
import threading

from . import errors

_lock = threading.Lock()
_lib = None
_pid = None
# _forks counts the os.fork()s (multiprocessing, DataLoader workers) this
# process is the child of since the import: per-batch checks compare it
# instead of calling getpid(), a system call. _lib_forks is its value when
# the library was loaded.
_forks = 0
_lib_forks = 0


def _after_fork_in_child():
    global _forks
    _forks += 1


os.register_at_fork(after_in_child=_after_fork_in_child)


class ArrowSchema(ctypes.Structure):
    pass


ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowSchema))),
    ("dictionary", ctypes.POINTER(ArrowSchema)),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]


class ArrowArray(ctypes.Structure):
    pass


ArrowArray._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowArray))),
    ("dictionary", ctypes.POINTER(ArrowArray)),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]


class PFBatch(ctypes.Structure):
    _fields_ = [
        ("handle", ctypes.c_int64),
        ("rows", ctypes.c_int64),
        ("epoch", ctypes.c_uint64),
        ("tokens", ctypes.c_void_p),
        ("tok_rows", ctypes.c_int64),
        ("seq_len", ctypes.c_int64),
        ("ncols", ctypes.c_int64),
        ("nchunks", ctypes.c_int64),
        ("names", ctypes.POINTER(ctypes.c_char_p)),
        ("schemas", ctypes.POINTER(ArrowSchema)),
        ("arrays", ctypes.POINTER(ArrowArray)),
        ("tokens64", ctypes.c_void_p),
        ("position_ids", ctypes.c_void_p),
        ("loss_mask", ctypes.c_void_p),
        ("cu_seqlens", ctypes.c_void_p),
        ("n_cu", ctypes.c_int64),
    ]


OK, EOF, TIMEOUT = 0, 1, 2
STATE_COMPACT = 1  # pf_state's PF_STATE_COMPACT
# The most ranks one job may have (the C ABI's limit, DataLoader workers
# counted as ranks).
MAX_WORLD = 1 << 20
# The PF_ABI_VERSION of the pagefeed.h that PFBatch mirrors (the library
# defines it there only and returns it from pf_abi_version); a library of
# another version is refused at load. tests/test_install.py checks that
# this and PFBatch's fields match capi/pagefeed.h.
ABI = 5


def library_path():
    """The shared library: $PAGEFEED_LIB, else the one inside the package."""
    return os.environ.get("PAGEFEED_LIB") or os.path.join(os.path.dirname(__file__), "libpagefeed.so")


def loaded_here():
    """Whether this process has loaded the library (its Go runtime runs)."""
    return _lib is not None and _lib_forks == _forks


def lib():
    """The library, loaded on first use; raises ForkError in a process
    forked after its parent loaded it."""
    global _lib, _pid, _lib_forks
    if _lib is not None:
        if _lib_forks != _forks:
            raise errors.ForkError(
                "pagefeed: the library was loaded in process %d, and this process (%d) is a fork of it: "
                "the Go runtime does not survive fork(). Construct and iterate the Loader (or "
                "PagefeedDataset) in the process that uses it, e.g. inside each DataLoader worker, "
                "and do not iterate it, call len() on a Loader or reshard() in the parent before "
                "the workers start; or use multiprocessing_context='spawn'." % (_pid, os.getpid()))
        return _lib
    with _lock:
        if _lib is None:
            path = library_path()
            if not os.path.exists(path):
                raise ImportError("pagefeed: %s is missing; build it with `make python` "
                                  "(go build -buildmode=c-shared -o python/pagefeed/libpagefeed.so ./capi)" % path)
            l = ctypes.CDLL(path)
            i64, pi64, c_int = ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.c_int
            pp_char = ctypes.POINTER(ctypes.c_void_p)
            for name, res, args in [
                ("pf_version", ctypes.c_char_p, []),
                ("pf_abi_version", c_int, []),
                ("pf_last_error", ctypes.c_char_p, []),
                ("pf_last_errno", c_int, []),
                ("pf_open", c_int, [ctypes.c_char_p, ctypes.c_size_t, pi64]),
                # out: a void* slot, so that the caller can clear it without a call
                ("pf_next", c_int, [i64, pp_char]),
                ("pf_next_wait", c_int, [i64, i64, pp_char]),
                ("pf_unread", c_int, [i64, i64]),
                ("pf_batch_release", c_int, [i64]),
                ("pf_batch_export", c_int, [i64, i64, i64, ctypes.POINTER(ArrowArray), ctypes.POINTER(ArrowSchema)]),
                ("pf_state", c_int, [i64, c_int, pp_char]),
                ("pf_reshard", c_int, [ctypes.c_char_p, i64, pp_char]),
                ("pf_free", None, [ctypes.c_void_p]),
                ("pf_len", c_int, [i64, pi64]),
                ("pf_epoch_len", c_int, [i64, i64, pi64]),
                ("pf_stats", c_int, [i64, pp_char]),
                ("pf_close", c_int, [i64]),
                ("pf_close_at", c_int, [pi64]),
            ]:
                f = getattr(l, name)
                f.restype, f.argtypes = res, args
            if l.pf_abi_version() != ABI:
                raise ImportError("pagefeed: %s has ABI %d, this package speaks %d; rebuild it with `make python`"
                                  % (path, l.pf_abi_version(), ABI))
            _pid, _lib_forks = os.getpid(), _forks
            _lib = l
    return _lib


def check(rc):
    """Raises the exception for a status code, with the library's message
    (the calling thread's last error); returns rc otherwise."""
    if rc >= 0:
        return rc
    msg = _lib.pf_last_error().decode("utf-8", "replace") or "pagefeed: error %d" % rc
    raise errors.from_status(rc, msg, _lib.pf_last_errno())


def take_bytes(p):
    """A C string returned by the library, copied and freed."""
    try:
        return ctypes.string_at(p.value)
    finally:
        _lib.pf_free(p)


def take_string(p):
    """A C string returned by the library, decoded and freed."""
    return take_bytes(p).decode("utf-8")


def reshard(states, new_world):
    """See pagefeed.reshard."""
    new_world = errors.check_int("new_world", new_world, 1, MAX_WORLD)
    if isinstance(states, (dict, str, bytes)) or not hasattr(states, "__iter__"):
        raise errors.StateError("pagefeed: reshard(states, ...): want a list of every rank's state_dict(), got %s"
                                % type(states).__name__)
    states = list(states)
    for i, s in enumerate(states):
        if not isinstance(s, dict):
            raise errors.StateError("pagefeed: reshard: states[%d] is %s, want a state_dict() (a dict)" % (i, type(s).__name__))
    l = lib()
    out = ctypes.c_void_p()
    check(l.pf_reshard(errors.dumps(states, "states"), new_world, ctypes.byref(out)))
    return json.loads(take_string(out))
