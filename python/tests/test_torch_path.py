"""The per-batch path of PagefeedDataset and of pagefeed.torch.DataLoader
without workers: the items are torch's DataLoader's, the tensors keep
their batch and give it back when they go, a profiler still sees the
DataLoader's label, and Ctrl-C at any moment of a step loses and repeats
nothing across a checkpoint taken right after it."""

import gc
import json
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data

import pagefeed
import pagefeed.torch
from pagefeed.torch import PagefeedDataset
from conftest import ROWS, run_py

TOKENS = dict(columns=["input_ids"], output="tokens", seq_len=32, batch_rows=4, deterministic=True, seed=2,
              rank=0, world=1)
EXTRAS = dict(position_ids=True, loss_mask=True, cu_seqlens=True)


def items(dl, n=None):
    out = []
    for i, item in enumerate(dl):
        out.append({k: v.clone() for k, v in item.items()})
        if n is not None and i + 1 == n:
            break
    return out


def same(a, b):
    return len(a) == len(b) and all(x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)
                                    for x, y in zip(a, b))


@pytest.mark.parametrize("kw", [TOKENS, dict(TOKENS, tokens_dtype="int64", **EXTRAS),
                                dict(columns=["id", "input_ids"], batch_rows=16, deterministic=True, seed=2)])
def test_same_items_as_torch_dataloader(corpus, kw):
    """At the defaults (nothing but batch_size=None), pagefeed.torch.DataLoader
    without workers gives torch's DataLoader's items, over a whole epoch."""
    ours = pagefeed.torch.DataLoader(PagefeedDataset(corpus, **kw), batch_size=None)
    it = iter(ours)
    assert type(it).__name__ == "_SingleIter" and it._lean  # the path under test, not torch's
    a = items(it)
    b = items(torch.utils.data.DataLoader(PagefeedDataset(corpus, **kw), batch_size=None))
    assert len(a) > 20 and same(a, b)


def test_collate_fn_and_len_warning(corpus):
    """A collate_fn of the caller's runs on every item, and reading past
    len(dataloader) warns as torch's iterator does."""
    ds = PagefeedDataset(corpus, **TOKENS)
    dl = pagefeed.torch.DataLoader(ds, batch_size=None, collate_fn=lambda d: {"n": d["tokens"].numel()})
    n = len(dl)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = [x["n"] for x in dl]
    assert got and set(got) == {4 * 32}
    assert (len(got) > n) == any("samples have been fetched" in str(x.message) for x in w)


def test_profiler_sees_the_dataloader(corpus):
    """While a torch profiler records, the iterator is torch's own, with
    its per-item label."""
    it = iter(pagefeed.torch.DataLoader(PagefeedDataset(corpus, **TOKENS), batch_size=None))
    next(it)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        for _ in range(3):
            next(it)
    labels = [e.name for e in p.events() if e.name.startswith("enumerate(DataLoader)")]
    assert len(labels) == 3, labels


@pytest.mark.parametrize("kw", [TOKENS, dict(TOKENS, tokens_dtype="int64", **EXTRAS)])
def test_tensors_hold_their_batch(corpus, kw):
    """Each tensor alone keeps its batch (its token buffer is not reused
    while it lives, also after its dict and the loop are gone), and the
    batch goes back when the last of them does: the loader, whose token
    buffers are few, reads on while one dict after another is dropped."""
    ds = PagefeedDataset(corpus, **kw)
    it = iter(pagefeed.torch.DataLoader(ds, batch_size=None))
    first = next(it)
    kept = {k: v for k, v in first.items()}
    want = {k: v.clone() for k, v in first.items()}
    del first
    n = 0
    for item in it:  # well past the loader's token buffers: each goes back when its item goes
        n += 1
        if n == 300:
            break
    assert n == 300
    del item, it
    gc.collect()
    for k in kept:  # one tensor at a time still holds the memory
        assert torch.equal(kept[k], want[k]), k
    ds._loader and ds._loader.close()


def test_loader_views_stay_read_only(corpus):
    """Loader.next()'s token views and their extras are read-only, and
    numpy refuses to make them writable; the dataset's tensors are writable
    views of the same kind of memory."""
    with pagefeed.Loader(corpus, **dict(TOKENS, **EXTRAS)) as l:
        b = next(l)
        for name in ("tokens", "position_ids", "loss_mask", "cu_seqlens"):
            v = getattr(b, name)
            assert not v.flags.writeable, name
            with pytest.raises(ValueError):
                v.flags.writeable = True
        b.release()
    item = next(iter(PagefeedDataset(corpus, **TOKENS)))
    item["tokens"][0, 0] = 7
    assert item["tokens"][0, 0] == 7


# Ctrl-C (SIGALRM, microsecond timers) at random moments of the steps of
# pagefeed.torch.DataLoader(PagefeedDataset(...)) without workers; after
# the first that lands, a checkpoint, and a resume in a fresh dataset. The
# items received before it and after the resume are exactly the
# uninterrupted epoch's (deterministic order): none lost, none repeated.
SIGINT_DATASET = """
import json, random, signal, sys, time

def interrupt(signum, frame):
    raise KeyboardInterrupt

signal.signal(signal.SIGALRM, interrupt)  # as in test_contracts.py
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
import pagefeed, pagefeed.torch
pagefeed.version()
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
from pagefeed.torch import PagefeedDataset, DataLoader
paths, kw, trials, seed, cls = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
if cls == "torch":
    import torch.utils.data
    DataLoader = torch.utils.data.DataLoader
rnd = random.Random(seed)

def key(item):
    return tuple(item[k].numpy().tobytes() for k in sorted(item))

def epoch(ds, got, stop=None):
    # every item received goes into got, also one whose loop body an
    # interrupt cut short; returns whether an interrupt landed
    it = iter(DataLoader(ds, batch_size=None))
    slot = [None]
    step = 0
    try:
        try:
            if stop is not None and stop <= 0:
                signal.setitimer(signal.ITIMER_REAL, rnd.uniform(1e-6, 1e-4))
            for slot[0] in it:  # stored by the loop itself: nothing runs between
                got.append(key(slot[0]))
                slot[0] = None
                step += 1
                if stop is not None and step >= stop:
                    signal.setitimer(signal.ITIMER_REAL, rnd.uniform(1e-6, 1e-4))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            time.sleep(0.0005)  # a signal already sent is handled in here at the latest
    except KeyboardInterrupt:
        if slot[0] is not None and not (got and got[-1] == key(slot[0])):
            got.append(key(slot[0]))
        return True
    return False

full = []
epoch(PagefeedDataset(paths, **kw), full)
bad = checked = 0
for trial in range(trials):
    got = []
    ds = PagefeedDataset(paths, **kw)
    if not epoch(ds, got, stop=rnd.randrange(0, 40)):
        continue
    checked += 1
    state = json.loads(json.dumps(ds.state_dict()))
    ds2 = PagefeedDataset(paths, **kw)
    ds2.load_state_dict(state)
    epoch(ds2, got)
    bad += got != full
print(json.dumps({"bad": bad, "checked": checked, "batches": len(full)}))
"""


@pytest.mark.parametrize("kw", [TOKENS, dict(TOKENS, tokens_dtype="int64", **EXTRAS),
                                dict(columns=["id"], batch_rows=32, deterministic=True, seed=2, rank=0, world=1)])
def test_sigint_then_checkpoint_loses_nothing(corpus, kw):
    r = run_py(SIGINT_DATASET, corpus, json.dumps(kw), "60", "5", "pagefeed", timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(r.stdout)
    assert out["batches"] > 20 and out["checked"] > 30 and out["bad"] == 0, out
