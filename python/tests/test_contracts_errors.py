"""Error contracts of the binding: close() ends a blocked next() with
ClosedError in every output mode, Ctrl-C around open/close/
load_state_dict neither leaks a loader nor leaves the object half-closed,
a file changed under the loader raises FileChangedError, and an empty
projection is refused."""

import ctypes
import json
import os
import random
import shutil
import threading
import time

import pytest

import pagefeed
from pagefeed import _lib
from conftest import run_py


@pytest.mark.parametrize("kw", [dict(columns=["input_ids"], batch_pages=1),
                                dict(columns=["id", "input_ids"], batch_rows=32, shuffle="stream", buffer_rows=300),
                                dict(columns=["input_ids"], output="tokens", seq_len=64, batch_rows=4)],
                         ids=["arrow-pages", "arrow-rows", "tokens"])
def test_close_ends_blocked_next_with_closed_error(corpus, kw):
    """A thread holds every batch, so its next() waits (in 1 ms slices, so
    that close() often lands as a slice's deadline passes); close() from
    this thread ends it, always with ClosedError."""
    rnd = random.Random(5)
    kinds = {}
    for _ in range(60):
        l = pagefeed.Loader(corpus, **kw)
        l._WAIT_MS = 1
        held, err = [], []

        def hoard():
            try:
                for b in l:
                    held.append(b)
            except Exception as e:  # noqa: BLE001 - the kind is what is checked
                err.append(e)

        t = threading.Thread(target=hoard)
        t.start()
        time.sleep(rnd.uniform(0.02, 0.08))
        l.close()
        t.join(30)
        assert not t.is_alive(), "close() should end the blocked next()"
        for b in held:
            b.release()
        for e in err:
            k = "%s: %s" % (type(e).__name__, e)
            kinds[k.split(": loader")[0]] = kinds.get(k, 0) + 1
        # a hoard that ran to the end (held every batch) raises nothing
        assert all(isinstance(e, pagefeed.ClosedError) for e in err), kinds
    assert kinds, "no next() was blocked when close() came"


# Ctrl-C (SIGALRM, timed with setitimer) at random moments of open, close
# and load_state_dict: afterwards each loader is either open and usable or
# closed (its handle cleared, next() raising ClosedError), and once every
# loader is closed and collected no file of the dataset is still open (a
# leaked library loader keeps its files and its io_uring open).
INTERRUPT_OPEN_CLOSE = """
import gc, json, os, random, signal, sys, time

def interrupt(signum, frame):
    raise KeyboardInterrupt

signal.signal(signal.SIGALRM, interrupt)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
import pagefeed
pagefeed.version()
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
paths, trials = sys.argv[1], int(sys.argv[2])
kw = dict(columns=["id"], batch_pages=1)

def held_files():
    n = 0
    for f in os.listdir("/proc/self/fd"):
        try:
            t = os.readlink("/proc/self/fd/" + f)
        except OSError:
            continue
        n += t.startswith(paths) or "io_uring" in t
    return n

with pagefeed.Loader(paths, **kw) as l:
    b = next(l); b.release()
    state = l.state_dict()
t0 = time.perf_counter()
pagefeed.Loader(paths, **kw).close()
span = time.perf_counter() - t0
rnd = random.Random(11)
loaders, interrupts, bad = [], {}, []
for trial in range(trials):
    op = ("open", "close", "load")[trial % 3]
    l = None
    if op != "open":
        l = pagefeed.Loader(paths, **kw)
        loaders.append(l)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, rnd.uniform(1e-6, span))
            if op == "open":
                l = pagefeed.Loader(paths, **kw)
                loaders.append(l)
            elif op == "close":
                l.close()
            else:
                l.load_state_dict(state)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            time.sleep(0.0005)
    except KeyboardInterrupt:
        interrupts[op] = interrupts.get(op, 0) + 1
    if l is None:
        continue
    if l._h is None:
        try:
            next(l)
            bad.append((op, "closed, but next() worked"))
        except pagefeed.ClosedError:
            pass
    else:
        try:
            l.stats()
        except pagefeed.Error as e:
            bad.append((op, "open, but %s: %s" % (type(e).__name__, e)))
for l in loaders:
    l.close()
del l, loaders
gc.collect()
print(json.dumps({"interrupts": interrupts, "bad": bad[:5], "nbad": len(bad), "held": held_files()}))
"""


def test_interrupt_around_open_and_close_leaks_nothing(corpus):
    r = run_py(INTERRUPT_OPEN_CLOSE, corpus, "300", timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(r.stdout.splitlines()[-1])
    assert all(out["interrupts"].get(op, 0) > 5 for op in ("open", "close", "load")), out
    assert out["nbad"] == 0, out
    assert out["held"] == 0, out


def test_file_changed_raises_file_changed_error(corpus, tmp_path):
    d = tmp_path / "data"
    shutil.copytree(corpus, d)
    l = pagefeed.Loader(str(d), columns=["id", "input_ids"], batch_pages=1, shuffle="none")
    next(l).release()
    for f in os.listdir(d):
        os.truncate(d / f, 100000)
    with pytest.raises(pagefeed.FileChangedError, match="file changed") as ei:
        for b in l:
            b.release()
    # compatible with code that catches the class it was before
    assert isinstance(ei.value, pagefeed.CorruptPageError) and isinstance(ei.value, pagefeed.Error)
    assert str(d) in str(ei.value)
    l.close()


def test_corrupt_bytes_stay_corrupt_page_error(tmp_path):
    p = tmp_path / "x.parquet"
    p.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    with pytest.raises(pagefeed.CorruptPageError) as ei:
        pagefeed.Loader(str(p))
    assert not isinstance(ei.value, pagefeed.FileChangedError)


@pytest.mark.parametrize("columns", [[], (), iter([])])
def test_empty_columns_refused(corpus, columns):
    with pytest.raises(pagefeed.ConfigError, match="columns"):
        pagefeed.Loader(corpus, columns=columns)


def test_empty_columns_refused_by_c_abi(corpus):
    l = _lib.lib()
    for cfg in ({"paths": [corpus], "columns": []},
                {"sources": [{"paths": [corpus], "columns": []}]}):
        b = json.dumps(cfg).encode()
        h = ctypes.c_int64()
        rc = l.pf_open(b, len(b), ctypes.byref(h))
        if rc == 0:
            l.pf_close(h.value)
        assert rc == -2, (cfg, rc)
        assert b"columns" in l.pf_last_error(), l.pf_last_error()
