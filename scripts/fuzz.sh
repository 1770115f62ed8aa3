#!/usr/bin/env bash
# Runs every fuzz target in the module for the given time each (default 30s).
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-30s}
grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
  pkg=./$(dirname "${f#./}")
  grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //' | while read -r fn; do
    echo "== $pkg $fn ($t)"
    # Go shrinks each new interesting input for up to 60 s by default,
    # reporting nothing meanwhile; 10 s keeps the runs moving.
    go test -run='^$' -fuzz="^${fn}\$" -fuzztime="$t" -fuzzminimizetime=10s "$pkg"
  done
done
