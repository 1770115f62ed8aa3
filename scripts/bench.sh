#!/usr/bin/env bash
# pagebench against fio in the same run (called by `make bench`).
#
# Installs fio when it is missing, builds pagebench, then runs
# `pagebench --compare-fio`: fio and pagebench alternately, PAIRS pairs of
# RUNTIME each, on one SIZE file laid out once in a temporary directory
# under BENCH_DIR (on the project disk) and removed at the end, for 4 KiB
# randread io_uring qd64, 1 MiB randread io_uring qd32 and 4 KiB psync qd1.
# Prints medians and pagebench/fio ratios of IOPS, bandwidth, CPU per I/O
# and p99 completion latency.
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${PAIRS:-3}
RUNTIME=${RUNTIME:-5s}
SIZE=${SIZE:-2g}
BENCH_DIR=${BENCH_DIR:-$PWD/out/bench}

if ! command -v fio >/dev/null 2>&1; then
	echo "bench.sh: fio not found, installing it (apt-get install -y fio)" >&2
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
	$sudo apt-get update && $sudo apt-get install -y fio
fi

mkdir -p bin "$BENCH_DIR"
go build -o bin/pagebench ./cmd/pagebench
echo "bench.sh: $(fio --version) vs $(bin/pagebench --help >/dev/null && echo pagebench), $PAIRS pairs x $RUNTIME, $SIZE file under $BENCH_DIR" >&2
bin/pagebench --compare-fio --pairs "$PAIRS" --runtime "$RUNTIME" --size "$SIZE" --dir "$BENCH_DIR"
