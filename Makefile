# runner-manager build, test and demo entry points. Everything here needs only Go (and, for a few
# checks, tools this Makefile installs itself).
GO       ?= go
VERSION  ?= 0.1.0
# The commit and its date identify the build in `runner-manager version` (the commit's date, not
# today's, keeps builds reproducible); outside a git checkout they stay empty and the Go build info
# fills what it can.
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE     ?= $(shell git log -1 --format=%cI 2>/dev/null)
VPKG     := github.com/runner-manager/runner-manager/internal/version
LDFLAGS  := -X $(VPKG).Version=$(VERSION) -X $(VPKG).Commit=$(COMMIT) -X $(VPKG).Date=$(DATE)
BIN      := bin
FUZZTIME ?= 60s

.PHONY: all build test test-unit lint demo bench fuzz test-crash test-e2e tools man clean

all: build

# Static binaries (CGO_ENABLED=0), as internal/daemonproc.Build makes them for the e2e harness and
# the demo's tests; the check is what `go version -m` prints of the build settings.
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/runner-manager ./cmd/runner-manager
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ghsim ./cmd/ghsim
	@for b in runner-manager ghsim; do \
		$(GO) version -m $(BIN)/$$b | grep -q 'CGO_ENABLED=0' || { echo "$(BIN)/$$b is not static (CGO_ENABLED=0)"; exit 1; }; \
	done

# The one command CI runs (.ci/run) and the README gives: lint, every package's tests with the race
# detector, then the end-to-end suites (real binary against the simulator, crash points included at
# CRASH_ROUNDS repetitions; `make test-crash` is the 20-round acceptance run).
test: tools lint test-unit test-e2e

test-unit:
	$(GO) test -race -timeout 9m ./...

# The repository tests itself: nothing may read the reference folder beside a developer's checkout
# (the pattern's brackets keep this line from matching itself).
lint:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e/...
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	@if grep -rnE '\.\./share[d]|share[d]/github-api' --exclude-dir=.git --exclude-dir=$(BIN) .; then \
		echo "the lines above reach outside the repository: copy what they need into testdata (with provenance)"; exit 1; fi
	@unformatted=$$(gofmt -l $$(find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi

demo: build
	$(GO) build -o $(BIN)/demo ./cmd/demo
	$(BIN)/demo -bin $(BIN) -config examples/demo.toml $(DEMOFLAGS)

# Measures on this machine (127.0.0.1 only) and rewrites docs/benchmarks.md. Issue 28 added about 40
# minutes to it: the idle rows wait for every target's second read (about 9 minutes at 1,000 targets,
# was 42 s) and idle1000-30m runs 1,000 idle targets for 30 minutes (docs/benchmarks.md says so).
bench: build
	$(GO) build -o $(BIN)/benchmark ./bench/cmd/benchmark
	$(BIN)/benchmark -bin $(BIN) -go $(GO) -out docs/benchmarks.md $(BENCHFLAGS)

# Redraws docs/figures/*.svg from the series make bench recorded there (docs/figures/*.json),
# measuring nothing, and rewrites docs/benchmarks.md's section Figures (which run drew each).
.PHONY: plots
plots:
	$(GO) run ./bench/cmd/benchmark -plots-only -figures docs/figures -update docs/benchmarks.md

fuzz:
	$(GO) test ./config -run '^$$' -fuzz FuzzLoadTOML -fuzztime $(FUZZTIME)
	$(GO) test ./config -run '^$$' -fuzz FuzzLoadYAML -fuzztime $(FUZZTIME)

# End-to-end suites (docs/testing.md): the real binary against ghsim with fake runners. The harness
# (e2e/harness) builds the binary and the fake runner package itself; test-unit never compiles
# these files (build tag e2e). Part of `make test`.
CRASH_ROUNDS ?= 2
test-e2e:
	ROUNDS=$(CRASH_ROUNDS) $(GO) test -tags e2e -count=1 -timeout 20m $(E2EFLAGS) ./e2e/...

# Crash suite (docs/testing.md, "Crash tests"): kill -9 at every crash point and at random moments
# under load, ROUNDS times each. CI runs it inside test-e2e at CRASH_ROUNDS=2; the acceptance run
# is this target's default of 20. SEED=<n> replays a failed random run's job stream and kill moments. Every test and crash
# point runs at once (-parallel 12): they mostly wait on 1 s polls, and the slowest point sets the time.
ROUNDS ?= 20
test-crash:
	ROUNDS=$(ROUNDS) SEED=$(SEED) $(GO) test -tags e2e -count=1 -parallel 12 -timeout 90m $(E2EFLAGS) ./e2e/crash/

# Host tools some tests drive for real; each line installs one only when it is missing.
# promtool (Debian package prometheus) lints a live scrape in internal/metrics' tests.
# systemd-analyze (Debian package systemd) verifies the generated unit in internal/service's tests.
tools:
	command -v promtool >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus; }
	command -v systemd-analyze >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd; }

# Man pages (section 1), one per command, generated from the commands' own help (cobra/doc).
man:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/runner-manager man man/man1

clean:
	rm -rf $(BIN) man
