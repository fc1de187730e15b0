#!/usr/bin/env python3
"""Code Mode, measured with the `spillway` binary:

1. Peak memory per run: `spillway code` on a few programs, each the only
   child whose peak RSS `wait4` reports, beside the process's floor
   (`spillway code` on `return 1`).
2. A token comparison: one task done by direct tool calls and by one
   program. The task: find the failing tests among twenty test-result
   outputs. Directly, the model calls `run` twenty times (`cat` of each
   output) and reads every bounded result; with Code Mode it writes one
   program that reads all twenty through `tools.run` and returns the
   failing tests. Both are counted as the model receives them: bytes, and
   o200k tokens (counted by `spillway apply --tokenizer o200k`).

    cargo build --release -p spillway-cli && python3 benches/code.py
"""

import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPILLWAY = os.environ.get("SPILLWAY_BIN", os.path.join(ROOT, "target", "release", "spillway"))


def run_measured(args, stdin=b""):
    """Runs SPILLWAY ARGS; returns (stdout, exit status, peak RSS in MiB)."""
    p = subprocess.Popen([SPILLWAY, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    p.stdin.write(stdin)
    p.stdin.close()
    out = p.stdout.read()
    p.stdout.close()
    # wait4, not wait: it gives this child's own peak RSS.
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return out, p.returncode, usage.ru_maxrss / 1024


def tokens(store, text):
    """o200k tokens of `text`, counted by spillway."""
    out = subprocess.run(
        [SPILLWAY, "--store", store, "apply", "--json", "--max-inline-tokens", "10000000",
         "--tokenizer", "o200k"],
        input=text.encode(), capture_output=True, check=True,
    ).stdout
    return json.loads(out)["content_tokens"]


def memory(store):
    print("## Peak memory per run (`spillway code`, peak RSS of the process)\n")
    print("| program | exit | peak RSS | bound: 2 × `--memory` + 64 MiB |")
    print("|---|---|---|---|")
    cases = [
        ("return 1", []),
        ("for (let i = 0; i < 1000; i++) await tools.spill_grep({id: 'x', pattern: 'y'}).catch(() => 0); return 1", []),
        ("const l = 'x'.repeat(1023); for (let i = 0; i < 65536; i++) print(l);", []),
        ("const out = await tools.run({command: 'head -c 50000000 /dev/zero | tr \"\\\\0\" a'}); return out.length", ["--memory", "256MiB"]),
        ("const v = await tools.run({command: 'seq 1 4500000'}); return v.trim().split('\\n').filter((l) => l.endsWith('7')).length", []),
        ("return 'x'.repeat(1e9)", ["--memory", "64MiB"]),
        ("const a = []; while (true) a.push(new Array(1000).fill(1));", ["--memory", "64MiB"]),
        ("function f(n) { return f(n + 1) + 1; } return f(0);", ["--memory", "64MiB"]),
        ("let i = 0; while (true) print('x' + i++);", ["--memory", "64MiB", "--timeout", "5s"]),
        ("const s = 'x'.repeat(12e6); for (;;) print(s)", ["--memory", "64MiB", "--timeout", "2s"]),
        ("const s = 'x'.repeat(24e6); for (;;) { try { print(s) } catch (e) {} }", ["--memory", "64MiB", "--timeout", "3s"]),
        ("const a = 'y'.repeat(1e7); for (let i = 0; i < 40; i++) tools.run({command: 'sleep 5', pad: a}).catch(() => 0); await new Promise((r) => setTimeout(r, 5000))", ["--memory", "64MiB", "--concurrency", "1", "--timeout", "2s"]),
    ]
    for program, flags in cases:
        _, status, rss = run_measured(["--store", store, "code", *flags], program.encode())
        shown = program if len(program) < 70 else program[:67] + "..."
        extra = f" (`{' '.join(flags)}`)" if flags else ""
        memory = 64 if "64MiB" in flags else 256 if "256MiB" in flags else 512
        bound = 2 * memory + 64
        print(f"| `{shown}`{extra} | {status} | {rss:.0f} MiB | {bound} MiB {'✓' if rss <= bound else '✗'} |")
    print()


def results(dirname, n, rng):
    """`n` test-result outputs, pytest-like; returns the failing test ids."""
    failing = []
    for k in range(n):
        lines = [f"============================= test session starts ==============================",
                 f"collected 300 items", ""]
        bad = set(rng.sample(range(300), rng.choice([0, 0, 1, 2])))
        for i in range(300):
            name = f"tests/test_module_{k:02}.py::test_case_{i:03}"
            lines.append(f"{name} {'FAILED' if i in bad else 'PASSED'}")
            if i in bad:
                failing.append(name)
        for i in sorted(bad):
            name = f"tests/test_module_{k:02}.py::test_case_{i:03}"
            lines.append(f"____________________ test_case_{i:03} ____________________")
            lines += [f"    def test_case_{i:03}():", "        value = compute()",
                      ">       assert value == 42", "E       assert 41 == 42", ""]
        lines.append(f"=========== {len(bad)} failed, {300 - len(bad)} passed in 3.21s ===========")
        with open(os.path.join(dirname, f"{k:02}.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return failing


def comparison(store):
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as d:
        failing = results(d, 20, rng)
        # Directly: twenty calls, each result bounded as `run` bounds it.
        direct_bytes = direct_tokens = found_direct = 0
        received = ""
        for k in range(20):
            call = json.dumps({"command": f"cat {d}/{k:02}.txt"})
            text = subprocess.run(
                [SPILLWAY, "--store", store, "apply"], input=open(f"{d}/{k:02}.txt", "rb").read(),
                capture_output=True, check=True,
            ).stdout.decode()
            received += text
            direct_bytes += len(text.encode())
            direct_tokens += tokens(store, text) + tokens(store, call)
        found_direct = sum(1 for t in failing if t + " FAILED" in received)
        # One program.
        program = (
            "const failing = [];\n"
            "for (let k = 0; k < 20; k++) {\n"
            f"  const out = await tools.run({{command: `cat {d}/${{String(k).padStart(2, '0')}}.txt`}});\n"
            "  for (const line of out.split('\\n')) if (line.endsWith(' FAILED')) failing.push(line.slice(0, -7));\n"
            "}\n"
            "return failing;"
        )
        out, status, _ = run_measured(["--store", store, "code"], program.encode())
        text = out.decode()
        got = json.loads(text)
        assert status == 0 and got == failing, (status, text)
        code_bytes = len(text.encode())
        code_tokens = tokens(store, text)
        program_tokens = tokens(store, program)
    print("## Tokens: find the failing tests among twenty test-result outputs\n")
    print(f"Twenty outputs of 300 tests each, {len(failing)} failing in all.\n")
    print("| | calls | bytes the model receives | o200k tokens (calls and results) | failing tests found |")
    print("|---|---|---|---|---|")
    print(f"| direct tool calls | 20 | {direct_bytes:,} | {direct_tokens:,} | {found_direct} of {len(failing)} |")
    print(f"| one `run_code` program | 1 | {code_bytes:,} | {code_tokens + program_tokens:,} "
          f"({program_tokens:,} the program, {code_tokens:,} its result) | {len(got)} of {len(failing)} |")
    print()


def main():
    if not os.path.exists(SPILLWAY):
        sys.exit(f"{SPILLWAY} is missing: cargo build --release -p spillway-cli (or set SPILLWAY_BIN)")
    with tempfile.TemporaryDirectory() as store:
        memory(store)
        comparison(store)


if __name__ == "__main__":
    main()
