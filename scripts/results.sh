#!/usr/bin/env bash
# `make results`: the benchmarks this machine can run, as one table in
# docs/results.md (or $OUT), stamped with the date, the commit and the
# machine. Every ratio compares two runs made here, by this script:
#   - raw reads: pagebench against fio (`pagebench --compare-fio`, both at
#     their defaults, then both given fio's best read flags, alternating)
#     when fio is installed;
#   - the loader against its baselines on a generated dataset
#     (`pagebench --parquet --compare`);
#   - the page index: a build over 1,000 generated files and a sidecar
#     load (`go test -bench` in index/).
#   - several columns against one, deterministic against unordered
#     assembly (pagebench --parquet, alternating);
#   - the Python binding against the Go loader (python/bench.py) where
#     an interpreter with numpy and torch is installed;
#   - the read modes (auto, O_DIRECT, buffered, a memory map) where a
#     ~1 GiB dataset fits in memory with the page cache warm, and inside a
#     memory cgroup a quarter of its size (caches dropped before each
#     run), with fio's random reads at the dataset's read sizes and the
#     loader's depth (`pagebench --regimes`); rows/s against dataset size
#     ÷ memory, the chart docs/img/rows_by_memory.svg (`pagebench
#     --sweep`); the Python binding in both regimes. Each figure carries
#     the load average (1 minute) around its runs: the machine is shared.
# Knobs (environment): RUNTIME (loader, seconds per case, default 5),
# PAIRS and RAW_RUNTIME and SIZE (raw, default 2, 3s, 1g), FILES and ROWS
# (dataset, default 8 files of 20000 rows), BIG_FILES and BIG_ROWS (the
# regimes' dataset, default 16 files of 45000 rows, about 1 GiB),
# SWEEP (ratios, default 1/4,1/2,1,2,4) and SWEEP_RUNTIME (default 4),
# REGIME_ROUNDS (alternating rounds of the regimes and fio, default 5),
# DIR (scratch, default out/results, removed at the end), OUT.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME=${RUNTIME:-5}
PAIRS=${PAIRS:-2}
RAW_RUNTIME=${RAW_RUNTIME:-3s}
SIZE=${SIZE:-1g}
FILES=${FILES:-8}
ROWS=${ROWS:-20000}
BIG_FILES=${BIG_FILES:-16}
BIG_ROWS=${BIG_ROWS:-45000}
SWEEP=${SWEEP:-1/4,1/2,1,2,4}
SWEEP_RUNTIME=${SWEEP_RUNTIME:-4}
REGIME_ROUNDS=${REGIME_ROUNDS:-5}
started=$(date +%s)
# The commit measured, stamped before this script writes its charts.
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit (with uncommitted changes)"; fi
DIR=${DIR:-$PWD/out/results}
OUT=${OUT:-docs/results.md}

mkdir -p bin "$DIR"
trap 'rm -rf "$DIR"' EXIT
go build -o bin/ ./cmd/pagefeed ./cmd/pagebench

rows=$(mktemp)
best=""
trap 'rm -rf "$DIR" "$rows"' EXIT
row() { printf '| %s | %s | %s | %s |\n' "$@" >>"$rows"; }

# Raw reads against fio. compare-fio prints, per case and mode, lines of
# "case  mode  metric  fio  pagebench  ratio" (case and mode only on the
# first line), the median of the pairs' ratios, then the flags both tools
# ran with in the "best" mode.
if command -v fio >/dev/null 2>&1; then
	echo "results.sh: raw reads, pagebench vs fio ($PAIRS pairs x $RAW_RUNTIME, $SIZE file)" >&2
	cf=$(mktemp)
	bin/pagebench --compare-fio --pairs "$PAIRS" --runtime "$RAW_RUNTIME" --size "$SIZE" --dir "$DIR" 2>/dev/null >"$cf" || true
	awk -F'  +' '
		$1 == "case" { next }
		NF >= 6 && $1 != "" { c = $1; m = $2; $0 = "  " $3 "  " $4 "  " $5 "  " $6 }
		c ~ /psync/ { next }
		NF >= 5 && (($2 == "IOPS" && c ~ /^4k/) || ($2 == "BW" && c ~ /^1m/) || $2 ~ /^CPU/) {
			printf "| raw %s, %s: %s | %s | %s (fio) | %s |\n", c, m, $2, $4, $3, $5
		}
		NF == 3 && $2 ~ /median of pairs/ { printf "| raw %s, %s: %s | | | %s |\n", c, m, $2, $3 }' "$cf" >>"$rows"
	best=$(grep -m1 ', best: both ran with' "$cf" | sed 's/.*both ran with //')
	rm -f "$cf"
