"""pagefeed.torch: a torch IterableDataset over pagefeed.Loader, and a
DataLoader that checkpoints it with worker processes.

    ds = PagefeedDataset(["data/"], columns=["input_ids"], output="tokens", seq_len=2048)
    dl = pagefeed.torch.DataLoader(ds, batch_size=None, num_workers=2, pin_memory=True)
    for step, item in enumerate(dl):
        ...
        if step % 1000 == 0:
            save(model, dl.state_dict())      # or ds.state_dict()
    # later, in a new process: ds.load_state_dict(saved) before iterating

Each item is a dict of tensors made with torch.from_numpy (no copy):
"tokens" [rows, seq_len] for tokens output (int32, or int64 with
tokens_dtype="int64"), with "position_ids" (int32 [rows, seq_len]),
"loss_mask" (bool [rows, seq_len]) and "cu_seqlens" (int32, 1-D, its
length varying per batch) when the keyword of that name is True (see
pagefeed.Batch); for arrow output, name ->
values of a fixed-width column, and for a list column name -> its flat
values and name + "_offsets" -> offsets (torch's jagged layout). Strings
and binary come as name -> uint8 bytes and name + "_offsets". Nulls are
not representable in a tensor: a column with nulls also gives
name + "_valid" (bool).

Sharding: rank and world come from torch.distributed when it is
initialized, else from torchrun's $RANK and $WORLD_SIZE, else 0 of 1.
With num_workers=N each DataLoader worker w opens its own loader after the
fork and reads shard rank*N + w of world*N, so every row is read once
(with world > 1 the loader's default drop_last then evens out the steps
over all world*N shards, so every rank still takes the same number).

len(ds) is the number of steps this rank takes in the epoch the next
iteration reads (set_epoch, or a state loaded with load_state_dict, a
resumed epoch counted whole): with workers, the sum of the steps of this
rank's worker shards. The worker count is the one of the
pagefeed.torch.DataLoader the dataset was last given to (0 until then;
a plain torch DataLoader does not tell it). The library is loaded only by
the process that iterates: do not iterate the dataset in the parent before
the workers start. len(ds) in a process that has not loaded the library
asks a short-lived forked child (its wait runs signal handlers: Ctrl-C
ends it), so it is safe before DataLoader forks.

Checkpoints: ds.state_dict() is the position of the batches this rank's
user has received; ds.load_state_dict(state) makes the next iteration
continue exactly after it (every row once across the checkpoint, the
same steps per rank), also in a new process. With num_workers=0 this holds
with any DataLoader. With workers, only the main process knows which
batches the user received: pagefeed.torch.DataLoader (a drop-in for
torch.utils.data.DataLoader) has each worker attach its loader's position
to its batches and keeps, per worker, the position of the last batch it
handed out; with a plain torch DataLoader and workers ds.state_dict()
raises StateError saying so. torchdata's StatefulDataLoader works too:
state_dict()/load_state_dict() called inside a worker give and take that
worker's position. A state resumes with the same world and num_workers;
with world 1 any num_workers (the shards are resharded). A state loaded
applies to the next iteration; set_epoch to another epoch drops it.
persistent_workers=True keeps the workers' copies of the dataset:
set_epoch or load_state_dict after they started raise ConfigError at the
next iteration instead of being ignored.

Lifetime: a tensor keeps its batch's memory, which blocks the loader when
too many are kept; pin_memory=True (a copy) and worker processes (tensors
travel through shared memory, a copy) release it at once. Tensors are
writable views of the batch (torch has no read-only tensors): writing to
one changes only that batch.
"""

import json
import os
import pickle
import select
import signal
import warnings
import weakref

import numpy as np
import torch
import torch.utils.data
import torch.utils.data._utils.collate
import torch.utils.data._utils.pin_memory

from . import Batch, Loader, _lib, reshard
from ._arrays import ListArray, StringArray
from .errors import ConfigError, StateError, check_int

# The fields of a loader's state that name the loader: the same in every
# state one loader takes, so a compact state leaves them out.
_IDENTITY = ("dataset", "files", "columns", "lead", "shuffle", "output")
_EPOCH_MAX = (1 << 64) - 1

# A fork of a process that holds datasets (DataLoader workers start so)
# takes their iteration out of its view: each is marked, and its
# state_dict() then needs pagefeed.torch.DataLoader's tracking. The
# package's own forks (len) leave them be.
_datasets = weakref.WeakSet()
_own_fork = [False]


