"""Reads `steps` batches (all when -1) of one rank in a fresh process,
optionally resuming from a state; writes the ids it read and its state.

usage: resume_worker.py JSON  (keys: paths, kw, rank, world, steps, state, out)
"""

import json
import sys

import pagefeed

a = json.loads(sys.argv[1])
ids = []
with pagefeed.Loader(a["paths"], rank=a["rank"], world=a["world"], **a["kw"]) as l:
    if a.get("state") is not None:
        l.load_state_dict(a["state"])
    n = 0
    while a["steps"] < 0 or n < a["steps"]:
        b = l.next()
        if b is None:
            break
        ids.extend(b.columns["id"].tolist())
        b.release()
        n += 1
    state = l.state_dict()
with open(a["out"], "w") as f:
    json.dump({"ids": ids, "state": state, "steps": n}, f)
