import os
import random
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import spillway
from conftest import facts, log_text


def test_under_budget_passes_verbatim(store):
    s = spillway.Spiller(store)
    o = s.apply("short output\n")
    assert not o.spilled and o.content == "short output\n"
    assert o.spill is None and o.total_lines == 1
    assert list(Path(store).rglob("*.zst")) == []


def test_over_budget_keeps_head_tail_and_stores_exactly(store):
    text = log_text(20_000, error_at=19_999)
    s = spillway.Spiller(store, max_inline_bytes="8KiB")
    o = s.apply(text)
    assert o.spilled
    assert len(o.content.encode()) <= 8192
    assert "error[E0308]: mismatched types at line 19999" in o.content
    assert text.startswith(o.content[: o.head_bytes])
    assert text.endswith(o.content.encode()[-o.tail_bytes :].decode())
    assert s.store.read(o.spill.id) == text.encode()
    # The omitted lines read back by the notice's range, exactly.
    first, last = o.omitted_range
    lines = text.splitlines(keepends=True)
    assert s.store.read(o.spill.short_id, lines=f"{first}:{last}") == "".join(lines[first - 1 : last]).encode()
    assert o.spill.short_id in o.content
    assert s.store.resolve(o.spill.short_id) == o.spill.id


def test_bytes_and_str_give_the_same_outcome(store):
    text = log_text(5000)
    s = spillway.Spiller(store, max_inline_bytes=4096)
    want = facts(s.apply(text))
    for data in (text.encode(), bytearray(text.encode()), memoryview(text.encode())):
        assert facts(s.apply(data)) == want


def test_surrogateescaped_text_is_stored_as_its_original_bytes(store):
    raw = b"ok\n" * 3000 + b"\xff\xfe not utf-8\n"
    text = raw.decode("utf-8", "surrogateescape")
    s = spillway.Spiller(store, max_inline_bytes=2048)
    o = s.apply(text)
    assert o.invalid_utf8
    assert s.store.read(o.spill.id) == raw


@pytest.mark.parametrize("seed", range(5))
def test_any_chunking_gives_the_outcome_of_one_apply(store, seed):
    rng = random.Random(seed)
    data = log_text(4000, error_at=rng.randrange(1, 4000)).encode() + bytes([0xE2, 0x82, 0xAC]) * 100
    s = spillway.Spiller(store, max_inline_bytes=3000, max_inline_lines=40)
    whole = s.apply(data)
    stage = s.stage()
    i = 0
    while i < len(data):
        n = rng.choice([1, 2, 3, 7, 64, 4096, 65536])
        stage.write(data[i : i + n])
        i += n
    assert stage.bytes_written == len(data)
    assert facts(stage.finish()) == facts(whole)


def test_stage_is_a_binary_file_for_a_subprocess(store):
    s = spillway.Spiller(store, max_inline_bytes=4096)
    with s.stage() as stage:
        proc = subprocess.Popen(["seq", "1", "200000"], stdout=subprocess.PIPE)
        shutil.copyfileobj(proc.stdout, stage)
        assert proc.wait() == 0
    o = stage.outcome
    assert stage.closed and o.total_lines == 200_000
    assert o.content.endswith("199999\n200000\n")
    assert s.store.read(o.spill.id, lines="100000:100000") == b"100000\n"


def test_stage_file_protocol(store):
    s = spillway.Spiller(store)
    stage = s.stage()
    assert stage.writable() and not stage.readable() and not stage.seekable()
    stage.writelines([b"a\n", b"b\n"])
    stage.flush()
    with pytest.raises(TypeError, match="binary stream"):
        stage.write("text")
    with pytest.raises(TypeError):
        stage.write(42)
    import io

    with pytest.raises(io.UnsupportedOperation):
        stage.fileno()
    stage.close()
    assert stage.outcome.content == "a\nb\n"
    stage.close()  # closing twice is fine
    for call in (lambda: stage.write(b"x"), stage.finish, stage.flush):
        with pytest.raises(ValueError, match="finished stage"):
            call()


def test_an_exception_in_the_with_block_stores_nothing(store):
    s = spillway.Spiller(store, max_inline_bytes=1024)
    with pytest.raises(RuntimeError):
        with s.stage() as stage:
            stage.write(b"x\n" * 100_000)
            raise RuntimeError("tool crashed")
    assert stage.closed and stage.outcome is None
    assert s.store.stats().objects == 0
    assert s.store.stats().temp_files == 0


def test_memory_stays_bounded_for_any_length(tmp_path):
    # 512 MiB through a 32 KiB budget in a fresh interpreter: its peak
    # resident memory stays far below the input.
    script = textwrap.dedent(
        f"""
        import resource, spillway
        s = spillway.Spiller({str(tmp_path / 'store')!r}, max_spill_bytes="16MiB")
        chunk = b"".join(b"line %d of a long build log\\n" % i for i in range(40000))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        stage = s.stage()
        total = 0
        while total < 512 << 20:
            total += stage.write(chunk)
        o = stage.finish()
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert o.total_bytes == total and o.spill.truncated, o
        print(after - before)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    grown_kib = int(out.stdout.strip())
    assert grown_kib < 64 * 1024, f"peak memory grew by {grown_kib} KiB for a 512 MiB input"


def test_the_gil_is_released_while_applying(store):
    # A pure-Python thread counts while the main thread applies 64 MiB. Had
    # the call held the GIL, the counter would stand still during it (one
    # switch interval at most); released, it counts at about the rate it
    # does while the main thread sleeps.
    import time

    data = log_text(1_500_000).encode()[: 64 << 20]
    s = spillway.Spiller(store, max_inline_bytes=50_000, durability="relaxed")
    state = {"n": 0, "stop": False}

    def count():
        while not state["stop"]:
            state["n"] += 1

    t = threading.Thread(target=count)
    t.start()
    try:
        time.sleep(0.05)
        n0, t0 = state["n"], time.perf_counter()
        time.sleep(0.3)
        free_rate = (state["n"] - n0) / (time.perf_counter() - t0)
        n0, t0 = state["n"], time.perf_counter()
        o = s.apply(data)
        busy_rate = (state["n"] - n0) / (time.perf_counter() - t0)
    finally:
        state["stop"] = True
        t.join()
    assert o.spilled
    assert busy_rate > 0.2 * free_rate, (busy_rate, free_rate)


def test_threads_share_one_spiller(store):
    s = spillway.Spiller(store, max_inline_bytes=4096)
    texts = [log_text(3000, error_at=i + 1) for i in range(8)]
    results = [None] * len(texts)

    def work(i):
        results[i] = s.apply(texts[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for text, o in zip(texts, results):
        assert s.store.read(o.spill.id) == text.encode()
    assert s.store.stats().objects == len(texts)


def test_same_output_is_stored_once(store):
    s = spillway.Spiller(store, max_inline_bytes=2048)
    text = log_text(4000)
    a, b = s.apply(text), s.apply(text)
    assert a.spill.id == b.spill.id and not a.spill.dedup and b.spill.dedup
    assert s.store.stats().objects == 1


