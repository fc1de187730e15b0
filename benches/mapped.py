#!/usr/bin/env python3
"""`verify` of a store of raw objects (objects of 64 MiB adding up to the
size), mapped under a read lease (the default) against read (each object
held open for writing by this script, so no lease is granted and verify
reads it). One process per run; the files are in the page cache. (`apply`
reads its input as a stream: a mapping of a file another process may
rewrite or truncate is not sound.)

    python3 benches/mapped.py BIN [SIZE_MIB] [RUNS]

Prints a Markdown table of medians and the read/mapped ratio.
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


def measure(binary, size, runs):
    """The row, as (what, policy, read seconds, mapped seconds)."""
    rows = []
    tmp = tempfile.mkdtemp()
    try:
        path = os.path.join(tmp, "input.log")
        log_file(path, size)
        # A store of raw 64 MiB objects adding up to the size.
        store = os.path.join(tmp, "vstore")
        with open(path, "rb") as f:
            n = 0
            while True:
                part = f.read(64 << 20)
                if not part:
                    break
                part = b"%d\n" % n + part
                subprocess.run(
                    [binary, "--store", store, "apply", "--compress", "none", "--max-spill-bytes", str(len(part))],
                    input=part, stdout=subprocess.DEVNULL, check=True,
                )
                n += 1
        objects = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(store, "v1", "objects")) for f in fs]
        verify = [binary, "--store", store, "verify", "--grace", "0s"]
        mapped = statistics.median(timed(verify) for _ in range(runs))
        # Each object held open for writing: no lease is granted, so verify
        # reads every object.
        held = [open(o, "ab") for o in objects]
        try:
            read = statistics.median(timed(verify) for _ in range(runs))
        finally:
            for h in held:
                h.close()
        rows.append((f"`verify` of {len(objects)} raw objects, {size >> 20} MiB", "every object", read, mapped))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    size = int(sys.argv[2]) << 20 if len(sys.argv) > 2 else 1 << 30
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    print(f"| {size >> 20} MiB | policy | read | mapped | read / mapped |")
    print("|---|---|---|---|---|")
    for what, policy, r, m in measure(binary, size, runs):
        print(f"| {what} | {policy} | {r * 1000:.0f} ms | {m * 1000:.0f} ms | {r / m:.2f}× |")


if __name__ == "__main__":
    main()
