"""Weighted mixtures of datasets: Loader(sources=[...]) and
PagefeedDataset(sources=[...]) through the C ABI's config JSON, and
stats() per source."""

import glob
import json
import os

import pytest

import pagefeed
from pagefeed import ConfigError
from pagefeed.torch import PagefeedDataset

from conftest import ROWS, run_py
from test_contracts import SIGINT_STATE, SIGINT_TRIALS


def sources(a, b, wa=0.7, wb=0.3):
    return [{"paths": [a], "weight": wa, "name": "a"}, {"paths": [b], "weight": wb, "name": "b"}]


def test_mixture_proportions_every_batch(corpus, corpus_zstd):
    """After every batch each source's rows are within the blend's bound
    of its share (two sources: under one row either way), and stats()
    counts them per source."""
    with pagefeed.Loader(sources=sources(corpus, corpus_zstd), columns=["id"], batch_rows=64, seed=3) as l:
        n = len(l)
        steps = 0
        for b in l:
            assert len(b.columns["id"]) == 64 or steps == n - 1
            b.release()
            steps += 1
            s = l.stats()["Sources"]
            tot = s[0]["Rows"] + s[1]["Rows"]
            assert abs(s[0]["Rows"] - 0.7 * tot) < 1 and abs(s[1]["Rows"] - 0.3 * tot) < 1, s
        assert steps == n
        s = l.stats()["Sources"]
        assert [x["Name"] for x in s] == ["a", "b"] and all(x["DiskBytes"] > 0 and x["Epochs"] >= 1 for x in s)
        # the default epoch: the sum of the sources; source b (0.3 of
        # 12,000 rows) needs 3,600 of its 6,000: subsampled, no repeats
        assert s[0]["Rows"] + s[1]["Rows"] == 2 * ROWS


def test_mixture_defaults_each_row_once(corpus, corpus_zstd):
    """Sources with paths only: each source's rows once per epoch."""
    srcs = [{"paths": [corpus]}, {"paths": [corpus_zstd]}]
    with pagefeed.Loader(sources=srcs, columns=["id"]) as l:
        ids = []
        for b in l:
            ids.extend(b.columns["id"].tolist())
            b.release()
    assert sorted(ids) == sorted(list(range(ROWS)) * 2)


def test_mixture_resume(corpus, corpus_zstd):
    """state_dict() after some batches, load_state_dict() in a new loader:
    the rest of the epoch is what the uninterrupted run delivers."""
    kw = dict(sources=sources(corpus, corpus_zstd), columns=["id"], batch_rows=100, seed=9, deterministic=True)
    with pagefeed.Loader(**kw) as l:
        all_ = [b.columns["id"].tolist() for b in l]
    with pagefeed.Loader(**kw) as l:
        for _ in range(7):
            next(l).release()
        st = l.state_dict()
    with pagefeed.Loader(**kw) as l:
        l.load_state_dict(st)
        rest = [b.columns["id"].tolist() for b in l]
    assert rest == all_[7:]


@pytest.mark.parametrize("srcs,msg", [
    ([{"paths": ["x"], "weight": 0}, {"paths": ["y"], "weight": 0}], r'all 2 sources are zero \(sources \["x" "y"\]\)'),
    ([{"paths": ["x"], "weight": 1}, {"paths": ["y"]}], "give every source a weight"),
    ([{"paths": ["x"], "weight": -1, "name": "neg"}], 'source "neg": weight -1'),
    ([{"paths": ["x"], "weight": 1, "choose": 5, "name": "c"}], 'source "c" sets weight with repeat or choose'),
    ([{"name": "e"}], "no \"paths\""),
])
def test_mixture_bad_sources(srcs, msg):
    with pytest.raises(ConfigError, match=msg):
        pagefeed.Loader(sources=srcs, columns=["id"])


def test_mixture_zero_weight_source(corpus, corpus_zstd):
    """A weight given as 0 beside another source's: that source gives no
    rows, and its state goes on in the checkpoint (a later stage can
    weigh it again)."""
    srcs = sources(corpus, corpus_zstd, wa=1, wb=0)
    with pagefeed.Loader(sources=srcs, columns=["id"], batch_rows=100) as l:
        for b in l:
            b.release()
        s = l.stats()["Sources"]
        st = l.state_dict()
    assert s[0]["Rows"] > 0 and s[1]["Rows"] == 0, s
    assert [x["name"] for x in st["mix"]["sources"]] == ["a", "b"], st["mix"]["sources"]


