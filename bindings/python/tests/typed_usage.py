"""Checked by `mypy --strict` in CI (not run): the public API as a typed
harness uses it, against the shipped annotations and stubs."""

import asyncio
import shutil
import subprocess

import spillway


def observe(spiller: spillway.Spiller, command: str) -> str:
    result: spillway.RunResult = spillway.run(["bash", "-c", command], spiller=spiller, timeout=60)
    outcome: spillway.Outcome = result.outcome
    if outcome.spill is not None:
        first_lines: bytes = spiller.store.read(outcome.spill.id, lines="1:10")
        assert first_lines
    return f"{result.content}[exit {result.returncode}]"


def stream(spiller: spillway.Spiller) -> spillway.Outcome:
    with spiller.stage() as stage:
        proc = subprocess.Popen(["seq", "1", "10"], stdout=subprocess.PIPE)
        assert proc.stdout is not None
        shutil.copyfileobj(proc.stdout, stage)
    assert stage.outcome is not None
    return stage.outcome


async def in_a_loop(spiller: spillway.Spiller) -> int:
    outcome = await spiller.apply_async("text")
    async with spiller.stage_async() as stage:
        await stage.write(b"bytes")
    ran = await spillway.run_async(["true"], spiller=spiller)
    return outcome.total_bytes + ran.returncode


def maintain(store: spillway.Store) -> float:
    report: spillway.GcReport = store.gc(max_bytes="1GiB", max_age="7d", dry_run=True)
    verified: spillway.VerifyReport = store.verify()
    stats: spillway.Stats = store.stats()
    return stats.ratio + report.freed_bytes + verified.ok


if __name__ == "__main__":
    asyncio.run(in_a_loop(spillway.Spiller()))
