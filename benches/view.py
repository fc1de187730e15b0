#!/usr/bin/env python3
"""`spillway view` on a large session: a log of a million events (about
1 GB), the time to its first page of cards and the server's peak memory,
beside reading the file once (`cat FILE > /dev/null`) in the same run.

    cargo build --release -p spillway-cli
    python3 benches/view.py [SPILLWAY_BIN] [EVENTS]

The log is spillway's own format: outer calls, each with two nested
calls (started and settled) and a result, about 1 KB an event on average. The
numbers: the time from starting the viewer to its first page of cards
(`/api/cards?limit=50`), to its whole index, to a page at the log's end
and to a search over every result; and the server's peak resident memory
(VmHWM) after all of them. The goal: the first cards within 2 s, the
peak under 200 MiB.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/spillway"
EVENTS = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
PER_CALL = 6  # call, two starts, two settles, result


def write_log(path):
    text = "x" * 1800
    with open(path, "w") as f:
        f.write('{"format":"spillway-session","version":1}\n')
        n = 0
        i = 0
        while n < EVENTS:
            cid = f"call-{i:07d}"
            lines = [
                {"type": "tool/call", "callId": cid, "tool": "run_code",
                 "args": {"code": f"const a = await tools.run({{command: 'make target-{i}'}}); return a"}},
            ]
            for k in (1, 2):
                sub = f"{cid}:code:{k}"
                args = {"command": f"make target-{i}-{k}"}
                lines.append({"type": "tool/code-dispatch-start", "subCallId": sub, "parentCallId": cid,
                              "tool": "run", "args": args})
                lines.append({"type": "tool/code-dispatch", "subCallId": sub, "parentCallId": cid,
                              "tool": "run", "args": args, "isError": k == 2,
                              "content": [{"type": "text", "text": f"step {i} {k}\n{text}\n"}]})
            lines.append({"type": "tool/result", "callId": cid, "isError": False,
                          "content": [{"type": "text", "text": f"result {i}\n{text}\nend {i}\n"}]})
            for l in lines[: EVENTS - n]:
                f.write(json.dumps(l, separators=(",", ":")))
                f.write("\n")
            n += len(lines)
            i += 1


def get(port, token, path):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def peak_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def main():
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "session.jsonl")
        t = time.monotonic()
        write_log(log)
        size = os.path.getsize(log)
        print(f"log: {EVENTS} events, {size / 2**20:.0f} MiB (written in {time.monotonic() - t:.1f} s)")
        # The baseline: the file read once, cold from this process's view
        # (the page cache holds it for both, as it would for a person).
        t = time.monotonic()
        subprocess.run(["cat", log], stdout=subprocess.DEVNULL, check=True)
        read_once = time.monotonic() - t

        t0 = time.monotonic()
        proc = subprocess.Popen([BIN, "--store", os.path.join(d, "store"), "view", log],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            url = proc.stdout.readline().split(": ", 1)[1].strip()
            port = int(url.split(":")[2].split("/")[0])
            token = url.rsplit("=", 1)[1]
            first = get(port, token, "/api/cards?session=0&offset=0&limit=50")
            t_first = time.monotonic() - t0
            assert len(first["cards"]) == 50, first
            while get(port, token, "/api/sessions")["sessions"][0]["indexing"]:
                time.sleep(0.05)
            t_index = time.monotonic() - t0
            total = get(port, token, "/api/sessions")["sessions"][0]["cards"]
            assert total == (EVENTS + PER_CALL - 1) // PER_CALL, total
            t = time.monotonic()
            last = get(port, token, f"/api/cards?session=0&offset={total - 50}&limit=50")
            t_last = time.monotonic() - t
            assert last["cards"][-1]["callId"] == f"call-{total - 1:07d}"
            t = time.monotonic()
            # The last call with a result (the last may have been cut short).
            want = EVENTS // PER_CALL - 1
            found = get(port, token, f"/api/search?q=end%20{want}&limit=10")
            t_search = time.monotonic() - t
            assert [h["card"] for h in found["hits"]] == [want], found
            peak = peak_kib(proc.pid) / 1024
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        print()
        print("| measure | spillway view | reading the file once | ratio |")
        print("|---|---|---|---|")
        print(f"| first page of cards (50) | {t_first:.2f} s | {read_once:.2f} s | {t_first / read_once:.2f}x |")
        print(f"| whole index ({total} cards) | {t_index:.2f} s | {read_once:.2f} s | {t_index / read_once:.2f}x |")
        print(f"| a page at the end, once indexed | {t_last * 1000:.0f} ms | | |")
        print(f"| search over every result | {t_search:.2f} s | {read_once:.2f} s | {t_search / read_once:.2f}x |")
        print(f"| server peak memory (VmHWM) | {peak:.0f} MiB | log {size / 2**20:.0f} MiB | {peak * 2**20 / size:.3f}x |")
        print()
        ok = t_first < 2 and peak < 200
        print(f"goal (first cards within 2 s, peak under 200 MiB): {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
