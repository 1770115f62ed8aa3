"""Checkpoints and len() through DataLoader, with and without worker
processes: a checkpoint at a random step, resumed in a new process, gives
every row of the epoch once across it and the same steps per rank, and
len() is the steps the epoch takes."""

import json
import os
import random
import subprocess
import sys

import pytest

import pagefeed
from conftest import HERE, PYDIR, ROWS, run_py


def run(tmp_path, name, **a):
    a["out"] = str(tmp_path / (name + ".json"))
    env = dict(os.environ, PYTHONPATH=PYDIR)
    r = subprocess.run([sys.executable, os.path.join(HERE, "ckpt_worker.py"), json.dumps(a)],
                       capture_output=True, text=True, timeout=180, env=env)
    assert r.returncode == 0, r.stderr[-4000:]
    with open(a["out"]) as f:
        return json.load(f)


KW = dict(columns=["id"], batch_rows=64, seed=5)


@pytest.mark.parametrize("world,workers,kw", [
    (1, 2, {}), (1, 3, dict(shuffle="row", batch_pages=32)), (2, 2, {}), (3, 2, dict(fetch="ordered")),
    (1, 2, dict(shuffle="stream", buffer_rows=500)), (2, 0, {}),
])
def test_checkpoint_with_workers(corpus, tmp_path, world, workers, kw):
    """Per rank: an uninterrupted epoch; then the same epoch cut at a
    random step, checkpointed, and resumed in a new process. The rows
    before and after the checkpoint are the uninterrupted epoch's, each
    once; the steps before and after add up to the uninterrupted run's,
    which len() said before the first batch (and len() of the resumed
    dataset says again)."""
    kw = dict(KW, **kw)
    rnd = random.Random("%d %d %s" % (world, workers, kw))
    for rank in range(world):
        a = dict(paths=corpus, kw=dict(kw, rank=rank, world=world), workers=workers)
        full = run(tmp_path, "full%d" % rank, steps=-1, **a)
        assert full["steps"] == full["len"] > 1, full["steps"]
        assert len(full["ids"]) == len(set(full["ids"]))
        if world == 1:
            assert sorted(full["ids"]) == list(range(ROWS))
        k = rnd.randrange(1, full["steps"])
        head = run(tmp_path, "head%d" % rank, steps=k, **a)
        assert head["steps"] == k and head["error"] is None
        tail = run(tmp_path, "tail%d" % rank, steps=-1, state=head["state"], **a)
        assert sorted(head["ids"] + tail["ids"]) == sorted(full["ids"]), "rows lost or repeated across the checkpoint"
        assert head["steps"] + tail["steps"] == full["steps"]
        assert tail["len"] == full["steps"]  # a resumed epoch counts whole


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="pin_memory needs CUDA")
def test_checkpoint_with_workers_and_pin_memory(corpus, tmp_path):
    """pin_memory=True: the pinning thread passes the workers' positions
    through; the tensors are pinned, and the checkpoint resumes exactly."""
    a = dict(paths=corpus, kw=KW, workers=2, pin=True)
    head = run(tmp_path, "head", steps=11, **a)
    tail = run(tmp_path, "tail", steps=-1, state=head["state"], **a)
    assert head["pinned"] and tail["pinned"]
    assert sorted(head["ids"] + tail["ids"]) == list(range(ROWS))


def test_resume_with_other_workers(corpus, tmp_path):
    """World 1: a checkpoint taken with 2 workers resumes with 3 or none
    (its shards resharded), every row once."""
    a = dict(paths=corpus, kw=KW)
    head = run(tmp_path, "head", workers=2, steps=9, **a)
    for workers in (3, 0, 1):
        tail = run(tmp_path, "tail%d" % workers, workers=workers, steps=-1, state=head["state"], **a)
        assert sorted(head["ids"] + tail["ids"]) == list(range(ROWS)), workers


def test_len_after_reshard_of_worker_shards(corpus, tmp_path):
    a = dict(paths=corpus, kw=KW)
    head = run(tmp_path, "head", workers=2, steps=9, **a)
    for workers in (3, 0):
        tail = run(tmp_path, "tail%d" % workers, workers=workers, steps=-1, state=head["state"], **a)
        assert tail["len"] == tail["steps"], workers  # resharded: the remainder's steps


