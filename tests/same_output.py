#!/usr/bin/env python3
"""Checks that two builds of the spillway command print the same bytes.

A restructuring that means to change no behaviour runs this before it lands:

    python3 tests/same_output.py OLD_SPILLWAY NEW_SPILLWAY

It runs `spillway apply` from each binary over every pair of 30 kinds of
input and 26 policies (780 pairs), each pair in a fresh store at the same
path, and compares stdout, stderr, the exit status and the store's objects
(names and bytes). It prints each pair that differs and exits 1 if any
does. The inputs are generated from a fixed seed, so a run is repeatable.
"""

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile


def lines(n, make):
    return "".join(make(i) + "\n" for i in range(n)).encode()


def build_log(rng, n, errors_every):
    out = []
    for i in range(n):
        if i % errors_every == 7:
            out.append(f"src/mod{i % 13}.rs:{i}:5: error[E0{i % 900:03}]: mismatched types `u{i % 64}`")
        elif i % errors_every == 3:
            out.append(f"warning: unused variable `x{i}` in crate {rng.randrange(1000)}")
        else:
            out.append(f"   Compiling crate-{i % 97} v0.{i % 10}.{rng.randrange(100)} (/build/{i})")
    return ("\n".join(out) + "\n").encode()


def inputs():
    rng = random.Random(43)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa"]
    yield "empty", b""
    yield "one-line-no-newline", b"hello from one line with no newline"
    yield "small", lines(20, lambda i: f"line {i} of a small output")
    at = lines(2000, lambda i: f"{i:06} " + "x" * 40)
    yield "at-budget", at[: 32 * 1024]
    yield "just-over", lines(800, lambda i: f"line {i:05} of an output just over its budget ....")
    mid = [f"step {i} ok" for i in range(3000)]
    mid[1500] = "FATAL: disk full while writing /var/tmp/out"
    yield "error-mid-1.1x", ("\n".join(mid) + "\n").encode()[:36000]
    yield "build-2x", build_log(rng, 1100, 10)[:65536]
    yield "plain-1mib", lines(50000, lambda i: f"{i} {rng.choice(words)} {rng.randrange(10**9)}")
    yield "build-5mib", build_log(rng, 80000, 4)
    yield "ansi", lines(4000, lambda i: f"\x1b[1;3{i % 8}m{i}\x1b[0m: \x1b[31merror\x1b[0m: bad {rng.choice(words)}")
    yield "progress", b"".join(
        b"".join(f"\r[{'#' * (p // 5):<20}] {p}% file {f}".encode() for p in range(0, 101, 4)) + b"\n"
        for f in range(400)
    )
    yield "control", bytes(rng.choice([0, 0, 0, 1, 7, 8, 11, 12, 27, 65, 10]) for _ in range(200_000))
    yield "cjk", lines(6000, lambda i: "日本語のテキスト、行番号" + str(i) + "。中文文本。한국어")
    yield "long-lines", b"".join((("y" * 200_000) + f" {i}\n").encode() for i in range(5))
    yield "invalid-utf8", b"".join(bytes([0xFF, 0xFE, 0xC3]) + f" bad bytes {i}\n".encode() for i in range(5000))
    yield "json-small", json.dumps({"a": 1, "b": [1, 2, 3], "c": {"d": "e"}}).encode()
    yield "json-large", json.dumps(
        [{"id": i, "name": rng.choice(words), "tags": [rng.choice(words) for _ in range(3)], "v": rng.random()} for i in range(6000)]
    ).encode()
    deep = "x"
    for i in range(200):
        deep = {f"k{i}": deep, "n": i}
    yield "json-deep", json.dumps(deep).encode()
    # The JSON sketch's paths: a dense document past the window (head side,
    # quiet tail-side records, the window parsed again when its array
    # closes), names with escapes and past 22 bytes, repeated names, a wide
    # object, and whitespace that compaction removes.
    records = [{"id": i, "name": f"test_case_{i}", "ok": i % 7 != 0, "ms": i % 997, "tags": ["unit", "fast"]}
               for i in range(13000)]
    yield "json-records-1mib", json.dumps({"run": "0", "results": records, "log": "step ok\n" * 2000},
                                          separators=(",", ":")).encode()
    yield "json-names", json.dumps(
        {"items": [{f"k\"ey\\{i}": f"v\n{i}", "a\u00e9" + "x" * (i % 40): [1.5e10, -0.0, None, True]}
                   for i in range(3000)]}).encode()
    yield "json-repeated-names", ("{" + ",".join(f'"a":{i},"b":"{i}"' for i in range(3000)) + "}").encode()
    yield "json-wide-object", json.dumps({f"k{i}": i for i in range(20000)}).encode()
    yield "json-pretty", json.dumps({"results": records[:2500]}, indent=2).encode()
    yield "json-lines", lines(5000, lambda i: json.dumps({"ts": i, "level": "error" if i % 9 == 0 else "info", "msg": rng.choice(words)}))
    yield "minified", ("var a=" + ";".join(f"function f{i}(x){{return x*{i}+{rng.randrange(99)}}}" for i in range(15000))).encode()
    tb = 'Traceback (most recent call last):\n  File "/app/main.py", line {0}, in run\n    go()\nValueError: bad value {0}\n'
    yield "tracebacks", "".join(tb.format(i) + "".join(f"log {j}\n" for j in range(30)) for i in range(600)).encode()
    yield "test-runner", lines(9000, lambda i: f"test suite::case_{i} ... {'FAILED' if i % 301 == 0 else 'ok'}")
    yield "repeats", lines(5000, lambda i: "the same line again and again")
    # Runs of one coloured line, which the render copies without its parser,
    # between lines it must not (a redraw, a line with no colour that is not
    # plain), past 16 KiB regions.
    kinds = ["\x1b[32m   Compiling\x1b[0m crate v0.1.0 (r\u00e9sum\u00e9 \u2713)\n",
             "\x1b[1;33mwarning\x1b[0m: retrying {}\n", "\u00a9 2026 no colour {}\n",
             "\x1b[1A\x1b[2Kredraw {}\n", "\x1b[31merror\x1b[0m: disk full {}\n"]
    yield "repeats-coloured", "".join(
        kinds[k % len(kinds)].format(k % 3) * rng.randrange(1, 600) for k in range(80)).encode()
    yield "crlf", b"".join(f"windows line {i}\r\n".encode() for i in range(8000))


