#!/usr/bin/env python3
"""Runs the stage bench of two builds in one session and prints each case
before and after, for a change that means to cost nothing.

    cargo bench --bench stage --no-run          # in each checkout
    python3 benches/before_after.py OLD_BENCH NEW_BENCH [SIZES]

OLD_BENCH and NEW_BENCH are the bench executables cargo printed
(`target/.../release/deps/stage-HASH`). SIZES is `SPILLWAY_BENCH_SIZES`
(default `64MiB`). The two run group by group, old then new, so that a
slow spell of the machine falls on both; criterion keeps each side as a
baseline of its own (`before`, `after`) under a temporary folder. Each row:
the case, both medians, and after over before; the last line says how
many cases moved past 10% either way.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

GROUPS = [
    "inline/", "spill/log/", "spill/random/", "read/", "json/records/", "json/articles/",
    "terminal/plain/", "terminal/coloured/", "terminal/flood/", "terminal/control/",
]


def run(binary, home, baseline, group, sizes):
    env = dict(os.environ, CRITERION_HOME=home, SPILLWAY_BENCH_SIZES=sizes)
    subprocess.run(
        [binary, "--bench", "--save-baseline", baseline, "^" + re.escape(group)],
        env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def medians(home, baseline):
    out = {}
    for root, _dirs, files in os.walk(home):
        if os.path.basename(root) == baseline and "estimates.json" in files:
            with open(os.path.join(root, "estimates.json")) as f:
                median = json.load(f)["median"]["point_estimate"]
            out[os.path.relpath(os.path.dirname(root), home)] = median
    return out


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    old, new = (os.path.abspath(b) for b in sys.argv[1:3])
    sizes = sys.argv[3] if len(sys.argv) == 4 else "64MiB"
    home = tempfile.mkdtemp(prefix="spillway-before-after-")
    for group in GROUPS:
        run(old, home, "before", group, sizes)
        run(new, home, "after", group, sizes)
    before, after = medians(home, "before"), medians(home, "after")
    moved = 0
    print(f"| case | before | after | after / before |")
    print(f"|---|---|---|---|")
    for case in sorted(before):
        if case not in after:
            continue
        a, b = before[case], after[case]
        ratio = b / a
        moved += abs(ratio - 1) > 0.10
        print(f"| {case} | {a / 1e6:.2f} ms | {b / 1e6:.2f} ms | {ratio:.2f}x |")
    print(f"\n{len(before)} cases; {moved} moved by more than 10%")


if __name__ == "__main__":
    main()
