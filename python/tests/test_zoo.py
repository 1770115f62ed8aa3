"""The Python binding at its defaults over files of the writer zoo.

The zoo (internal/zoo in the Go module) holds Parquet files written by
DuckDB, polars, arrow-rs, hyparquet-writer, parquetjs and arrow-go, and
DuckDB's reading of each (<name>.ref.jsonl). Its directory comes from
$PAGEFEED_ZOO, else from `go run ./internal/zoo/cmd/zoo dir`, which
writes it into the user's cache on first use (minutes) and prints it.
Tests skip only where node (or go, to find the zoo) is not installed.

Cases failing today are marked xfail(strict=True): one that starts to
pass fails the run, so whoever fixes it removes the mark.
"""

import hashlib
import json
import math
import os
import shutil
import subprocess

import numpy as np
import pytest

import pagefeed
from conftest import ROOT, run_py

# A few files: list.element and list.item leaves, one page per column
# chunk (DuckDB, arrow-rs at its defaults), an offset index whose pages all
# claim row 0 (parquetjs), V2 pages and 20-300 KB binaries (hyparquet).
FILES = ["duckdb-rowgroup1000", "arrowrs-defaults", "parquetjs-v1-list", "hyparquet-defaults", "hyparquet-images"]

COLUMNS = {"tokens": ["id", "input_ids", "text", "score"], "images": ["id", "image", "caption"]}

# name -> (reason, exception): cases that fail today (the Go zoo tests
# keep the same to-do list). strict: a case that passes fails the run.
XFAIL = {}


@pytest.fixture(scope="session")
def zoo():
    d = os.environ.get("PAGEFEED_ZOO")
    if not d:
        if shutil.which("node") is None:
            pytest.skip("the writer zoo needs node (apt-get install nodejs npm)")
        if shutil.which("go") is None:
            pytest.skip("the writer zoo is built by go run ./internal/zoo/cmd/zoo: go is not installed")
        p = subprocess.run(["go", "run", "./internal/zoo/cmd/zoo", "dir"], cwd=ROOT, capture_output=True, text=True,
                           timeout=1800)
        if p.returncode == 3:
            pytest.skip(p.stderr.strip())
        assert p.returncode == 0, p.stderr[-4000:]
        d = p.stdout.strip()
    with open(os.path.join(d, "plan.json")) as f:
        plan = json.load(f)
    return {x["name"]: dict(x, path=os.path.join(d, x["file"]), refpath=os.path.join(d, x["ref"])) for x in plan}


def reference(fx):
    """DuckDB's reading of a fixture: id -> {column: value}, values as
    Python has them (a double from its exact %a text, a binary as
    (length, sha256 hex))."""
    out = {}
    with open(fx["refpath"]) as f:
        for line in f:
            row = json.loads(line)
            for c, v in row.items():
                if v is None:
                    continue
                if c == "score":
                    row[c] = float.fromhex(v) if v not in ("nan", "-nan") else math.nan
                elif c == "image":
                    n, h = v.split(":")
                    row[c] = (int(n), h)
            out[int(row["id"])] = row
    return out


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def rows_of(batch, cols):
    """The batch's rows as dicts of Python values, in the reference's forms."""
    n = batch.num_rows
    out = [dict() for _ in range(n)]
    for c in cols:
        a = batch.columns[c]
        if isinstance(a, pagefeed.ListArray):
            vals = [None if v is None else [int(x) for x in v] for v in a.to_pylist()]
        elif isinstance(a, pagefeed.StringArray):
            vals = a.to_pylist()
            if a.binary:
                vals = [None if v is None else (len(v), hashlib.sha256(v).hexdigest()) for v in vals]
        elif isinstance(a, np.ma.MaskedArray):
            vals = [None if m else v.item() for v, m in zip(a.data, np.ma.getmaskarray(a))]
        else:
            vals = [v.item() for v in a]
        assert len(vals) == n, (c, len(vals), n)
        for i, v in enumerate(vals):
            out[i][c] = v
    return out


def check_all(fixtures, cols):
    ref = {}
    for fx in fixtures:
        ref.update(reference(fx))
    seen = set()
    with pagefeed.Loader([fx["path"] for fx in fixtures], columns=cols) as l:
        for b in l:
            for row in rows_of(b, cols):
                rid = row["id"]
                assert rid in ref, "id %r is in no file" % rid
                assert rid not in seen, "id %d delivered twice" % rid
                seen.add(rid)
                for c in cols:
                    want = ref[rid].get(c)
                    assert same(row[c], want), "id %d column %s: got %.200r, DuckDB reads %.200r" % (rid, c, row[c], want)
            b.release()
    missing = set(ref) - seen
    assert not missing, "%d of %d rows never delivered" % (len(missing), len(ref))


def cases():
    for name in FILES + ["mix-tokens"]:
        marks = []
        if name in XFAIL:
            reason, exc = XFAIL[name]
            marks = [pytest.mark.xfail(strict=True, reason=reason, raises=exc)]
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", cases())
def test_zoo_at_defaults(zoo, name):
    """Every row once, with exactly DuckDB's values, every column."""
    if name == "mix-tokens":
        # one file of every writer, as the Go tests' zoo.Mix picks them
        fixtures, writers = [], set()
        for fx in zoo.values():
            if fx["set"] == "tokens" and fx["writer"] not in writers and fx["rows"] <= 20000:
                writers.add(fx["writer"])
                fixtures.append(fx)
    else:
        fixtures = [zoo[name]]
    check_all(fixtures, COLUMNS[fixtures[0]["set"]])


