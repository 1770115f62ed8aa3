"""One rank of the torchrun test: reads its shard through
DataLoader(PagefeedDataset) twice (the default, which evens out steps
over the ranks, with a collective every step; then keep_uneven, every
row), all-gathers row ids and step counts over gloo, and rank 0 writes
them to OUT/result.json."""

import json
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

from pagefeed.torch import PagefeedDataset

paths, out = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo", timeout=timedelta(seconds=60))


def epoch(step_collective, **kw):
    ds = PagefeedDataset(paths, columns=["id"], batch_rows=50, seed=11, **kw)
    ids, steps = [], 0
    for item in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0):
        ids.extend(item["id"].tolist())
        steps += 1
        if step_collective:
            dist.barrier()  # as a training step's all-reduce: unequal steps would hang here
    return {"rank": dist.get_rank(), "ids": ids, "steps": steps, "len": len(ds)}


res = {"even": epoch(True), "all": epoch(False, keep_uneven=True)}
gathered = [None] * dist.get_world_size()
dist.all_gather_object(gathered, res)
if dist.get_rank() == 0:
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(gathered, f)
dist.barrier()
dist.destroy_process_group()
