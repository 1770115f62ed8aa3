#!/bin/sh
# Installs the zoo's node packages exactly as package-lock.json pins them
# (npm ci), unless node_modules/.pagefeed-stamp already holds the lock
# file's SHA-256: quick when nothing changed. Concurrent runs (make deps,
# test binaries) take turns through flock where it exists.
set -eu
cd "$(dirname "$0")"
sum() {
	if command -v sha256sum >/dev/null 2>&1; then sha256sum package-lock.json | cut -d' ' -f1
	else shasum -a 256 package-lock.json | cut -d' ' -f1; fi
}
want=$(sum)
stamp=node_modules/.pagefeed-stamp
current() { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }
if current; then
	exit 0
fi
if command -v flock >/dev/null 2>&1; then
	exec 9>.install.lock
	flock 9
	if current; then
		exit 0
	fi
fi
echo "zoo: npm ci in $(pwd)" >&2
npm ci --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
