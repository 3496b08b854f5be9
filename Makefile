# rota: build, test, check, bench, demo. Every target installs what it needs (make tools).
GO        ?= go
TOOLS     := $(CURDIR)/.tools/bin
export PATH := $(TOOLS):$(PATH)

VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH    ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
VPKG      := github.com/prometheus/common/version
LDFLAGS   := -X $(VPKG).Version=$(VERSION) -X $(VPKG).Revision=$(REVISION) -X $(VPKG).Branch=$(BRANCH)

# Tests that start real components need time on a 2-core machine; -race guards the concurrent
# parts (per-BMC locks, the executor, collectors). One test binary more than CPUs at a time
# (-p): many packages spend most of their time waiting on real components (leases, windows,
# boots), and with one per CPU the CPUs stood idle for a quarter of the run
# (docs/benchmarks.md, "CI time"). -vet=off: `make check` has just run go vet whole, of which
# go test's own vet is a part.
TESTFLAGS ?= -race -count=1 -timeout 40m -p $(shell echo $$(( $$(nproc) + 1 ))) -vet=off

.PHONY: all build tools check test mutate fuzz bench demo package clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

tools:
	scripts/tools.sh

check: tools
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	staticcheck ./...

test: tools check
	$(GO) test $(TESTFLAGS) ./...
	scripts/mutate.sh

# One-line mutants of the safety invariants (scripts/mutants.txt), each run against the test
# that must catch it, in a scratch copy of the tree.
mutate: tools
	scripts/mutate.sh

# Every fuzz target for FUZZTIME each (default 30s), beyond the seeds make test runs.
fuzz: tools
	scripts/fuzz.sh

bench: tools build
	$(GO) test -run '^$$' -bench . -benchmem ./...
	scripts/bench-exporter.sh

demo: tools build
	scripts/demo.sh

# The .deb packages (rota-exporter; rota with rotactl) into dist/, with nfpm; package.sh builds
# the packaged binaries itself (PIE, stripped), lintian-clean (docs/install.md).
package: tools
	deploy/packaging/package.sh

clean:
	rm -rf bin dist .lab
