"""pagefeed from Python: shuffled Parquet batches straight from the engine.

    import pagefeed
    with pagefeed.Loader(["data/"], columns=["input_ids"], output="tokens", seq_len=2048) as loader:
        for batch in loader:
            x = batch.tokens          # read-only int32 [rows, seq_len], no copy
            ...

With output="tokens", tokens_dtype="int64" gives int64 tokens, and
position_ids=True, cu_seqlens=True, loss_mask=True add those arrays of the
packed batch (Batch.position_ids, .cu_seqlens, .loss_mask), views of the
same engine buffer.

The library (libpagefeed.so, Go) loads on first use, in the process that
uses it; a process forked after that cannot use it (ForkError says so).
Memory is fixed when a Loader opens: a batch holds part of it until it is
released, by release(), by its context manager, or when the batch and
every array made from it are garbage. Keeping too many batches (or arrays
from them) alive blocks the next one; copy what must outlive many steps.
"""

import ctypes
import json
import os

import numpy as np

from . import _arrays, _lib
from ._arrays import ListArray, StringArray
from . import errors
from .errors import (ClosedError, ConfigError, CorruptPageError, Error, FileChangedError, ForkError, StateError,
                     check_bool, check_int, check_str)

__all__ = ["Loader", "Batch", "ListArray", "StringArray", "reshard", "version",
           "Error", "ConfigError", "StateError", "CorruptPageError", "FileChangedError", "ClosedError", "ForkError"]


def version():
    """The library's version string (loads it)."""
    return _lib.lib().pf_version().decode()


def reshard(states, new_world):
    """Turns the state_dict() of every rank of one world into new_world
    states that together deliver exactly the rows not yet delivered; state
    i goes to rank i of the new world."""
    return _lib.reshard(states, new_world)


_I4, _I8, _BOOL = np.dtype("<i4"), np.dtype("<i8"), np.dtype("?")

def _extra_view(owner, d, name, addr, readonly):
    """The view of the per-token array name (at addr) of descriptor d."""
    n = d.tok_rows * d.seq_len
    if name == "cu_seqlens":
        # Its length varies from batch to batch; one buffer type of the
        # most it can hold (a segment per token) serves every length, and
        # only the first n_cu values are viewed.
        return _arrays.fixed(owner, addr, (d.n_cu,), _I4, readonly, 4 * (n + 1))
    # loss_mask's bytes are 0 or 1, so a bool view of them is exact
    return _arrays.fixed(owner, addr, (d.tok_rows, d.seq_len), _BOOL if name == "loss_mask" else _I4, readonly)


class _Lease:
    """The owner of arrays made straight from a batch's descriptor, without
    a Batch (PagefeedDataset's tensors): the batch goes back to the loader
    when the last of them is garbage, once Loader._arrays_at's caller has
    set _own at the hand-off (before, the batch is still the loader's
    pending one, and this gives nothing back)."""

    # _handle: the batch's; _own: set at the hand-off; _forks: _lib._forks
    # where it was taken (released only in that process). Set by
    # Loader._arrays_at, no __init__: this is made once per batch.
    __slots__ = ("_handle", "_own", "_forks")

    def __del__(self):
        try:  # (unset attributes: an exception cut Loader._arrays_at short)
            if self._own and self._forks == _lib._forks:
                _lib._lib.pf_batch_release(self._handle)
        except Exception:
            pass