def test_plain_dataloader_with_workers_says_what_to_use(corpus, tmp_path):
    r = run(tmp_path, "plain", paths=corpus, kw=KW, workers=2, steps=3, loader="torch")
    assert r["state"] is None and "pagefeed.torch.DataLoader" in r["error"], r["error"]
    # without workers a plain DataLoader checkpoints
    r = run(tmp_path, "plain0", paths=corpus, kw=KW, workers=0, steps=3, loader="torch")
    assert r["error"] is None and r["state"]["loaders"][0]["epoch"] == 0


def test_state_at_epoch_end_then_next_epoch(corpus, tmp_path):
    """A checkpoint after the whole epoch (workers), then set_epoch(1): the
    next epoch starts fresh, with its own len."""
    a = dict(paths=corpus, kw=dict(KW, world=4, rank=1), workers=2)
    e0 = run(tmp_path, "e0", steps=-1, **a)
    assert e0["state"]["finished"]
    e1 = run(tmp_path, "e1", steps=-1, state=e0["state"], epoch=1, **a)
    fresh = run(tmp_path, "fresh1", steps=-1, epoch=1, **a)
    assert e1["steps"] == e1["len"] == fresh["steps"] == fresh["len"]
    assert sorted(e1["ids"]) == sorted(fresh["ids"])
    # the finished state resumed in its own epoch delivers nothing more
    again = run(tmp_path, "again", steps=-1, state=e0["state"], **a)
    assert again["steps"] == 0 and again["ids"] == []


LEN_EPOCHS = """
import json, sys, torch.utils.data
import pagefeed.torch
paths, rank, world, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ds = pagefeed.torch.PagefeedDataset(paths, columns=["input_ids"], batch_rows=50, seed=1, rank=rank, world=world)
dl = pagefeed.torch.DataLoader(ds, batch_size=None, num_workers=workers)
out = []
for epoch in range(3):
    ds.set_epoch(epoch)
    n = len(ds)
    steps = sum(1 for _ in dl)
    out.append((n, len(dl), steps))
print(json.dumps(out))
"""


@pytest.mark.parametrize("world,workers", [(4, 0), (4, 2), (3, 0), (1, 2)])
def test_len_follows_set_epoch(corpus, world, workers):
    """len(ds) and len(dl) are the steps of the epoch set_epoch chose, for
    every epoch, with workers too."""
    for rank in sorted({0, world - 1}):
        r = run_py(LEN_EPOCHS, corpus, str(rank), str(world), str(workers), timeout=300)
        assert r.returncode == 0, r.stderr[-4000:]
        for epoch, (n, ndl, steps) in enumerate(json.loads(r.stdout)):
            assert n == ndl == steps, "world %d rank %d workers %d epoch %d: len %d, steps %d" % (
                world, rank, workers, epoch, n, steps)


def test_loader_len_follows_its_epochs(corpus):
    """Loader's len() is the steps of the epoch it is reading, and
    epoch_len(e) the steps of any epoch, before it starts."""
    with pagefeed.Loader(corpus, columns=["input_ids"], batch_rows=50, seed=1, rank=1, world=4, epochs=3) as l:
        want = [l.epoch_len(e) for e in range(3)]
        assert len(l) == want[0]
        steps, lens = [0, 0, 0], [set(), set(), set()]
        for b in l:
            steps[b.epoch] += 1
            lens[b.epoch].add(len(l))
            b.release()
    assert steps == want and lens == [{n} for n in want], (steps, want, lens)


def heads_of_world4(corpus, kw):
    """Every rank of world 4 read for a few steps: their states; and each
    resumed loader's len() (the epoch counted whole) against its steps."""
    heads = []
    for rank in range(4):
        with pagefeed.Loader(corpus, rank=rank, world=4, **kw) as l:
            for _ in range(3 + rank):
                l.next().release()
            heads.append(l.state_dict())
            total = len(l)
        with pagefeed.Loader(corpus, rank=rank, world=4, resume=heads[-1], **kw) as l:
            assert len(l) == total == 3 + rank + sum(1 for b in l if not b.release())
    return heads