def _before_fork():
    if not _own_fork[0]:
        for ds in list(_datasets):
            ds._forked = True


os.register_at_fork(before=_before_fork)


def _rank_world():
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def _tensors_at(loader, addr):
    """The tensors of the loader's pending batch at addr, and the object
    whose _own the hand-off sets (until then nothing is given back)."""
    x = loader._arrays_at(addr, torch.from_numpy)
    if x is not None:  # tokens: no Batch
        return x
    b = Batch(addr)  # owned (released when garbage) only once _own is set
    return _tensors(b), b


def _tensors(batch):
    out = {}
    for name, a in batch._columns(False).items():
        if isinstance(a, ListArray):
            vals = a.values
            if isinstance(vals, np.ma.MaskedArray):
                out[name + "_values_valid"] = torch.from_numpy(~np.ma.getmaskarray(vals))
                vals = vals.data
            out[name] = torch.from_numpy(vals)
            out[name + "_offsets"] = torch.from_numpy(a.offsets)
            valid = a.valid
        elif isinstance(a, StringArray):
            out[name] = torch.from_numpy(a.data)
            out[name + "_offsets"] = torch.from_numpy(a.offsets)
            valid = a.valid
        elif isinstance(a, np.ma.MaskedArray):
            out[name] = torch.from_numpy(a.data)
            valid = ~np.ma.getmaskarray(a)
        else:
            out[name] = torch.from_numpy(a)
            valid = None
        if valid is not None:
            out[name + "_valid"] = torch.from_numpy(np.asarray(valid))
    return out


def _merge(base, compact):
    """A loader's full state from a compact one and any full state of the
    same loader (which supplies the fields that name it)."""
    s = json.loads(compact)
    b = json.loads(base)
    for k in _IDENTITY:
        s.pop(k, None)
        if k in b:
            s[k] = b[k]
    return s


