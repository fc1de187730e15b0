#!/usr/bin/env python3
"""Prints each benchmark case over its baseline, from criterion's saved
estimates (run `cargo bench --bench stage` and
`cargo bench -p spillway-registry --bench render` first).

    python3 benches/ratios.py [target/criterion]

Each row: group, size, case, its median, the baseline's median, the ratio,
and the target ratio where the project sets one.
"""
import json
import os
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join("target", "criterion")

# (case, baseline, {size: target ratio}, the groups it applies to or None for all)
PAIRS = [
    ("stage", "copy+count+validate", {16384: 3.0}, None),
    ("stage-raw", "hash+write", {67108864: 1.25}, None),
    ("stage-raw-durable", "hash+write+fsync", {67108864: 1.25}, None),
    ("stage-zstd-1", "zstd-1", {67108864: 1.15}, ["spill_log"]),
    # Output zstd cannot shrink is stored raw: the default policy on it costs
    # what the raw path costs.
    ("stage-zstd-1", "stage-raw", {67108864: 1.1}, ["spill_random"]),
    ("stage-zstd-3", "zstd-3", {}, None),
    ("stage-dedup-hit", "blake3", {67108864: 1.3}, None),
    ("run_code-render-into-stage", "apply-rendered", {}, None),
    ("json-preview", "text-preview", {67108864: 2.0}, ["json_records"]),
    ("json-preview", "text-preview", {67108864: 1.5}, ["json_articles"]),
    ("stage-terminal", "stage-raw-render", {67108864: 1.15}, ["terminal_plain"]),
    ("stage-terminal", "stage-raw-render", {67108864: 2.0}, ["terminal_coloured"]),
    # NUL and other control bytes render to nothing: passed over, not parsed.
    ("stage-terminal", "stage-raw-render", {67108864: 1.5}, ["terminal_control"]),
    ("stage-terminal-salient", "stage-raw-render", {}, None),
    ("stage-terminal-tokens", "stage-terminal", {67108864: 1.05}, None),
    # Code Mode: a program that prints 64 MiB, over the stage alone on the same bytes.
    ("program", "stage", {67108864: 2.0}, ["print"]),
]


def plain_median_ns(group, case):
    """The median of a benchmark without a size (`group/case`)."""
    path = os.path.join(ROOT, group, case, "new", "estimates.json")
    try:
        with open(path) as f:
            return json.load(f)["median"]["point_estimate"]
    except (OSError, KeyError, ValueError):
        return None


def code_rows():
    """Code Mode's start and nested-call costs (`cargo bench -p spillway-code`)."""
    noop, start = plain_median_ns("code", "noop-call"), plain_median_ns("code", "start")
    direct, nested = plain_median_ns("code", "direct-1000"), plain_median_ns("code", "nested-1000")
    if None in (noop, start, direct, nested):
        return []
    per_nested = (nested - start) / 1000
    per_direct = direct / 1000
    over = per_nested - per_direct
    return [
        ("code", "", "start (return 1)", fmt_time(start), "", "noop-call", fmt_time(noop),
         f"{start / noop:.0f}x", f"<= 5 ms {'meets' if start <= 5e6 else 'MISSES'}"),
        ("code", "", "a nested call", fmt_time(per_nested), "", "a direct call", fmt_time(per_direct),
         f"+{fmt_time(over)}", f"<= +100 us {'meets' if over <= 1e5 else 'MISSES'}"),
    ]


def median_ns(group_dir, case, size):
    path = os.path.join(group_dir, case, str(size), "new", "estimates.json")
    try:
        with open(path) as f:
            return json.load(f)["median"]["point_estimate"]
    except (OSError, KeyError, ValueError):
        return None


def human(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def fmt_time(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} us"
    return f"{ns:.0f} ns"


def main():
    if not os.path.isdir(ROOT):
        sys.exit(f"no benchmark results in {ROOT}: run `cargo bench --bench stage` (and `-p spillway-registry --bench render`) first")
    rows = []
    # Criterion names a group's folder after the group, '/' turned into '_'.
    for group in sorted(os.listdir(ROOT)):
        group_dir = os.path.join(ROOT, group)
        if not os.path.isdir(group_dir) or group == "report":
            continue
        for case, baseline, targets, groups in PAIRS:
            if groups is not None and group not in groups:
                continue
            case_dir = os.path.join(group_dir, case)
            if not os.path.isdir(case_dir):
                continue
            sizes = sorted(int(s) for s in os.listdir(case_dir) if s.isdigit())
            for size in sizes:
                t = median_ns(group_dir, case, size)
                b = median_ns(group_dir, baseline, size)
                if t is None or b is None:
                    continue
                target = targets.get(size)
                ratio = t / b
                verdict = "" if target is None else ("meets" if ratio <= target else "MISSES")
                gbps = size / t  # bytes per ns == GB/s
                rows.append((group.replace("_", "/", 1), human(size), case, fmt_time(t), f"{gbps:.2f}", baseline,
                             fmt_time(b), f"{ratio:.2f}x", "" if target is None else f"<= {target}x {verdict}"))
    for group in ("read",):
        group_dir = os.path.join(ROOT, group)
        if not os.path.isdir(group_dir):
            continue
        for case in sorted(os.listdir(group_dir)):
            case_dir = os.path.join(group_dir, case)
            for size in sorted(int(s) for s in os.listdir(case_dir) if s.isdigit()):
                t = median_ns(group_dir, case, size)
                if t is not None:
                    rows.append((group, human(size), case, fmt_time(t), f"{size / t:.2f}", "", "", "", ""))
    rows += code_rows()
    if not rows:
        sys.exit("no case/baseline pairs found")
    head = ("group", "size", "case", "median", "GB/s", "baseline", "baseline median", "ratio", "target")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    print(" | ".join(h.ljust(w) for h, w in zip(head, widths)))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
