"""The C ABI under random arguments and states: many calls with random
handles, integers, pointers (NULL or not), configs and states, in a process
of their own. Nothing may crash it, and every call must return a
documented status, with a message when it fails."""

import os

from conftest import run_py

FUZZ = r'''
import ctypes, json, os, random, sys
from pagefeed import _lib

corpus, tmp, calls, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(seed)
l = _lib.lib()
STATUS = {0, 1, 2, -1, -2, -3, -4, -5, -6, -7, -8}
OUT_OK = {0, 1, 2}
I64 = (-(1 << 63), (1 << 63) - 1)

# Paths of every kind but one that blocks an open (a FIFO).
text = os.path.join(tmp, "text.parquet")
with open(text, "w") as f:
    f.write("not parquet\n" * 100)
empty = os.path.join(tmp, "empty.parquet")
open(empty, "w").close()
loop = os.path.join(tmp, "loop.parquet")
if not os.path.lexists(loop):
    os.symlink(loop, loop)
PATHS = [corpus, corpus, corpus, os.path.join(corpus, "nope.parquet"), text, empty, loop, tmp, "", "/proc/self/status"]
KEYS = ["paths", "columns", "shuffle", "batch_pages", "batch_rows", "buffer_rows", "fetch", "prefetch", "seed",
        "epoch", "epochs", "rank", "world", "local_rank", "drop_last", "pad_last", "keep_uneven", "deterministic",
        "output", "tokens_dtype", "position_ids", "cu_seqlens", "loss_mask", "seq_len", "eos", "pad", "truncate",
        "memory_limit", "iodepth", "skip_bad_pages", "resume", "no_such_key"]


def integer():
    return rnd.choice([0, 1, -1, 2, 3, 7, 64, 1000, 1 << 16, 1 << 20, (1 << 20) + 1, 1 << 31, (1 << 31) - 1,
                       1 << 40, I64[1], I64[0], (1 << 64) - 1, 1 << 64, rnd.randrange(-10, 100),
                       rnd.randrange(I64[0], I64[1])])


def value(depth=0):
    k = rnd.randrange(10)
    if k < 4:
        return integer()
    if k == 4:
        return rnd.choice([1.5, -0.0, 1e300, 3.0])
    if k == 5:
        return rnd.choice(["page", "row", "rowgroup", "stream", "none", "tokens", "arrow", "int64", "x", ""])
    if k == 6:
        return rnd.choice([True, False, None])
    if k == 7 and depth < 2:
        return [value(depth + 1) for _ in range(rnd.randrange(3))]
    if k == 8 and depth < 2:
        return {rnd.choice(KEYS): value(depth + 1)}
    return rnd.choice(PATHS)


states = []  # states the library gave out, to mutate


def config():
    """JSON bytes: a plausible config, often mutated; sometimes not JSON."""
    c = {"paths": [corpus if rnd.random() < 0.7 else rnd.choice(PATHS)], "columns": [rnd.choice(["id", "input_ids", "text", "nope"])],
         "world": 1, "batch_rows": rnd.choice([0, 7, 64]), "memory_limit": 256 << 20}
    for _ in range(rnd.choice([0, 0, 0, 1, 2, 3])):
        c[rnd.choice(KEYS)] = value()
    if states and rnd.random() < 0.3:
        c["resume"] = mutate(rnd.choice(states))
    b = json.dumps(c).encode()
    r = rnd.random()
    if r < 0.05:
        b = b[:rnd.randrange(len(b) + 1)]
    elif r < 0.1:
        b = b.replace(b"1", b"NaN", 1)
    elif r < 0.12:
        b = bytes(rnd.randrange(256) for _ in range(rnd.randrange(40)))
    return b


def mutate(s):
    s = dict(s)
    for _ in range(rnd.randrange(3)):
        k = rnd.choice(list(s) + ["exclude", "pending", "cut", "end", "epoch_end", "extra"])
        s[k] = value() if rnd.random() < 0.7 else rnd.choice([[integer()], [{"p": integer(), "r": integer()}],
                                                                [{"p": integer(), "n": integer()}]])
    return s


loaders, batches = [], []  # open loader handles; (loader, batch handle) not released
n = 0


def check(name, rc):
    global n
    n += 1
    assert rc in STATUS, (name, rc)
    if rc < 0:
        msg = l.pf_last_error()
        assert msg, (name, rc, "no message")
        if rc == -8:
            assert l.pf_last_errno() > 0, (name, msg)
    return rc


def handle(pool):
    r = rnd.random()
    if pool and r < 0.7:
        return rnd.choice(pool)
    return rnd.choice([0, -1, 1, 2, 1 << 40, I64[0], I64[1], rnd.randrange(I64[0], I64[1])])


def call_open():
    h = ctypes.c_int64()
    b = config()
    if check("open", l.pf_open(b if rnd.random() > 0.01 else None, len(b), ctypes.byref(h) if rnd.random() > 0.01 else None)) == 0:
        loaders.append(h.value)


def call_next():
    h = handle(loaders)
    out = ctypes.c_void_p()
    # A loader whose batches are all held would block a wait without end:
    # those get short or invalid timeouts, unknown handles any.
    if h in loaders:
        timeout = rnd.choice([0, 0, 1, 5, -2, -(1 << 62)])
    else:
        timeout = rnd.choice([-1, 0, 5, I64[1], I64[0]])
    rc = check("next", l.pf_next_wait(h, timeout, ctypes.byref(out) if rnd.random() > 0.02 else None))
    if rc == 0:
        assert out.value
        d = _lib.PFBatch.from_address(out.value)
        assert d.rows >= 0 and (d.ncols == 0 or d.nchunks >= 0)
        batches.append((h, d.handle))
    elif rc != 0:
        assert not out.value


def call_release():
    if batches and rnd.random() < 0.8:
        h, b = batches.pop(rnd.randrange(len(batches)))
    else:
        b = handle([])
    check("release", l.pf_batch_release(b))


def call_unread():
    if batches and rnd.random() < 0.7:
        i = rnd.randrange(len(batches))
        h, b = batches[i]
        if rnd.random() < 0.2:
            h = handle(loaders)
        if check("unread", l.pf_unread(h, b)) == 0:
            batches.pop(i)
    else:
        check("unread", l.pf_unread(handle(loaders), handle([])))


def call_export():
    b = rnd.choice(batches)[1] if batches and rnd.random() < 0.8 else handle([])
    arr, sch = _lib.ArrowArray(), _lib.ArrowSchema()
    rc = check("export", l.pf_batch_export(b, rnd.choice([0, 0, 1, -1, 5, I64[1]]), rnd.choice([0, 0, 1, -1, 99, I64[0]]),
                                           ctypes.byref(arr) if rnd.random() > 0.05 else None,
                                           ctypes.byref(sch) if rnd.random() > 0.05 else None))
    if rc == 0:
        assert arr.release and sch.release
        ctypes.CFUNCTYPE(None, ctypes.POINTER(_lib.ArrowArray))(arr.release)(ctypes.byref(arr))
        ctypes.CFUNCTYPE(None, ctypes.POINTER(_lib.ArrowSchema))(sch.release)(ctypes.byref(sch))


def call_state():
    out = ctypes.c_void_p()
    rc = check("state", l.pf_state(handle(loaders), rnd.choice([0, 0, 1, 2, -1]), ctypes.byref(out) if rnd.random() > 0.02 else None))
    if rc == 0:
        s = json.loads(_lib.take_string(out))
        if "dataset" in s and len(states) < 50:
            states.append(s)


def call_reshard():
    if states and rnd.random() < 0.8:
        s = rnd.choice(states)
        k = s.get("world", 1) if isinstance(s.get("world"), int) and 0 < s.get("world") < 64 else 1
        ss = [dict(s, rank=r) for r in range(k)]
        if rnd.random() < 0.5:
            ss = [mutate(x) for x in ss]
        body = json.dumps(ss).encode()
    else:
        body = rnd.choice([b"[]", b"[{}]", b"null", b"[1,2]", b"{", config()])
    world = rnd.choice([1, 2, 3, 8, 1000, 0, -1, (1 << 20) + 1, I64[1], I64[0]])
    out = ctypes.c_void_p()
    if check("reshard", l.pf_reshard(body if rnd.random() > 0.02 else None, world, ctypes.byref(out))) == 0:
        json.loads(_lib.take_string(out))


def call_len():
    v = ctypes.c_int64()
    if rnd.random() < 0.5:
        rc = check("len", l.pf_len(handle(loaders), ctypes.byref(v) if rnd.random() > 0.02 else None))
    else:
        rc = check("epoch_len", l.pf_epoch_len(handle(loaders), rnd.choice([0, 1, 2, 7, -1, 1 << 40, I64[1], I64[0]]),
                                               ctypes.byref(v) if rnd.random() > 0.02 else None))
    if rc == 0:
        assert v.value >= 0


def call_close():
    if loaders and rnd.random() < 0.8:
        h = loaders.pop(rnd.randrange(len(loaders)))
    else:
        h = handle([])
    check("close", l.pf_close(h))


CALLS = [(call_open, 3), (call_next, 30), (call_release, 15), (call_unread, 5), (call_export, 8), (call_state, 8),
         (call_reshard, 5), (call_len, 10), (call_close, 2)]
weights = [w for _, w in CALLS]
while n < calls:
    if len(loaders) > 3:  # loaders hold memory and threads: a few at a time
        call_close()
    if not loaders and rnd.random() < 0.5:
        call_open()
    rnd.choices(CALLS, weights)[0][0]()
for h, b in batches:
    check("release", l.pf_batch_release(b))
for h in loaders:
    check("close", l.pf_close(h))
print(n)
'''


def test_fuzz_c_abi(corpus, tmp_path):
    calls = int(os.environ.get("PAGEFEED_FUZZ_CALLS", 12000))
    r = run_py(FUZZ, corpus, str(tmp_path), str(calls), "1", timeout=900)
    assert r.returncode == 0, "exit %d\n%s" % (r.returncode, r.stderr[-6000:])
    assert int(r.stdout.split()[-1]) >= calls
