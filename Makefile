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

.PHONY: all build test test-unit lint cross-vet demo bench fuzz test-crash test-e2e tools e2e-tools wine-tools man clean dist package

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
	@$(MAKE) --no-print-directory cross-vet

# Every package (bench, cmd/demo and the e2e suites included) type-checks and passes go vet for
# the other systems runner-manager ships for (issue 33 item 4). Vet only, no
# binaries: a cross-compile error is caught here in a few minutes, before make dist. One vet a
# system with the e2e tag (a superset: no file is !e2e) compiles the dependencies once a system, not
# twice: 3.6 min instead of 4.6 for windows/amd64 on a cold cache here.
CROSS ?= windows/amd64 windows/arm64 darwin/amd64 darwin/arm64
cross-vet:
	@set -e; for p in $(CROSS); do \
		echo "go vet for $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet -tags e2e ./...; \
	done

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
test-e2e: e2e-tools wine-tools
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
	# e2e/packaging: mmdebstrap makes the clean Debian root, lintian checks the .deb, rpm reads the .rpm.
	command -v mmdebstrap >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mmdebstrap; }
	command -v lintian >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends lintian; }
	command -v rpm >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends rpm; }
	# e2e/top drives `runner-manager top` inside tmux.
	command -v tmux >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tmux; }
	$(MAKE) $(DEBROOT)

# What the container executor's end-to-end tests drive for real (e2e/dockertest): Debian's docker.io
# (dockerd, containerd, runc and the CLI: each test starts a private dockerd of its own, and the
# Docker-in-Docker test image is made from these binaries) and busybox-static (the shell of the
# images the tests import; no test pulls from a registry).
e2e-tools:
	command -v dockerd >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io; }
	dpkg -s busybox-static >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends busybox-static; }

# Windows binaries under wine (e2e/windows, docs/testing.md "Windows binaries under wine"): Debian's
# wine 8.0 (64-bit only: no i386 multiarch) and the mingw-w64 C compiler, installed when missing; a
# wine prefix under $(BIN), made once headless (console programs need no display); and in its
# system32 the ProcessPrng DLL (e2e/wine) without which every Go 1.22+ Windows binary dies at start
# under wine 8.0. Quick when done: the prefix and the DLL are files make keeps.
WINEPREFIX_DIR := $(abspath $(BIN))/wineprefix
WINE_DLL       := $(WINEPREFIX_DIR)/drive_c/windows/system32/bcryptprimitives.dll
WINE_ENV       := WINEPREFIX=$(WINEPREFIX_DIR) WINEDEBUG=-all WINEDLLOVERRIDES=bcryptprimitives=n DISPLAY=
wine-tools:
	dpkg -s wine wine64 gcc-mingw-w64-x86-64 >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends wine wine64 gcc-mingw-w64-x86-64; }
	$(MAKE) $(WINE_DLL)

$(WINEPREFIX_DIR)/system.reg:
	mkdir -p $(WINEPREFIX_DIR)
	$(WINE_ENV) wineboot -i && $(WINE_ENV) wineserver -w

$(WINE_DLL): e2e/wine/bcryptprimitives.c e2e/wine/bcryptprimitives.def | $(WINEPREFIX_DIR)/system.reg
	x86_64-w64-mingw32-gcc -shared -O2 -Wall -Wextra -s -o $@.tmp e2e/wine/bcryptprimitives.c e2e/wine/bcryptprimitives.def -ladvapi32
	mv $@.tmp $@

# Man pages (section 1), one per command, generated from the commands' own help (cobra/doc).
man:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/runner-manager man man/man1

