#!/usr/bin/env python3
"""The default policy against the raw path, whole process, on each kind of
output users print.

    cargo build --release -p spillway-cli
    python3 benches/kinds.py [SPILLWAY_BIN] [SIZE_MIB] [RUNS] [--before OLD_BIN] [--instructions] [--dir DIR]

For each kind it writes SIZE_MIB (default 64) of generated output to a
file, then runs `spillway apply --compress none FILE` with the default
policy (terminal render, ranked salient lines) and with `--render raw
--no-salient`, alternating, RUNS times each (default 5), into a fresh
store each run, and prints the medians, the ratio and the goal: within
1.15x of the raw path for plain text, 1.5x for every other kind. The ratio
of CPU time (both threads) is printed beside the wall time's.

With `--instructions`, each run is made once under valgrind's cachegrind
instead, and the instructions it executed are printed (before, after,
raw): a count that does not drift with the machine, to compare two builds
by. It takes about a minute a kind at 16 MiB.

With `--before OLD_BIN`, an older build's default policy runs in the same
rounds, and its ratio to the same raw path is printed beside the new one:
this machine's timings drift by 10% or more between runs, so a before and
an after compare fairly only when measured together.

With `--dir DIR`, the inputs and the stores go to DIR instead of the
temporary folder. Every run stores 64 MiB durably, and on a disk both
paths wait as long for its flush, a wait that hides the default path's
work and varies with the disk: on a memory filesystem (`--dir /dev/shm`)
the ratio is the engine's alone.
"""

import argparse
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ESC = "\x1b"


def plain(rng, i):
    return f"{i:09d} request served in {rng.randrange(1, 999)} ms by worker {rng.randrange(64)}\n"


