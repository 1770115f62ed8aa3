"""The contracts under interrupts and misuse: Ctrl-C during next() loses
no batch and ends a blocked wait, len() on a path that blocks can be
interrupted, copies of a batch are refused, and every argument is checked
with an error that names it."""

import copy
import ctypes
import errno
import json
import os
import pickle

import numpy as np
import pytest

import pagefeed
from pagefeed import _lib
from conftest import ROWS, run_py

# Ctrl-C at random moments of next(): every batch the loop did not get is
# still in the loader (the next next() returns it), so the epoch gives
# every id once. Row batches (a batch cut from pages, and a wait the
# library does not slice) and page batches (sliced waits). An empty paths
# argument leaves paths out (a mixture: sources in kw).
SIGINT_TRIALS = """
import json, random, signal, sys, time

def interrupt(signum, frame):
    raise KeyboardInterrupt

# SIGALRM stands in for Ctrl-C with microsecond timing (setitimer). Its
# handler is installed before the library loads (which keeps the handlers
# it finds), and the library's threads start with it blocked, so that it
# interrupts this thread alone, at once.
signal.signal(signal.SIGALRM, interrupt)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
import pagefeed
pagefeed.version()
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
paths, kw, trials, seed = sys.argv[1] or None, json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(seed)
ids, interrupts, pending, trial = [], 0, 0, 0
with pagefeed.Loader(paths, **kw) as l:
    done = False
    while not done:
        b = None
        try:
            try:
                if trial < trials:
                    trial += 1
                    signal.setitimer(signal.ITIMER_REAL, rnd.uniform(1e-6, 1e-4))
                b = l.next()
                done = b is None
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                time.sleep(0.0005)  # a signal already sent is handled in here at the latest
        except KeyboardInterrupt:
            interrupts += 1
            pending += bool(getattr(l, "_slot", None) and l._slot.value)
        if b is not None:
            ids.extend(b.columns["id"].tolist())
            b.release()
print(json.dumps({"ids": ids, "interrupts": interrupts, "pending": pending}))
"""


@pytest.mark.parametrize("kw", [dict(columns=["id"], batch_rows=32, seed=3),
                                dict(columns=["id", "input_ids"], batch_pages=1, seed=3),
                                dict(columns=["id"], batch_rows=32, shuffle="stream", buffer_rows=300, seed=3)])