class PagefeedDataset(torch.utils.data.IterableDataset):
    """Takes the arguments of pagefeed.Loader (rank and world default to
    the job's, see the module doc) and yields dicts of tensors.

    state_dict()/load_state_dict(): see the module doc. The state is a
    JSON-able dict: {"pagefeed_dataset": 1, "epoch", "rank", "world",
    "num_workers", "loaders": one loader state per shard (None: the shard
    from the epoch's start), "finished": whether the epoch was read to its
    end}; inside a DataLoader worker, {"pagefeed_worker": 1, "epoch",
    "rank", "world" (the worker's shard), "state"}.
    """

    def __init__(self, paths=None, **kwargs):
        super().__init__()
        self._paths = paths
        self._kw = kwargs
        self._epoch = check_int("epoch", kwargs.pop("epoch", 0), 0, _EPOCH_MAX)
        self._resume = None  # a dataset state for the next iteration (pagefeed_dataset)
        self._resume_worker = None  # a worker's own state (torchdata, in a worker)
        self._num_workers = 0  # of the pagefeed.torch.DataLoader it was last given to
        self._tracker = None  # main process: the workers' positions (pagefeed.torch.DataLoader)
        self._forked = False  # worker processes may have iterated it since (see _before_fork)
        self._lens = {}
        self._reset_run()
        _datasets.add(self)

    def _reset_run(self):
        # This process's iteration: its loader, the state it started from
        # and the one it ended with, whether it read the epoch to its end.
        self._loader = None
        self._iterated = False
        self._start = None
        self._final = None
        self._finished = False
        self._sent_base = False

    def __getstate__(self):
        # What a spawned worker gets: the configuration and what to resume,
        # never this process's loader or bookkeeping. This process no
        # longer sees where that copy got to.
        self._forked = True
        d = dict(self.__dict__)
        d.update(_loader=None, _tracker=None, _lens={}, _final=None, _start=None, _forked=False)
        return d

    def __setstate__(self, d):
        self.__dict__.update(d)
        _datasets.add(self)

    # Configuration -------------------------------------------------------

    def _base(self):
        """The loader keywords without rank and world, and rank, world."""
        kw = dict(self._kw)
        rank, world = kw.pop("rank", None), kw.pop("world", None)
        if world is None:
            rank, world = _rank_world()
        return kw, rank or 0, world

    def _shard_kw(self, n, w):
        """The loader keywords of shard w of this rank's n (0: no workers)."""
        kw, rank, world = self._base()
        if n > 1:
            if world == 1 and not any(kw.get(k) for k in ("drop_last", "pad_last", "keep_uneven")):
                # One rank: the workers' shards need not take equal steps
                # (DataLoader interleaves them), so deliver every row.
                kw["keep_uneven"] = True
            rank, world = rank * n + w, world * n
        kw["rank"], kw["world"] = rank, world
        if self._epoch:
            kw["epoch"] = self._epoch
        return kw

    def set_epoch(self, epoch):
        """Makes the next iteration read this epoch (a new order). A state
        loaded for another epoch is dropped."""
        epoch = check_int("epoch", epoch, 0, _EPOCH_MAX)
        if self._resume is not None and self._resume["epoch"] != epoch:
            self._resume = None
        self._epoch = epoch
        self._lens = {}

    # Iteration -----------------------------------------------------------

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        n, w = (info.num_workers, info.id) if info is not None else (0, 0)
        if info is None:  # this process reads it: its position is known here
            self._tracker = None
            self._forked = False
        resume = self._take_resume(n, w)
        kw = self._shard_kw(n, w)
        if self._loader is not None:
            self._loader.close()
        self._reset_run()
        self._iterated = True
        self._start = resume
        return self._run(kw, resume)

    def _take_resume(self, n, w):
        """The state shard w of n resumes from (None: the epoch's start),
        taken out of what load_state_dict left for this iteration."""
        if self._resume_worker is not None:
            s, self._resume_worker = self._resume_worker, None
            return s
        if self._resume is None:
            return None
        r = _resolve(self, n)
        self._resume = None
        return r["loaders"][w]

    def _run(self, kw, resume):
        loader = Loader(self._paths, resume=resume, **kw) if resume is not None else Loader(self._paths, **kw)
        self._loader = loader
        try:
            wait, slot = loader._wait, loader._slot
            while True:
                addr = wait()
                if not addr:
                    self._finished = True
                    return
                # The tensors are made while the batch is still the
                # loader's pending one: an exception meanwhile leaves it
                # there (the next call, or the state, has it).
                t, owner = _tensors_at(loader, addr)
                # The hand-off: two attribute stores, no signal handler in
                # between; from here the tensors own the batch, and only they.
                owner._own = True
                slot.value = None
                del owner
                yield t
        finally:
            if self._loader is loader:
                try:
                    self._final = loader._state_bytes()
                finally:
                    self._loader = None
                    loader.close()

    def _tag(self, info):
        """A worker's position after the batch it is about to send: (worker
        id, the full state of its loader the first time, else None, the
        compact state)."""
        l = self._loader
        if l is None:
            return None
        base = None
        if not self._sent_base:
            base = l._state_bytes()
            self._sent_base = True
        return info.id, base, l._state_bytes(compact=True)

    # Checkpoints ---------------------------------------------------------

    def _own_state(self):
        """This process's loader position: (state or None, finished)."""
        if self._loader is not None:
            return self._loader.state_dict(), False
        if self._final is not None:
            return json.loads(self._final), self._finished
        return self._start, False

    def state_dict(self):
        info = torch.utils.data.get_worker_info()
        if info is not None:  # torchdata's StatefulDataLoader, in a worker
            if not self._iterated and self._resume_worker is not None:
                s = self._resume_worker["state"]
            else:
                s, _ = self._own_state()
            kw = self._shard_kw(info.num_workers, info.id)
            return {"pagefeed_worker": 1, "epoch": self._epoch, "rank": kw["rank"], "world": kw["world"], "state": s}
        if self._tracker is not None:
            return self._tracker.state_dict()
        if self._forked or (self._resume is None and not self._iterated):
            raise StateError(
                "pagefeed: this dataset is read by other processes (DataLoader workers), so its position is not "
                "known here. With num_workers > 0, iterate it through pagefeed.torch.DataLoader (a drop-in for "
                "torch.utils.data.DataLoader) or torchdata's StatefulDataLoader to checkpoint; with "
                "num_workers=0 any DataLoader works")
        if self._resume is not None:
            return self._resume
        s, finished = self._own_state()
        _, rank, world = self._base()
        return {"pagefeed_dataset": 1, "epoch": self._epoch, "rank": rank, "world": world, "num_workers": 0,
                "loaders": [s], "finished": finished}

    def load_state_dict(self, state):
        """The next iteration resumes after state (see the module doc)."""
        if not isinstance(state, dict):
            raise StateError("pagefeed: load_state_dict(%r): want a dict that state_dict() returned" % (state,))
        if "pagefeed_worker" in state:
            if torch.utils.data.get_worker_info() is None:
                raise StateError("pagefeed: a DataLoader worker's state (torchdata's protocol) loaded outside a "
                                 "worker: load the dataset's or the DataLoader's state_dict() instead")
            _fields(state, "epoch", "state")
            self._resume_worker = state["state"]
            self._epoch = check_int("state epoch", state["epoch"], 0, _EPOCH_MAX)
            return
        if "pagefeed_dataset" not in state:
            if "version" in state and "dataset" in state:  # one loader's state (Loader.state_dict())
                _fields(state, "epoch", "rank", "world")
                state = {"pagefeed_dataset": 1, "epoch": state["epoch"], "rank": state["rank"],
                         "world": state["world"], "num_workers": 0, "loaders": [state], "finished": False}
            else:
                raise StateError("pagefeed: load_state_dict: not a state of this dataset (keys %s)" % sorted(state))
        _fields(state, "epoch", "rank", "world", "num_workers", "loaders")
        loaders = state["loaders"]
        if not isinstance(loaders, list) or len(loaders) != max(state["num_workers"], 1) or \
                any(s is not None and not isinstance(s, dict) for s in loaders):
            raise StateError("pagefeed: load_state_dict: loaders must list one state (or None) per worker shard")
        self._epoch = check_int("state epoch", state["epoch"], 0, _EPOCH_MAX)
        self._resume = state
        self._forked = False
        self._tracker = None
        self._lens = {}

    # len -----------------------------------------------------------------

    def __len__(self):
        n = self._num_workers
        key = (self._epoch, n, json.dumps(self._resume, sort_keys=True) if self._resume is not None else None)
        if key not in self._lens:
            self._lens = {key: sum(_in_child(_shard_lens, self, n))}
        return self._lens[key]


