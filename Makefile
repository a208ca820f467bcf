# Nightshift — the two commands: `make run` (build and start the tray app) and `make test` (every
# test). Both install the Debian packages they need when they are missing (as root, or with sudo).

SHELL := /bin/bash
CARGO ?= cargo
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)
PYTHON ?= /usr/bin/python3
# The real Claude Code client the tests drive (offline, against the project's mock API).
CLAUDE_VERSION := 2.1.332
CLAUDE_DIR := .cache/claude-code
CLAUDE_BIN := $(CLAUDE_DIR)/node_modules/@anthropic-ai/claude-code/bin/claude.exe
# The real Codex CLI the tests drive (offline, against the project's mock Responses API). Its native
# binary comes in the optional package @openai/codex-linux-x64, which npm installs beside it.
CODEX_VERSION := 0.171.0
CODEX_DIR := .cache/codex
CODEX_BIN := $(CODEX_DIR)/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex

# Building the tray app (WebKitGTK + the tray library), and what the agent's sandbox needs to
# run the overnight sessions (bubblewrap, socat).
BUILD_PKGS := build-essential pkg-config libwebkit2gtk-4.1-dev libayatana-appindicator3-dev \
  bubblewrap socat
# Running it headless and driving its window in tests.
TEST_PKGS := xvfb xauth webkit2gtk-driver dbus-daemon dbus-bin python3 python3-xlib python3-dbus python3-gi asciinema

# `make install`: PREFIX (default ~/.local; `sudo make install PREFIX=/usr/local` after `make release`),
# DESTDIR for staging. PROFILE=debug installs the debug build instead (the install test does).
PREFIX ?= $(HOME)/.local
PROFILE ?= release
# The installed app is a production build: its window's files served through tauri:// under the
# configured content security policy, as `tauri build` would make it.
RELEASE_BUILD := $(CARGO) build --locked --release --workspace --features nightshift-app/custom-protocol
# The .deb: cargo-deb (pinned, into the project's cache), version from the workspace and git.
CARGO_DEB_VERSION := 3.8.0
CARGO_DEB := .cache/cargo-deb/bin/cargo-deb
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
GIT_HASH := $(shell git rev-parse --short=10 HEAD 2>/dev/null)
DEB_VERSION := $(VERSION)$(if $(GIT_HASH),+git$(shell git rev-list --count HEAD).g$(GIT_HASH))-1
# Checking what is installed: desktop-file-validate, man, and the three shells with completions.
INSTALL_TEST_PKGS := desktop-file-utils man-db groff-base bash-completion zsh fish

.PHONY: bench-sessions ui-vendor run release test test-core test-app test-install test-deb install uninstall build-release build-debug deb deps deps-test claude-client codex-client lint fmt bench clean help

help:
	@echo "make run      build and start the tray app (under Xvfb when there is no display)"
	@echo "make test     every test: core, CLI, the tray app under Xvfb, make install"
	@echo "make install  release builds, desktop entry, icons, man pages, completions in PREFIX (~/.local)"
	@echo "make deb      the Debian package (target/debian/nightshift_*.deb); make test-deb checks it"
	@echo "make deps     install the Debian packages the app needs"
	@echo "make lint     rustfmt --check and clippy -D warnings"
	@echo "make bench    benchmarks, printed as figures"