def build_log(rng, i):
    # Nine lines in ten hold a word a salient pattern looks for, each a
    # different shape (different words and layouts, not only numbers).
    words = ["error", "FAILED", "warning", "Error:", "failed", "WARN", "error[E0", "panicked", "fatal"]
    if i % 10 == 9:
        return f"   Compiling crate-{i % 977} v0.{i % 13}.{i % 7}\n"
    w = words[i % len(words)]
    k = rng.randrange(10**6)
    layouts = [
        f"src/m{k}.rs:{i}:{k % 80}: {w} in expression {k:x} of module m{k}\n",
        f"[{k}] {w} while linking target_{k} ({i} objects)\n",
        f"test suite_{k}::case_{i} ... {w} after {k % 1000} ms\n",
        f"{w}: unused import `crate::m{k}::item_{i}` in file_{k}.rs\n",
        f"  --> {w} at line {i}, column {k % 120}: token_{k}\n",
    ]
    return layouts[(i // len(words)) % len(layouts)]


def flood(rng, i):
    k = rng.randrange(10**6)
    return [
        f"src/lib.rs:{k}:9: error[E0308]: mismatched types\n",
        f"warning: unused variable: `x{k}`\n",
        f"2026-12-06T10:{k % 60:02d}:00Z ERROR request {k} failed: connection reset\n",
        f"FAILED tests/test_{k % 300}.py::test_case_{k} - AssertionError\n",
    ][i % 4]


def coloured(rng, i):
    k = rng.randrange(10**6)
    return (f"{ESC}[1m{ESC}[32m   Compiling{ESC}[0m crate-{k} v0.1.{i % 9}\n" if i % 3
            else f"{ESC}[1m{ESC}[33mwarning{ESC}[0m{ESC}[1m: unused `x{k}`{ESC}[0m\n")


def repeated(rng, i):
    # The same coloured line again and again: a retry loop, a spinner's
    # log. Exact repeats fold into one line of the head.
    return f"{ESC}[32m   Compiling{ESC}[0m crate v0.1.0 (résumé ✓)\n"


def progress(rng, i):
    return "".join(f"\r[{'#' * (p // 5):<20}] {p:3d}% file_{i}.tar" for p in range(0, 101, 10)) + "\n"


def control(rng, i):
    return "\x00" * rng.randrange(100, 4000) + "".join(chr(rng.choice([1, 7, 8, 11, 12])) for _ in range(20)) + "\n"


def cjk(rng, i):
    return f"{i} 日本語のログ行、処理中のファイル番号{rng.randrange(10**6)}。中文日志。한국어 로그\n"


def long_lines(rng, i):
    return "x" * (200 * 1024 - 20) + f" {i:012d}\n"


def test_runner(rng, i):
    k = rng.randrange(10**6)
    return (f"test module_{i % 97}::case_{k} ... ok\n" if i % 50
            else f"test module_{i % 97}::case_{k} ... FAILED\n")


def json_lines(rng, i):
    level = "error" if i % 20 == 0 else "info"
    return f'{{"ts":"2026-12-06T10:00:{i % 60:02d}Z","level":"{level}","msg":"request {rng.randrange(10**6)} done","ms":{rng.randrange(999)}}}\n'


def stack_traces(rng, i):
    k = rng.randrange(10**6)
    if i % 12 == 0:
        return "Traceback (most recent call last):\n"
    if i % 12 == 11:
        return f"ValueError: bad value {k}\n"
    return f'  File "/app/module_{i % 40}.py", line {k % 900}, in handler_{k % 50}\n'


def minified(rng, i):
    return ";".join(f"function f{i}_{j}(a){{return a*{rng.randrange(99)}+{j}}}" for j in range(2000)) + ";"


KINDS = [
    ("plain distinct lines", plain, 1.15),
    ("a build log, nine lines in ten holding an error word, each a different shape", build_log, 1.5),
    ("a flood of real error lines of four shapes", flood, 1.5),
    ("coloured compiler output", coloured, 1.5),
    ("one coloured line repeated", repeated, 1.5),
    ("progress bars redrawn with \\r", progress, 1.5),
    ("NUL and control bytes", control, 1.5),
    ("CJK text", cjk, 1.5),
    ("200 KB lines", long_lines, 1.5),
    ("test-runner output", test_runner, 1.5),
    ("JSON lines", json_lines, 1.5),
    ("stack traces", stack_traces, 1.5),
    ("a minified bundle", minified, 1.5),
]


def write_kind(path, make, size):
    rng = random.Random(45)
    with open(path, "w", encoding="utf-8", newline="") as f:
        written, i = 0, 0
        while written < size:
            chunk = "".join(make(rng, i + j) for j in range(256))
            i += 256
            f.write(chunk)
            written += len(chunk.encode())


def run(binary, path, extra, store):
    shutil.rmtree(store, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen([binary, "--store", store, "apply", "--quiet", "--compress", "none", *extra, path],
                            stdout=subprocess.DEVNULL)
    # A run past five minutes is killed. The wait itself blocks: a wait
    # with a timeout polls in sleeps of up to 50 ms, which would be timed.
    watchdog = threading.Timer(300, proc.kill)
    watchdog.start()
    try:
        code = proc.wait()
    except BaseException:
        # Interrupted: the run does not outlive the bench.
        proc.kill()
        proc.wait()
        raise
    finally:
        watchdog.cancel()
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        raise subprocess.CalledProcessError(code, proc.args)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def instructions(binary, path, extra, store):
    """The instructions a run executes, as valgrind's cachegrind counts them
    (user space only; the threads run one at a time under it)."""
    shutil.rmtree(store, ignore_errors=True)
    out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                          binary, "--store", store, "apply", "--quiet", "--compress", "none", *extra, path],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True, timeout=3600)
    found = re.search(rb"I\s+refs:\s+([\d,]+)", out.stderr)
    if not found:
        sys.exit(f"no instruction count in valgrind's report: {out.stderr[-500:]!r}")
    return int(found.group(1).replace(b",", b""))


def count_instructions(binary, before, size, work, kinds):
    """One run of each under cachegrind: a count that does not drift with
    the machine, to compare two builds by (not the goal's measure)."""
    if not shutil.which("valgrind"):
        sys.exit("--instructions needs valgrind")
    print("| kind of output | before | after | raw | after / before |")
    print("|---|---:|---:|---:|---:|")
    for name, make, _ in kinds:
        path = os.path.join(work, "input")
        write_kind(path, make, size)
        store = os.path.join(work, "store")
        o = instructions(before or binary, path, [], store)
        d = instructions(binary, path, [], store)
        r = instructions(binary, path, ["--render", "raw", "--no-salient"], store)
        print(f"| {name} | {o / 1e6:.1f} M | {d / 1e6:.1f} M | {r / 1e6:.1f} M | {d / o:.3f} |", flush=True)
        os.remove(path)


def main():
    parser = argparse.ArgumentParser(description="The default path against the raw path, by kind of output.")
    parser.add_argument("binary", nargs="?", default="target/release/spillway")
    parser.add_argument("size_mib", nargs="?", type=int, default=64)
    parser.add_argument("runs", nargs="?", type=int, default=5)
    parser.add_argument("--before", help="an older build whose default policy is measured in the same rounds")
    parser.add_argument("--instructions", action="store_true",
                        help="count each run's instructions under valgrind instead of timing it")
    parser.add_argument("--dir", help="where the inputs and the store go (default: the temporary folder);"
                        " on a memory filesystem (/dev/shm) no run waits for a disk's flush")
    parser.add_argument("--kind", help="only the kinds whose name holds this text (for many rounds of one)")
    args = parser.parse_args()
    kinds = [k for k in KINDS if args.kind is None or args.kind in k[0]]
    if not kinds:
        sys.exit(f"no kind of output holds {args.kind!r}: " + "; ".join(k[0] for k in KINDS))
    binary = os.path.abspath(args.binary)
    before = os.path.abspath(args.before) if args.before else None
    size, runs = args.size_mib << 20, args.runs
    for b in [binary] + ([before] if before else []):
        if not os.access(b, os.X_OK):
            sys.exit(f"no spillway binary at {b}: run `cargo build --release -p spillway-cli` first")
    work = tempfile.mkdtemp(prefix="spillway-kinds-", dir=args.dir)
    if args.instructions:
        try:
            count_instructions(binary, before, size, work, kinds)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    # Wall time is the goal's measure; CPU time (both threads, user and
    # system) is shown beside it, less moved by what else the machine runs.
    if before:
        print("| kind of output | before | after | raw | before / raw | after / raw | CPU before / raw"
              " | CPU after / raw | goal |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    else:
        print("| kind of output | default | raw | ratio | CPU ratio | goal |")
        print("|---|---:|---:|---:|---:|---|")
    try:
        for name, make, goal in kinds:
            path = os.path.join(work, "input")
            write_kind(path, make, size)
            store = os.path.join(work, "store")
            default, raw, old = [], [], []
            for _ in range(runs):
                if before:
                    old.append(run(before, path, [], store))
                default.append(run(binary, path, [], store))
                raw.append(run(binary, path, ["--render", "raw", "--no-salient"], store))
            d, r = (statistics.median(w for w, _ in runs_of) for runs_of in (default, raw))
            dc, rc = (statistics.median(c for _, c in runs_of) for runs_of in (default, raw))
            mark = "✓" if d / r <= goal else "✗"
            if before:
                o = statistics.median(w for w, _ in old)
                oc = statistics.median(c for _, c in old)
                print(f"| {name} | {o * 1000:.0f} ms | {d * 1000:.0f} ms | {r * 1000:.0f} ms | {o / r:.2f}x"
                      f" | {d / r:.2f}x | {oc / rc:.2f}x | {dc / rc:.2f}x | <= {goal}x {mark} |", flush=True)
            else:
                print(f"| {name} | {d * 1000:.0f} ms | {r * 1000:.0f} ms | {d / r:.2f}x | {dc / rc:.2f}x"
                      f" | <= {goal}x {mark} |", flush=True)
            os.remove(path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
