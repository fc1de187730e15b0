#!/usr/bin/env python3
"""Every row of the whole-input goals in one run, each beside its baseline:
`verify` mapped against read (`benches/mapped.py`), a dedup hit against
BLAKE3 and the JSON previews against the text preview (criterion's
`stage` bench at 64 MiB), and S3 against boto3 (`benches/s3.py`, which
needs `moto[server]` and `boto3`).

    cargo build --release -p spillway-cli && python3 benches/whole.py

Environment: `SPILLWAY_BIN` (default `target/release/spillway`),
`SPILLWAY_MAPPED_MIB` (default 1024), `SPILLWAY_BENCH_ROUNDS` (S3 rounds,
default 5) and `SPILLWAY_RUNS` (mapped runs, default 5). Prints one
Markdown table: the case, its baseline, both times, the ratio and the
target, met (✓) or missed (✗).
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import mapped  # noqa: E402
import ratios  # noqa: E402
import s3  # noqa: E402

SIZE = 64 << 20
CRITERION = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "criterion")


def criterion_median(group, case):
    """Seconds: the median of `case` at 64 MiB in criterion's `group`."""
    ns = ratios.median_ns(os.path.join(CRITERION, group), case, SIZE)
    if ns is None:
        sys.exit(f"criterion saved no estimate for {group}/{case}/{SIZE}")
    return ns / 1e9


def stage_rows():
    """The dedup hit and the JSON previews, from one criterion run."""
    env = dict(os.environ, SPILLWAY_BENCH_SIZES="64MiB")
    subprocess.run(
        ["cargo", "bench", "--bench", "stage", "--",
         r"^(spill/(log|random)/(blake3|stage-dedup-hit)|json/(records|articles)/(text|json)-preview)/"],
        cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL,
    )
    rows = []
    for kind in ("log", "random"):
        rows.append((f"dedup hit at 64 MiB ({kind})", "BLAKE3 alone over the same bytes",
                     criterion_median(f"spill_{kind}", "blake3"),
                     criterion_median(f"spill_{kind}", "stage-dedup-hit"), "≤ 1.3×", 1.3))
    for kind, what, target in (("records", "dense with small values", 2.0), ("articles", "text-heavy", 1.5)):
        rows.append((f"JSON preview, 64 MiB {what}", "the text preview of the same bytes",
                     criterion_median(f"json_{kind}", "text-preview"),
                     criterion_median(f"json_{kind}", "json-preview"), f"≤ {target:g}×", target))
    return rows


def mapped_rows(binary):
    mib = int(os.environ.get("SPILLWAY_MAPPED_MIB", "1024"))
    runs = int(os.environ.get("SPILLWAY_RUNS", "5"))
    rows = []
    for what, policy, read, mapped_s in mapped.measure(binary, mib << 20, runs):
        rows.append((f"{what}, {policy}", "read (each object held open for writing)",
                     read, mapped_s, "reported", None, "speedup"))
    return rows


def s3_rows():
    rows = []
    for name, boto, ours in s3.measure(int(os.environ.get("SPILLWAY_BENCH_ROUNDS", "5"))):
        target = 1.0 if name == "build log" else 1.25
        rows.append((f"S3, 64 MiB {name} from a file", "boto3 `upload_file` of the same file",
                     boto, ours, f"≤ {target:g}×", target))
    return rows


def main():
    binary = os.environ.get("SPILLWAY_BIN", os.path.join(ROOT, "target", "release", "spillway"))
    if not os.access(binary, os.X_OK):
        sys.exit(f"no spillway binary at {binary}: run `cargo build --release -p spillway-cli` first (or set SPILLWAY_BIN)")
    os.environ["SPILLWAY_BIN"] = binary
    s3.SPILLWAY = binary
    rows = mapped_rows(binary) + stage_rows() + s3_rows()
    print("| case | baseline | baseline time | time | ratio | goal |")
    print("|---|---|---:|---:|---:|---|")
    for row in rows:
        what, base, b, t, goal, target = row[:6]
        if len(row) > 6:
            # A speedup: the baseline over the case.
            ratio = b / t
            verdict = "" if target is None else (" ✓" if ratio >= target else " ✗")
            shown = f"{ratio:.2f}× faster"
        else:
            ratio = t / b
            verdict = " ✓" if ratio <= target else " ✗"
            shown = f"{ratio:.2f}×"
        print(f"| {what} | {base} | {b * 1000:,.1f} ms | {t * 1000:,.1f} ms | {shown} | {goal}{verdict} |")


if __name__ == "__main__":
    main()