class Batch:
    """One batch from a Loader.

    num_rows: rows in the batch. tokens: read-only int32 [rows, seq_len]
    over the engine's buffer (tokens output; int64 with tokens_dtype=
    "int64"), else None. For tokens output, with the Loader's keyword of
    the same name, also read-only views of the same buffer (else None),
    where a segment ends after every EOS, at every row's end and where
    padding starts: position_ids, int32 [rows, seq_len], each token's
    position in its segment (restarting at 0 at each document);
    loss_mask, bool [rows, seq_len], False exactly on padding;
    cu_seqlens, int32 [segments + 1], the segments' cumulative ends over
    the flattened batch from 0 (flash-attention's varlen layout; its
    length varies from batch to batch). columns: column
    name -> numpy array (a numpy.ma.MaskedArray where the column has
    nulls), ListArray for lists of fixed-width values, StringArray for
    strings and binary. A batch of one chunk (batch_rows > 0) is viewed
    without a copy; a page batch has one chunk per page, which columns
    joins (one copy) and chunks(name) gives as views.

    Arrays made from a batch keep it alive: release() (or the context
    manager) gives its memory back at once when none is left, else when
    the last of them is garbage.
    """

    __slots__ = ("_desc", "_handle", "_rows", "_epoch", "_views", "_want", "_done", "_own", "_names", "_forks",
                 "__weakref__")

    def __init__(self, addr):
        # _own: set by Loader.__next__ at the hand-off; a Batch that never
        # got there (an exception between) gives nothing back when it goes.
        self._own = False
        d = self._desc = _lib.PFBatch.from_address(addr)  # C memory, freed by the release: read only through _live()
        self._handle, self._rows, self._epoch = d.handle, d.rows, d.epoch
        self._views = 0
        self._want = False
        self._done = False
        self._names = None
        self._forks = _lib._forks  # released only in the process that took it

    # Views ------------------------------------------------------------

    def _live(self):
        """The descriptor, or ClosedError once the batch is released."""
        if self._done or self._want:
            raise ClosedError("pagefeed: batch already released")
        return self._desc

    def _owner(self):
        self._live()
        return _Holder(self)

    @property
    def num_rows(self):
        return self._rows

    @property
    def epoch(self):
        return self._epoch

    def _tokens(self, readonly):
        d = self._live()
        if d.tokens:
            return _arrays.fixed(self._owner(), d.tokens, (d.tok_rows, d.seq_len), _I4, readonly)
        if d.tokens64:
            return _arrays.fixed(self._owner(), d.tokens64, (d.tok_rows, d.seq_len), _I8, readonly)
        return None

    def _extra(self, name, readonly):
        """The view of one of the descriptor's per-token arrays, or None
        when the loader was not asked for it."""
        return self._extras(readonly, (name,)).get(name)

    def _extras(self, readonly, names=("position_ids", "loss_mask", "cu_seqlens")):
        """name -> view of each of the descriptor's per-token arrays the
        loader was asked for, among names."""
        d = self._live()
        out = {}
        for name in names:
            addr = getattr(d, name)
            if addr:
                out[name] = _extra_view(self._owner(), d, name, addr, readonly)
        return out

    @property
    def tokens(self):
        return self._tokens(True)

    @property
    def position_ids(self):
        return self._extra("position_ids", True)

    @property
    def loss_mask(self):
        return self._extra("loss_mask", True)

    @property
    def cu_seqlens(self):
        return self._extra("cu_seqlens", True)

    def names(self):
        """The column names, in projection order (top-level names)."""
        if self._names is None:
            d = self._live()
            full = [d.names[c].decode() for c in range(d.ncols)]
            short = [n.split(".")[0] for n in full]
            self._names = short if len(set(short)) == len(short) else full
        return self._names

    def chunks(self, name, readonly=True):
        """The chunks of one column as views (no copy)."""
        c = self.names().index(name)
        d = self._live()
        owner = self._owner()
        sch = d.schemas[c]
        return [_arrays.chunk(owner, d.arrays[c * d.nchunks + i], sch, readonly) for i in range(d.nchunks)]

    def _columns(self, readonly):
        out = {}
        for name in self.names():
            parts = self.chunks(name, readonly)
            out[name] = _arrays.concat(parts) if parts else np.empty(0)
        return out

    @property
    def columns(self):
        # Not cached: the arrays hold the batch, and a cache in the batch
        # would make a cycle that only the garbage collector breaks.
        return self._columns(True)

    def to_arrow(self):
        """The batch as a pyarrow.RecordBatch through the Arrow C Data
        Interface (no copy for one chunk; a page batch's chunks are joined
        by pyarrow). Needs pyarrow; the memory stays valid while pyarrow's
        arrays live, also after release()."""
        return self._arrow(table=False)

    def to_arrow_table(self):
        """The batch as a pyarrow.Table with one chunk per page, no copy."""
        return self._arrow(table=True)

    def _arrow(self, table):
        try:
            import pyarrow as pa
        except ImportError as e:
            raise ImportError("pagefeed: Batch.to_arrow() needs pyarrow, which is not installed "
                              "(Batch.columns gives numpy views without it)") from e
        d = self._live()
        l = _lib.lib()
        cols = []
        for c in range(d.ncols):
            chunks = []
            for i in range(d.nchunks):
                arr, sch = _lib.ArrowArray(), _lib.ArrowSchema()
                _lib.check(l.pf_batch_export(self._handle, c, i, ctypes.byref(arr), ctypes.byref(sch)))
                chunks.append(pa.Array._import_from_c(ctypes.addressof(arr), ctypes.addressof(sch)))
            cols.append(pa.chunked_array(chunks) if table else
                        (chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)))
        if table:
            return pa.Table.from_arrays(cols, names=self.names())
        return pa.RecordBatch.from_arrays(cols, names=self.names())

    # Lifetime -----------------------------------------------------------

    def release(self):
        """Gives the batch back to the loader, now if no array made from
        it is alive, else when the last one is garbage. Twice is harmless."""
        self._want = True
        if self._views == 0:
            self._free()

    def _free(self):
        if self._done or not self._own:
            return
        # Released before it is marked: an exception (a signal) between the
        # two leaves it to be released again, which the library ignores,
        # rather than never.
        if self._forks == _lib._forks:
            _lib.check(_lib.lib().pf_batch_release(self._handle))
        self._done = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        try:
            self._free()
        except Exception:
            pass

    def __copy__(self):
        raise TypeError("pagefeed.Batch cannot be copied: it owns the loader's memory until released. "
                        "Copy its arrays instead (numpy.array(batch.tokens), batch.columns[name].copy())")

    def __deepcopy__(self, memo):
        self.__copy__()

    def __reduce_ex__(self, protocol):
        raise TypeError("pagefeed.Batch cannot be pickled: it views the loader's memory. "
                        "Pickle copies of its arrays instead")

    def __repr__(self):
        return "<pagefeed.Batch rows=%d epoch=%d%s>" % (self.num_rows, self.epoch, " released" if self._done else "")


