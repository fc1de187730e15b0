#!/usr/bin/env python3
"""What `spillway mcp proxy --code-mode` costs and saves, beside the plain
proxy, in one run, over the minimal upstream server of `benches/mcp.py`.

    cargo build --release -p spillway-cli && python3 benches/code_mcp.py

1. Latency: 100 small `echo` calls made one after another through the plain
   proxy, beside one `run_code` program making the same 100 calls through
   the Code Mode proxy (each timed from the request written to the answer
   read; the median of five rounds). The difference over 100 is what a
   nested call adds.
2. Tokens: find the failing tests among twenty test-result outputs. Through
   the plain proxy, twenty `results` calls whose bounded results the model
   reads; through the Code Mode proxy, one program. Bytes and o200k tokens
   that reach the client (the program's own tokens counted too).
"""

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("mcp_bench", os.path.join(HERE, "mcp.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
SPILLWAY = bench.SPILLWAY
ROUNDS = 5


def tokens(store: str, text: str) -> int:
    out = subprocess.run(
        [SPILLWAY, "--store", store, "apply", "--json", "--max-inline-tokens", "10000000", "--tokenizer", "o200k"],
        input=text.encode(), capture_output=True, check=True,
    ).stdout
    return json.loads(out)["content_tokens"]


def text_of(line: bytes) -> str:
    return "".join(b["text"] for b in json.loads(line)["result"]["content"] if b["type"] == "text")


def main() -> None:
    server = [sys.executable, os.path.join(HERE, "mcp.py"), "--upstream"]
    program_100 = "for (let i = 0; i < 100; i++) await tools.echo({text: 'hello ' + i}); return 'done';"
    with tempfile.TemporaryDirectory() as store:
        plain = bench.Client([SPILLWAY, "--store", store, "mcp", "proxy", "--durability", "relaxed", "--", *server])
        code = bench.Client([SPILLWAY, "--store", store, "mcp", "proxy", "--code-mode", "--durability", "relaxed",
                             "--", *server])
        plain_rounds, code_rounds = [], []
        for _ in range(ROUNDS + 1):
            t = time.perf_counter()
            for i in range(100):
                line = plain.request("tools/call", {"name": "echo", "arguments": {"text": f"hello {i}"}})
                assert f"hello {i}".encode() in line
            plain_rounds.append(time.perf_counter() - t)
            t = time.perf_counter()
            line = code.request("tools/call", {"name": "run_code", "arguments": {"code": program_100}})
            code_rounds.append(time.perf_counter() - t)
            assert text_of(line) == "done", line
        # The first round warms both.
        p, c = statistics.median(plain_rounds[1:]), statistics.median(code_rounds[1:])
        print("## Latency: 100 small calls\n")
        print("| | 100 calls | per call |")
        print("|---|---:|---:|")
        print(f"| through the plain proxy, one request each | {p * 1e3:.1f} ms | {p * 10:.3f} ms |")
        print(f"| one `run_code` program through `--code-mode` | {c * 1e3:.1f} ms | {c * 10:.3f} ms |")
        print(f"| added per call by Code Mode | | {(c - p) * 10:+.3f} ms |\n")

        # Tokens.
        direct_bytes = direct_tokens = 0
        for k in range(20):
            line = plain.request("tools/call", {"name": "results", "arguments": {"k": k}})
            text = text_of(line)
            direct_bytes += len(text.encode())
            direct_tokens += tokens(store, text) + tokens(store, json.dumps({"name": "results", "arguments": {"k": k}}))
        program = (
            "const failing = [];\n"
            "for (let k = 0; k < 20; k++) {\n"
            "  const out = await tools.results({k});\n"
            "  for (const line of out.split('\\n')) if (line.endsWith(' FAILED')) failing.push(line.slice(0, -7));\n"
            "}\n"
            "return failing;"
        )
        line = code.request("tools/call", {"name": "run_code", "arguments": {"code": program}})
        result = text_of(line)
        found = json.loads(result)
        want = [l[:-7] for k in range(20) for l in bench.test_output(k).splitlines() if l.endswith(" FAILED")]
        assert found == want, result
        code_tokens, program_tokens = tokens(store, result), tokens(store, program)
        plain.close()
        code.close()
    print("## Tokens: find the failing tests among twenty test-result outputs\n")
    print(f"Twenty outputs of 300 tests each, {len(want)} failing in all.\n")
    print("| | calls | bytes that reach the client | o200k tokens (calls and results) |")
    print("|---|---|---:|---:|")
    print(f"| direct calls through the plain proxy | 20 | {direct_bytes:,} | {direct_tokens:,} |")
    print(f"| one `run_code` through `--code-mode` | 1 | {len(result.encode()):,} | "
          f"{code_tokens + program_tokens:,} ({program_tokens:,} the program, {code_tokens:,} its result) |")


if __name__ == "__main__":
    main()
