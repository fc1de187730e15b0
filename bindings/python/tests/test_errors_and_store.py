import json
import os
import subprocess
from pathlib import Path

import pytest

import spillway
from conftest import log_text


@pytest.mark.parametrize(
    "kwargs, flags",
    [
        ({"max_inline_bytes": 10}, ["--max-inline-bytes", "10"]),
        ({"max_inline_bytes": "65MiB"}, ["--max-inline-bytes", "65MiB"]),
        ({"head_percent": 101}, ["--head-percent", "101"]),
        ({"max_inline_lines": 0}, ["--max-inline-lines", "0"]),
        ({"max_spill_bytes": 0}, ["--max-spill-bytes", "0"]),
        ({"level": 40}, ["--level", "40"]),
    ],
)
def test_policy_errors_carry_the_rust_message(store, cli, kwargs, flags):
    with pytest.raises(spillway.PolicyError) as info:
        spillway.Spiller(store, **kwargs)
    assert isinstance(info.value, ValueError)
    cli_err = subprocess.run([cli, "--store", store, "apply", *flags], input=b"", capture_output=True)
    assert cli_err.returncode == 2
    assert str(info.value) in cli_err.stderr.decode()


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"compression": "lz4"}, "lz4"),
        ({"compression": "none", "level": 3}, "level"),
        ({"on_store_error": "ignore"}, "ignore"),
        ({"durability": "eventually"}, "eventually"),
        ({"max_inline_bytes": "lots"}, "lots"),
        ({"max_inline_bytes": True}, "bool"),
        ({"notice": {"omitted": "{nope}"}}, "nope"),
        ({"notice": {"footer": "x"}}, "footer"),
    ],
)
def test_bad_values_are_policy_errors(store, kwargs, words):
    with pytest.raises(spillway.PolicyError, match=words):
        spillway.Spiller(store, **kwargs)


def test_unknown_keyword_is_a_type_error(store):
    with pytest.raises(TypeError):
        spillway.Spiller(store, max_inline=5)


def break_tmp(store: Path) -> None:
    # Something not a directory where the store keeps its temp files: every
    # write fails, as on a full or broken disk (root ignores permissions).
    tmp = store / "v1" / "tmp"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text("not a directory")


def test_a_failed_save_still_gives_a_bounded_preview(store):
    s = spillway.Spiller(store, max_inline_bytes=2048)
    break_tmp(store)
    text = log_text(5000, error_at=4999)
    o = s.apply(text)
    assert o.spilled and o.spill is None and o.store_error and o.store_error_kind
    assert len(o.content.encode()) <= 2048
    assert "could not be saved" in o.content and "line 4999" in o.content


def test_fail_mode_raises_store_error_handing_the_preview_back(store):
    s = spillway.Spiller(store, max_inline_bytes=2048, on_store_error="fail")
    break_tmp(store)
    with pytest.raises(spillway.StoreError) as info:
        s.apply(log_text(5000))
    e = info.value
    assert isinstance(e, OSError) and e.kind
    assert isinstance(e.outcome, spillway.Outcome)
    assert len(e.outcome.content.encode()) <= 2048
    stage = s.stage()
    stage.write(log_text(5000).encode())
    with pytest.raises(spillway.StoreError) as info:
        stage.finish()
    assert info.value.outcome.spilled


def test_read_errors(store):
    s = spillway.Spiller(store, max_inline_bytes=2048)
    o = s.apply(log_text(5000))
    with pytest.raises(spillway.StoreError) as info:
        s.store.read("blake3:" + "0" * 64)
    assert info.value.kind == "not_found"
    with pytest.raises(spillway.IdError):
        s.store.read("../../etc/passwd")
    with pytest.raises(spillway.RangeError):
        s.store.read(o.spill.id, lines="9:3")
    with pytest.raises(spillway.RangeError):
        s.store.read(o.spill.id, lines="1:2", bytes="0:1")
    assert s.store.read(o.spill.id, bytes="0:9") == log_text(1).encode()[:9]
    assert s.store.read_text(o.spill.id, lines="2:2") == log_text(2).splitlines(keepends=True)[1]


def test_ambiguous_prefix(store):
    s = spillway.Spiller(store, max_inline_bytes=1024)
    ids = [s.apply(log_text(1000 + i)).spill.id for i in range(40)]
    # Some one-hex-digit... four-digit prefixes are shared among 40 ids only
    # by chance; a prefix shared by construction: the shard and nothing else.
    with pytest.raises((spillway.StoreError, spillway.IdError)):
        s.store.resolve("blake3:")
    for i in ids:
        assert s.store.resolve(i[:23]) == i


def test_a_read_quarantines_a_corrupt_object(store):
    s = spillway.Spiller(store, max_inline_bytes=1024, compression="none")
    good = s.apply(log_text(3000)).spill
    bad = s.apply(log_text(3001)).spill
    path = Path(bad.path)
    os.chmod(path, 0o600)
    data = bytearray(path.read_bytes())
    data[100] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(spillway.StoreError) as info:
        s.store.read(bad.id)
    assert info.value.kind == "corrupt"
    # The read set it aside: verify finds nothing left to move.
    assert not path.exists()
    report = s.store.verify()
    assert report.clean and report.ok == 1 and report.corrupt == []
    assert s.store.stats().quarantined == 1
    assert s.store.read(good.id) == log_text(3000).encode()


def test_gc_keeps_what_a_session_references(tmp_path, store, cli):
    s = spillway.Spiller(store, max_inline_bytes=1024)
    kept = s.apply(log_text(3000))
    gone = s.apply(log_text(3001))
    session = tmp_path / "session.jsonl"
    session.write_text(json.dumps({"content": kept.content}) + "\n")
    dry = s.store.gc(max_bytes=0, keep_referenced_by=[session], dry_run=True)
    assert [o.id for o in dry.removed] == [gone.spill.id]
    assert len(s.store.list()) == 2
    report = s.store.gc(max_bytes="0B", keep_referenced_by=[session])
    assert report.kept_referenced == 1 and report.remaining_objects == 1
    assert [o.id for o in s.store.list()] == [kept.spill.id]
    # The CLI sees the same store.
    stats = json.loads(subprocess.run([cli, "--store", store, "stats", "--json"], capture_output=True, check=True).stdout)
    mine = s.store.stats()
    assert stats["objects"] == mine.objects == 1
    assert stats["bytes"] == mine.bytes
    assert s.store.gc(max_age="1s", dry_run=True).removed == []
    with pytest.raises(spillway.PolicyError):
        s.store.gc(max_age="soon")
    with pytest.raises(ValueError):
        s.store.gc(max_age=-1)


def test_store_is_private(store):
    o = spillway.Spiller(store, max_inline_bytes=1024).apply(log_text(2000))
    for p in (Path(store), Path(store) / "v1", Path(o.spill.path)):
        assert (p.stat().st_mode & 0o077) == 0, p


def test_outcome_dict_and_repr(store):
    s = spillway.Spiller(store, max_inline_bytes=1024)
    o = s.apply(log_text(2000))
    d = o.to_dict()
    assert spillway.Outcome._from_dict(d) == o
    assert isinstance(d["omitted_range"], list) and isinstance(d["spill"], dict)
    assert "content=" not in repr(o) and str(o) == o.content
    assert json.loads(json.dumps(d)) == d