def test_sigint_during_next_loses_nothing(corpus, kw):
    r = run_py(SIGINT_TRIALS, corpus, json.dumps(kw), "400", "7", timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(r.stdout)
    # the signals did land inside next(), some after the library handed a batch out
    assert out["interrupts"] > 10 and out["pending"] > 0, (out["interrupts"], out["pending"])
    assert sorted(out["ids"]) == list(range(ROWS)), "rows lost or repeated: %d of %d, %d distinct" % (
        len(out["ids"]), ROWS, len(set(out["ids"])))


# Ctrl-C, then a checkpoint at once, and a resume in a new loader: the
# batch whose hand-off the signal interrupted is in the resumed part.
SIGINT_STATE = """
import json, random, signal, sys, time

def interrupt(signum, frame):
    raise KeyboardInterrupt

signal.signal(signal.SIGALRM, interrupt)  # as in SIGINT_TRIALS
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
import pagefeed
pagefeed.version()
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
paths, kw, trials, seed, rows = sys.argv[1] or None, json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rnd = random.Random(seed)
bad = checked = pending = 0
for trial in range(trials):
    ids = []
    with pagefeed.Loader(paths, **kw) as l:
        stop = rnd.randrange(5, 60)
        state = None
        for step in range(10000):
            b = None
            try:
                try:
                    if step >= stop:
                        signal.setitimer(signal.ITIMER_REAL, rnd.uniform(1e-6, 1e-4))
                    b = l.next()
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    time.sleep(0.0005)
            except KeyboardInterrupt:
                pending += bool(l._slot.value)
                state = l.state_dict()
            if b is not None:
                ids.extend(b.columns["id"].tolist())
                b.release()
            if state is not None:
                break
    if state is None:
        continue
    checked += 1
    with pagefeed.Loader(paths, resume=state, **kw) as l:
        for b in l:
            ids.extend(b.columns["id"].tolist())
            b.release()
    bad += sorted(ids) != list(range(rows))
print(json.dumps({"bad": bad, "checked": checked, "pending": pending}))
"""


@pytest.mark.parametrize("kw", [dict(columns=["id"], batch_rows=32, seed=3),
                                dict(columns=["id", "input_ids"], batch_pages=1, seed=3)])
def test_sigint_then_checkpoint_resumes_every_row(corpus, kw):
    r = run_py(SIGINT_STATE, corpus, json.dumps(kw), "100", "11", str(ROWS), timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(r.stdout)
    assert out["checked"] > 50 and out["pending"] > 0 and out["bad"] == 0, out


BLOCKED = """
import json, os, signal, sys, threading, time
import pagefeed
paths, kw = sys.argv[1], json.loads(sys.argv[2])
l = pagefeed.Loader(paths, **kw)
held, got = [], 0
threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    for b in l:  # keeps every batch: the loader's fixed memory runs out and next() blocks
        held.append(b)
    print("not blocked")
except KeyboardInterrupt:
    pass
ids = [i for b in held for i in b.columns["id"].tolist()]
n = len(held)
for b in held:
    b.release()
for b in l:
    ids.extend(b.columns["id"].tolist())
    b.release()
l.close()
print(json.dumps({"held": n, "ids": sorted(ids)}))
"""


def test_blocked_next_is_interruptible(corpus):
    """A next() blocked because every batch is held ends with
    KeyboardInterrupt at Ctrl-C (the subprocess's timeout catches a hang),
    and the epoch then gives every row once."""
    kw = dict(columns=["id", "input_ids"], batch_pages=1)
    r = run_py(BLOCKED, corpus, json.dumps(kw), timeout=120)
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(r.stdout.splitlines()[-1])
    assert 0 < out["held"] < 870 and out["ids"] == list(range(ROWS)), (out["held"], len(out["ids"]))


BLOCKED_TOKENS = """
import json, os, signal, sys, threading
import numpy as np
import pagefeed
paths, kw = sys.argv[1], json.loads(sys.argv[2])
with pagefeed.Loader(paths, **kw) as ref:
    want = [b.tokens.copy() for b in ref]
l = pagefeed.Loader(paths, **kw)
held = []
threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    for b in l:  # keeps every token buffer: next() blocks
        held.append(b)
    print("not blocked")
except KeyboardInterrupt:
    pass
got = [b.tokens.copy() for b in held]
n = len(held)
for b in held:
    b.release()
for b in l:
    got.append(b.tokens.copy())
    b.release()
l.close()
same = len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want))
print(json.dumps({"held": n, "batches": len(got), "same": same}))
"""


def test_blocked_next_on_token_buffers_is_interruptible(corpus):
    """The same with tokens output, where every token buffer is held: the
    wait ends mid-batch, and the batches then are those of a run that was
    never interrupted."""
    kw = dict(columns=["input_ids"], output="tokens", seq_len=64, batch_rows=4, deterministic=True, shuffle="none")
    r = run_py(BLOCKED_TOKENS, corpus, json.dumps(kw), timeout=180)
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(r.stdout.splitlines()[-1])
    assert out["held"] > 0 and out["same"], out


FIFO_LEN = """
import os, signal, sys, threading
import pagefeed.torch
ds = pagefeed.torch.PagefeedDataset(sys.argv[1])
threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    len(ds)
    print("len")
except KeyboardInterrupt:
    print("interrupted")
except Exception as e:
    print("error", type(e).__name__)
with open("/proc/%d/task/%d/children" % (os.getpid(), os.getpid())) as f:
    print("children", len(f.read().split()))
"""


def test_len_on_a_fifo_ends(tmp_path):
    """len(ds) asks a forked child; on a FIFO (which blocks an open) the
    wait ends with an error or at Ctrl-C, and no child is left behind."""
    fifo = tmp_path / "data.parquet"
    os.mkfifo(fifo)
    r = run_py(FIFO_LEN, str(fifo), timeout=60)
    assert r.returncode == 0, r.stderr[-4000:]
    lines = r.stdout.split("\n")
    assert lines[0] in ("interrupted", "error Error", "error ConfigError", "error OSError"), r.stdout
    assert lines[1] == "children 0", r.stdout


def test_batch_copy_is_refused(corpus):
    with pagefeed.Loader(corpus, columns=["id"], batch_rows=10) as l:
        b = next(l)
        want = b.columns["id"].tolist()
        for f in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="cannot be"):
                f(b)
        with pytest.raises(TypeError, match="cannot be"):
            copy.copy(l)
        assert b.columns["id"].tolist() == want
        b.release()
        assert next(l).num_rows == 10


@pytest.mark.parametrize("kw,msg", [
    (dict(world=1.5), r"world=1.5: want an integer in 1..1048576"),
    (dict(world=2 ** 63), r"world=9223372036854775808: want 1..1048576"),
    (dict(world=0), r"world=0: want 1..1048576"),
    (dict(world=True), r"world=True: want an integer"),
    (dict(seq_len=0, output="tokens"), r"seq_len 0: want 1..16777216 \(leave the key out for the default\)"),
    (dict(memory_limit=-1), r"memory_limit -1: want 1..9223372036854775807 bytes"),
    (dict(seed=float("nan")), r"seed=nan: want an integer"),
    (dict(seed=-1), r"seed=-1: want 0..18446744073709551615"),
    (dict(epochs=0), r"epochs 0: want 1..2147483647"),
    (dict(batch_rows=-5), r"batch_rows -5: want 0..16777216"),
    (dict(buffer_rows=10 ** 12), r"buffer_rows 1000000000000: want 0..2147483647"),
    (dict(skip_bad_pages="yes"), r"skip_bad_pages='yes': want True or False"),
    (dict(shuffle=3), r"shuffle=3: want a string"),
    (dict(columns=5), r"columns=5: want a column name or a list"),
    (dict(prefetch=float("inf")), r"prefetch=inf: want an integer"),
    (dict(eos=2 ** 31), r"eos=2147483648: want -2147483648..2147483647"),
    (dict(unknown_key=float("nan")), r"config: Out of range float values are not JSON compliant"),
    (dict(keep_unevn=None), r'unknown field "keep_unevn"'),
    (dict(rank=1), r"rank given without world"),
])
def test_arguments_checked(corpus, kw, msg):
    with pytest.raises(pagefeed.ConfigError, match=msg):
        pagefeed.Loader(corpus, **kw)


def test_states_checked(corpus):
    with pagefeed.Loader(corpus, columns=["id"], batch_rows=10) as l:
        next(l).release()
        st = l.state_dict()
        for bad in (None, "state", [st]):
            with pytest.raises(pagefeed.StateError, match="want a dict"):
                l.load_state_dict(bad)
    for world, msg in ((2 ** 63, "new_world=9223372036854775808: want 1..1048576"), (1.5, "new_world=1.5"),
                       (0, "new_world=0: want 1..1048576"), (2 ** 40, "new_world=1099511627776")):
        with pytest.raises(pagefeed.ConfigError, match=msg):
            pagefeed.reshard([st], world)
    with pytest.raises(pagefeed.StateError, match=r"states\[0\] is NoneType"):
        pagefeed.reshard([None], 2)
    with pytest.raises(pagefeed.StateError, match="want a list"):
        pagefeed.reshard(st, 2)
    from pagefeed.torch import PagefeedDataset
    with pytest.raises(pagefeed.StateError, match="want a dict"):
        PagefeedDataset(corpus).load_state_dict(None)


def test_symlink_loop_names_the_file(tmp_path):
    """A symlink loop is refused by name, with its errno (not a generic
    Error)."""
    loop = tmp_path / "loop.parquet"
    os.symlink(loop, loop)
    with pytest.raises((pagefeed.ConfigError, OSError)) as e:
        pagefeed.Loader(str(loop))
    assert e.value.errno == errno.ELOOP and str(loop) in str(e.value)


def test_c_abi_checks_its_arguments(corpus):
    """NULL pointers, out-of-range integers and foreign handles are errors
    with a message, not crashes."""
    l = _lib.lib()
    n = ctypes.c_int64()
    for rc in (l.pf_len(1 << 40, None), l.pf_next(1, None), l.pf_state(1, 0, None), l.pf_epoch_len(1, 0, None),
               l.pf_open(None, 0, ctypes.byref(n)), l.pf_reshard(None, 1, None)):
        assert rc == -2 and b"NULL" in l.pf_last_error()
    with pagefeed.Loader(corpus, columns=["id"]) as ld:
        h = ld._handle()
        assert l.pf_next_wait(h, -2, ctypes.byref(ctypes.c_void_p())) == -2 and b"timeout_ms -2" in l.pf_last_error()
        assert l.pf_epoch_len(h, -1, ctypes.byref(n)) == -2 and b"epoch -1" in l.pf_last_error()
        assert l.pf_state(h, 6, ctypes.byref(ctypes.c_void_p())) == -2 and b"flags" in l.pf_last_error()
        assert l.pf_unread(h, 12345) == -2 and b"not the last batch" in l.pf_last_error()
        assert l.pf_len(h, ctypes.byref(n)) == 0 and n.value == len(ld) > 0


@pytest.mark.parametrize("batch_rows", [0, 32])
@pytest.mark.parametrize("rank", [0, 10 ** 6 - 1])
def test_world_beyond_data_is_refused(corpus, rank, batch_rows):
    """A world that would leave ranks without rows (a million ranks over
    the corpus) is refused when the loader opens, never a loader that
    delivers 0 rows."""
    with pytest.raises(pagefeed.ConfigError, match=r"1000000"):
        pagefeed.Loader(corpus, world=10 ** 6, rank=rank, batch_rows=batch_rows)
