"""One rank of the torchrun tests: reads its shard through
DataLoader(PagefeedDataset) with a collective every step (as a training
step's all-reduce: unequal steps would hang there), all-gathers row ids,
step counts and len(ds), and rank 0 writes them to OUT/result.json.

usage: dist_worker.py PATHS OUT MODE
  MODE "default": num_workers=0, the default (equal steps), then
        keep_uneven (every row);
  MODE "workers": pagefeed.torch.DataLoader with num_workers=2, the default.
  MODE "mix": PATHS is "A,B": a mixture of the two at 0.7/0.3, through
        DataLoader(PagefeedDataset) with a collective every step, then
        through a Loader whose stats() after every batch give each
        source's rows so far (the worst distance from its share).
"""

import json
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import pagefeed.torch
from pagefeed.torch import PagefeedDataset

paths, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
dist.init_process_group("gloo", timeout=timedelta(seconds=60))


def epoch(step_collective, workers=0, columns=("id",), **kw):
    ds = PagefeedDataset(paths, columns=columns, batch_rows=50, seed=11, **kw)
    dl = pagefeed.torch.DataLoader(ds, batch_size=None, num_workers=workers)
    n = len(ds)  # before the workers fork (a child process answers it)
    ids, steps = [], 0
    for item in dl:
        ids.extend(item["id"].tolist())
        steps += 1
        if step_collective:
            dist.barrier()
    return {"rank": dist.get_rank(), "ids": ids, "steps": steps, "len": n}


def mixture():
    a, b = paths.split(",")
    srcs = [{"paths": [a], "weight": 0.7, "name": "a"}, {"paths": [b], "weight": 0.3, "name": "b"}]
    ds = PagefeedDataset(sources=srcs, columns=("id",), batch_rows=50, seed=11)
    dl = pagefeed.torch.DataLoader(ds, batch_size=None, num_workers=0)
    n, steps = len(ds), 0
    for _ in dl:
        steps += 1
        dist.barrier()
    worst, lsteps = 0.0, 0
    with pagefeed.Loader(sources=srcs, columns=["id"], batch_rows=50, seed=11) as l:
        for bt in l:
            bt.release()
            lsteps += 1
            s = l.stats()["Sources"]
            tot = s[0]["Rows"] + s[1]["Rows"]
            worst = max(worst, abs(s[0]["Rows"] - 0.7 * tot), abs(s[1]["Rows"] - 0.3 * tot))
        rows = [x["Rows"] for x in l.stats()["Sources"]]
    return {"rank": dist.get_rank(), "steps": steps, "len": n, "lsteps": lsteps, "worst": worst, "rows": rows}


if mode == "workers":
    res = {"workers": epoch(True, workers=2)}
elif mode == "mix":
    res = {"mix": mixture()}
else:
    res = {"even": epoch(True), "all": epoch(False, keep_uneven=True)}
gathered = [None] * dist.get_world_size()
dist.all_gather_object(gathered, res)
if dist.get_rank() == 0:
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(gathered, f)
dist.barrier()
dist.destroy_process_group()
