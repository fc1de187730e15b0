#!/usr/bin/env python3
"""`spillway grep` over a 64 MiB stored object beside the plain tools on the
same object, in one run: `zstdcat OBJECT | grep -n` for a zstd object and
`grep -n OBJECT` for a raw one. Medians of 7 runs each, as ratios.

    cargo build --release -p spillway-cli && python3 benches/grep.py

Two patterns: a rare one (one line in 2,000 matches) and a literal that
matches nothing. The listing budget is lifted (--max-bytes 1GiB) so both
sides print every match.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("SPILLWAY_BIN", os.path.join(ROOT, "target", "release", "spillway"))
SIZE = 64 << 20
RUNS = 7


def log_bytes():
    out, n, i = [], 0, 0
    while n < SIZE:
        line = (f"test_{i} FAILED: expected {i}\n" if i % 2000 == 1999 else f"test_{i} ok in {i % 997} ms\n").encode()
        out.append(line)
        n += len(line)
        i += 1
    return b"".join(out)[:SIZE]


def median_ms(cmd, out_path, shell=False):
    # Output to a file, not /dev/null: GNU grep stops at the first match
    # when it sees its output is /dev/null.
    times = []
    for _ in range(RUNS):
        with open(out_path, "wb") as out:
            t0 = time.perf_counter()
            subprocess.run(cmd, shell=shell, stdout=out, check=False)
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main():
    if not os.path.exists(BIN):
        sys.exit(f"build the CLI first: cargo build --release -p spillway-cli ({BIN} is missing)")
    work = tempfile.mkdtemp(prefix="spillway-grep-bench-")
    try:
        data = log_bytes()
        rows = []
        for compression in ("zstd", "none"):
            store = os.path.join(work, f"store-{compression}")
            out = subprocess.run(
                [BIN, "--store", store, "apply", "--json", "--compress", compression],
                input=data, capture_output=True, check=True,
            )
            spill = json.loads(out.stdout)["spill"]
            for label, pattern in (("rare matches", "FAILED"), ("no match", "panicked at")):
                sink = os.path.join(work, "out")
                ours = median_ms([BIN, "--store", store, "grep", spill["id"], pattern, "--max-bytes", "1GiB"], sink)
                if compression == "zstd":
                    base_cmd = f"zstdcat -q {spill['path']} | grep -n '{pattern}'"
                    base_label = "zstdcat \\| grep -n"
                else:
                    base_cmd = f"grep -n '{pattern}' {spill['path']}"
                    base_label = "grep -n"
                base = median_ms(base_cmd, sink, shell=True)
                rows.append((compression, label, ours, base_label, base))
        print("| object | pattern | spillway grep | baseline | baseline time | ratio | target |")
        print("|---|---|---:|---|---:|---:|---|")
        for compression, label, ours, base_label, base in rows:
            r = ours / base
            print(f"| 64 MiB, {compression} | {label} | {ours:.1f} ms | `{base_label}` | {base:.1f} ms | {r:.2f}x | <= 1.5x {'✓' if r <= 1.5 else '✗'} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
