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
from .errors import ClosedError, ConfigError, CorruptPageError, Error, ForkError, StateError

__all__ = ["Loader", "Batch", "ListArray", "StringArray", "reshard", "version",
           "Error", "ConfigError", "StateError", "CorruptPageError", "ClosedError", "ForkError"]


def version():
    """The library's version string (loads it)."""
    return _lib.lib().pf_version().decode()


def reshard(states, new_world):
    """Turns the state_dict() of every rank of one world into new_world
    states that together deliver exactly the rows not yet delivered; state
    i goes to rank i of the new world."""
    return _lib.reshard(states, new_world)


_I4, _I8, _BOOL = np.dtype("<i4"), np.dtype("<i8"), np.dtype("?")

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

    __slots__ = ("_desc", "_handle", "_rows", "_epoch", "_views", "_want", "_done", "_names", "_forks", "__weakref__")

    def __init__(self, desc):
        self._desc = desc  # C memory, freed by the release: read only through _live()
        d = desc.contents
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
        return self._desc.contents

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
            return _arrays.view(self._owner(), d.tokens, (d.tok_rows, d.seq_len), _I4, readonly)
        if d.tokens64:
            return _arrays.view(self._owner(), d.tokens64, (d.tok_rows, d.seq_len), _I8, readonly)
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
            if not addr:
                continue
            if name == "cu_seqlens":
                out[name] = _arrays.view(self._owner(), addr, (d.n_cu,), _I4, readonly)
            else:
                # loss_mask's bytes are 0 or 1, so a bool view of them is exact
                out[name] = _arrays.view(self._owner(), addr, (d.tok_rows, d.seq_len),
                                         _BOOL if name == "loss_mask" else _I4, readonly)
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
        if self._done:
            return
        self._done = True
        if self._forks == _lib._forks:
            _lib.check(_lib.lib().pf_batch_release(self._handle))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        try:
            self._free()
        except Exception:
            pass

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

    Arguments follow the Go loader's Config: shuffle page|row|rowgroup|
    stream|none, fetch unordered|ordered, batch_pages (pages read
    together; one batch each unless batch_rows > 0), batch_rows,
    buffer_rows (shuffle buffer; 0: the loader's default, the rows of 256
    pages for row batches of page shuffle; -1: off), output arrow|tokens
    (then seq_len, eos, pad, tokens_dtype "int32" or "int64", and
    position_ids, cu_seqlens, loss_mask: whether batches carry those
    arrays, see Batch), seed,
    epochs, rank and world (default: torchrun's $RANK and $WORLD_SIZE),
    memory_limit in bytes, skip_bad_pages. Further keyword arguments are
    passed on as config keys in snake_case (epoch, prefetch, iodepth,
    drop_last, pad_last, keep_uneven, deterministic, truncate); unknown
    ones raise ConfigError.

    Opening validates everything: FileNotFoundError for a missing path,
    ConfigError for an unknown column or option, StateError for a state
    of another dataset, MemoryError beyond memory_limit.
    """

    def __init__(self, paths, columns=None, shuffle="page", fetch="unordered", batch_pages=64, batch_rows=0,
                 buffer_rows=0, output="arrow", seq_len=2048, eos=None, pad=None, tokens_dtype="int32",
                 position_ids=False, cu_seqlens=False, loss_mask=False, seed=0, epochs=1, rank=None,
                 world=None, memory_limit=None, skip_bad_pages=False, **config):
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        cfg = {"paths": [os.fspath(p) for p in paths], "shuffle": shuffle, "fetch": fetch,
               "batch_pages": batch_pages, "batch_rows": batch_rows, "buffer_rows": buffer_rows,
               "output": output, "seed": seed, "epochs": epochs, "skip_bad_pages": bool(skip_bad_pages)}
        if columns is not None:
            cfg["columns"] = [columns] if isinstance(columns, str) else list(columns)
        if output == "tokens":
            cfg["seq_len"] = seq_len
        # Passed on only when not the default, so that arrow output takes
        # them silently and the library judges every value given.
        if not isinstance(tokens_dtype, str):  # numpy.int64, np.dtype("int64"), torch.int64
            try:
                tokens_dtype = np.dtype(tokens_dtype).name
            except TypeError:
                tokens_dtype = str(tokens_dtype).replace("torch.", "", 1)
        if tokens_dtype != "int32":
            cfg["tokens_dtype"] = tokens_dtype
        for k, v in (("position_ids", position_ids), ("cu_seqlens", cu_seqlens), ("loss_mask", loss_mask)):
            if v:
                cfg[k] = bool(v)
        for k, v in (("eos", eos), ("pad", pad), ("memory_limit", memory_limit)):
            if v is not None:
                cfg[k] = v
        if world is not None:
            cfg["world"] = world
            cfg["rank"] = 0 if rank is None else rank
        elif rank is not None:
            raise ConfigError("pagefeed: rank given without world")
        cfg.update(config)
        self._cfg = cfg
        self._h = None
        self._open(None)

    def _open(self, resume):
        cfg = dict(self._cfg)
        if resume is not None:
            cfg["resume"] = resume
        l = _lib.lib()
        h = ctypes.c_int64()
        b = json.dumps(cfg).encode()
        _lib.check(l.pf_open(b, len(b), ctypes.byref(h)))
        self._h = h.value

    def _handle(self):
        if self._h is None:
            raise ClosedError("pagefeed: loader closed")
        return self._h

    def __iter__(self):
        return self

    def __next__(self):
        l = _lib.lib()
        p = ctypes.POINTER(_lib.PFBatch)()
        rc = _lib.check(l.pf_next(self._handle(), ctypes.byref(p)))
        if rc == _lib.EOF:
            raise StopIteration
        return Batch(p)

    def next(self):
        """The next Batch, or None after the last epoch."""
        try:
            return self.__next__()
        except StopIteration:
            return None

    def __len__(self):
        """Batches per epoch for this rank, known at open: exact with
        drop_last or pad_last (the default when world > 1: every rank takes
        this many steps), an estimate with keep_uneven (world 1's
        default) where batches are rows or tokens."""
        n = ctypes.c_int64()
        _lib.check(_lib.lib().pf_len(self._handle(), ctypes.byref(n)))
        return n.value

    def state_dict(self):
        """A checkpoint after the last batch returned (a JSON-able dict)."""
        out = ctypes.c_void_p()
        _lib.check(_lib.lib().pf_state(self._handle(), ctypes.byref(out)))
        return json.loads(_lib.take_string(out))

    def load_state_dict(self, state):
        """Reopens the loader to continue exactly after state."""
        self.close()
        self._open(state)

    def close(self):
        """Closes the loader (idempotent); may end a next() blocked on
        another thread. Batches not yet released stay valid."""
        h, self._h = self._h, None
        if h is not None and _lib.loaded_here():
            _lib.check(_lib.lib().pf_close(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