class _Holder:
    """The owner at the end of every array's base chain: counts the views
    of a batch so that release() waits for them."""

    __slots__ = ("batch",)

    def __init__(self, batch):
        self.batch = batch
        batch._views += 1

    def __del__(self):
        b = self.batch
        b._views -= 1
        if b._views == 0 and b._want:
            try:
                b._free()
            except Exception:
                pass


class Loader:
    """An iterable of Batch over Parquet files, a directory or globs.

    Arguments follow the Go loader's Config; each left out (None) takes the
    library's default: shuffle page|row|rowgroup|stream|none (page), fetch
    unordered|ordered (unordered), batch_pages (pages read together; one
    batch each unless batch_rows > 0; 64), batch_rows (0), buffer_rows
    (shuffle buffer, 0: off; the loader's default: the rows of 256 pages
    for row batches of page shuffle, 8192 for stream), output arrow|tokens
    (arrow; tokens then takes seq_len (2048), eos, pad, tokens_dtype "int32"
    or "int64", and position_ids, cu_seqlens, loss_mask: whether batches
    carry those arrays, see Batch), seed (0), epochs (1), rank and world
    (default: torchrun's $RANK and $WORLD_SIZE), memory_limit in bytes
    (1 GiB), skip_bad_pages. Further keyword arguments are passed on as
    config keys in snake_case (epoch, prefetch, iodepth, drop_last,
    pad_last, keep_uneven, deterministic, truncate, resume: a state_dict());
    unknown ones raise ConfigError.

    Every argument is checked: ConfigError names one of the wrong type (a
    float or a bool for an integer) or out of its range. Opening validates
    the rest: FileNotFoundError for a missing path, OSError for a path that
    cannot be opened (permissions, a symlink loop), ConfigError for an
    unknown column or option or an empty projection (columns=[]),
    StateError for a state of another dataset, MemoryError beyond
    memory_limit. next() raises CorruptPageError for bytes that are not
    valid Parquet, FileChangedError (a CorruptPageError) for a file
    written, truncated or replaced since the loader opened it, and
    ClosedError when close() ends it.

    next() blocks until a batch is ready, in slices, so that signal
    handlers run meanwhile (Ctrl-C raises KeyboardInterrupt). Ctrl-C
    during the constructor, close() or load_state_dict() leaves the
    loader either open or closed, never a library loader it lost. An exception
    that interrupts next() after the library handed out a batch loses
    nothing: the batch stays pending, the next next() returns it, and
    state_dict() counts it as not delivered. A batch is delivered once
    next() returns it (in a for loop, once the loop variable holds it).
    """

    # How long one wait inside next() may block before Python's signal
    # handlers get to run.
    _WAIT_MS = 100

    def __init__(self, paths=None, columns=None, shuffle=None, fetch=None, batch_pages=None, batch_rows=None,
                 buffer_rows=None, output=None, seq_len=None, eos=None, pad=None, tokens_dtype=None,
                 position_ids=False, cu_seqlens=False, loss_mask=False, seed=None, epochs=None, rank=None,
                 world=None, memory_limit=None, skip_bad_pages=False, sources=None, **config):
        # The handle lives in C memory that pf_open fills and pf_close_at
        # clears inside the call: no Python step, so no signal handler,
        # runs between the library opening (closing) the loader and this
        # object holding (dropping) it. 0: closed.
        self._hslot = ctypes.c_int64(0)
        self._href = ctypes.byref(self._hslot)
        self._slot = ctypes.c_void_p()  # the batch pf_next handed out and next() has not yet returned
        self._slotref = ctypes.byref(self._slot)
        if (paths is None) == (sources is None):
            raise ConfigError("pagefeed: give paths or sources (a mixture), not both or neither")
        cfg = {"paths": _paths(paths)} if sources is None else {"sources": _sources(sources)}
        if columns is not None:
            if isinstance(columns, str):
                columns = [columns]
            elif not hasattr(columns, "__iter__"):
                raise ConfigError("pagefeed: columns=%r: want a column name or a list of them" % (columns,))
            cfg["columns"] = [check_str("columns[%d]" % i, c) for i, c in enumerate(columns)]
            if not cfg["columns"]:
                raise ConfigError("pagefeed: columns=[]: an empty projection; name at least one column, "
                                  "or leave columns out for the default")
        if tokens_dtype is not None and not isinstance(tokens_dtype, str):  # numpy.int64, np.dtype("int64"), torch.int64
            try:
                tokens_dtype = np.dtype(tokens_dtype).name
            except TypeError:
                tokens_dtype = str(tokens_dtype).replace("torch.", "", 1)
        given = dict(shuffle=shuffle, fetch=fetch, batch_pages=batch_pages, batch_rows=batch_rows,
                     buffer_rows=buffer_rows, output=output, seq_len=seq_len, eos=eos, pad=pad,
                     tokens_dtype=tokens_dtype, seed=seed, epochs=epochs, memory_limit=memory_limit,
                     position_ids=position_ids, cu_seqlens=cu_seqlens, loss_mask=loss_mask,
                     skip_bad_pages=skip_bad_pages, world=world, rank=rank)
        if world is not None and rank is None:
            given["rank"] = 0
        elif world is None and rank is not None:
            raise ConfigError("pagefeed: rank given without world")
        given.update(config)
        for k, v in given.items():
            if v is None and k in config and k not in _KEYS:
                cfg[k] = None  # a misspelled key left at None is still refused by the library
            if v is not None:
                v = _check_key(k, v)
                if v is not False:  # False is every flag's default: the config stays short
                    cfg[k] = v
        self._cfg = cfg
        self._extra_names = tuple(k for k in ("position_ids", "loss_mask", "cu_seqlens") if cfg.get(k))
        self._open(None)

    def _open(self, resume):
        cfg = self._cfg
        if resume is not None:
            cfg = dict(cfg, resume=resume)
        l = _lib.lib()
        b = errors.dumps(cfg, "config")
        if self._hslot.value:
            raise Error("pagefeed: the loader is open")  # close() first: never drops an open handle
        _lib.check(l.pf_open(b, len(b), self._href))

    @property
    def _h(self):
        """The library's handle, or None when closed."""
        return self._hslot.value or None

    def _handle(self):
        h = self._hslot.value
        if not h:
            raise ClosedError("pagefeed: loader closed")
        return h

    def __iter__(self):
        return self

    def __next__(self):
        addr = self._wait()
        if not addr:
            raise StopIteration
        b = Batch(addr)
        # The hand-off: attribute stores and the return run no signal
        # handler in between, so the batch is either the caller's or still
        # in the slot.
        b._own = True
        self._slot.value = None
        return b

    def _wait(self):
        """Waits until the slot holds a batch (the library's, pending until
        a hand-off clears the slot) and returns its descriptor's address;
        0 after the last epoch."""
        addr = self._slot.value
        if addr:
            return addr
        h = self._hslot.value
        if not h:
            raise ClosedError("pagefeed: loader closed")
        if _lib._forks != _lib._lib_forks:
            _lib.lib()  # raises ForkError: a process forked since the library loaded
        wait, ref, ms = _lib._lib.pf_next_wait, self._slotref, self._WAIT_MS
        # An exception raised when a call returns (a signal's) leaves what
        # the call stored in the slot: the next call returns it.
        rc = wait(h, ms, ref)
        while rc == _lib.TIMEOUT:
            rc = wait(h, ms, ref)  # the loop runs the signal handlers
        if rc:
            if rc == _lib.EOF:
                return 0
            _lib.check(rc)
        addr = self._slot.value
        if not addr:  # close() on another thread gave the pending batch back
            raise ClosedError("pagefeed: loader closed while next() waited")
        return addr

    def _arrays_at(self, addr, wrap):
        """For tokens output: name -> wrap(writable array) of the pending
        batch at addr (tokens, then the extras the loader was asked for),
        and the _Lease that owns them, without a Batch (PagefeedDataset's
        per-batch path). The batch stays pending until the caller hands it
        off: lease._own = True, then self._slot.value = None, with no call
        in between (no signal handler runs there). None for a batch
        without tokens."""
        d = _lib.PFBatch.from_address(addr)
        p, dt = d.tokens, _I4
        if not p:
            p, dt = d.tokens64, _I8
            if not p:
                return None
        lease = _Lease()
        lease._handle, lease._own, lease._forks = d.handle, False, _lib._forks
        out = {"tokens": wrap(_arrays.fixed(lease, p, (d.tok_rows, d.seq_len), dt, False))}
        for name in self._extra_names:
            addr = getattr(d, name)
            if addr:
                out[name] = wrap(_extra_view(lease, d, name, addr, False))
        return out, lease

    def next(self):
        """The next Batch, or None after the last epoch."""
        try:
            return self.__next__()
        except StopIteration:
            return None

    def _unread(self, b=None):
        """Gives the rows of the batch handed out last back to the loader,
        so that the next next() delivers them again: the pending batch, or
        b (next()'s last, its hand-off cut short by an exception)."""
        slot = self._slot
        if b is None:
            if not slot.value:
                return
            handle = _lib.PFBatch.from_address(slot.value).handle
        else:
            if b._done or not b._own:
                return
            handle = b._handle
        _lib.check(_lib.lib().pf_unread(self._handle(), handle))
        if b is None:
            slot.value = None
        else:
            b._done = True  # its memory went back with its rows; views of it are void

    def __len__(self):
        """Batches this rank takes in the loader's current epoch: the epoch
        of the last batch next() returned (before the first, the epoch it
        opened at; a resumed epoch counted whole, the batches before the
        checkpoint included). Exact for page and row batches, and the same
        on every rank with drop_last or pad_last (the default when
        world > 1); an estimate for tokens output with keep_uneven (world
        1's default). It never waits for a next() blocked on another
        thread."""
        n = ctypes.c_int64()
        _lib.check(_lib.lib().pf_len(self._handle(), ctypes.byref(n)))
        return n.value

    def epoch_len(self, epoch):
        """Batches this rank takes in epoch: len() for the current epoch,
        any other as a fresh start of it would run."""
        epoch = check_int("epoch", epoch, 0, errors.INT64[1])
        n = ctypes.c_int64()
        _lib.check(_lib.lib().pf_epoch_len(self._handle(), epoch, ctypes.byref(n)))
        return n.value

    def stats(self):
        """The loader's counters (a dict): pages, bytes, rows, batches...,
        and how the files are read ("IOMode", "IOReason", "DirectFiles",
        "BufferedFiles"; a mixture's chosen over all its sources' files);
        for a mixture, "Sources": one dict per source with its name, rows,
        tokens, epochs begun, bytes read and its part of the read mode."""
        out = ctypes.c_void_p()
        _lib.check(_lib.lib().pf_stats(self._handle(), ctypes.byref(out)))
        return json.loads(_lib.take_bytes(out))

    def _state_bytes(self, compact=False):
        self._unread()
        out = ctypes.c_void_p()
        _lib.check(_lib.lib().pf_state(self._handle(), _lib.STATE_COMPACT if compact else 0, ctypes.byref(out)))
        return _lib.take_bytes(out)

    def state_dict(self):
        """A checkpoint after the last batch next() returned (a JSON-able
        dict); a batch whose hand-off an exception interrupted is not
        counted."""
        return json.loads(self._state_bytes())

    def load_state_dict(self, state):
        """Reopens the loader to continue exactly after state."""
        _check_state(state)
        self.close()
        self._open(state)

    def close(self):
        """Closes the loader (idempotent); may end a next() blocked on
        another thread. Batches not yet released stay valid."""
        if not self._hslot.value:
            return
        if _lib.loaded_here():
            # Each step before it is marked done: an exception (a signal)
            # between leaves it to the next close(), never undone.
            slot = self._slot
            if slot.value:  # pending: never the caller's
                _lib.check(_lib.lib().pf_batch_release(_lib.PFBatch.from_address(slot.value).handle))
                slot.value = None
            # closes and clears the handle in one call (see __init__)
            _lib.check(_lib.lib().pf_close_at(self._href))
        else:
            self._hslot.value = 0  # a fork's copy: the parent's loader is not this process's

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __copy__(self):
        raise TypeError("pagefeed.Loader cannot be copied: open another one, or resume one from state_dict()")

    def __deepcopy__(self, memo):
        self.__copy__()

    def __reduce_ex__(self, protocol):
        raise TypeError("pagefeed.Loader cannot be pickled: pickle its state_dict() and resume from it")


