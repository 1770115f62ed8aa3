#!/usr/bin/env python3
"""Benchmark: the Python binding against the Go loader, same data and config.

    make python && python3 python/bench.py [--data DIR] [--rounds 3] [--seconds 5] [--baseline DIR] [--workers N]

Alternates, in one run, the Go loader (python/gobench: Next, count,
Release) and, with tokens output, DataLoader(PagefeedDataset(...),
batch_size=None, num_workers=0) through pagefeed.torch.DataLoader (the
package's, as the README uses it) and through torch.utils.data.DataLoader
(torch's, which pays its own profiler label per item), each consuming as
a training loop does (the loop's variable holds a batch until the next
one comes). It reports tokens/s of each (medians over rounds) and their
ratio to the Go loader's, and the CPU time per batch of each process (all
its threads; the main process only where there are workers): on a shared
machine, tokens/s follow the CPU the other jobs leave, the CPU per batch
much less. Then the Python overhead per batch: p50 of next() + tensor
creation (torch.from_numpy) + release through pagefeed.Loader, minus the
Go loader's p50 per batch (the engine's time) on the same config.
--baseline DIR (a directory holding another build of the pagefeed
package, e.g. an earlier commit's python/ after make python) adds that
package's pagefeed.torch.DataLoader to every round, alternating, for a
before/after ratio. --workers N adds DataLoader with N worker processes,
through pagefeed.torch.DataLoader (each worker attaches its position to
its batches) and through torch's own (nothing attached), to show what the
checkpoint tracking costs.
The dataset is generated with bin/pagefeed gen when --data does not exist.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)


def run_go(gobench, a):
    r = subprocess.run([gobench, "-paths", a.data, "-seq-len", str(a.seq_len), "-batch-rows", str(a.batch_rows),
                        "-seconds", str(a.seconds)], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


PY = r"""
import json, resource, sys, time
import torch, torch.utils.data
import pagefeed.torch
from pagefeed.torch import PagefeedDataset
data, seq_len, batch_rows, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
workers, tracked = int(sys.argv[5]), sys.argv[6] == "1"
ds = PagefeedDataset(data, columns=["input_ids"], output="tokens", seq_len=seq_len, batch_rows=batch_rows,
                     epochs=1 << 20, world=1)
tokens = batches = 0
cls = pagefeed.torch.DataLoader if tracked else torch.utils.data.DataLoader
it = iter(cls(ds, batch_size=None, num_workers=workers))
next(it)  # the loader is open (index built, engine started), as gobench's clock starts
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
cpu0 = cpu()
start = time.perf_counter()
end = start + seconds
for item in it:
    tokens += item["tokens"].numel()
    batches += 1
    if time.perf_counter() >= end:
        break
el = time.perf_counter() - start
print(json.dumps({"tokens_per_s": tokens / el, "batches": batches, "cpu_ns_per_batch": (cpu() - cpu0) * 1e9 / batches}))
"""

OVERHEAD = r"""
import json, sys, time
import torch
import pagefeed
data, seq_len, batch_rows, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
l = pagefeed.Loader(data, columns=["input_ids"], output="tokens", seq_len=seq_len, batch_rows=batch_rows,
                    epochs=1 << 20, world=1)
lat = []
for i in range(n):
    t0 = time.perf_counter_ns()
    b = l.next()
    t = torch.from_numpy(b._tokens(False))
    del t
    b.release()
    lat.append(time.perf_counter_ns() - t0)
