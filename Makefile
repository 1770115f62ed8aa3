# pagefeed — see README.md. Targets: build test demo bench results fuzz clean python deps.
GO        ?= go
BIN       := bin
FUZZTIME  ?= 30s
DEMO_DIR  ?= demo-data

.PHONY: all build test vet fmtcheck demo bench results fuzz clean soak python deps gotest pytest pyinterp FORCE

# PYTHON: the first of these that imports numpy and torch (Debian's
# packages are seen by /usr/bin/python3, not always by the python3 first
# on PATH); override with make PYTHON=... It is expanded where a recipe
# uses it, so after deps has installed them.
PYTHON ?= $(shell for p in /usr/bin/python3 python3; do \
	if $$p -c 'import numpy, torch' >/dev/null 2>&1; then command -v $$p; break; fi; done)
PYLIB   := python/pagefeed/libpagefeed.so

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

fmtcheck:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# test: the test dependencies (deps: quick when present), formatting, vet,
# every package under the race detector, then the Python package's tests
# (pytest over the built library).
test: deps gotest pytest

gotest: fmtcheck vet
	$(GO) test -race -count=1 ./...

# python: the shared library (and its headers) inside the package, then a
# wheel in python/dist when pip is there (pip install ./python also works).
python: $(PYLIB)
	@if $(or $(PYTHON),python3) -m pip --version >/dev/null 2>&1; then \
		$(or $(PYTHON),python3) -m pip wheel -q --no-deps --no-build-isolation -w python/dist ./python && ls python/dist; \
	else echo "python: pip is missing; the package is usable from python/ (PYTHONPATH=python)"; fi

# go build decides what is stale, so this always asks it.
$(PYLIB): FORCE
	$(GO) build -buildmode=c-shared -ldflags=-s -o $(PYLIB) ./capi
	cp capi/pagefeed.h python/pagefeed/pagefeed.h

pyinterp: deps
	@if [ -z "$(PYTHON)" ]; then echo "no python3 imports numpy and torch: run make deps"; exit 1; fi
	@echo "python: $(PYTHON) ($$($(PYTHON) -c 'import sys, numpy, torch; print(sys.version.split()[0], "numpy", numpy.__version__, "torch", torch.__version__)'))"

# pytest: exit status 5 (no tests collected) fails like any other.
pytest: pyinterp $(PYLIB) build
	cd python && PAGEFEED_BIN=$(CURDIR)/$(BIN) $(PYTHON) -m pytest -q -p no:cacheprovider tests

# deps: the Python test dependencies from Debian, unless already importable.
deps:
	@if /usr/bin/python3 -c 'import numpy, torch, torch.distributed, pytest' >/dev/null 2>&1; then \
		echo "deps: numpy, torch and pytest already importable by /usr/bin/python3"; \
	else \
		sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
		$$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			python3-numpy python3-torch python3-pytest; \
	fi

# deps-zoo: the writer zoo's node packages (internal/zoo), exactly as
# internal/zoo/node/package-lock.json pins them: npm ci, skipped when the
# stamp in node_modules matches the lock file. Without node the zoo's
# tests skip (apt-get install nodejs npm).
.PHONY: deps-zoo
deps: deps-zoo
deps-zoo:
	@if command -v node >/dev/null 2>&1; then sh internal/zoo/node/install.sh && echo "deps: the writer zoo's node packages are installed"; \
	else echo "deps: node is missing: the writer zoo's tests will skip (apt-get install nodejs npm)"; fi

# demo: the main job on a dataset it makes itself.
demo: build
	scripts/demo.sh $(DEMO_DIR)

# bench: testing.B benchmarks, then pagebench against fio in the same run.
bench: build
	$(GO) test -run='^$$' -bench=. -benchmem ./...
	scripts/bench.sh

# results: the benchmarks this machine can run, as one table in
# docs/results.md stamped with date, commit and machine.
results: build
	scripts/results.sh

# fuzz: every fuzz target for FUZZTIME each.
fuzz:
	scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf $(BIN) $(DEMO_DIR) out $(PYLIB) python/pagefeed/*.h python/dist python/build

# soak: mixed loader runs under injected faults for SOAK_TIME (default 10m),
# RSS and goroutines over time; not part of CI.
soak:
	scripts/soak.sh $(SOAK_TIME)

FORCE:
