import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def _binary(env: str, path: str, build: list) -> Path:
    """A binary of the workspace: `env` names it, else the debug build,
    built if missing (CI has built it already)."""
    if os.environ.get(env):
        return Path(os.environ[env])
    found = REPO / "target" / "debug" / path
    if not found.exists():
        subprocess.run(["cargo", "build", "-q", *build], cwd=REPO, check=True)
    return found


@pytest.fixture(scope="session")
def cli() -> Path:
    """The `spillway` CLI."""
    return _binary("SPILLWAY_BIN", "spillway", ["-p", "spillway-cli"])


@pytest.fixture(scope="session")
def rust_apply() -> Path:
    """The library alone, applying a policy (crates/process/examples/apply_json.rs)."""
    return _binary("SPILLWAY_APPLY_JSON", "examples/apply_json", ["-p", "spillway-process", "--example", "apply_json"])


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No user config or store leaks into a test.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SPILLWAY_STORE", raising=False)
    monkeypatch.delenv("SPILLWAY_CONFIG", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    for k in list(os.environ):
        if k.startswith("SPILLWAY_") and k not in ("SPILLWAY_BIN", "SPILLWAY_APPLY_JSON"):
            monkeypatch.delenv(k)


def log_text(lines: int, error_at: int = -1) -> str:
    out = []
    for i in range(1, lines + 1):
        out.append(f"error[E0308]: mismatched types at line {i}\n" if i == error_at else f"   Compiling crate-{i} v0.{i % 97}.0\n")
    return "".join(out)


def have(program: str) -> bool:
    return shutil.which(program) is not None


def facts(outcome) -> dict:
    """An outcome's fields, less the one that says whether the object was
    already stored (which depends on what came before)."""
    d = outcome.to_dict()
    if d["spill"]:
        d["spill"]["dedup"] = None
    return d