def test_zoo_mixture_at_defaults(zoo):
    """Loader(sources=[...]) over two writers' files (DuckDB's one page
    per column chunk and list.element leaves, arrow-rs's list.item leaves
    and dictionaries), nothing set but the columns: the mixture's epoch
    (the sum of the sources, no weights) gives each source's rows once,
    with exactly DuckDB's values; stats() counts each source's rows and
    says the read mode chosen over both sources' files."""
    fixtures = [zoo["duckdb-rowgroup1000"], zoo["arrowrs-defaults"]]
    cols = COLUMNS["tokens"]
    ref = {}
    for fx in fixtures:
        ref.update(reference(fx))
    srcs = [{"paths": [fx["path"]], "name": fx["name"]} for fx in fixtures]
    seen = set()
    with pagefeed.Loader(sources=srcs, columns=cols) as l:
        for b in l:
            for row in rows_of(b, cols):
                rid = row["id"]
                assert rid in ref, "id %r is in neither source" % rid
                assert rid not in seen, "id %d delivered twice" % rid
                seen.add(rid)
                for c in cols:
                    want = ref[rid].get(c)
                    assert same(row[c], want), "id %d column %s: got %.200r, DuckDB reads %.200r" % (rid, c, row[c], want)
            b.release()
        st = l.stats()
    missing = set(ref) - seen
    assert not missing, "%d of %d rows never delivered" % (len(missing), len(ref))
    assert [(s["Name"], s["Rows"]) for s in st["Sources"]] == [(fx["name"], fx["rows"]) for fx in fixtures], st["Sources"]
    assert st["IOMode"] and st["DirectFiles"] + st["BufferedFiles"] == 2, st
    assert all(s["IOMode"] and s["DirectFiles"] + s["BufferedFiles"] == 1 for s in st["Sources"]), st["Sources"]


ZOO_RANK = """
import json, sys, numpy as np, torch, pagefeed.torch
from pagefeed.torch import PagefeedDataset
ds = PagefeedDataset(json.loads(sys.argv[1]), columns=["id"])  # the defaults: page batches, page shuffle
dl = pagefeed.torch.DataLoader(ds, batch_size=None, num_workers=2)
n = len(ds)  # before the workers fork (a child process answers it)
ids, steps = [], 0
for item in dl:
    ids.extend(item["id"].tolist())
    steps += 1
print(json.dumps({"ids": ids, "steps": steps, "len": n}))
"""


def two_ranks_one_file_per_writer(zoo, script):
    """Runs script (printing ids, steps and len as ZOO_RANK does) on a
    file of every writer's token set, as rank 0 and rank 1 of 2 (RANK and
    WORLD_SIZE, as torchrun sets them). Checks that each rank takes len
    steps, both the same, no row twice and only ids a file holds; returns
    the files, their rows by id, the ids delivered and each rank's steps."""
    fixtures, writers = [], set()
    for fx in zoo.values():
        if fx["set"] == "tokens" and fx["writer"] not in writers and fx["rows"] <= 20000:
            writers.add(fx["writer"])
            fixtures.append(fx)
    assert len(writers) >= 5, writers
    ref = {}
    for fx in fixtures:
        ref.update(reference(fx))
    paths = json.dumps([fx["path"] for fx in fixtures])
    seen, steps = [], []
    for rank in range(2):
        r = run_py(script, paths, timeout=300, env={"RANK": str(rank), "WORLD_SIZE": "2"})
        assert r.returncode == 0, r.stderr[-4000:]
        out = json.loads(r.stdout)
        assert out["steps"] == out["len"], (rank, out["steps"], out["len"])
        steps.append(out["steps"])
        seen.extend(out["ids"])
    assert steps[0] == steps[1], steps
    assert len(seen) == len(set(seen)), "%d rows delivered twice" % (len(seen) - len(set(seen)))
    assert set(seen) <= set(ref), "ids in no file: %r" % sorted(set(seen) - set(ref))[:5]
    return fixtures, ref, seen, steps


def test_zoo_mix_two_ranks_dataloader_workers(zoo):
    """A file of every writer, at the defaults, over 2 ranks (RANK and
    WORLD_SIZE, as torchrun sets them) each with 2 DataLoader workers
    (pagefeed.torch.DataLoader):
    every rank takes len(ds) steps, the same on both, no row comes twice,
    and fewer rows than the 4 shards are left out."""
    fixtures, ref, seen, steps = two_ranks_one_file_per_writer(zoo, ZOO_RANK)
    missing = len(ref) - len(set(seen))
    assert missing < 4, "%d of %d rows left out" % (missing, len(ref))


ZOO_MIX_RANK = """
import json, sys, numpy as np, torch, pagefeed.torch
from pagefeed.torch import PagefeedDataset
ds = PagefeedDataset(sources=[{"paths": [p]} for p in json.loads(sys.argv[1])], columns=["id"])  # the defaults otherwise
dl = pagefeed.torch.DataLoader(ds, batch_size=None, num_workers=2)
n = len(ds)  # before the workers fork (a child process answers it)
ids, steps = [], 0
for item in dl:
    ids.extend(item["id"].tolist())
    steps += 1
print(json.dumps({"ids": ids, "steps": steps, "len": n}))
"""


def test_zoo_mixture_two_ranks_dataloader_workers(zoo):
    """A mixture of one source per writer (no weights: each source once
    per epoch), at the defaults, over 2 ranks each with 2 DataLoader
    workers (pagefeed.torch.DataLoader): every rank takes len(ds) steps,
    the same on both, no row comes twice, every row is a file's, and what
    is left out is less than the 4 shards' last batches and each source's
    tail (fewer than 4 rows each)."""
    fixtures, ref, seen, steps = two_ranks_one_file_per_writer(zoo, ZOO_MIX_RANK)
    assert steps[0] > 0, steps
    missing = len(ref) - len(set(seen))
    assert missing < 4 * 1024 + 4 * len(fixtures), "%d of %d rows left out" % (missing, len(ref))