def _fields(state, *names):
    for k in names:
        if k not in state:
            raise StateError("pagefeed: load_state_dict: the state has no %r" % k)


def _resolve(ds, n):
    """ds's pending state for n workers (0: none): the same when it was
    taken with as many, else (world 1) its shards resharded to n. Loads the
    library when it reshards."""
    r = ds._resume
    k, kr = max(n, 1), max(r["num_workers"], 1)
    _, rank, world = ds._base()
    if (r["rank"], r["world"]) != (rank, world):
        raise StateError("pagefeed: the state is rank %s of world %s, this dataset reads rank %d of %d: "
                         "reshard every rank's state with pagefeed.reshard first"
                         % (r["rank"], r["world"], rank, world))
    if kr == k:
        return r
    if world != 1:
        raise StateError("pagefeed: the state was taken with %d DataLoader workers per rank, this DataLoader has %d: "
                         "resume with num_workers=%d (or gather every rank's worker states and reshard them)"
                         % (r["num_workers"], n, r["num_workers"]))
    states = []
    for i, s in enumerate(r["loaders"]):
        if s is None:  # the shard from its start: its state at the start
            kw = dict(ds._shard_kw(kr if kr > 1 else 0, i))
            with Loader(ds._paths, **kw) as l:
                s = l.state_dict()
        states.append(s)
    out = reshard(states, k)
    return dict(r, num_workers=n, loaders=out)


def _shard_lens(ds, n):
    """The steps of each of this rank's n worker shards (one without
    workers) in the epoch the next iteration reads."""
    states = _resolve(ds, n)["loaders"] if ds._resume is not None else [None] * max(n, 1)
    out = []
    for w, s in enumerate(states):
        kw = ds._shard_kw(n, w)
        with (Loader(ds._paths, resume=s, **kw) if s is not None else Loader(ds._paths, **kw)) as l:
            out.append(len(l))
    return out


