import ctypes
import gc
import json
import os
import threading
import time

import numpy as np
import pytest

import pagefeed
from pagefeed import _lib
from conftest import ROOT, ROWS, run_py

NULL_PAGES = os.path.join(ROOT, "..", "shared", "parquet-testing", "data", "int32_with_null_pages.parquet")


def ids_of(loader):
    out = []
    for b in loader:
        out.append(np.array(b.columns["id"]))  # a copy: the batch goes back at once
    return np.concatenate(out)


@pytest.mark.parametrize("kw", [dict(batch_pages=2), dict(batch_rows=100), dict(batch_rows=64, shuffle="row"),
                                dict(batch_pages=3, fetch="ordered", shuffle="none")])
def test_every_row_once(corpus, kw):
    with pagefeed.Loader(corpus, columns=["id"], seed=3, **kw) as l:
        ids = ids_of(l)
    assert len(ids) == ROWS
    assert np.array_equal(np.sort(ids), np.arange(ROWS))


def test_views_are_zero_copy_and_keep_the_batch(corpus):
    with pagefeed.Loader(corpus, columns=["input_ids"], output="tokens", seq_len=16, batch_rows=4) as l:
        b = next(l)
        t = b.tokens
        assert t.shape == (4, 16) and t.dtype == np.int32
        assert not t.flags.writeable and not t.flags.owndata
        assert b.tokens.__array_interface__["data"][0] == t.__array_interface__["data"][0]  # same memory
        want = t.copy()
        del b
        gc.collect()
        for _ in range(20):  # the loader reuses released token buffers; this one is held by t
            next(l)
        assert np.array_equal(t, want)


def test_columns_types(corpus):
    with pagefeed.Loader(corpus, columns=["input_ids"], batch_rows=5) as l:
        b = next(l)
        a = b.columns["input_ids"]
        assert isinstance(a, pagefeed.ListArray) and len(a) == 5
        assert a.offsets[0] == 0 and a.values.dtype == np.int32
        rows = a.to_pylist()
        assert len(rows) == 5 and all(len(r) > 0 for r in rows)
        assert sum(map(len, rows)) == len(a.values)
    with pagefeed.Loader(corpus, columns=["text"], batch_rows=500) as l:
        a = next(l).columns["text"]
        assert isinstance(a, pagefeed.StringArray)
        rows = a.to_pylist()
        assert a.valid is not None and (~a.valid).sum() == rows.count(None) > 0  # gen nulls ~10%
        assert all(r.startswith("doc ") for r in rows if r is not None)
    # page batches: several chunks, joined; chunks() are views
    with pagefeed.Loader(corpus, columns=["input_ids"], batch_pages=4) as l:
        b = next(l)
        parts = b.chunks("input_ids")
        assert len(parts) == 4
        joined = b.columns["input_ids"]
        assert joined.to_pylist() == sum((p.to_pylist() for p in parts), [])
        assert len(joined) == b.num_rows


@pytest.mark.skipif(not os.path.exists(NULL_PAGES), reason="parquet-testing not found")
def test_masked_where_nulls():
    with pagefeed.Loader(NULL_PAGES, batch_pages=1, shuffle="none") as l:
        got = []
        for b in l:
            (name,) = b.names()
            got.append(b.columns[name].copy())  # held views would hold every batch: Next blocks
    assert any(isinstance(a, np.ma.MaskedArray) and a.mask.any() for a in got)
    for a in got:
        assert a.dtype == np.int32


def test_to_arrow(corpus):
    with pagefeed.Loader(corpus, columns=["id"], batch_rows=10) as l:
        b = next(l)
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            with pytest.raises(ImportError, match="needs pyarrow"):
                b.to_arrow()
            return
        rb = b.to_arrow()
        assert rb.num_rows == 10 and rb.column(0).to_pylist() == b.columns["id"].tolist()