def test_len_after_resume(corpus):
    heads_of_world4(corpus, dict(columns=["input_ids"], batch_rows=50, seed=2))


def test_len_after_reshard(corpus):
    """A resharded loader's len() is the steps its remainder takes, on
    every new rank."""
    kw = dict(columns=["input_ids"], batch_rows=50, seed=2)
    heads = heads_of_world4(corpus, kw)
    for r, st in enumerate(pagefeed.reshard(heads, 2)):
        with pagefeed.Loader(corpus, rank=r, world=2, resume=st, **kw) as l:
            n = len(l)
            assert n == sum(1 for b in l if not b.release())


# torchdata's StatefulDataLoader, as its worker loop calls the dataset
# (torchdata/stateful_dataloader/worker.py): in each worker, state_dict()
# once the fetcher made iter(dataset) (the initial state) and after each
# item fetched; on resume, load_state_dict(state) before iter(dataset).
# Emulated here worker by worker in one process, the worker's info set as
# torch sets it.
TORCHDATA = """
import json, sys
from torch.utils.data._utils import worker as W
from pagefeed.torch import PagefeedDataset
paths, n, steps, states = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
out = []
for w in range(n):
    ds = PagefeedDataset(paths, columns=["id"], batch_rows=64, seed=5)
    W._worker_info = W.WorkerInfo(id=w, num_workers=n, seed=0, dataset=ds)
    if states is not None:
        ds.load_state_dict(states[w])
    it = iter(ds)
    snap = ds.state_dict()
    ids = []
    k = 0
    while k != steps[w]:
        try:
            item = next(it)
        except StopIteration:
            break
        ids.extend(item["id"].tolist())
        snap = ds.state_dict()
        k += 1
    json.dumps(snap)  # what torchdata keeps must be JSON-able
    out.append({"ids": ids, "state": snap, "steps": k})
print(json.dumps(out))
"""


def test_torchdata_protocol(corpus):
    n = 2
    r = run_py(TORCHDATA, corpus, str(n), json.dumps([-1, -1]), "null")
    assert r.returncode == 0, r.stderr[-4000:]
    full = json.loads(r.stdout)
    assert sorted(sum((f["ids"] for f in full), [])) == list(range(ROWS))
    rnd = random.Random(3)
    cut = [rnd.randrange(0, f["steps"]) for f in full]  # 0: a worker that gave nothing yet
    cut[1] = max(cut[1], 1)
    r = run_py(TORCHDATA, corpus, str(n), json.dumps(cut), "null")
    assert r.returncode == 0, r.stderr[-4000:]
    head = json.loads(r.stdout)
    assert [h["steps"] for h in head] == cut
    r = run_py(TORCHDATA, corpus, str(n), json.dumps([-1, -1]), json.dumps([h["state"] for h in head]))
    assert r.returncode == 0, r.stderr[-4000:]
    tail = json.loads(r.stdout)
    for w in range(n):
        assert sorted(head[w]["ids"] + tail[w]["ids"]) == sorted(full[w]["ids"]), w
        assert head[w]["steps"] + tail[w]["steps"] == full[w]["steps"]


PERSISTENT = """
import sys
import pagefeed.torch
ds = pagefeed.torch.PagefeedDataset(sys.argv[1], columns=["id"], batch_rows=500, seed=5)
dl = pagefeed.torch.DataLoader(ds, batch_size=None, num_workers=1, persistent_workers=True)
first = sum(1 for _ in dl)
again = sum(1 for _ in dl)  # the same epoch: the workers' copy is still right
ds.set_epoch(1)
try:
    iter(dl)
    print("no error")
except pagefeed.ConfigError as e:
    print(first == again > 0, "persistent_workers=False" in str(e))
"""


def test_persistent_workers_do_not_miss_set_epoch(corpus):
    """Running workers keep their copy of the dataset: set_epoch after they
    started is an error, not an epoch silently read again."""
    r = run_py(PERSISTENT, corpus, timeout=180)
    assert r.returncode == 0, r.stderr[-4000:]
    assert r.stdout.split() == ["True", "True"], r.stdout
