#!/usr/bin/env bash
# Interim demo (until the Parquet path lands), called by `make demo DIR`:
# builds pagebench, makes a 1 GiB file in DIR, runs 4 KiB random reads at
# iodepth 64 through io_uring for 5 s (psync when the io_uring engine is not
# ready), the same job under fio when fio is installed, and prints both side
# by side. Finishes in well under a minute.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-demo-data}
mkdir -p "$dir" bin
go build -o bin/pagebench ./cmd/pagebench
file="$dir/raw-1g.dat"
job=(--filename="$file" --size=1g --rw=randread --bs=4k --iodepth=64 --direct=1 --runtime=5 --time_based)

# Lays the file out when missing; also tells whether io_uring works here.
engine=io_uring
if ! bin/pagebench --name=probe "${job[@]}" --ioengine=io_uring --runtime=200ms >/dev/null 2>"$dir/probe.err"; then
	echo "demo: io_uring engine not ready ($(tail -n1 "$dir/probe.err")); using psync" >&2
	engine=psync
fi

echo "== pagebench: 4 KiB randread, $engine, iodepth 64, O_DIRECT, 5 s, $file"
bin/pagebench --name=pagebench "${job[@]}" --ioengine="$engine" >"$dir/pagebench.txt"
if command -v fio >/dev/null 2>&1; then
	echo "== fio: the same job with ioengine=$engine"
	fio --name=fio "${job[@]}" --ioengine="$engine" >"$dir/fio.txt"
	# Side by side: pagebench on the left, fio on the right.
	paste -d $'\001' <(expand "$dir/pagebench.txt") <(expand "$dir/fio.txt") |
		awk -F '\001' '{ printf "%-98.98s | %s\n", $1, $2 }'
	echo
	echo "summary:"
	printf '  pagebench %s\n' "$(grep -m1 ' read: IOPS=' "$dir/pagebench.txt" | sed 's/^ *//')"
	printf '  fio       %s\n' "$(grep -m1 ' read: IOPS=' "$dir/fio.txt" | sed 's/^ *//')"
else
	cat "$dir/pagebench.txt"
	echo "(fio not installed: run 'make bench' to install it and compare)"
fi