else
	row "raw reads against fio" "not run: fio is not installed (\`make bench\` installs it)" "" ""
fi

# The loader against its baselines, on a dataset generated here.
data="$DIR/corpus"
echo "results.sh: generating $FILES files of $ROWS rows in $data" >&2
bin/pagefeed gen --out "$data" --files "$FILES" --rows-per-file "$ROWS" --codec none \
	--page-size 8192 --row-group-rows $((ROWS / 4)) --page-version 1 --page-index on \
	--dictionary off --seed 1 --parallel 2 --quiet >/dev/null
size=$(du -sh "$data" | cut -f1)
echo "results.sh: loader vs baselines, $RUNTIME s each" >&2
bin/pagebench --parquet="$data" --column=input_ids --compare --regimes=none --runtime="$RUNTIME" 2>/dev/null |
	awk -F'  +' -v size="$size" '
		$2 == "case" { next }
		NF >= 9 && first == "" { first = $2; rps = $4; p99 = $7
			printf "| loader (%s, %s): batch p99 | %s | | |\n", first, size, p99; next }
		NF >= 9 { printf "| loader rows/s: pagefeed against %s | %s | %s | %s |\n", $2, rps, $4, $9 }' >>"$rows"

# Several columns: id, input_ids and text against input_ids alone, one
# two epochs each, alternating PAIRS times; read amplification is the disk bytes
# of the three-column epoch over the on-disk bytes of those columns.
jq_py() { python3 -c "import json,sys; j=json.load(sys.stdin)['jobs'][0]; print($1)"; }
echo "results.sh: three columns against input_ids alone ($PAIRS pairs, two epochs each)" >&2
colbytes=$(bin/pagefeed index "$data" --column id,input_ids,text --json --no-sidecar 2>/dev/null |
	python3 -c "import json,sys; print(sum(c['bytes'] for c in json.load(sys.stdin)['columns']))")
one=() three=() amp=()
for _ in $(seq "$PAIRS"); do
	one+=("$(bin/pagebench --parquet="$data" --column=input_ids --loops=2 --output-format=json 2>/dev/null | jq_py "j['rows_per_sec']")")
	out=$(bin/pagebench --parquet="$data" --column=id,input_ids,text --loops=2 --output-format=json 2>/dev/null)
	three+=("$(jq_py "j['rows_per_sec']" <<<"$out")")
	amp+=("$(jq_py "j['read']['io_bytes'] / (2 * $colbytes)" <<<"$out")")
done
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
m1=$(med "${one[@]}") m3=$(med "${three[@]}")
row "loader rows/s, page shuffle: id, input_ids, text against input_ids alone (two epochs, median of $PAIRS pairs)" \
	"$(printf '%.0f' "$m3")" "$(printf '%.0f' "$m1")" "$(awk -v a="$m3" -v b="$m1" 'BEGIN { printf "%.2fx", a / b }')"
row "loader read amplification, three columns: disk bytes ÷ the columns' bytes on disk (median)" \
	"$(printf '%.2f' "$(med "${amp[@]}")")" "" ""

