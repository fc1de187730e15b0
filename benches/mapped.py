#!/usr/bin/env python3
"""`spillway apply FILE` on a large regular file: read as a stream
(`--no-map`) against mapped (the default), each with a fresh store (a new
object is written) and again on the same store (a dedup hit). One process
per run; the file is in the page cache (written, then read once, before
the first run).

    python3 benches/mapped.py BIN [SIZE_MIB] [RUNS]

Runs each case with the default policy (the terminal render, whose salient
scan reads every line) and with `--render raw`, and prints a Markdown
table of medians and the read/mapped ratios.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def log_file(path, size):
    line_kinds = [
        "   Compiling crate-{i} v0.{j}.0 (/src/crate-{i})\n",
        "warning: unused variable `x{i}` --> src/lib.rs:{j}:9\n",
        "test module_{i}::case_{j} ... ok\n",
        "2026-12-05T10:11:12Z INFO request {i} served in {j} ms\n",
    ]
    block = "".join(line_kinds[i % 4].format(i=i, j=i % 97) for i in range(20000)).encode()
    with open(path, "wb") as f:
        written = 0
        while written < size:
            n = min(len(block), size - written)
            f.write(block[:n])
            written += n
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def timed(argv):
    t = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"{argv}: exit {p.returncode}: {p.stderr.decode()}")
    return elapsed


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    size = int(sys.argv[2]) << 20 if len(sys.argv) > 2 else 1 << 30
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    tmp = tempfile.mkdtemp()
    try:
        path = os.path.join(tmp, "input.log")
        log_file(path, size)
        mib = size >> 20
        print(f"| `apply` of a {mib} MiB file | policy | read (`--no-map`) | mapped | read / mapped |")
        print("|---|---|---|---|---|")
        for policy, flags in [("default (terminal render)", []), ("`--render raw`", ["--render", "raw"])]:
            results = {}
            for mode, extra in [("read", ["--no-map"]), ("mapped", [])]:
                new, hit = [], []
                for _ in range(runs):
                    store = os.path.join(tmp, "store")
                    shutil.rmtree(store, ignore_errors=True)
                    base = [binary, "--store", store, "apply"] + flags + extra + [path]
                    new.append(timed(base))
                    hit.append(timed(base))
                results[mode] = (statistics.median(new), statistics.median(hit))
            for i, what in enumerate(["new object (fresh store)", "dedup hit (object exists)"]):
                r, m = results["read"][i], results["mapped"][i]
                print(f"| {what} | {policy} | {r * 1000:.0f} ms | {m * 1000:.0f} ms | {r / m:.2f}× |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
