"""pagefeed.torch: a torch IterableDataset over pagefeed.Loader.

    ds = PagefeedDataset(["data/"], columns=["input_ids"], output="tokens", seq_len=2048)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, pin_memory=True)

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
len(ds) is the batches per epoch of this rank read by one loader.
The library is loaded only by the process that iterates: do not iterate
the dataset in the parent before the workers start. len(ds) in a process
that has not loaded the library asks a short-lived forked child, so it is
safe before DataLoader forks.

Lifetime: a tensor keeps its batch's memory, which blocks the loader when
too many are kept; pin_memory=True (a copy) and worker processes (tensors
travel through shared memory, a copy) release it at once. Tensors are
writable views of the batch (torch has no read-only tensors): writing to
one changes only that batch.
"""

import os
import struct

import numpy as np
import torch
import torch.utils.data

from . import Loader, _lib
from .errors import StateError
from ._arrays import ListArray, StringArray


def _rank_world():
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def _tensors(batch):
    out = {}
    t = batch._tokens(False)
    if t is not None:
        out["tokens"] = torch.from_numpy(t)
        for name, a in batch._extras(False).items():
            out[name] = torch.from_numpy(a)
        return out
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


class PagefeedDataset(torch.utils.data.IterableDataset):
    """Takes the arguments of pagefeed.Loader (rank and world default to
    the job's, see the module doc) and yields dicts of tensors.

    state_dict()/load_state_dict() checkpoint the loader of this process
    (num_workers=0): with worker processes each worker's loader lives in
    its worker, and state_dict() raises StateError.
    """

    def __init__(self, paths, **kwargs):
        super().__init__()
        self._paths = paths
        self._kw = kwargs
        self._epoch = kwargs.pop("epoch", 0)
        self._state = None
        self._loader = None
        self._len = None

    def _config(self):
        kw = dict(self._kw)
        rank, world = kw.pop("rank", None), kw.pop("world", None)
        if world is None:
            rank, world = _rank_world()
        info = torch.utils.data.get_worker_info()
        if info is not None and info.num_workers > 1:
            if world == 1 and not any(kw.get(k) for k in ("drop_last", "pad_last", "keep_uneven")):
                # One rank: the workers' shards need not take equal steps
                # (DataLoader interleaves them), so deliver every row.
                kw["keep_uneven"] = True
            rank, world = rank * info.num_workers + info.id, world * info.num_workers
        kw["rank"], kw["world"] = rank or 0, world
        if self._epoch:
            kw["epoch"] = self._epoch
        return kw

    def set_epoch(self, epoch):
        """Makes the next iteration start at this epoch (a new order)."""
        self._epoch = int(epoch)

    def __iter__(self):
        if self._loader is not None:
            self._loader.close()
            self._loader = None
        loader = Loader(self._paths, **self._config())
        if self._state is not None:
            loader.load_state_dict(self._state)
            self._state = None
        if torch.utils.data.get_worker_info() is None:
            self._loader = loader  # for state_dict in this process
        try:
            while True:
                b = loader.next()
                if b is None:
                    return
                t = _tensors(b)
                del b  # the tensors keep the batch alive, and only they
                yield t
        finally:
            if self._loader is not loader:
                loader.close()

    def state_dict(self):
        if torch.utils.data.get_worker_info() is not None:
            raise StateError("pagefeed: state_dict() inside a DataLoader worker; checkpoint with num_workers=0")
        if self._loader is None:
            if self._state is not None:
                return self._state
            raise StateError("pagefeed: no loader yet: iterate the dataset in this process (num_workers=0) first")
        return self._loader.state_dict()

    def load_state_dict(self, state):
        """The next iteration resumes after state."""
        self._state = state

    def __len__(self):
        if self._len is None:
            if _lib.loaded_here() or os.environ.get("PAGEFEED_LEN_INPROC"):
                with Loader(self._paths, **self._config()) as l:
                    self._len = len(l)
            else:
                self._len = self._len_forked()
        return self._len

    def _len_forked(self):
        # The Go runtime must not start in a parent that DataLoader forks
        # later: ask a child that exits.
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(r)
                with Loader(self._paths, **self._config()) as l:
                    n = len(l)
                os.write(w, struct.pack("<q", n))
            except BaseException as e:
                os.write(w, struct.pack("<q", -1) + repr(e).encode()[:4000])
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        data = b""
        while True:
            chunk = os.read(r, 8192)
            if not chunk:
                break
            data += chunk
        os.close(r)
        os.waitpid(pid, 0)
        n = struct.unpack("<q", data[:8])[0] if len(data) >= 8 else -1
        if n < 0:
            raise RuntimeError("pagefeed: len() in a child process failed: %s" % data[8:].decode(errors="replace"))
        return n