POLICIES = [
    [],
    ["--render", "raw"],
    ["--no-salient"],
    ["--render", "raw", "--no-salient"],
    ["--max-inline-bytes", "8000"],
    ["--max-inline-bytes", "1MiB"],
    ["--max-inline-bytes", "500"],
    ["--max-inline-lines", "50"],
    ["--max-inline-tokens", "2000"],
    ["--tokenizer", "approx", "--max-inline-tokens", "3000"],
    ["--tokenizer", "cl100k", "--max-inline-tokens", "2500"],
    ["--head-percent", "10"],
    ["--head-percent", "90"],
    ["--head-percent", "0"],
    ["--salient", "FATAL|ValueError"],
    ["--salient-percent", "50"],
    ["--salient-word", "gamma"],
    ["--format", "json"],
    ["--format", "auto"],
    ["--format", "json", "--max-inline-bytes", "4000"],
    ["--format", "auto", "--render", "raw"],
    ["--compress", "none"],
    ["--level", "19"],
    ["--max-spill-bytes", "100KiB"],
    ["--max-inline-lines", "5", "--max-inline-bytes", "2000"],
    ["--durability", "relaxed"],
]


def store_digest(store):
    h = hashlib.sha256()
    for root, _dirs, files in sorted(os.walk(store)):
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, store)
            # A temp file left behind counts, but not its name, which
            # carries a pid and a time.
            if "tmp" in rel.split(os.sep):
                h.update(b"a temp file left\0")
                continue
            with open(path, "rb") as f:
                h.update(rel.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def run(binary, work, data, policy):
    store = os.path.join(work, "store")
    shutil.rmtree(store, ignore_errors=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LC_ALL": "C"}
    p = subprocess.run(
        [binary, "apply", "--quiet", "--store", store, *policy],
        input=data,
        capture_output=True,
        env=env,
        timeout=300,
    )
    return p.returncode, p.stdout, p.stderr, store_digest(store) if os.path.isdir(store) else ""


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    old, new = (os.path.abspath(b) for b in sys.argv[1:])
    work = tempfile.mkdtemp(prefix="spillway-same-")
    try:
        pairs = differ = 0
        for name, data in inputs():
            for policy in POLICIES:
                pairs += 1
                a = run(old, work, data, policy)
                b = run(new, work, data, policy)
                if a != b:
                    differ += 1
                    what = [k for k, x, y in zip(("status", "stdout", "stderr", "store"), a, b) if x != y]
                    print(f"differs: {name} {' '.join(policy) or '(default)'}: {', '.join(what)}")
        print(f"{pairs} pairs, {differ} differ")
        sys.exit(1 if differ else 0)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