def test_arrow_export_outlives_release(corpus):
    """What pyarrow does with to_arrow: take an exported chunk, and the
    batch stays valid until the consumer calls the array's release."""
    l = pagefeed.Loader(corpus, columns=["id"], batch_rows=10)
    b = next(l)
    want = b.columns["id"].copy()
    arr, sch = _lib.ArrowArray(), _lib.ArrowSchema()
    _lib.check(_lib.lib().pf_batch_export(b._handle, 0, 0, ctypes.byref(arr), ctypes.byref(sch)))
    b.release()
    l.close()
    assert sch.format == b"l" and arr.length == 10
    vals = np.ctypeslib.as_array(ctypes.cast(arr.buffers[1], ctypes.POINTER(ctypes.c_int64)), (arr.offset + 10,))
    assert np.array_equal(vals[arr.offset:], want)
    rel_a = ctypes.CFUNCTYPE(None, ctypes.POINTER(_lib.ArrowArray))(arr.release)
    rel_s = ctypes.CFUNCTYPE(None, ctypes.POINTER(_lib.ArrowSchema))(sch.release)
    rel_a(ctypes.byref(arr))
    rel_s(ctypes.byref(sch))
    assert not arr.release and not sch.release  # released, as the C Data Interface says
    with pytest.raises(pagefeed.ClosedError):
        _lib.check(_lib.lib().pf_batch_export(b._handle, 0, 0, ctypes.byref(arr), ctypes.byref(sch)))


def test_double_release_and_context(corpus):
    with pagefeed.Loader(corpus, columns=["id"], batch_pages=1) as l:
        b = next(l)
        b.release()
        b.release()
        with next(l) as b2:
            assert b2.num_rows > 0
        b2.release()
        assert b2.num_rows > 0 and b2.epoch == 0  # kept, not read from freed memory
        for use in (lambda: b2.columns, lambda: b2.names(), lambda: b2.tokens, lambda: b2.chunks("id"),
                    lambda: b2.to_arrow()):
            with pytest.raises((pagefeed.ClosedError, ImportError)):
                use()
        # the loader goes on
        assert next(l).num_rows > 0


def test_release_waits_for_views(corpus):
    with pagefeed.Loader(corpus, columns=["id"], batch_pages=1, shuffle="none") as l:
        b = next(l)
        ids = b.columns["id"]
        want = ids.copy()
        b.release()  # ids is alive: the memory stays
        assert not b._done
        for _ in l:  # the rest of the epoch, its buffers reused
            pass
        assert np.array_equal(ids, want)
        del ids
        gc.collect()
        assert b._done


def test_close_with_batches_outstanding(corpus):
    l = pagefeed.Loader(corpus, columns=["id"], batch_pages=1)
    held = [next(l) for _ in range(2)]
    arrays = [b.columns["id"] for b in held]
    copies = [a.copy() for a in arrays]
    l.close()
    l.close()  # twice: harmless
    with pytest.raises(pagefeed.ClosedError):
        next(l)
    for a, c in zip(arrays, copies):
        assert np.array_equal(a, c)
    for b in held:
        b.release()
    del arrays
    gc.collect()


def test_gil_released_while_next_blocks(corpus):
    """A thread keeps every batch, so its next() blocks (memory is fixed);
    meanwhile this thread runs Python, then close() ends the blocked next."""
    l = pagefeed.Loader(corpus, columns=["input_ids"], batch_pages=1)
    got, err, held = [0], [], []

    def hoard():
        try:
            for b in l:
                held.append(b)
                got[0] += 1
        except pagefeed.ClosedError as e:
            err.append(e)

    t = threading.Thread(target=hoard)
    t.start()
    last, since = -1, time.monotonic()
    while time.monotonic() - since < 0.5:  # until it stops making progress
        if got[0] != last:
            last, since = got[0], time.monotonic()
        time.sleep(0.01)
    assert t.is_alive() and 0 < got[0] < 800, "next() should block with every batch held"
    n, end = 0, time.monotonic() + 0.3
    while time.monotonic() < end:
        n += 1
    assert n > 10000  # this thread ran while the other sat in next()
    assert len(l) > 0  # and len() does not wait for the blocked next()
    l.close()
    t.join(10)
    assert not t.is_alive() and len(err) == 1, "close() should end the blocked next()"
    for b in held:
        b.release()


