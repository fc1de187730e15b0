#!/usr/bin/env python3
"""What `spillway mcp proxy` adds to a tool call, measured beside the same
calls made directly, in one run.

    cargo build --release -p spillway-cli && python3 benches/mcp.py

The upstream is a minimal MCP server on stdio (this file, run with
`--upstream`): `echo` returns its text, `big` a prebuilt 64 MiB text result.
The client speaks JSON-RPC on the pipes itself, so that what is timed is
the transport and the proxy, not an SDK. Small calls: 1,000 `echo` calls one
after another, each timed from the request written to the response read
(median and p99). The big result: from the request written to the whole
response read, directly (the time the upstream takes to send it) and
through the proxy (which stores it and answers with the bounded preview).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPILLWAY = os.environ.get("SPILLWAY_BIN", os.path.join(ROOT, "target", "release", "spillway"))
BIG = 64 << 20
CALLS = 1000


def test_output(k: int) -> str:
    """The k-th of twenty test-result outputs: 300 tests, one failing in every third."""
    lines = ["============================= test session starts ==============================",
             "collected 300 items", ""]
    bad = {(k * 37) % 300} if k % 3 == 0 else set()
    for i in range(300):
        lines.append(f"tests/test_module_{k:02}.py::test_case_{i:03} {'FAILED' if i in bad else 'PASSED'}")
    for i in sorted(bad):
        lines += [f"____________________ test_case_{i:03} ____________________",
                  f"    def test_case_{i:03}():", ">       assert value == 42", "E       assert 41 == 42", ""]
    lines.append(f"=========== {len(bad)} failed, {300 - len(bad)} passed in 3.21s ===========")
    return "\n".join(lines) + "\n"


def upstream() -> None:
    """The minimal server."""
    text = ("step ok " * 8 + "\n") * (BIG // 65)
    text = text[:BIG]
    big_tail = json.dumps({"content": [{"type": "text", "text": text}], "isError": False}).encode()
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        mid = msg.get("id")
        method = msg.get("method")
        if mid is None:
            continue
        if method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "bench", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}},
                                {"name": "big", "inputSchema": {"type": "object"}},
                                {"name": "results", "description": "The k-th test-result output (0 to 19).",
                                 "inputSchema": {"type": "object", "properties": {"k": {"type": "integer"}},
                                                 "required": ["k"]}}]}
        elif method == "tools/call" and msg["params"]["name"] == "big":
            out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(mid).encode() + b',"result":' + big_tail + b"}\n")
            out.flush()
            continue
        elif method == "tools/call" and msg["params"]["name"] == "results":
            result = {"content": [{"type": "text", "text": test_output(int(msg["params"]["arguments"]["k"]))}]}
        else:
            result = {"content": [{"type": "text", "text": msg["params"]["arguments"]["text"]}]}
        out.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}).encode() + b"\n")
        out.flush()


class Client:
    def __init__(self, argv: list[str]) -> None:
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=1 << 20)
        self.next = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.request("tools/list", {})

    def send(self, msg: dict) -> None:
        assert self.p.stdin
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()

    def request(self, method: str, params: dict) -> bytes:
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        assert self.p.stdout
        return self.p.stdout.readline()

    def close(self) -> None:
        assert self.p.stdin
        self.p.stdin.close()
        self.p.wait()


def measure(argv: list[str]) -> tuple[list[float], float, int]:
    c = Client(argv)
    times = []
    for i in range(CALLS):
        t = time.perf_counter()
        line = c.request("tools/call", {"name": "echo", "arguments": {"text": f"hello {i}"}})
        times.append(time.perf_counter() - t)
        assert f"hello {i}".encode() in line
    t = time.perf_counter()
    line = c.request("tools/call", {"name": "big", "arguments": {}})
    big = time.perf_counter() - t
    c.close()
    return times, big, len(line)


def main() -> None:
    if sys.argv[1:] == ["--upstream"]:
        upstream()
        return
    server = [sys.executable, os.path.abspath(__file__), "--upstream"]
    with tempfile.TemporaryDirectory() as store:
        proxy = [SPILLWAY, "--store", store, "mcp", "proxy", "--durability", "relaxed", "--", *server]
        # Warm both once (page cache, the interpreter's imports).
        measure(server)
        direct, big_direct, n_direct = measure(server)
        via, big_via, n_via = measure(proxy)

    def ms(x: float) -> str:
        return f"{x * 1e3:.3f} ms"

    def p99(xs: list[float]) -> float:
        return statistics.quantiles(xs, n=100)[98]

    added = statistics.median(via) - statistics.median(direct)
    print("| measure | direct | through the proxy | added | target |")
    print("|---|---:|---:|---:|---|")
    print(f"| small call, median ({CALLS} calls) | {ms(statistics.median(direct))} | "
          f"{ms(statistics.median(via))} | {ms(added)} | < 1 ms {'✓' if added < 1e-3 else '✗'} |")
    print(f"| small call, p99 | {ms(p99(direct))} | {ms(p99(via))} | {ms(p99(via) - p99(direct))} | |")
    ratio = big_via / big_direct
    print(f"| 64 MiB result ({n_direct:,} bytes sent; {n_via:,} bytes through the proxy) | "
          f"{ms(big_direct)} | {ms(big_via)} | {ratio:.2f}x | < 3x {'✓' if ratio < 3 else '✗'} |")


if __name__ == "__main__":
    main()