# Deterministic assembly (batches in plan order) against unordered.
echo "results.sh: deterministic against unordered assembly ($PAIRS pairs)" >&2
un=() de=()
for _ in $(seq "$PAIRS"); do
	un+=("$(bin/pagebench --parquet="$data" --column=input_ids --runtime="$RUNTIME" --output-format=json 2>/dev/null | jq_py "j['read']['iops']")")
	de+=("$(bin/pagebench --parquet="$data" --column=input_ids --runtime="$RUNTIME" --deterministic --output-format=json 2>/dev/null | jq_py "j['read']['iops']")")
done
mu=$(med "${un[@]}") md=$(med "${de[@]}")
row "loader pages/s: deterministic against unordered assembly (batch 64, 8 KiB pages, median)" \
	"$(printf '%.0f' "$md")" "$(printf '%.0f' "$mu")" "$(awk -v a="$md" -v b="$mu" 'BEGIN { printf "%.2fx", a / b }')"

# The Python binding against the Go loader (python/bench.py), where an
# interpreter with numpy and torch is installed (make deps).
# pymedian prints the Go loader's tokens/s, a DataLoader's and their
# ratio from python/bench.py's "median: go G tokens/s, SIDE DataLoader P
# tokens/s, ratio R" line; SIDE ($2) is pagefeed (pagefeed.torch.DataLoader,
# the default) or torch (torch.utils.data.DataLoader).
pymedian() {
	sed -n "s/^median: go \([^ ]*\) tokens\/s, ${2:-pagefeed} DataLoader \([^ ]*\) tokens\/s, ratio \([0-9.]*\).*/\1 \2 \3/p" <<<"$1" | head -1
}
PY=$(for p in /usr/bin/python3 python3; do if $p -c 'import numpy, torch' >/dev/null 2>&1; then command -v $p; break; fi; done)
if [ -n "$PY" ]; then
	echo "results.sh: the Python binding against the Go loader ($PY)" >&2
	make -s python >/dev/null
	pyout=$("$PY" python/bench.py --rounds "$((PAIRS + 1))" --seconds 3 --data "$DIR/pycorpus" 2>/dev/null)
	read -r gm pm ratio <<<"$(pymedian "$pyout")"
	row "tokens/s: pagefeed.torch.DataLoader(PagefeedDataset) against the Go loader (tokens output, median)" "$pm" "$gm" "${ratio}x"
	read -r gm pm ratio <<<"$(pymedian "$pyout" torch)"
	row "tokens/s: torch.utils.data.DataLoader(PagefeedDataset) against the Go loader (tokens output, median)" "$pm" "$gm" "${ratio}x"
	ov=$(awk '/^per batch/ { for (i = 1; i <= NF; i++) if ($i == "overhead") { print $(i+2), $(i+3); exit } }' <<<"$pyout")
	row "Python overhead per batch: next + torch.from_numpy + release, p50, less the Go loader's" "${ov:-?}" "" ""
else
	row "the Python binding" "not run: no python3 imports numpy and torch (\`make deps\`)" "" ""
fi

# The read modes in both memory regimes, on a dataset of about 1 GiB:
# fits (page cache warm, in this process) and larger than memory (every
# contender inside a memory cgroup of a quarter of the dataset, the page
# cache dropped before each run), with fio at the dataset's read sizes
# and the loader's depth in the same cgroup; then rows/s against dataset
# ÷ memory (the chart). A case that cannot run here (no cgroup, no fio,
# drop_caches refused) is a row that says so.
big="$DIR/big"
echo "results.sh: generating the regimes' dataset ($BIG_FILES files of $BIG_ROWS rows) in $big" >&2
bin/pagefeed gen --out "$big" --files "$BIG_FILES" --rows-per-file "$BIG_ROWS" --codec none \
	--page-size 8192 --row-group-rows $((BIG_ROWS / 4)) --page-version 1 --page-index on \
	--dictionary off --seed 2 --parallel 2 --quiet >/dev/null
echo "results.sh: read modes where the dataset fits and where it does not ($RUNTIME s each)" >&2
rg=$(mktemp) sw=$(mktemp) iorows=$(mktemp)
trap 'rm -rf "$DIR" "$rows" "$rg" "$sw" "$iorows"' EXIT
bin/pagebench --parquet="$big" --column=input_ids --regimes=fits,larger,device --runtime="$RUNTIME" \
	--rounds="$REGIME_ROUNDS" --output-format=json >"$rg" 2>/dev/null || echo '{}' >"$rg"