def test_rss_flat_over_100k_batches(corpus):
    code = """
import sys, resource, pagefeed
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
l = pagefeed.Loader(sys.argv[1], columns=["id"], batch_rows=1, epochs=1000, shuffle="none")
n, base = 0, 0
for b in l:
    b.columns["id"]
    n += 1
    if n == 10000:
        base = rss()
    if n == 100000:
        break
print(n, rss() - base)
"""
    r = run_py(code, corpus, timeout=300)
    assert r.returncode == 0, r.stderr
    n, growth = map(int, r.stdout.split())
    assert n == 100000
    assert growth < 64 << 20, "RSS grew %d bytes over 90,000 batches" % growth


@pytest.mark.parametrize("case", ["path", "column", "key", "state", "corrupt", "memory", "rank"])
def test_errors(corpus, corpus_zstd, tmp_path, case):
    if case == "path":
        with pytest.raises(FileNotFoundError, match="nope"):
            pagefeed.Loader(os.path.join(corpus, "nope.parquet"))
    elif case == "column":
        with pytest.raises(pagefeed.ConfigError, match="no_such_column"):
            pagefeed.Loader(corpus, columns=["no_such_column"])
    elif case == "key":
        with pytest.raises(pagefeed.ConfigError, match="batch_size"):
            pagefeed.Loader(corpus, batch_size=8)
    elif case == "state":
        with pagefeed.Loader(corpus_zstd, columns=["id"]) as other:
            next(other)
            st = other.state_dict()
        l = pagefeed.Loader(corpus, columns=["id"])
        with pytest.raises(pagefeed.StateError, match="state does not match this loader: field dataset"):
            l.load_state_dict(st)
    elif case == "corrupt":
        p = tmp_path / "bad.parquet"
        p.write_bytes(b"PAR1" + os.urandom(5000) + b"PAR1")
        with pytest.raises(pagefeed.CorruptPageError):
            pagefeed.Loader(str(p))
    elif case == "memory":
        with pytest.raises(MemoryError, match="memory"):
            pagefeed.Loader(corpus, columns=["id"], memory_limit=4096)
    elif case == "rank":
        with pytest.raises(pagefeed.ConfigError, match=r"rank 3: want 0..1 \(of world 2\)"):
            pagefeed.Loader(corpus, columns=["id"], rank=3, world=2)


def test_fork_after_load_is_refused(corpus):
    pagefeed.version()  # the Go runtime runs in this process now
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            pagefeed.Loader(corpus)
        except pagefeed.ForkError as e:
            code = 0 if "in the process that uses it" in str(e) else 4
        except BaseException:
            code = 5
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_batch_released_in_a_fork_is_left_alone(corpus):
    """A batch taken before a fork is the parent's: releasing it in the
    child (explicitly or as garbage) neither calls the library, which has
    no runtime there, nor frees the parent's buffer."""
    with pagefeed.Loader(corpus, columns=["id"], batch_rows=10) as l:
        b = next(l)
        want = b.columns["id"].tolist()
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                b.release()
                del b
                code = 0
            except BaseException:
                code = 4
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert b.columns["id"].tolist() == want  # still the parent's, unreleased
        b.release()


def test_state_is_json(corpus):
    with pagefeed.Loader(corpus, columns=["id"], batch_rows=10) as l:
        next(l)
        st = l.state_dict()
    assert json.loads(json.dumps(st)) == st and st["world"] == 1


@pytest.mark.parametrize("kw", [dict(batch_rows=7), dict(batch_pages=3)])
def test_several_columns_row_aligned(corpus, kw):
    """Every column of a batch holds the same rows: each id's document
    starts with the id's caption number ("doc <id> ...")."""
    n = 0
    with pagefeed.Loader(corpus, columns=["id", "input_ids", "text"], **kw) as l:
        for b in l:
            c = b.columns
            assert b.names() == ["id", "input_ids", "text"]
            assert len(c["id"]) == len(c["input_ids"]) == len(c["text"]) == b.num_rows
            for i, t in zip(c["id"].tolist(), c["text"].to_pylist()):
                assert t is None or t.startswith("doc %d " % i)
            n += b.num_rows
    assert n == ROWS
