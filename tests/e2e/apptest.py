"""What the app's end-to-end suites share: where the built binaries and the captures are, and an
environment that keeps every file the app writes inside a test's temporary directory."""

import os
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Absolute now: the suites move into folders of their own.
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")).resolve() / "debug"
# The binaries the suites drive: the debug build, or an installed pair (`make test-deb` runs the
# window's suite against /usr/bin).
BIN_DIR = Path(os.environ.get("NIGHTSHIFT_BIN_DIR") or TARGET).resolve()
APP = BIN_DIR / "nightshift-app"
CLI = BIN_DIR / "nightshift"
CAPTURES = ROOT / "tests" / "fixtures" / "claude-code" / "2.1.332" / "nightshift"


def require_binaries():
    """Skips the suite when the binaries are not built."""
    for binary in (APP, CLI):
        if not binary.exists():
            raise unittest.SkipTest(f"{binary} is not built; run `make test` (it builds it)")


def isolated_env(base, **extra):
    """os.environ with Nightshift's state, runtime and config, the XDG directories and HOME (launch
    at login writes under $HOME/.config/autostart) all under `base`."""
    base = Path(base)
    return dict(os.environ, NIGHTSHIFT_STATE_DIR=str(base / "state"), NIGHTSHIFT_RUNTIME_DIR=str(base / "run"),
                NIGHTSHIFT_CONFIG_DIR=str(base / "config"), XDG_CONFIG_HOME=str(base / "config"),
                XDG_DATA_HOME=str(base / "data"), XDG_CACHE_HOME=str(base / "cache"), HOME=str(base / "home"),
                **extra)