echo "results.sh: rows/s against dataset ÷ memory ($SWEEP; $SWEEP_RUNTIME s each)" >&2
mkdir -p docs/img
bin/pagebench --parquet="$big" --column=input_ids --sweep="$SWEEP" --runtime="$SWEEP_RUNTIME" \
	--charts=docs/img --output-format=json >"$sw" 2>/dev/null || echo '{}' >"$sw"
python3 - "$rg" >>"$iorows" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except ValueError:
    r = {}
def mib(b): return "%.0f MiB" % (b / 2**20) if b < 2**30 else "%.1f GiB" % (b / 2**30)
d = r.get("dataset", {})
size = mib(d.get("projected_bytes", 0))
def row(what, a, b, ratio): print("| %s | %s | %s | %s |" % (what, a, b, ratio))
def rows(reg, where):
    if not reg:
        row("read modes, %s" % where, "not run: pagebench --regimes failed", "", ""); return
    if reg.get("skipped"):
        row("read modes, %s" % where, "not run: " + reg["skipped"], "", ""); return
    rs = {x["short"]: x for x in reg["rows"]}
    load = reg.get("load", "?")
    mm = rs.get("mmap", {}).get("rows_per_sec", 0)
    best = max(rs.get("direct", {}).get("rows_per_sec", 0), rs.get("buffered", {}).get("rows_per_sec", 0))
    for s in ("auto", "direct", "buffered"):
        x = rs.get(s)
        if not x: continue
        if x.get("error"):
            row("rows/s, %s: %s" % (where, x["label"]), "failed: " + x["error"], "", ""); continue
        v = x["rows_per_sec"]
        # The ratio: the median over rounds of runs in the same round
        # (vs_mmap), where pagebench gives it; else of the medians.
        vm = x.get("vs_mmap") or (v / mm if mm else 0)
        how = "median of %d rounds' ratios" % x["runs"] if x.get("vs_mmap") else "median of %d runs" % x["runs"]
        row("rows/s, %s: %s (read %s) against the mmap page shuffle (%s, load %s)" % (where, x["label"], x["io_mode"], how, load),
            "%.0f" % v, "%.0f" % mm, "%.2fx" % vm if vm else "-")
    ax = rs.get("auto", {})
    a = ax.get("rows_per_sec", 0)
    vb = ax.get("vs_best") or (a / best if best else 0)
    row("rows/s, %s: auto against the better of O_DIRECT and buffered (%s, load %s)" % (where, "median of rounds' ratios" if ax.get("vs_best") else "medians", load), "%.0f" % a, "%.0f" % best, "%.2fx" % vb if vb else "-")
    for n in reg.get("notes") or []:
        row("note, %s" % where, n, "", "")
fits, larger = r.get("fits"), r.get("larger")
rows(fits, "%s dataset fits, page cache warm" % size)
if larger and not larger.get("skipped"):
    where = "%s dataset in a %s memory cgroup (%.1fx), caches dropped" % (size, mib(larger["memory_bytes"]), d["projected_bytes"] / larger["memory_bytes"])
else:
    where = "dataset larger than memory"