def _in_child(fn, *args):
    """fn(*args), run in a forked child unless this process has loaded the
    library (the Go runtime must not start in a process that forks
    DataLoader workers later); the result or exception comes back pickled.
    The wait runs signal handlers (Ctrl-C ends it, and the child)."""
    if _lib.loaded_here() or os.environ.get("PAGEFEED_LEN_INPROC"):
        return fn(*args)
    r, w = os.pipe()
    _own_fork[0] = True
    try:
        pid = os.fork()
    finally:
        _own_fork[0] = False
    if pid == 0:  # pragma: no cover (the child)
        code = 0
        try:
            os.close(r)
            try:
                out = pickle.dumps((True, fn(*args)))
            except BaseException as e:
                code = 1
                try:
                    out = pickle.dumps((False, e))
                except Exception:
                    out = pickle.dumps((False, RuntimeError(repr(e))))
            view = memoryview(out)
            while view:
                view = view[os.write(w, view):]
        finally:
            os._exit(code)
    os.close(w)
    data = []
    try:
        while True:
            ready, _, _ = select.select([r], [], [], 0.1)  # a bounded wait: signal handlers run between
            if ready:
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    break
                data.append(chunk)
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    try:
        ok, v = pickle.loads(b"".join(data))
    except Exception:
        raise RuntimeError("pagefeed: the child process that asked the library ended without an answer") from None
    if not ok:
        raise v
    return v


# DataLoader ---------------------------------------------------------------


class _Tagged:
    """A worker's item and its loader's position after it, on the way to
    the main process (pin_memory pins the item)."""

    __slots__ = ("data", "tag")

    def __init__(self, data, tag):
        self.data, self.tag = data, tag

    def pin_memory(self):
        from torch.utils.data._utils.pin_memory import pin_memory
        return _Tagged(pin_memory(self.data), self.tag)


class _Collate:
    """The DataLoader's collate_fn, which in a worker also attaches the
    worker's position after the items it collated."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, data):
        out = self.fn(data)
        info = torch.utils.data.get_worker_info()
        if info is None or not isinstance(info.dataset, PagefeedDataset):
            return out
        tag = info.dataset._tag(info)
        return out if tag is None else _Tagged(out, tag)


class _Tracker:
    """The main process's view of each worker's position: the state after
    the last batch of that worker handed to the user."""

    def __init__(self, ds, n, start):
        _, self.rank, self.world = ds._base()
        self.epoch, self.n = ds._epoch, n
        self.start = start  # each worker's state at the iteration's start (None: the epoch's)
        self.base = [None] * n
        self.last = [None] * n
        self.finished = False

    def state_dict(self):
        loaders = [self.start[w] if self.last[w] is None else _merge(self.base[w], self.last[w])
                   for w in range(self.n)]
        return {"pagefeed_dataset": 1, "epoch": self.epoch, "rank": self.rank, "world": self.world,
                "num_workers": self.n, "loaders": loaders, "finished": self.finished}


class _TrackingIter:
    """The DataLoader's iterator, stripping the workers' positions off their
    items into the tracker as it hands each item out."""

    def __init__(self, it, tracker):
        self._it, self._t = it, tracker

    def __iter__(self):
        return self

    def __next__(self):
        try:
            x = next(self._it)
        except StopIteration:
            self._t.finished = True
            raise
        if type(x) is _Tagged:
            # Subscript stores and the return: no signal handler runs in
            # between, so the tracker counts exactly what the caller gets.
            w, base, compact = x.tag
            if base is not None:
                self._t.base[w] = base
            self._t.last[w] = compact
            return x.data
        return x

    def __len__(self):
        return len(self._it)

    def __getattr__(self, name):
        return getattr(self._it, name)


try:
    from torch.utils.data.dataloader import _SingleProcessDataLoaderIter
except ImportError:  # another torch: DataLoader keeps torch's own iterator
    _SingleProcessDataLoaderIter = None

_profiling = getattr(torch.autograd, "_profiler_enabled", None)
_default_convert = getattr(torch.utils.data._utils.collate, "default_convert", None)
_pin = getattr(torch.utils.data._utils.pin_memory, "pin_memory", None)
_ITER_ATTRS = ("_num_yielded", "_IterableDataset_len_called", "_dataset", "_pin_memory", "_pin_memory_device",
               "_collate_fn", "_auto_collation")
_SingleIter = None
if _SingleProcessDataLoaderIter is not None and None not in (_profiling, _default_convert, _pin):
    class _SingleIter(_SingleProcessDataLoaderIter):
        """torch's iterator without worker processes, less the per-item
        work a PagefeedDataset's items do not need while no torch profiler
        records: the profiler label (record_function) opened and closed
        around every item, two operator calls through torch's dispatcher,
        more work than the rest of the item's path in Python; the
        sampler's index (None for every item of an iterable dataset
        without batching); and default_convert, which copies the item's
        dict of tensors into a new dict of the same tensors. A collate_fn
        of the caller's still runs, and pin_memory still pins. While a
        profiler records, with batching (batch_size set), or on a torch
        whose iterator lacks what this reads, it is torch's own __next__."""

        def __init__(self, loader):
            super().__init__(loader)
            self._items = getattr(getattr(self, "_dataset_fetcher", None), "dataset_iter", None)
            self._lean = (self._items is not None and all(hasattr(self, a) for a in _ITER_ATTRS)
                          and self._auto_collation is False)
            fn = getattr(self, "_collate_fn", None)
            self._convert = None if fn is _default_convert else fn

        def __next__(self):
            if not self._lean or _profiling():
                return super().__next__()
            # The fetcher's own iterator of the dataset, taken by a for
            # loop, which stores the item with no signal handler in
            # between (a call's return may run one, and an exception there
            # would lose the item the dataset counts as delivered); from
            # here to the caller's loop variable nothing else runs either,
            # unless a collate_fn or pin_memory does.
            for data in self._items:
                break
            else:
                raise StopIteration
            if self._convert is not None:
                data = self._convert(data)
            if self._pin_memory:
                data = _pin(data, self._pin_memory_device)
            self._num_yielded += 1
            n = self._IterableDataset_len_called
            if n is not None and self._num_yielded > n:
                warnings.warn("Length of IterableDataset %s was reported to be %d (when accessing len(dataloader)), "
                              "but %d samples have been fetched. " % (self._dataset, n, self._num_yielded))
            return data


