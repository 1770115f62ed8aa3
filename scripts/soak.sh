#!/usr/bin/env bash
# Runs the soak workload (cmd/soak) for $1 or $SOAK_TIME (default 10m):
# mixed loader runs under injected read faults, in-place rewrites and
# interrupts, RSS and goroutines sampled over time. Not part of CI. Extra
# arguments go to cmd/soak.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-${SOAK_TIME:-10m}}
shift || true
mkdir -p bin
go build -o bin/soak ./cmd/soak
exec bin/soak --time "$t" "$@"