rows(larger, where)
dv = r.get("device")
if dv:
    if dv.get("skipped"):
        row("device limit: fio random reads at the dataset's read sizes and depth", "not run: " + dv["skipped"], "", "")
    else:
        mix = " ".join(a for a in dv["fio_args"] if a.startswith("--bssplit"))
        fio = {f["iodepth"]: f for f in dv.get("fio_runs") or []}
        depth0 = dv["fio_runs"][0]["iodepth"]
        for l in dv.get("loaders") or []:
            if l.get("error"):
                row("read MB/s, %s: %s against fio" % (where, l["label"]), "failed: " + l["error"], "", ""); continue
            how = "median of %d rounds' ratios, loader and fio alternating, " % l["rounds"] if l.get("rounds") else ""
            row("read MB/s, %s: %s against fio randread O_DIRECT %s --iodepth=%d in the same cgroup (%sload %s)" % (where, l["label"], mix, depth0, how, dv.get("load", "?")),
                "%.0f" % (l["read_bytes_per_sec"] / 1e6), "%.0f (fio)" % (dv["fio_bytes_per_sec"] / 1e6), "%.2fx" % l["ratio_to_fio"])
            k = int((l.get("iodepth_kept") or 0) + 0.5)
            if l.get("ratio_to_fio_same_depth") and k in fio:
                row("read MB/s, %s: %s against fio at the depth the loader kept in the kernel, --iodepth=%d (%sload %s)" % (where, l["label"], k, how, dv.get("load", "?")),
                    "%.0f" % (l["read_bytes_per_sec"] / 1e6), "%.0f (fio)" % (fio[k]["bytes_per_sec"] / 1e6), "%.2fx" % l["ratio_to_fio_same_depth"])
PY
cat "$iorows" >>"$rows"

# The Python binding in both regimes, on the same dataset: DataLoader
# against the Go loader, both at their defaults (auto), both in the cgroup
# for the larger one.
if [ -n "$PY" ]; then
	pyrow() { # label, then bench.py's output, then the side (pagefeed or torch)
		read -r gm pm ratio <<<"$(pymedian "$2" "${3:-}")"
		if [ -n "$ratio" ]; then row "$1" "$pm" "$gm" "${ratio}x"; else row "$1" "not run: python/bench.py failed" "" ""; fi
	}
	l0=$(cut -d' ' -f1 /proc/loadavg)
	pyout=$("$PY" python/bench.py --rounds "$PAIRS" --seconds 3 --overhead-batches 1 --data "$big" 2>/dev/null || true)
	l1=$(cut -d' ' -f1 /proc/loadavg)
	pyrow "tokens/s, dataset fits: pagefeed.torch.DataLoader(PagefeedDataset) against the Go loader (load $l0 → $l1)" "$pyout"
	pyrow "tokens/s, dataset fits: torch.utils.data.DataLoader(PagefeedDataset) against the Go loader (load $l0 → $l1)" "$pyout" torch
	# A third of the dataset, not a quarter: torch alone holds ~230 MiB
	# (half of it its libraries' pages), which a quarter would leave
	# thrashing its own code; the dataset is still 3x the memory.
	mem=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('dataset', {}).get('projected_bytes', 0) // 3)" "$rg" 2>/dev/null || echo 0)
	if [ "${mem:-0}" -gt 0 ] && grep -q '"larger"' "$rg" && ! python3 -c "import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))['larger'].get('skipped') else 1)" "$rg"; then
		l0=$(cut -d' ' -f1 /proc/loadavg)
		pyout=$(bin/pagebench --in-cgroup="$mem" --drop-caches -- "$PY" python/bench.py --rounds "$PAIRS" --seconds 3 --overhead-batches 1 --data "$big" 2>/dev/null || true)
		l1=$(cut -d' ' -f1 /proc/loadavg)
		pyrow "tokens/s, dataset 3x a $((mem >> 20)) MiB memory cgroup: pagefeed.torch.DataLoader(PagefeedDataset) against the Go loader, both inside (load $l0 → $l1)" "$pyout"
		pyrow "tokens/s, dataset 3x a $((mem >> 20)) MiB memory cgroup: torch.utils.data.DataLoader(PagefeedDataset) against the Go loader, both inside (load $l0 → $l1)" "$pyout" torch
	else
		row "tokens/s, dataset larger than memory: the Python binding" "not run: no memory cgroup could be made here" "" ""
	fi
fi

