#!/usr/bin/env python3
"""Preview recall: how often the one line that decides a task (the error)
is in the preview, intact.

    cargo build --release -p spillway-cli && python3 benches/recall.py [path/to/spillway]

60 generated logs of six kinds (pytest, cargo, npm, go test, a Java
server, Kubernetes JSON lines), about 300 KB each, each with its deciding
line placed at one of ten positions from near the start to near the end,
through an 8,000-byte budget: the default policy (terminal render, salient
lines), and `--render raw` (head and tail only) beside it.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile

BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join("target", "release", "spillway")
SIZE = 300_000
BUDGET = "8000"


def noise(kind, rng, i):
    if kind == "pytest":
        return f"tests/test_api.py::test_case_{i} \x1b[32mPASSED\x1b[0m{' ' * 20}[{i % 100:3d}%]\n"
    if kind == "cargo":
        return f"\x1b[1m\x1b[92m   Compiling\x1b[0m dep-{i} v0.{i % 40}.{i % 7}\n"
    if kind == "npm":
        return f"npm http fetch GET 200 https://registry.npmjs.org/pkg-{i} {rng.randrange(5, 900)}ms (cache hit)\n"
    if kind == "go":
        return f"=== RUN   TestHandler/case_{i}\n--- PASS: TestHandler/case_{i} (0.00s)\n"
    if kind == "java":
        return f"2026-12-03 10:{i % 60:02d}:{i % 59:02d}.{i % 1000:03d} INFO  [http-nio-8080-exec-{i % 10}] c.e.api.Controller : served /api/items/{i} in {rng.randrange(1, 90)} ms\n"
    return f'{{"level":"info","ts":"2026-12-03T10:00:{i % 60:02d}Z","msg":"reconciled","pod":"web-{i % 50}","gen":{i}}}\n'


def error(kind, i):
    return {
        "pytest": f"tests/test_api.py::test_case_{i} \x1b[31mFAILED\x1b[0m - AssertionError: expected 200, got 500\n",
        "cargo": f"\x1b[1m\x1b[91merror[E0308]\x1b[0m\x1b[1m: mismatched types in dep-{i}\x1b[0m\n",
        "npm": f"npm ERR! code ERESOLVE unable to resolve dependency tree at pkg-{i}\n",
        "go": f"--- FAIL: TestHandler/case_{i} (0.01s)\n",
        "java": f"2026-12-03 10:00:00.000 ERROR [http-nio-8080-exec-1] c.e.api.Controller : request {i} failed: java.lang.NullPointerException\n",
        "k8s": f'{{"level":"error","ts":"2026-12-03T10:00:00Z","msg":"reconcile failed","pod":"web-{i}","error":"ImagePullBackOff"}}\n',
    }[kind]


def visible(line):
    """The line as a terminal shows it (what the terminal render keeps)."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "\x1b":
            j = i + 2
            while j < len(line) and not (0x40 <= ord(line[j]) <= 0x7E):
                j += 1
            i = j + 1
        else:
            out.append(line[i])
            i += 1
    return "".join(out).rstrip("\n")


def log(kind, where, seed):
    rng = random.Random(seed)
    lines, size, i = [], 0, 0
    while size < SIZE:
        s = noise(kind, rng, i)
        lines.append(s)
        size += len(s)
        i += 1
    at = max(1, min(len(lines) - 2, int(len(lines) * where)))
    e = error(kind, at)
    lines.insert(at, e)
    return "".join(lines).encode(), e


def main():
    if not os.path.exists(BIN):
        sys.exit(f"no binary at {BIN}: cargo build --release -p spillway-cli")
    store = tempfile.mkdtemp(prefix="spillway-recall-")
    kinds = ["pytest", "cargo", "npm", "go", "java", "k8s"]
    positions = [0.03, 0.1, 0.2, 0.35, 0.5, 0.6, 0.75, 0.85, 0.93, 0.99]
    modes = {"default (terminal, salient lines)": [], "--render raw (head and tail)": ["--render", "raw"]}
    kept = {m: 0 for m in modes}
    total = 0
    try:
        for k, kind in enumerate(kinds):
            for p, where in enumerate(positions):
                data, err = log(kind, where, k * 100 + p)
                total += 1
                for mode, flags in modes.items():
                    out = subprocess.run(
                        [BIN, "--store", store, "apply", "--max-inline-bytes", BUDGET, *flags],
                        input=data, capture_output=True, check=True,
                    ).stdout.decode()
                    assert len(out.encode()) <= int(BUDGET)
                    raw_line = err.rstrip("\n")
                    if raw_line in out or visible(err) in out:
                        kept[mode] += 1
    finally:
        shutil.rmtree(store, ignore_errors=True)
    print(f"{total} logs, {SIZE // 1000} KB each, {BUDGET}-byte budget")
    print("| policy | previews that keep the deciding line intact |")
    print("|---|---|")
    for mode in modes:
        print(f"| {mode} | {kept[mode]} of {total} ({100 * kept[mode] / total:.0f}%) |")


if __name__ == "__main__":
    main()
