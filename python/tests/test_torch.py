import json
import os
import random
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
import torch.utils.data

import pagefeed
from pagefeed.torch import PagefeedDataset
from conftest import HERE, PYDIR, ROOT, ROWS, run_py


def collect(dl):
    ids, steps = [], 0
    for item in dl:
        ids.append(item["id"].numpy().copy())
        steps += 1
    return np.concatenate(ids), steps


DATALOADER = """
import sys, numpy as np, torch, torch.utils.data
from pagefeed import _lib
from pagefeed.torch import PagefeedDataset
ds = PagefeedDataset(sys.argv[1], columns=["id"], batch_rows=64, seed=5)
n = len(ds)  # before the fork: a child process answers it
assert not _lib.loaded_here()
dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=int(sys.argv[2]), pin_memory=True)
ids, steps = [], 0
for item in dl:
    ids.append(item["id"].numpy().copy())
    steps += 1
ids = np.concatenate(ids)
print(len(ids), len(np.unique(ids)), ids.min(), ids.max(), steps, n)
"""


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_every_row_once(corpus, workers):
    # A fresh process: DataLoader's workers fork it, so the library must
    # not be loaded there (other tests load it into this one).
    r = run_py(DATALOADER, corpus, str(workers), timeout=180)
    assert r.returncode == 0, r.stderr
    n, uniq, lo, hi, steps, ln = map(int, r.stdout.split())
    assert (n, uniq, lo, hi) == (ROWS, ROWS, 0, ROWS - 1)
    assert steps >= ROWS // 64 and ln > 0


def test_dataloader_after_parent_loaded_fails_clearly(corpus):
    pagefeed.version()  # the parent's Go runtime is running
    ds = PagefeedDataset(corpus, columns=["id"], batch_rows=64)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=1, multiprocessing_context="fork")
    with pytest.raises(Exception, match="does not survive fork"):
        next(iter(dl))


def test_dataloader_spawn_workers(corpus):
    ds = PagefeedDataset(corpus, columns=["id"], batch_rows=500)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="spawn")
    ids, _ = collect(dl)
    assert np.array_equal(np.sort(ids), np.arange(ROWS))


def test_list_column_tensors(corpus):
    ds = PagefeedDataset(corpus, columns=["input_ids"], batch_rows=8)
    item = next(iter(torch.utils.data.DataLoader(ds, batch_size=None)))
    vals, offs = item["input_ids"], item["input_ids_offsets"]
    assert vals.dtype == torch.int32 and offs.shape == (9,) and offs[0] == 0 and offs[-1] == len(vals)
    nt = torch.nested.nested_tensor([vals[offs[i]:offs[i + 1]] for i in range(8)])
    assert nt.size(0) == 8


def test_tensors_outlive_the_loop(corpus):
    ds = PagefeedDataset(corpus, columns=["input_ids"], output="tokens", seq_len=32, batch_rows=4)
    kept, copies = [], []
    for i, item in enumerate(torch.utils.data.DataLoader(ds, batch_size=None)):
        if i < 2:
            kept.append(item["tokens"])
            copies.append(item["tokens"].clone())
        if i == 200:  # well past the loader's buffers: they were reused meanwhile
            break
    del ds
    import gc
    gc.collect()
    for t, c in zip(kept, copies):
        assert torch.equal(t, c)
    assert kept[0].shape == (4, 32)


def test_tokens_extras_tensors(corpus):
    """The dataset's dict carries the extras asked for, as tensors over the
    same memory as the Loader's views, with the Loader's values."""
    kw = dict(columns=["input_ids"], output="tokens", seq_len=32, batch_rows=4, shuffle="none",
              deterministic=True, eos=60000, pad=60001, tokens_dtype=torch.int64)
    ds = PagefeedDataset(corpus, position_ids=True, loss_mask=True, cu_seqlens=True, rank=0, world=1, **kw)
    it = iter(ds)
    with pagefeed.Loader(corpus, position_ids=True, loss_mask=True, cu_seqlens=True, **kw) as l:
        for _ in range(50):
            item, b = next(it), next(l)
            assert set(item) == {"tokens", "position_ids", "loss_mask", "cu_seqlens"}
            assert item["tokens"].dtype == torch.int64 and item["position_ids"].dtype == torch.int32
            assert item["loss_mask"].dtype == torch.bool and item["cu_seqlens"].dtype == torch.int32
            for k in item:
                assert np.array_equal(item[k].numpy(), getattr(b, k)), k
            assert item["cu_seqlens"][-1] == 4 * 32 and item["position_ids"].shape == (4, 32)
            b.release()
    it.close()
    plain = next(iter(PagefeedDataset(corpus, rank=0, world=1, **dict(kw, tokens_dtype="int32"))))
    assert set(plain) == {"tokens"} and plain["tokens"].dtype == torch.int32