# The page index: 1,000 files, 1.07M pages.
echo "results.sh: index build and sidecar load (go test -bench, 3 runs)" >&2
go test -run '^$' -bench '^(BenchmarkBuild|BenchmarkSidecarLoad)$' -benchtime 3x ./index 2>/dev/null |
	awk '
		/^Benchmark(Build\/default|SidecarLoad)-/ {
			for (i = 1; i <= NF; i++) { if ($i == "ms/build") ms = $(i-1); if ($i == "B/page") bpp = $(i-1); if ($i == "pages") pages = $(i-1) }
			what = ($1 ~ /^BenchmarkSidecarLoad/) ? "sidecar load" : "build"
			printf "| index of 1,000 files (%s pages, page cache warm): %s | %s ms, %s B/page | | |\n", pages, what, ms, bpp
		}' >>"$rows"

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null || true)
fsinfo=$(df -T "$PWD" 2>/dev/null | awk 'NR == 2 { print $2 " on " $1 }')
{
	echo "# Results"
	echo
	echo "Written by \`scripts/results.sh\` (\`make results\`), which replaces this"
	echo "file. Each ratio compares two runs made by that script on the machine"
	echo "below, one after the other; figures from other machines or runs are"
	echo "not comparable. How to run each benchmark: [benchmarks.md](benchmarks.md)."
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "- commit: $commit"
	echo "- machine: $(uname -sr), $(nproc) CPUs${cpu:+ ($cpu)}${mem:+, $mem}; scratch file system ${fsinfo:-unknown}"
	echo "- $(go version | cut -d' ' -f3-)$(command -v fio >/dev/null 2>&1 && echo ", $(fio --version)")"
	echo
	echo "| what | pagefeed | baseline | pagefeed ÷ baseline |"
	echo "| --- | --- | --- | --- |"
	cat "$rows"
	echo
	echo "Raw rows (\`pagebench --compare-fio\`): \"defaults\" runs each tool at its"
	echo "own defaults (they differ: fio submits one read per \`io_uring_enter\`,"
	echo "pagebench adapts its submission chunk); \"best\" gives both the same flags${best:+: \`$best\`}."
	echo "CPU per I/O is lower-better, so a ratio below 1 favours pagebench there: \"CPU/IO\" is"
	echo "what each tool reports (fio its job processes, pagebench its whole process),"
	echo "\"whole command\" every process and thread of each run, measured alike. Loader"
	echo "rows: the first case is pagefeed's page shuffle with unordered fetch;"
	echo "the ratio is its rows/s over the baseline's."
	echo
	echo "Read modes: \"auto\" is the loader at its defaults (it reads buffered what"
	echo "stays in the page cache it can hold and O_DIRECT the rest); the mmap page"
	echo "shuffle copies each page out of memory-mapped files, as a map-style"
	echo "loader over a memory map does. Larger than memory, every contender runs"
	echo "in its own process inside the memory cgroup \`pagebench --regimes\` makes."
	echo
	echo "## Rows/s against dataset size ÷ memory"
	echo
	python3 - "$sw" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except ValueError:
    r = {}
if not r.get("ratios"):
    print("Not run: `pagebench --sweep` failed or could not make a memory cgroup here.")
    sys.exit()
def frac(x): return "1/%d" % round(1 / x) if x < 1 else "%g" % x
def mib(b): return "%.0f MiB" % (b / 2**20)
print("`pagebench --sweep`: %s of projected pages; for each ratio a memory cgroup of that share of it, the page cache dropped, the dataset read once inside the cgroup (what a job's earlier epochs leave cached), then %g s of each contender; load %s." % (mib(r["dataset"]["projected_bytes"]), r["runtime_ns"] / 1e9, r["load"]))
print()
print("![rows/s against dataset size ÷ memory](img/rows_by_memory.svg)")
print()
print("| contender | " + " | ".join("%s (%s)" % (frac(x), mib(m)) for x, m in zip(r["ratios"], r["memory_bytes"])) + " |")
print("| --- |" + " --- |" * len(r["ratios"]))
for i, label in enumerate(r["labels"]):
    cells = []
    for k in range(len(r["ratios"])):
        if r["errors"][i][k]:
            cells.append("failed")
            continue
        mode = r["io_modes"][i][k]
        cells.append("%.0f%s" % (r["rows_per_sec"][i][k], " (%s)" % mode if r["shorts"][i] == "auto" else ""))
    print("| %s | %s |" % (label, " | ".join(cells)))
for n in r.get("notes") or []:
    print()
    print("Note: " + n)
PY
	echo
	echo "Generated in $(( $(date +%s) - started )) s."
} >"$OUT"
echo "results.sh: wrote $OUT" >&2