def _sources(sources):
    """A mixture's sources: a list of dicts {"paths", "name", "weight" |
    "repeat" | "choose", "columns"}; the library checks the values and
    names the source that is wrong."""
    if isinstance(sources, (str, bytes, dict)) or not hasattr(sources, "__iter__"):
        raise ConfigError("pagefeed: sources=%r: want a list of dicts" % (sources,))
    out = []
    for i, s in enumerate(sources):
        if not isinstance(s, dict):
            raise ConfigError("pagefeed: sources[%d]=%r: want a dict with \"paths\"" % (i, s))
        d = dict(s)
        if "paths" not in d:
            raise ConfigError("pagefeed: sources[%d]: no \"paths\"" % i)
        d["paths"] = _paths(d["paths"])
        if isinstance(d.get("columns"), str):
            d["columns"] = [d["columns"]]
        out.append(d)
    if not out:
        raise ConfigError("pagefeed: sources: want at least one source")
    return out


def _paths(paths):
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    elif not hasattr(paths, "__iter__"):
        raise ConfigError("pagefeed: paths=%r: want a path or a list of paths" % (paths,))
    out = []
    for i, p in enumerate(paths):
        if not isinstance(p, (str, bytes, os.PathLike)):
            raise ConfigError("pagefeed: paths[%d]=%r: want a path (str or os.PathLike)" % (i, p))
        p = os.fsdecode(p)
        if "\x00" in p:
            raise ConfigError("pagefeed: paths[%d]=%r: a path holds no NUL byte" % (i, p))
        out.append(p)
    if not out:
        raise ConfigError("pagefeed: paths: want at least one path")
    return out


