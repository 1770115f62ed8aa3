"""One process of a checkpoint test: reads up to `steps` items (all when
-1) of PagefeedDataset through a DataLoader with `workers` worker
processes, optionally after load_state_dict(state); writes the ids it got,
its steps, len(ds) before the first item and ds.state_dict() after the
last item taken.

usage: ckpt_worker.py JSON  (keys: paths, kw, workers, steps, state, loader
("pagefeed": pagefeed.torch.DataLoader, "torch": the plain one), epoch,
pin (pin_memory), out)
"""

import json
import sys

import torch.utils.data

import pagefeed.torch
from pagefeed import _lib

a = json.loads(sys.argv[1])
ds = pagefeed.torch.PagefeedDataset(a["paths"], **a["kw"])
if a.get("state") is not None:
    ds.load_state_dict(a["state"])
if a.get("epoch") is not None:
    ds.set_epoch(a["epoch"])
cls = pagefeed.torch.DataLoader if a.get("loader", "pagefeed") == "pagefeed" else torch.utils.data.DataLoader
dl = cls(ds, batch_size=None, num_workers=a["workers"], pin_memory=a.get("pin", False))
n = len(ds)  # before the workers fork: a child process answers it
assert a["workers"] == 0 or not _lib.loaded_here()
ids, steps, state, err, pinned = [], 0, None, None, True
it = iter(dl)
while a["steps"] < 0 or steps < a["steps"]:
    try:
        item = next(it)
    except StopIteration:
        break
    ids.extend(item["id"].tolist())
    pinned = pinned and item["id"].is_pinned()
    steps += 1
try:
    state = ds.state_dict()
except pagefeed.StateError as e:
    err = str(e)
with open(a["out"], "w") as f:
    json.dump({"ids": ids, "steps": steps, "len": n, "state": state, "error": err, "pinned": pinned}, f)
