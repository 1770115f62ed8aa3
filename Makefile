# pagefeed — see README.md. Targets: build test demo bench results fuzz clean.
GO        ?= go
BIN       := bin
FUZZTIME  ?= 30s
DEMO_DIR  ?= demo-data

.PHONY: all build test vet fmtcheck demo bench results fuzz clean soak

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

fmtcheck:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# test: formatting, vet, then every package under the race detector.
test: fmtcheck vet
	$(GO) test -race -count=1 ./...

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
	rm -rf $(BIN) $(DEMO_DIR) out

# soak: mixed loader runs under injected faults for SOAK_TIME (default 10m),
# RSS and goroutines over time; not part of CI.
soak:
	scripts/soak.sh $(SOAK_TIME)