_U64 = (1 << 64) - 1
_I32 = (-(1 << 31), (1 << 31) - 1)
# The type of every config key the package knows, and the range of the
# integers that JSON and ctypes would otherwise read another way (the
# library checks the ranges of the others, and the names, and says which
# key is wrong).
_KEYS = {
    "seed": (0, _U64), "epoch": (0, _U64), "eos": _I32, "pad": _I32,
    "world": (1, _lib.MAX_WORLD), "batch_pages": None, "batch_rows": None, "buffer_rows": None,
    "prefetch": None, "epochs": None, "rank": None, "local_rank": None, "seq_len": None,
    "memory_limit": None, "iodepth": None,
    "shuffle": str, "fetch": str, "output": str, "tokens_dtype": str,
    "position_ids": bool, "cu_seqlens": bool, "loss_mask": bool, "skip_bad_pages": bool, "drop_last": bool,
    "pad_last": bool, "keep_uneven": bool, "deterministic": bool, "truncate": bool,
}


def _check_key(k, v):
    """v checked for config key k (see _KEYS); unknown keys pass through to
    the library, which refuses them."""
    t = _KEYS.get(k, _KEYS)
    if t is _KEYS:
        if k == "resume":
            _check_state(v)
        return v
    if t is bool:
        return check_bool(k, v)
    if t is str:  # the library names the choices
        return check_str(k, v)
    lo, hi = t or errors.INT64
    return check_int(k, v, lo, hi)


def _check_state(state):
    if not isinstance(state, dict):
        raise StateError("pagefeed: state=%r: want a dict that state_dict() returned" % (state,))
