#!/usr/bin/env python3
"""How many of a real log's distinct errors a preview keeps, on the system
and service logs of Loghub, whose lines are labeled by their own programs.

    git clone --depth 1 https://github.com/logpai/loghub
    cargo build --release -p spillway-cli
    python3 benches/loghub.py target/release/spillway loghub [BEFORE_BIN]

Loghub (He et al., "Loghub: A Large Collection of System Log Datasets for
AI-driven Log Analytics") gives, for each of 16 systems, 2,000 lines of a
real log (`X/X_2k.log`) and each line's parsed fields
(`X/X_2k.log_structured.csv`): the level its program wrote and the id of
its template (the message with its variable parts taken out). The logs
that have a level column and lines at an error level (`E`, `error`,
`ERROR`, `FATAL`, `SEVERE`, `FAILURE`, ...) are used: Android, Apache,
BGL, Hadoop and ZooKeeper, 87 templates at an error level in all.

Each log goes through `BIN apply` at 8,000 bytes and 32 KiB, with
`--render raw --no-salient` (head and tail alone) and with the default
policy (and with the default policy of `BEFORE_BIN` when given). A
template is kept when the preview shows one of its error lines: the
line's first 200 characters appear in the preview.
"""

import csv
import os
import shutil
import subprocess
import sys
import tempfile

ERROR_LEVELS = {"E", "F", "error", "crit", "alert", "emerg", "ERROR", "FATAL", "SEVERE", "FAILURE", "CRITICAL"}
BUDGETS = [8000, 32768]


def logs(root):
    """(name, log path, error lines as (text, template)) for each usable log."""
    found = []
    for system in sorted(os.listdir(root)):
        structured = os.path.join(root, system, f"{system}_2k.log_structured.csv")
        log = os.path.join(root, system, f"{system}_2k.log")
        if not (os.path.exists(structured) and os.path.exists(log)):
            continue
        with open(structured, encoding="utf-8", errors="replace", newline="") as f:
            rows = list(csv.DictReader(f))
        if not rows or "Level" not in rows[0]:
            continue
        with open(log, encoding="utf-8", errors="replace", newline="") as f:
            lines = f.read().split("\n")
        errors = [(lines[int(r["LineId"]) - 1].rstrip("\r"), r["EventId"])
                  for r in rows if r["Level"] in ERROR_LEVELS]
        if errors:
            found.append((system, log, errors))
    return found


def kept(preview, errors):
    return {template for text, template in errors if text[:200] and text[:200] in preview}


def preview(binary, store, budget, extra, path):
    out = subprocess.run(
        [binary, "--store", store, "apply", "--quiet", "--max-inline-bytes", str(budget), *extra, path],
        check=True, capture_output=True, timeout=300)
    return out.stdout.decode("utf-8", errors="replace")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary, root = os.path.abspath(sys.argv[1]), sys.argv[2]
    before = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else None
    found = logs(root)
    if not found:
        sys.exit(f"no Loghub logs with error levels under {root}")
    policies = [("head and tail", binary, ["--render", "raw", "--no-salient"]), ("default", binary, [])]
    if before:
        policies.append(("default, before", before, []))
    store = tempfile.mkdtemp(prefix="spillway-loghub-")
    totals = {}
    print("| log | bytes | error templates | budget | " + " | ".join(p for p, _, _ in policies) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(policies))
    try:
        for system, log, errors in found:
            templates = len({t for _, t in errors})
            for budget in BUDGETS:
                cells = []
                for name, bin_, extra in policies:
                    n = len(kept(preview(bin_, store, budget, extra, log), errors))
                    totals[(name, budget)] = totals.get((name, budget), 0) + n
                    cells.append(str(n))
                print(f"| {system} | {os.path.getsize(log)} | {templates} | {budget} | " + " | ".join(cells) + " |")
        all_templates = sum(len({t for _, t in e}) for _, _, e in found)
        for budget in BUDGETS:
            cells = [f"{totals[(name, budget)]} of {all_templates}" for name, _, _ in policies]
            print(f"| all | | {all_templates} | {budget} | " + " | ".join(cells) + " |")
    finally:
        shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    main()
