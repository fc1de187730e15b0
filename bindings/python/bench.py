#!/usr/bin/env python3
"""Times spillway's Python binding beside what Python harnesses do today, in
one run, on the same texts, and prints a Markdown table of medians and
ratios.

    python bindings/python/bench.py [--runs N] [--cli PATH]

Rows, for a 1 MiB and a 64 MiB build log (bytes, as a subprocess gives
them) and a 50,000-byte budget:

* Spiller.apply: the binding; hashes, compresses (zstd 1), stores durably
  (fsync) and previews. A fresh store each run, so no run is a dedup hit.
* spillway apply FILE: the CLI on the same bytes in a file, process start
  included.
* python line head/tail: decode, split into lines, keep whole lines from
  the head (30%) and the tail (70%) of the budget, as a line-aware Python
  harness does. Stores nothing.
* python slice: decode and keep the first and last characters (the middle
  cut OpenHands makes). Stores nothing.
* 2 threads x Spiller.apply: two threads applying the 64 MiB text at once,
  against one, without compression: the GIL is released while the engine
  works. (With zstd one call already keeps up to 4 cores busy, so on a
  2-core machine two calls cannot run side by side any faster.)
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import spillway

BUDGET = 50_000
REPO = Path(__file__).resolve().parents[2]


def log_bytes(size: int) -> bytes:
    parts, n, i = [], 0, 0
    while n < size:
        line = (
            f"   Compiling crate-{i} v0.{i % 97}.{i % 13} (registry)\n"
            if i % 50
            else f"warning: unused variable `x{i}` at src/lib.rs:{i}:9\n"
        ).encode()
        parts.append(line)
        n += len(line)
        i += 1
    return b"".join(parts)[:size]


def python_lines(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    if len(text) <= BUDGET:
        return text
    lines = text.splitlines(keepends=True)
    head, used = [], 0
    for line in lines:
        if used + len(line) > BUDGET * 3 // 10:
            break
        head.append(line)
        used += len(line)
    tail, used = [], 0
    for line in reversed(lines[len(head):]):
        if used + len(line) > BUDGET * 7 // 10 - 100:
            break
        tail.append(line)
        used += len(line)
    omitted = len(lines) - len(head) - len(tail)
    return "".join(head) + f"[... {omitted} lines omitted ...]\n" + "".join(reversed(tail))


def python_slice(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    if len(text) <= BUDGET:
        return text
    half = BUDGET // 2 - 50
    return text[:half] + "\n<response clipped>\n" + text[-half:]


def median_ms(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cli", default=os.environ.get("SPILLWAY_BIN", str(REPO / "target/release/spillway")))
    args = ap.parse_args()
    if not Path(args.cli).exists():
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "spillway-cli"], cwd=REPO, check=True)
    work = Path(tempfile.mkdtemp(prefix="spillway-bench-"))
    try:
        rows = []
        for label, size in (("1 MiB", 1 << 20), ("64 MiB", 64 << 20)):
            data = log_bytes(size)
            path = work / f"input-{size}"
            path.write_bytes(data)
            counter = iter(range(10**9))

            def fresh() -> Path:
                d = work / f"store-{next(counter)}"
                return d

            def binding(**policy):
                spillway.Spiller(fresh(), max_inline_bytes=BUDGET, **policy).apply(data)

            def cli():
                subprocess.run(
                    [args.cli, "--store", fresh(), "apply", "--max-inline-bytes", str(BUDGET), path],
                    stdout=subprocess.DEVNULL, check=True,
                )

            # Sanity: the binding's content fits the budget.
            assert len(spillway.Spiller(fresh(), max_inline_bytes=BUDGET).apply(data).content.encode()) <= BUDGET
            r = {
                "Spiller.apply": median_ms(binding, args.runs),
                "spillway apply FILE": median_ms(cli, args.runs),
                "python line head/tail": median_ms(lambda: python_lines(data), args.runs),
                "python slice": median_ms(lambda: python_slice(data), args.runs),
            }
            if size == 64 << 20:
                def two():
                    ts = [threading.Thread(target=binding, kwargs={"compression": "none"}) for _ in range(2)]
                    for t in ts:
                        t.start()
                    for t in ts:
                        t.join()
                r["Spiller.apply, no compression"] = median_ms(lambda: binding(compression="none"), args.runs)
                r["2 threads x Spiller.apply, no compression"] = median_ms(two, args.runs)
            rows.append((label, r))
            for d in work.glob("store-*"):
                shutil.rmtree(d)
        print("| input | what | median ms | vs Spiller.apply |")
        print("|---|---|---:|---:|")
        for label, r in rows:
            base = r["Spiller.apply"]
            for what, ms in r.items():
                print(f"| {label} | {what} | {ms:.1f} | {ms / base:.2f}x |")
        big = dict(rows)["64 MiB"]
        print()
        print(f"64 MiB: binding / CLI = {big['Spiller.apply'] / big['spillway apply FILE']:.2f} (target <= 1.3)")
        print(f"64 MiB: binding / python line head/tail = {big['Spiller.apply'] / big['python line head/tail']:.2f} (target < 1)")
        two = big["2 threads x Spiller.apply, no compression"] / big["Spiller.apply, no compression"]
        print(f"64 MiB: 2 threads / 1 thread = {two:.2f} (well under 2 when the GIL is released)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
