"""The same input and policy give byte for byte the same outcome (content,
id, every field) from Python, the CLI and the Rust library."""

import json
import random
import subprocess
from pathlib import Path

import pytest

import spillway
from conftest import log_text


def toml_value(v):
    return json.dumps(v) if isinstance(v, str) else str(v)


def config_file(tmp_path: Path, config: dict) -> Path:
    lines = ["[policy]"]
    notice = config.get("notice")
    for k, v in config.items():
        if k != "notice":
            lines.append(f"{k} = {toml_value(v)}")
    if notice:
        lines.append("[policy.notice]")
        lines += [f"{k} = {toml_value(v)}" for k, v in notice.items()]
    path = tmp_path / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def inputs():
    rng = random.Random(7)
    yield "empty", b""
    yield "small", b"hello\nworld\n"
    yield "no-final-newline", b"a" * 5000
    yield "log-with-error-in-tail", log_text(3000, error_at=2999).encode()
    yield "multibyte", ("жёлтый 🦀 ✓\n" * 2000).encode()
    yield "invalid-utf8", b"ok\n" * 500 + b"\xff\xfe broken \xc3\n" + b"tail\n" * 500
    yield "binary", bytes(rng.randrange(256) for _ in range(20000))
    yield "one-long-line", b"x" * 100_000
    yield "crlf", b"line\r\n" * 4000


POLICIES = {
    "default": {},
    "small-zstd3": {"max_inline_bytes": "2KiB", "zstd_level": 3, "head_percent": 50},
    "lines-raw": {"max_inline_bytes": 4096, "max_inline_lines": 20, "compression": "none"},
    "cap-and-notice": {
        "max_inline_bytes": 1500,
        "max_spill_bytes": 10_000,
        "notice": {"omitted": "[cut {omitted_lines} lines of {total_lines}. {location}]"},
    },
}


def python_kwargs(config: dict) -> dict:
    kw = dict(config)
    if "zstd_level" in kw:
        kw["level"] = kw.pop("zstd_level")
    return kw


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_python_cli_and_rust_agree(tmp_path, cli, rust_apply, policy):
    config = POLICIES[policy]
    store = tmp_path / "store"
    spiller = spillway.Spiller(store, **python_kwargs(config))
    cfg = config_file(tmp_path, config)
    for name, data in inputs():
        ours = spiller.apply(data).to_dict()
        by_cli = json.loads(
            subprocess.run(
                [cli, "--store", store, "--config", cfg, "apply", "--json"],
                input=data, capture_output=True, check=True,
            ).stdout
        )
        by_rust = json.loads(
            subprocess.run(
                [rust_apply, store, json.dumps(config)], input=data, capture_output=True, check=True
            ).stdout
        )
        # A dedup hit is the one field that depends on what was stored before.
        for d in (ours, by_cli, by_rust):
            if d["spill"]:
                d["spill"]["dedup"] = None
        assert ours == by_cli, name
        assert ours == by_rust, name
        assert list(ours) == list(by_cli), "same fields, same order"


def test_the_notice_names_the_store_only_when_it_was_chosen(tmp_path, monkeypatch, cli):
    data = log_text(5000).encode()
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    default = spillway.Spiller(max_inline_bytes=2048).apply(data)
    assert default.spill.path.startswith(str(cache / "spillway"))
    assert "spillway show " in default.content
    by_cli = json.loads(subprocess.run([cli, "apply", "--json", "--max-inline-bytes", "2048"], input=data, capture_output=True, check=True).stdout)
    assert by_cli["content"] == default.content
    chosen = spillway.Spiller(tmp_path / "elsewhere", max_inline_bytes=2048).apply(data)
    assert f"spillway --store {tmp_path / 'elsewhere'} show " in chosen.content
    # The hint works pasted as it is.
    hint = chosen.content.split("read it with: ")[1].split("]")[0].split()
    shown = subprocess.run([cli, *hint[1:]], capture_output=True, check=True).stdout
    lines = data.splitlines(keepends=True)
    first, last = chosen.omitted_range
    assert shown == b"".join(lines[first - 1 : last])
