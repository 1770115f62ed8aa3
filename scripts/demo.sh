#!/usr/bin/env bash
# `make demo`: the main job on a dataset it makes itself.
#  1. builds pagefeed and pagebench;
#  2. generates a ~1 GiB synthetic tokenized corpus with `pagefeed gen`
#     (kept in DIR and reused on the next run);
#  3. indexes it (footers and offset indexes only);
#  4. runs pagebench's Parquet mode: page shuffle with unordered (RINAS)
#     and ordered fetch, a sequential stream with a shuffle buffer,
#     arrow-go reading whole row groups, and page-cache reads via mmap,
#     and prints one comparison table (same run, ratios), with charts in
#     DIR/charts (SVG and PNG);
#  5. reads three columns row-aligned under the same page shuffle;
#  6. runs the raw 4 KiB randread job against fio when fio is installed.
# Under 3 minutes on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-demo-data}
runtime=${DEMO_RUNTIME:-8}
mkdir -p "$dir" bin
go build -o bin/ ./cmd/pagefeed ./cmd/pagebench

data="$dir/corpus"
if [ ! -f "$dir/corpus.complete" ]; then
	echo "== generating ~1 GiB of tokenized documents in $data (pagefeed gen)"
	rm -rf "$data"
	bin/pagefeed gen --out "$data" --files 8 --rows-per-file 90000 --codec none \
		--page-size 8192 --row-group-rows 22500 --page-version 1 --page-index on \
		--dictionary off --seed 1 --parallel 2 --quiet
	touch "$dir/corpus.complete"
fi
du -sh "$data" | awk '{print "   dataset size: " $1}'

echo "== index (footers + offset indexes, sidecar written next to the data)"
bin/pagefeed index "$data" --column input_ids

echo
echo "== loader vs baselines: $runtime s each, column input_ids, batch 64 pages, O_DIRECT"
if ! bin/pagebench --parquet="$data" --column=input_ids --compare --runtime="$runtime" --charts="$dir/charts" 2>"$dir/compare.log"; then
	tail -5 "$dir/compare.log" >&2 # progress lines, then the error
	exit 1
fi

echo
echo "== several columns: input_ids with id and text, row-aligned (page shuffle led by input_ids), $runtime s"
bin/pagebench --parquet="$data" --column=input_ids,id,text --runtime="$runtime" 2>/dev/null |
	grep -E '^ *(read:|batch lat)' | sed 's/^ */   /' || true

if command -v fio >/dev/null 2>&1; then
	echo
	echo "== raw 4 KiB randread, iodepth 64, O_DIRECT, 5 s: pagebench then fio on the same file"
	file="$dir/raw-1g.dat"
	job=(--filename="$file" --size=1g --rw=randread --bs=4k --iodepth=64 --direct=1 --runtime=5 --time_based --ioengine=io_uring)
	printf '   pagebench %s\n' "$(bin/pagebench --name=pagebench "${job[@]}" 2>/dev/null | grep -m1 ' read: IOPS=' | sed 's/^ *//')"
	printf '   fio       %s\n' "$(fio --name=fio "${job[@]}" 2>/dev/null | grep -m1 ' read: IOPS=' | sed 's/^ *//')"
else
	echo
	echo "(fio is not installed: 'make bench' installs it and compares pagebench with fio)"
fi