lat.sort()
print(json.dumps({"p50_ns": lat[len(lat) // 2], "batches": n}))
"""


def _load():
    """The 1-minute load average: the machine may be shared."""
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


def run_py(code, a, *extra, pkg=HERE):
    env = dict(os.environ, PYTHONPATH=pkg)
    r = subprocess.run([sys.executable, "-c", code, a.data, str(a.seq_len), str(a.batch_rows), *map(str, extra)],
                       capture_output=True, text=True, check=True, env=env, cwd=pkg)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="/tmp/pagefeed-bench-data")
    p.add_argument("--files", type=int, default=4)
    p.add_argument("--rows-per-file", type=int, default=20000)
    p.add_argument("--codec", default="zstd")
    p.add_argument("--seq-len", type=int, default=2048)
    p.add_argument("--batch-rows", type=int, default=8)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--overhead-batches", type=int, default=20000)
    p.add_argument("--baseline", help="a directory holding another build of the pagefeed package")
    p.add_argument("--workers", type=int, default=0, help="also DataLoader with this many workers")
    a = p.parse_args()
    if a.baseline and not os.path.exists(os.path.join(a.baseline, "pagefeed", "libpagefeed.so")):
        p.error("--baseline %s: no pagefeed/libpagefeed.so there" % a.baseline)
    bindir = os.path.join(ROOT, "bin")
    if shutil.which("go"):
        subprocess.run(["go", "build", "-o", bindir + "/", "./cmd/pagefeed", "./python/gobench"], cwd=ROOT, check=True)
    elif not all(os.path.exists(os.path.join(bindir, b)) for b in ("pagefeed", "gobench")):
        p.error("no go to build bin/pagefeed and bin/gobench with, and they are not there")
    if not os.path.exists(a.data):
        subprocess.run([os.path.join(bindir, "pagefeed"), "gen", "--out", a.data, "--files", str(a.files),
                        "--rows-per-file", str(a.rows_per_file), "--codec", a.codec, "--page-size", "65536",
                        "--quiet"], check=True)
    gobench = os.path.join(bindir, "gobench")
    print("python %s; data %s; tokens output, seq_len %d, batch_rows %d; %d rounds of %gs"
          % (sys.executable, a.data, a.seq_len, a.batch_rows, a.rounds, a.seconds))
    sides = [("pagefeed DataLoader", HERE, 0, True), ("torch DataLoader", HERE, 0, False)]
    if a.baseline:
        sides.append(("baseline DataLoader", a.baseline, 0, True))
    if a.workers:
        sides += [("%d workers, pagefeed DataLoader" % a.workers, HERE, a.workers, True),
                  ("%d workers, torch DataLoader" % a.workers, HERE, a.workers, False)]
    go, gocpu = [], []
    py, pycpu = {s[0]: [] for s in sides}, {s[0]: [] for s in sides}
    for r in range(a.rounds):
        g = run_go(gobench, a)
        go.append(g["tokens_per_s"])
        gocpu.append(g["cpu_ns_per_batch"])
        line = "round %d (load %s): go %.3g tokens/s (%d batches, %.0f us CPU/batch)" % (
            r + 1, _load(), g["tokens_per_s"], g["batches"], g["cpu_ns_per_batch"] / 1e3)
        for name, pkg, workers, tracked in sides:
            q = run_py(PY, a, a.seconds, workers, int(tracked), pkg=pkg)
            py[name].append(q["tokens_per_s"])
            pycpu[name].append(q["cpu_ns_per_batch"])
            line += "  %s %.3g (%d batches, %.0f us CPU/batch) ratio %.3f" % (
                name, q["tokens_per_s"], q["batches"], q["cpu_ns_per_batch"] / 1e3, q["tokens_per_s"] / g["tokens_per_s"])
        print(line)
    gm = statistics.median(go)
    for name, _, workers, _ in sides:
        pm = statistics.median(py[name])
        cpu = "" if workers else ", CPU/batch %.0f us against go's %.0f us (go/python %.3f)" % (
            statistics.median(pycpu[name]) / 1e3, statistics.median(gocpu) / 1e3,
            statistics.median(gc / pc for gc, pc in zip(gocpu, pycpu[name])))
        print("median: go %.3g tokens/s, %s %.3g tokens/s, ratio %.3f (of each round's: %.3f)%s%s"
              % (gm, name, pm, pm / gm, statistics.median(p / g for p, g in zip(py[name], go)), cpu,
                 " (target >= 0.9)" if name == "pagefeed DataLoader" else ""))
    if a.baseline:
        ratios = [n / b for n, b in zip(py["pagefeed DataLoader"], py["baseline DataLoader"])]
        print("python / baseline per round: %s, median %.3f" % (" ".join("%.3f" % x for x in ratios),
                                                                statistics.median(ratios)))
    # Overhead per batch: small batches, so the engine's share is small and
    # the difference is the binding's.
    small = argparse.Namespace(**vars(a))
    small.seq_len, small.batch_rows = 64, 1
    pkgs = [("python", HERE)] + ([("baseline", a.baseline)] if a.baseline else [])
    for r in range(a.rounds if a.baseline else 1):
        g = run_go(gobench, small)
        for name, pkg in pkgs:
            o = run_py(OVERHEAD, small, a.overhead_batches, pkg=pkg)
            print("per batch (seq_len 64, 1 row): %s next+from_numpy+release p50 %.1f us, go Next+Release p50 %.1f us, "
                  "overhead p50 %.1f us (target <= 20)"
                  % (name, o["p50_ns"] / 1e3, g["batch_p50_ns"] / 1e3, (o["p50_ns"] - g["batch_p50_ns"]) / 1e3))


if __name__ == "__main__":
    main()
