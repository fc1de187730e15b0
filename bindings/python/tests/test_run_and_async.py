import asyncio
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import spillway
from conftest import facts, log_text


def test_run_merges_and_bounds_like_the_cli(store, cli):
    script = "for i in $(seq 1 20000); do echo out $i; done; echo 'error: the build failed' >&2; exit 3"
    s = spillway.Spiller(store, max_inline_bytes=4096)
    r = spillway.run(["sh", "-c", script], spiller=s)
    assert r.returncode == 3 and not r.timed_out and not r.output_cut
    assert r.content.endswith("out 20000\nerror: the build failed\n")
    assert len(r.content.encode()) <= 4096
    full = s.store.read(r.outcome.spill.id)
    assert full.count(b"\n") == 20001
    import json

    by_cli = json.loads(
        subprocess.run([cli, "--store", store, "run", "--json", "--max-inline-bytes", "4096", "--", "sh", "-c", script],
                       capture_output=True).stdout
    )
    assert by_cli["content"] == r.content and by_cli["spill"]["id"] == r.outcome.spill.id
    with pytest.raises(subprocess.CalledProcessError) as info:
        r.check_returncode()
    assert info.value.returncode == 3 and info.value.output == r.content


def test_run_reports_signals_as_negative_numbers(store):
    r = spillway.run(["sh", "-c", "echo partial; kill -TERM $$"], store=store)
    assert r.returncode == -signal.SIGTERM and r.content == "partial\n"


def test_run_timeout_kills_the_process_group(store):
    t0 = time.monotonic()
    r = spillway.run(["sh", "-c", "echo started; sleep 30 & sleep 30"], store=store, timeout=0.5)
    assert r.timed_out and r.returncode == -signal.SIGKILL
    assert r.content == "started\n"
    assert time.monotonic() - t0 < 20


def test_run_does_not_wait_for_a_daemon_holding_the_pipe(store):
    r = spillway.run(["sh", "-c", "echo up; (sleep 30 &) ; exit 0"], store=store, drain=0.2)
    assert r.returncode == 0 and r.output_cut and r.content == "up\n"


def test_run_cwd_env_and_missing_programs(store, tmp_path):
    r = spillway.run(["sh", "-c", 'pwd; echo "$GREETING"'], store=store, cwd=tmp_path, env={"GREETING": "hi", "PATH": os.environ["PATH"]})
    assert r.content == f"{tmp_path}\nhi\n"
    with pytest.raises(FileNotFoundError):
        spillway.run(["no-such-program-here"], store=store)
    with pytest.raises(PermissionError):
        spillway.run([str(tmp_path)], store=store)
    with pytest.raises(ValueError):
        spillway.run([], store=store)
    with pytest.raises(TypeError):
        spillway.run(["true"], spiller=spillway.Spiller(store), max_inline_bytes=4096)


def test_ctrl_c_reaches_the_command_and_its_output_is_kept(store):
    s = spillway.Spiller(store)
    # Python's own handler, also when the tests were started with SIGINT
    # ignored (a background job of a non-interactive shell inherits that).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        # SIGINT to ourselves shortly after the command starts: Python raises
        # KeyboardInterrupt only after the command (which got SIGINT too)
        # ended.
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            spillway.run(["sh", "-c", "echo before; sleep 30; echo after"], spiller=s)
        assert time.monotonic() - t0 < 20
    finally:
        signal.signal(signal.SIGINT, previous)
    stored = s.store.list()
    assert stored == []  # under budget: nothing to store, and the run ended


def test_apply_async_and_async_stage(store):
    s = spillway.Spiller(store, max_inline_bytes=4096)
    text = log_text(5000, error_at=4000)

    async def main():
        a = await s.apply_async(text)
        async with s.stage_async() as stage:
            for i in range(0, len(text), 3000):
                await stage.write(text[i : i + 3000].encode())
        # Many stages at once.
        outs = await asyncio.gather(*(s.apply_async(log_text(3000 + i)) for i in range(8)))
        return a, stage.outcome, outs

    a, b, outs = asyncio.run(main())
    assert facts(a) == facts(b)
    assert len({o.spill.id for o in outs}) == 8


def test_async_stage_aborts_on_error(store):
    s = spillway.Spiller(store, max_inline_bytes=1024)

    async def main():
        async with s.stage_async() as stage:
            await stage.write(b"x\n" * 10000)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        asyncio.run(main())
    assert s.store.stats().objects == 0


def test_run_async_and_cancellation_stops_the_command(store, tmp_path):
    marker = tmp_path / "pid"

    async def main():
        r = await spillway.run_async(["sh", "-c", "seq 1 50000"], store=store, max_inline_bytes=4096)
        task = asyncio.ensure_future(
            spillway.run_async(["sh", "-c", f"echo $$ > {marker}; exec sleep 30"], store=store)
        )
        await asyncio.sleep(0.5)
        task.cancel()
        t0 = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return r, time.monotonic() - t0

    r, waited = asyncio.run(main())
    assert r.returncode == 0 and r.content.endswith("49999\n50000\n")
    assert waited < 20
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