class DataLoader(torch.utils.data.DataLoader):
    """torch.utils.data.DataLoader, and for a PagefeedDataset with worker
    processes it tracks each worker's position as of the last batch handed
    to the user, so that ds.state_dict() (or this DataLoader's
    state_dict()) checkpoints exactly (see the module doc). Without worker
    processes its iterator leaves out torch's per-item profiler label while
    no torch profiler records (while one does, it is torch's). Takes the
    same arguments; with another dataset it is a plain DataLoader."""

    def __init__(self, dataset, *args, **kwargs):
        super().__init__(dataset, *args, **kwargs)
        if isinstance(dataset, PagefeedDataset):
            dataset._num_workers = self.num_workers
            dataset._lens = {}
            if self.num_workers > 0:
                self.collate_fn = _Collate(self.collate_fn)
        self._worker_epoch = None

    def __iter__(self):
        ds = self.dataset
        if not isinstance(ds, PagefeedDataset):
            return super().__iter__()
        ds._num_workers = n = self.num_workers
        if n == 0:
            ds._tracker = None
            return super().__iter__()
        if self.persistent_workers and getattr(self, "_iterator", None) is not None:
            if ds._resume is not None or ds._epoch != self._worker_epoch:
                raise ConfigError("pagefeed: persistent_workers=True: the running workers keep the dataset as "
                                  "they got it (epoch %s); set_epoch or load_state_dict after they started do not "
                                  "reach them. Use persistent_workers=False" % self._worker_epoch)
        if ds._resume is not None:
            ds._resume = _in_child(_resolve, ds, n)  # resharded before the workers get it
            start = ds._resume["loaders"]
        else:
            start = [None] * n
        tracker = _Tracker(ds, n, start)
        it = super().__iter__()  # the workers start, with the pending state
        self._worker_epoch = ds._epoch
        ds._resume = None  # theirs now
        ds._tracker = tracker
        return _TrackingIter(it, tracker)

    def _get_iterator(self):
        # torch's DataLoader.__iter__ takes its iterator from here.
        if self.num_workers == 0 and isinstance(self.dataset, PagefeedDataset) and _SingleIter is not None:
            return _SingleIter(self)
        return super()._get_iterator()

    def state_dict(self):
        """The dataset's state_dict()."""
        return self.dataset.state_dict()

    def load_state_dict(self, state):
        """The dataset's load_state_dict()."""
        self.dataset.load_state_dict(state)