# The README quotes the raw ratios of both modes, with the same stamp,
# between its fio-ratios markers.
if [ "$OUT" = docs/results.md ] && grep -q '^<!-- fio-ratios:begin -->$' README.md; then
	quote=$(mktemp)
	{
		echo "pagebench ÷ fio, medians of alternating pairs ($(date -u +%Y-%m-%d), commit $commit, $(uname -sr), $(nproc) CPUs${cpu:+ ($cpu)}, ${fsinfo:-unknown}):"
		echo
		echo "| job | metric | both at their defaults | both with fio's best flags |"
		echo "| --- | --- | --- | --- |"
		awk -F' [|] ' '
			/^[|] raw / {
				w = substr($1, 7)   # "4k randread io_uring qd64, defaults: IOPS"
				i = index(w, ", "); job = substr(w, 1, i - 1); w = substr(w, i + 2)
				i = index(w, ": "); mode = substr(w, 1, i - 1); metric = substr(w, i + 2)
				key = job " | " metric
				if (!(key in seen)) { seen[key] = 1; order[++n] = key }
				r = $NF; sub(/ *[|]$/, "", r)   # the ratio, the last column
				v[key, mode] = r
			}
			END {
				for (i = 1; i <= n; i++) {
					k = order[i]
					printf "| %s | %s | %s |\n", k, (v[k, "defaults"] == "" ? "not run" : v[k, "defaults"]), (v[k, "best"] == "" ? "not run" : v[k, "best"])
				}
			}' "$rows"
		echo
		echo "${best:+Best flags, given to both: \`$best\`. }CPU per I/O is lower-better; \"whole command\" counts every process and thread of each run alike, the other line what each tool reports of itself. Whole table: [docs/results.md](docs/results.md)."
	} >"$quote"
	if grep -q '^| raw ' "$rows"; then
		awk -v q="$quote" '
			/^<!-- fio-ratios:begin -->$/ { print; while ((getline l < q) > 0) print l; skip = 1; next }
			/^<!-- fio-ratios:end -->$/ { skip = 0 }
			!skip' README.md >README.md.tmp && mv README.md.tmp README.md
		echo "results.sh: updated README.md's fio ratios" >&2
	fi
	rm -f "$quote"
fi

# The README quotes the read modes' figures, with the same stamp, between
# its io-modes markers, and shows the chart.
if [ "$OUT" = docs/results.md ] && grep -q '^<!-- io-modes:begin -->$' README.md; then
	quote=$(mktemp)
	{
		echo "The read modes, rows/s as ratios of the memory map's ($(date -u +%Y-%m-%d), commit $commit, $(uname -sr), $(nproc) CPUs${cpu:+ ($cpu)}, ${fsinfo:-unknown}; load averages beside each figure in [docs/results.md](docs/results.md)):"
		echo
		echo "| what | pagefeed | baseline | ratio |"
		echo "| --- | --- | --- | --- |"
		sed 's/ (load [^)]*)//' "$iorows"
		echo
		echo "![rows/s against dataset size ÷ memory: auto, O_DIRECT, buffered and mmap](docs/img/rows_by_memory.svg)"
	} >"$quote"
	awk -v q="$quote" '
		/^<!-- io-modes:begin -->$/ { print; while ((getline l < q) > 0) print l; skip = 1; next }
		/^<!-- io-modes:end -->$/ { skip = 0 }
		!skip' README.md >README.md.tmp && mv README.md.tmp README.md
	echo "results.sh: updated README.md's read modes" >&2
	rm -f "$quote"
fi
echo "results.sh: done in $(( $(date +%s) - started )) s" >&2