def test_smoke_training_loss_falls(corpus):
    torch.manual_seed(0)
    vocab = 1024
    model = torch.nn.Sequential(torch.nn.Embedding(vocab, 32), torch.nn.Linear(32, vocab))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    ds = PagefeedDataset(corpus, columns=["input_ids"], output="tokens", seq_len=64, batch_rows=8, epochs=100, seed=1)
    losses = []
    for step, item in enumerate(torch.utils.data.DataLoader(ds, batch_size=None)):
        x = item["tokens"].long() % vocab
        logits = model(x[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step == 49:
            break
    assert len(losses) == 50
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.3, losses  # ~7.1 -> ~6.5 here


def run_worker(tmp_path, name, **a):
    a["out"] = str(tmp_path / (name + ".json"))
    env = dict(os.environ, PYTHONPATH=PYDIR)
    r = subprocess.run([sys.executable, os.path.join(HERE, "resume_worker.py"), json.dumps(a)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    with open(a["out"]) as f:
        return json.load(f)


@pytest.mark.parametrize("kw", [dict(batch_rows=50), dict(batch_rows=50, fetch="ordered"), dict(batch_rows=50, deterministic=True),
                                dict(batch_rows=40, shuffle="stream", buffer_rows=300), dict(batch_pages=1, fetch="ordered")])
def test_resume_in_a_new_process(corpus, tmp_path, kw):
    kw = dict(kw, columns=["id"], seed=9)
    full = run_worker(tmp_path, "full", paths=corpus, kw=kw, rank=0, world=1, steps=-1)
    k = random.Random(str(kw)).randrange(1, full["steps"])
    head = run_worker(tmp_path, "head", paths=corpus, kw=kw, rank=0, world=1, steps=k)
    tail = run_worker(tmp_path, "tail", paths=corpus, kw=kw, rank=0, world=1, steps=-1, state=head["state"])
    assert head["ids"] + tail["ids"] and len(head["ids"]) + len(tail["ids"]) == ROWS
    assert sorted(head["ids"] + tail["ids"]) == list(range(ROWS))
    # the rows after the checkpoint are the uninterrupted run's
    assert sorted(tail["ids"]) == sorted(set(full["ids"]) - set(head["ids"]))
    if kw.get("fetch") == "ordered" or kw.get("deterministic"):
        # unordered fetch assembles rows in completion order, so only an
        # ordered or deterministic run repeats the uninterrupted run exactly
        assert head["ids"] == full["ids"][:len(head["ids"])]
        assert tail["ids"] == full["ids"][len(head["ids"]):]


def test_reshard_to_another_world(corpus, tmp_path):
    kw = dict(columns=["id"], batch_rows=50, seed=4, keep_uneven=True)
    heads = [run_worker(tmp_path, "h%d" % r, paths=corpus, kw=kw, rank=r, world=2, steps=3 + 4 * r) for r in range(2)]
    states = pagefeed.reshard([h["state"] for h in heads], 3)
    assert [s["rank"] for s in states] == [0, 1, 2] and all(s["world"] == 3 for s in states)
    tails = [run_worker(tmp_path, "t%d" % r, paths=corpus, kw=kw, rank=r, world=3, steps=-1, state=states[r])
             for r in range(3)]
    ids = sum((h["ids"] for h in heads), []) + sum((t["ids"] for t in tails), [])
    assert sorted(ids) == list(range(ROWS))
    with pytest.raises(pagefeed.StateError):
        pagefeed.reshard([heads[0]["state"]], 3)  # a rank missing


@pytest.mark.parametrize("worlds,seed", [((2, 3), 1), ((2, 3), 2), ((3, 2), 3), ((2, 1), 4), ((1, 2), 5)])
def test_reshard_drop_last_keeps_its_tail(corpus, tmp_path, worlds, seed):
    """With the default (drop_last for world > 1), the rows before the
    checkpoints and after the reshard are the original world's
    uninterrupted epoch (its dropped tail stays dropped), nothing repeats,
    and the new world's equal steps leave out less than a batch per rank."""
    old, new = worlds
    kw = dict(columns=["id"], batch_rows=50, seed=4)
    full = [run_worker(tmp_path, "f%d" % r, paths=corpus, kw=kw, rank=r, world=old, steps=-1) for r in range(old)]
    want = sorted(sum((f["ids"] for f in full), []))
    assert len(want) == len(set(want))
    rnd = random.Random(seed)
    heads = [run_worker(tmp_path, "h%d" % r, paths=corpus, kw=kw, rank=r, world=old, steps=rnd.randrange(full[r]["steps"] + 1))
             for r in range(old)]
    states = pagefeed.reshard([h["state"] for h in heads], new)
    tails = [run_worker(tmp_path, "t%d" % r, paths=corpus, kw=kw, rank=r, world=new, steps=-1, state=states[r])
             for r in range(new)]
    got = sorted(sum((h["ids"] for h in heads), []) + sum((t["ids"] for t in tails), []))
    assert len(got) == len(set(got)) and set(got) <= set(want)
    assert len(want) - len(got) < (new * 50 if new > 1 else 1)
    if new > 1:
        assert len({t["steps"] for t in tails}) == 1


def test_dataset_state_dict(corpus):
    ds = PagefeedDataset(corpus, columns=["id"], batch_rows=100, seed=2)
    it = iter(torch.utils.data.DataLoader(ds, batch_size=None))
    head = np.concatenate([next(it)["id"].numpy().copy() for _ in range(7)])
    st = ds.state_dict()
    del it
    ds2 = PagefeedDataset(corpus, columns=["id"], batch_rows=100, seed=2)
    ds2.load_state_dict(st)
    tail, _ = collect(torch.utils.data.DataLoader(ds2, batch_size=None))
    assert np.array_equal(np.sort(np.concatenate([head, tail])), np.arange(ROWS))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(corpus, out, mode):
    """Two launchers of two processes each on 127.0.0.1 (c10d rendezvous,
    gloo) running dist_worker.py: its gathered result."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=PYDIR, OMP_NUM_THREADS="1")
    procs = []
    for node in range(2):
        logs = out / ("logs%d" % node)
        # --redirects/--tee/--log_dir: Debian's torch 1.13 under Python 3.11
        # fails at its default --redirects 0 (IntFlag's zero member).
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc_per_node=2",
               "--rdzv_backend=c10d", "--rdzv_endpoint=127.0.0.1:%d" % port, "--rdzv_id=pagefeed-test",
               "--max_restarts=0", "--redirects", "2", "--tee", "2", "--log_dir", str(logs),
               os.path.join(HERE, "dist_worker.py"), corpus, str(out), mode]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, start_new_session=True))
    outs = []
    try:
        deadline = time.monotonic() + 240
        for p in procs:
            o, _ = p.communicate(timeout=max(1, deadline - time.monotonic()))
            outs.append(o)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, 9)  # the launcher and its workers
                p.wait()
    for p, o in zip(procs, outs):
        assert p.returncode == 0, o[-4000:]
    with open(out / "result.json") as f:
        return json.load(f)


def test_torchrun_two_nodes(corpus, tmp_path):
    """Every row once over the four ranks (keep_uneven); by default equal
    steps that len() said before the first batch."""
    res = torchrun(corpus, tmp_path, "default")
    even, every = [r["even"] for r in res], [r["all"] for r in res]
    assert sorted(r["rank"] for r in even) == [0, 1, 2, 3]
    # keep_uneven: every row once over the four ranks
    ids = sum((r["ids"] for r in every), [])
    assert len(ids) == len(set(ids)) == ROWS and sorted(ids) == list(range(ROWS))
    # the default: every rank the same number of full steps, as len() said
    # before the first batch, all of them full; nothing repeats
    assert len({r["steps"] for r in even}) == 1 and all(r["steps"] == r["len"] > 0 for r in even), even
    ids = sum((r["ids"] for r in even), [])
    assert len(ids) == len(set(ids)) == 4 * 50 * even[0]["steps"] and set(ids) <= set(range(ROWS))


@pytest.fixture(scope="module")
def torchrun_workers(corpus, tmp_path_factory):
    """The four ranks of two launchers, each with 2 DataLoader workers."""
    return [r["workers"] for r in torchrun(corpus, tmp_path_factory.mktemp("torchrun_workers"), "workers")]


def test_torchrun_workers_equal_steps(torchrun_workers):
    """With DataLoader workers under torchrun: every rank takes the steps
    len(ds) said (the sum over its worker shards), the same on every rank,
    and no row comes twice."""
    res = torchrun_workers
    assert sorted(r["rank"] for r in res) == [0, 1, 2, 3]
    assert len({r["steps"] for r in res}) == 1 and all(r["steps"] == r["len"] for r in res), \
        [(r["steps"], r["len"]) for r in res]
    ids = sum((r["ids"] for r in res), [])
    assert len(ids) == len(set(ids)) and set(ids) <= set(range(ROWS))


def test_torchrun_workers_lose_little(torchrun_workers):
    """Equal steps over 4 ranks x 2 workers leave out fewer than
    world x workers x batch_rows rows (here the id column's pages hold
    1,000 rows each: fewer pages than shards)."""
    ids = sum((r["ids"] for r in torchrun_workers), [])
    assert len(ids) >= ROWS - 4 * 2 * 50, "%d of %d rows delivered" % (len(ids), ROWS)


def test_torchrun_mixture(corpus, corpus_zstd, tmp_path):
    """A two-source mixture (0.7/0.3) under torchrun, two launchers of two
    ranks: every rank takes the steps len(ds) said, the same on every
    rank, and after every batch each source is within one row of its
    share on every rank."""
    res = [r["mix"] for r in torchrun(corpus + "," + corpus_zstd, tmp_path, "mix")]
    assert sorted(r["rank"] for r in res) == [0, 1, 2, 3]
    assert len({r["steps"] for r in res}) == 1 and all(r["steps"] == r["len"] == r["lsteps"] > 0 for r in res), res
    assert all(r["worst"] < 1 for r in res), res
    # the epoch (the sum of both, 12,000 rows) over 4 ranks of 50-row batches
    assert res[0]["steps"] == 2 * ROWS // (4 * 50)