# Release archives (docs/operations.md, "Packages and archives"): one static binary per platform with
# LICENSE and README.md, as runner-manager_VERSION_OS_ARCH.tar.gz (.zip holding runner-manager.exe
# for Windows), and SHA256SUMS over them. Both kinds are byte-identical for the same commit: entries
# sorted, owners and extra attributes dropped, every mtime the commit's date (zip's DOS times read
# in UTC). e2e/packaging's TestDistArchives checks the six names, the sums and the zip's layout.
DIST      ?= dist
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
DISTDATE  := $(or $(DATE),1980-01-01T00:00:00Z)
dist:
	@case "$(PLATFORMS)" in *windows*) command -v zip >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends zip; };; esac
	rm -rf $(DIST) && mkdir -p $(DIST)
	@set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=runner-manager_$(VERSION)_$${os}_$${arch}; exe=; \
		[ $$os = windows ] && exe=.exe; \
		echo "building $$name"; mkdir -p $(DIST)/$$name; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(DIST)/$$name/runner-manager$$exe ./cmd/runner-manager; \
		cp LICENSE README.md $(DIST)/$$name/; \
		if [ $$os = windows ]; then \
			TZ=UTC touch -d '$(DISTDATE)' $(DIST)/$$name $(DIST)/$$name/*; \
			(cd $(DIST) && find $$name -type f | LC_ALL=C sort | TZ=UTC zip -X -D -q -9 -@ $$name.zip); \
		else \
			tar -C $(DIST) --sort=name --owner=0 --group=0 --numeric-owner --mtime='$(or $(DATE),1970-01-01T00:00:00Z)' -cf - $$name | gzip -9n > $(DIST)/$$name.tar.gz; \
		fi; \
	done
	cd $(DIST) && sha256sum $$(ls *.tar.gz *.zip 2>/dev/null | LC_ALL=C sort) > SHA256SUMS && cat SHA256SUMS

# .deb, .rpm and .apk for each Linux architecture from dist's binaries (packaging/nfpm.yaml, nfpm
# pinned by go.mod's tool directive): the binary as /usr/bin/runner-manager, man pages and
# completions (generated by dist's binary for this host, which PLATFORMS must list), the starter
# config. e2e/packaging installs the .deb into a clean Debian root (DEBROOT) and checks the .rpm and .apk.
PKG_ARCHS ?= amd64 arm64
PACKAGERS ?= deb rpm apk
package: dist
	@set -e; stage=$(DIST)/stage; rm -rf $$stage; mkdir -p $$stage/completions; \
	rm=$(DIST)/runner-manager_$(VERSION)_$$($(GO) env GOOS)_$$($(GO) env GOARCH)/runner-manager; \
	$$rm man $$stage/man/man1; gzip -9n $$stage/man/man1/*.1; \
	for sh in bash zsh fish; do $$rm completion $$sh > $$stage/completions/runner-manager.$$sh; done; \
	$$rm config init --config $$stage/config.toml >/dev/null; \
	{ echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"; echo "Upstream-Name: runner-manager"; \
	  echo; echo "Files: *"; echo "Copyright: 2026 runner-manager developers"; echo "License: Apache-2.0"; \
	  echo " On Debian systems the full text is in /usr/share/common-licenses/Apache-2.0."; } > $$stage/copyright; \
	{ echo "runner-manager ($(VERSION)-1) unstable; urgency=medium"; echo; echo "  * Release $(VERSION)."; echo; \
	  echo " -- runner-manager developers <runner-manager@users.noreply.github.com>  $$(date -R -d '$(or $(DATE),1970-01-01T00:00:00Z)')"; } \
	  | gzip -9n > $$stage/changelog.Debian.gz; \
	for arch in $(PKG_ARCHS); do \
		cp $(DIST)/runner-manager_$(VERSION)_linux_$$arch/runner-manager $$stage/runner-manager; \
		for p in $(PACKAGERS); do \
			STAGE=$$stage ARCH=$$arch VERSION=$(VERSION) $(GO) tool nfpm package -f packaging/nfpm.yaml -p $$p -t $(DIST)/; \
		done; \
	done
	cd $(DIST) && sha256sum $$(ls *.tar.gz *.zip *.deb *.rpm *.apk 2>/dev/null | LC_ALL=C sort) > SHA256SUMS

# A clean Debian root (mmdebstrap, minbase, from the distribution's packages) for e2e/packaging's
# install test, made once and kept under $(BIN): the test unpacks a fresh copy per run.
DEBROOT ?= $(BIN)/debroot-bookworm.tar
$(DEBROOT):
	mkdir -p $(dir $@)
	mmdebstrap --variant=minbase --include=ca-certificates --format=tar bookworm $@.tmp && mv $@.tmp $@

clean:
	rm -rf $(BIN) man