def test_mixture_stats_io_mode(corpus, corpus_zstd):
    """stats() of a mixture says how its files are read: the mode chosen
    (auto, at the defaults) over both sources' files, why, and each
    source's part."""
    with pagefeed.Loader(sources=sources(corpus, corpus_zstd), columns=["id"]) as l:
        next(l).release()
        st = l.stats()
    assert st["IOMode"] in ("direct", "buffered", "mixed") and st["IOReason"], st
    assert st["DirectFiles"] + st["BufferedFiles"] == 4, st
    for s in st["Sources"]:
        assert s["IOMode"] in ("direct", "buffered", "mixed") and s["DirectFiles"] + s["BufferedFiles"] == 2, s
        assert st["IOMode"] == "mixed" or s["IOMode"] == st["IOMode"], (st["IOMode"], s)


def test_mixture_paths_and_sources():
    with pytest.raises(ConfigError, match="paths or sources"):
        pagefeed.Loader(["x"], sources=[{"paths": ["y"]}])


def test_dataset_mixture(corpus, corpus_zstd):
    """PagefeedDataset(sources=...) yields len(ds) batches."""
    ds = PagefeedDataset(sources=sources(corpus, corpus_zstd), columns=["id"], batch_rows=64, seed=1, world=1)
    n = len(ds)
    got = sum(1 for _ in ds)
    assert got == n > 0


def halves(corpus):
    """The corpus's two files as two sources, each read once per epoch
    (no weights): the mixture's epoch is ids 0..ROWS-1, each once."""
    files = sorted(glob.glob(os.path.join(corpus, "*.parquet")))
    assert len(files) == 2, files
    return [{"paths": [f]} for f in files]


def test_mixture_sigint_during_next_loses_nothing(corpus):
    """Ctrl-C at random moments of next() over a mixture: the batch whose
    hand-off the signal interrupted goes back to the loader (pf_unread),
    so the epoch still gives every id once."""
    kw = dict(sources=halves(corpus), columns=["id"], batch_rows=32, seed=3)
    r = run_py(SIGINT_TRIALS, "", json.dumps(kw), "400", "7", timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(r.stdout)
    assert out["interrupts"] > 10 and out["pending"] > 0, (out["interrupts"], out["pending"])
    assert sorted(out["ids"]) == list(range(ROWS)), "rows lost or repeated: %d of %d, %d distinct" % (
        len(out["ids"]), ROWS, len(set(out["ids"])))


def test_mixture_sigint_then_checkpoint_resumes_every_row(corpus):
    """Ctrl-C, a checkpoint at once, a resume in a new loader: every id of
    the mixture's epoch once, the interrupted batch in the resumed part."""
    kw = dict(sources=halves(corpus), columns=["id"], batch_rows=32, seed=3)
    r = run_py(SIGINT_STATE, "", json.dumps(kw), "100", "11", str(ROWS), timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(r.stdout)
    assert out["checked"] > 50 and out["pending"] > 0 and out["bad"] == 0, out


def test_mixture_len_after_reshard(corpus, corpus_zstd):
    """A resharded mixture's len() is the steps its remainder takes, the
    same on every new rank, as for one dataset."""
    kw = dict(sources=sources(corpus, corpus_zstd), columns=["id"], batch_rows=50, seed=2)
    heads = []
    for r in range(4):
        with pagefeed.Loader(rank=r, world=4, **kw) as l:
            assert len(l) == 2 * ROWS // (4 * 50)
            for _ in range(3 + r):
                next(l).release()
            heads.append(l.state_dict())
    left = 2 * ROWS - (3 + 4 + 5 + 6) * 50
    for r, st in enumerate(pagefeed.reshard(heads, 3)):
        with pagefeed.Loader(rank=r, world=3, resume=st, **kw) as l:
            n = len(l)
            assert n == left // (3 * 50) == sum(1 for b in l if not b.release())
