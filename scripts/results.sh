#!/usr/bin/env bash
# `make results`: the benchmarks this machine can run, as one table in
# docs/results.md (or $OUT), stamped with the date, the commit and the
# machine. Every ratio compares two runs made here, by this script:
#   - raw reads: pagebench against fio (`pagebench --compare-fio`, both at
#     their defaults, alternating) when fio is installed;
#   - the loader against its baselines on a generated dataset
#     (`pagebench --parquet --compare`);
#   - the page index: a build over 1,000 generated files and a sidecar
#     load (`go test -bench` in index/).
# Knobs (environment): RUNTIME (loader, seconds per case, default 5),
# PAIRS and RAW_RUNTIME and SIZE (raw, default 2, 3s, 1g), FILES and ROWS
# (dataset, default 8 files of 20000 rows), DIR (scratch, default
# out/results, removed at the end), OUT.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME=${RUNTIME:-5}
PAIRS=${PAIRS:-2}
RAW_RUNTIME=${RAW_RUNTIME:-3s}
SIZE=${SIZE:-1g}
FILES=${FILES:-8}
ROWS=${ROWS:-20000}
DIR=${DIR:-$PWD/out/results}
OUT=${OUT:-docs/results.md}

mkdir -p bin "$DIR"
trap 'rm -rf "$DIR"' EXIT
go build -o bin/ ./cmd/pagefeed ./cmd/pagebench

rows=$(mktemp)
trap 'rm -rf "$DIR" "$rows"' EXIT
row() { printf '| %s | %s | %s | %s |\n' "$@" >>"$rows"; }

# Raw reads against fio. compare-fio prints, per case, lines of
# "case  metric  fio  pagebench  ratio" (the case only on its first line).
if command -v fio >/dev/null 2>&1; then
	echo "results.sh: raw reads, pagebench vs fio ($PAIRS pairs x $RAW_RUNTIME, $SIZE file)" >&2
	bin/pagebench --compare-fio --pairs "$PAIRS" --runtime "$RAW_RUNTIME" --size "$SIZE" --dir "$DIR" 2>/dev/null |
		awk -F'  +' '
			$1 == "case" { next }
			NF >= 5 && $1 != "" { c = $1 }
			NF >= 5 && c != "" && ((c ~ /^4k/ && ($2 == "IOPS" || $2 ~ /^CPU/)) || (c ~ /^1m/ && $2 == "BW")) {
				printf "| raw %s: %s | %s | %s (fio) | %s |\n", c, $2, $4, $3, $5
			}' >>"$rows"
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
bin/pagebench --parquet="$data" --column=input_ids --compare --runtime="$RUNTIME" 2>/dev/null |
	awk -F'  +' -v size="$size" '
		$2 == "case" { next }
		NF >= 9 && first == "" { first = $2; rps = $4; p99 = $7
			printf "| loader (%s, %s): batch p99 | %s | | |\n", first, size, p99; next }
		NF >= 9 { printf "| loader rows/s: pagefeed against %s | %s | %s | %s |\n", $2, rps, $4, $9 }' >>"$rows"

# The page index: 1,000 files, 1.07M pages.
echo "results.sh: index build and sidecar load (go test -bench, 3 runs)" >&2
go test -run '^$' -bench '^(BenchmarkBuild|BenchmarkSidecarLoad)$' -benchtime 3x ./index 2>/dev/null |
	awk '
		/^Benchmark(Build\/default|SidecarLoad)-/ {
			for (i = 1; i <= NF; i++) { if ($i == "ms/build") ms = $(i-1); if ($i == "B/page") bpp = $(i-1); if ($i == "pages") pages = $(i-1) }
			what = ($1 ~ /^BenchmarkSidecarLoad/) ? "sidecar load" : "build"
			printf "| index of 1,000 files (%s pages, page cache warm): %s | %s ms, %s B/page | | |\n", pages, what, ms, bpp
		}' >>"$rows"

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit (with uncommitted changes)"; fi
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
	echo "Raw rows: pagebench and fio at their defaults (\`--compare-fio\`); CPU per"
	echo "I/O is lower-better, so a ratio below 1 favours pagebench there. Loader"
	echo "rows: the first case is pagefeed's page shuffle with unordered fetch;"
	echo "the ratio is its rows/s over the baseline's."
} >"$OUT"
echo "results.sh: wrote $OUT" >&2