run: deps ui-vendor
	$(CARGO) build --workspace
	@if [ -z "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
	  echo "No display: starting Nightshift under Xvfb (xvfb-run)."; \
	  $(MAKE) --no-print-directory deps-test; \
	  exec xvfb-run -a dbus-run-session -- $(TARGET_DIR)/debug/nightshift-app; \
	else \
	  exec $(TARGET_DIR)/debug/nightshift-app; \
	fi

release: deps ui-vendor
	$(RELEASE_BUILD)

test: deps deps-test claude-client codex-client test-core test-app test-install

# The model, the core and the CLI: real PTYs, the real binary. Builds no GUI library, and checks
# it stays so, and that the model crate stays free of I/O crates.
test-core:
	@if $(CARGO) tree --locked -p nightshift -e normal,build --prefix none | grep -qiE '^(tauri|wry|gtk|webkit)'; then \
	  echo "the core package depends on a GUI library; it must stay GUI-free" >&2; exit 1; fi
	scripts/check-model '$(CARGO)'
	NIGHTSHIFT_REQUIRE_CLAUDE=1 NIGHTSHIFT_REQUIRE_CODEX=1 NIGHTSHIFT_REQUIRE_ASCIINEMA=1 NIGHTSHIFT_REQUIRE_DBUS=1 $(CARGO) test --locked

# The tray app: its unit tests, then the real window under Xvfb through WebKitWebDriver.
test-app: ui-vendor
	$(CARGO) build --locked --workspace
	$(CARGO) build --locked --example mock_api
	$(CARGO) test --locked -p nightshift-app
	NIGHTSHIFT_REQUIRE_CLAUDE=1 CARGO_TARGET_DIR=$(TARGET_DIR) xvfb-run -a dbus-run-session -- $(PYTHON) tests/e2e/test_app.py
	CARGO_TARGET_DIR=$(TARGET_DIR) xvfb-run -a dbus-run-session -- $(PYTHON) tests/e2e/test_desktop.py

# `make install PROFILE=debug` (the debug build test-app made) into a home of the test's own, the
# installed CLI and app (under Xvfb) run from there, then `make uninstall` leaves nothing.
test-install: deps-test ui-vendor
	@scripts/ensure-packages $(INSTALL_TEST_PKGS)
	$(CARGO) build --locked --workspace
	CARGO_TARGET_DIR=$(TARGET_DIR) xvfb-run -a dbus-run-session -- $(PYTHON) tests/e2e/test_install.py

# Not part of `make test`: a release build (6 minutes cold on 2 cores) and a system-wide install. It
# builds the .deb, installs it with apt, runs the app from /usr/bin under Xvfb, and removes it.
test-deb: deb deps-test
	@scripts/ensure-packages $(INSTALL_TEST_PKGS) file
	CARGO_TARGET_DIR=$(TARGET_DIR) xvfb-run -a dbus-run-session -- $(PYTHON) tests/e2e/test_deb.py

# PREFIX (under DESTDIR) is checked first: one that cannot be made or written fails at once, not
# after the build (the build is a step of the recipe, not a prerequisite, so that -j keeps the order).
# Under sudo nothing is built: cargo would leave root-owned files in your target directory.
install:
	@PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' scripts/install check
	$(if $(SUDO_USER),,@$(MAKE) --no-print-directory build-$(PROFILE))
	@PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' scripts/install install '$(TARGET_DIR)/$(PROFILE)'

uninstall:
	@PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' scripts/install uninstall

build-release: release
build-debug: deps ui-vendor
	$(CARGO) build --locked --workspace

deb: release $(CARGO_DEB)
	@scripts/ensure-packages dpkg-dev
	scripts/install stage '$(TARGET_DIR)/release' '$(TARGET_DIR)/release/deb-root'
	PATH="$(CURDIR)/.cache/cargo-deb/bin:$$PATH" $(CARGO) deb --locked -p nightshift-app --no-build \
	  --deb-version '$(DEB_VERSION)' --output '$(TARGET_DIR)/debian/'

$(CARGO_DEB):
	$(CARGO) install --locked --root .cache/cargo-deb --target-dir '$(TARGET_DIR)' cargo-deb@$(CARGO_DEB_VERSION)

deps:
	@scripts/ensure-packages $(BUILD_PKGS)

# The window's terminal: xterm.js from the npm registry at the versions packaging/ui/package-lock.json
# pins (with their hashes), copied into ui/vendor (not kept in git; the app's build stops without it).
UI_VENDOR := ui/vendor/xterm.js ui/vendor/xterm.css ui/vendor/addon-fit.js
ui-vendor: $(UI_VENDOR)
$(UI_VENDOR) &: packaging/ui/package.json packaging/ui/package-lock.json
	@command -v npm >/dev/null || scripts/ensure-packages npm
	mkdir -p .cache/ui ui/vendor
	cp packaging/ui/package.json packaging/ui/package-lock.json .cache/ui/
	cd .cache/ui && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
	cp .cache/ui/node_modules/@xterm/xterm/lib/xterm.js .cache/ui/node_modules/@xterm/xterm/css/xterm.css ui/vendor/
	cp .cache/ui/node_modules/@xterm/addon-fit/lib/addon-fit.js ui/vendor/
	cp .cache/ui/node_modules/@xterm/xterm/LICENSE ui/vendor/xterm.LICENSE

deps-test:
	@scripts/ensure-packages $(TEST_PKGS)

# The pinned client from npm, into the project's cache (about 400 MB, a native binary).
claude-client: $(CLAUDE_BIN)
$(CLAUDE_BIN):
	@command -v npm >/dev/null || { echo "npm is needed to install the Claude Code client for the tests (apt-get install npm)" >&2; exit 1; }
	mkdir -p $(CLAUDE_DIR)
	cd $(CLAUDE_DIR) && npm install --no-audit --no-fund --loglevel=error @anthropic-ai/claude-code@$(CLAUDE_VERSION)
	@# A cautious npm may skip the postinstall that puts the native binary in place.
	@[ -x $(CLAUDE_BIN) ] && $(CLAUDE_BIN) --version | grep -q $(CLAUDE_VERSION) || (cd $(CLAUDE_DIR)/node_modules/@anthropic-ai/claude-code && node install.cjs)
	$(CLAUDE_BIN) --version

# The pinned Codex CLI from npm, into the project's cache (a native musl binary, about 420 MB).
codex-client: $(CODEX_BIN)
$(CODEX_BIN):
	@command -v npm >/dev/null || { echo "npm is needed to install the Codex CLI for the tests (apt-get install npm)" >&2; exit 1; }
	mkdir -p $(CODEX_DIR)
	cd $(CODEX_DIR) && npm install --no-audit --no-fund --loglevel=error @openai/codex@$(CODEX_VERSION)
	@$(CODEX_BIN) --version | grep -q '$(CODEX_VERSION)' || { echo "$(CODEX_BIN) is not Codex $(CODEX_VERSION) (is @openai/codex-linux-x64 installed?)" >&2; exit 1; }
	$(CODEX_BIN) --version

lint: ui-vendor
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

bench: claude-client bench-sessions
	$(CARGO) bench --locked --bench screen
	$(CARGO) bench --locked --bench detection

# Supervising 1, 10 and 50 working sessions: one supervisor, N headless runs, and tmux with a
# capture-pane probe loop, side by side (BENCH_SESSIONS=1,10 and BENCH_SECONDS=20 to choose).
bench-sessions:
	@scripts/ensure-packages tmux
	$(CARGO) build --locked --release --example replay_agent --example bench_host
	$(CARGO) bench --locked --bench sessions

clean:
	$(CARGO) clean
	rm -rf tests/artifacts

# Reliability (CONTRIBUTING.md, "Reliability"): the fuzz targets, each FUZZ_SECONDS (default 60) with
# one worker (nightly Rust and cargo-fuzz), and their seeds rebuilt from the real captures.
.PHONY: fuzz fuzz-seeds soak
fuzz:
	FUZZ_SECONDS=$(or $(FUZZ_SECONDS),60) scripts/fuzz

fuzz-seeds:
	scripts/fuzz-seeds

# The long versions of the reliability tests `make test` runs short: 20 SIGKILLs, a 100 MB output
# storm, a week of a chatty journal.
soak:
	NIGHTSHIFT_SOAK_ROUNDS=20 $(CARGO) test --locked --test integration crash_soak:: -- --nocapture
	NIGHTSHIFT_STORM_MB=100 $(CARGO) test --locked --test integration output_storm:: -- --nocapture
	NIGHTSHIFT_GROWTH_NIGHTS=7 $(CARGO) test --locked --test integration journal_growth:: -- --nocapture
