#!/usr/bin/env python3
"""Fails when a locked dependency declares a rust-version newer than the
workspace's own: the declared MSRV must be true for Cargo.lock.

    python3 .ci/msrv.py
"""
import json
import subprocess
import sys


def version(text):
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


meta = json.loads(
    subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
)
members = set(meta["workspace_members"])
ours = {p["rust_version"] for p in meta["packages"] if p["id"] in members}
if len(ours) != 1 or None in ours:
    sys.exit(f"msrv: every workspace member must declare the same rust-version, got {sorted(map(str, ours))}")
declared = ours.pop()
newer = sorted(
    (version(p["rust_version"]), p["name"], p["version"], p["rust_version"])
    for p in meta["packages"]
    if p["id"] not in members and p.get("rust_version") and version(p["rust_version"]) > version(declared)
)
if newer:
    for _, name, ver, rv in newer:
        print(f"msrv: {name} {ver} needs Rust {rv}", file=sys.stderr)
    sys.exit(f"msrv: the workspace declares rust-version {declared}, but {len(newer)} locked packages need more")
highest = max(
    (version(p["rust_version"]), p["name"])
    for p in meta["packages"]
    if p["id"] not in members and p.get("rust_version")
)
print(f"msrv: rust-version {declared} holds for all {len(meta['packages'])} locked packages (highest need: {highest[1]}, {'.'.join(map(str, highest[0]))})")
