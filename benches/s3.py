#!/usr/bin/env python3
"""A 64 MiB spill to an S3 server beside uploading the same bytes with
boto3, in one run.

    cargo build --release -p spillway-cli && python3 benches/s3.py

The server is moto_server (the `moto[server]` package) on a loopback port.
Each round uploads fresh content (its first line differs, so nothing is a
dedup hit) both ways, alternating which goes first:

- boto3: `upload_file` of the same file with its default transfer
  settings (multipart above 8 MiB, 10 threads);
- spillway: `spillway --store s3://BUCKET/spill apply < FILE`, the same
  bytes in a file: it maps them, hashes them (BLAKE3), compresses them (zstd
  level 1), looks for the object (`HEAD`), uploads it straight to its key
  (one create-only `PUT` up to 32 MiB, else 8 MiB parts, 8 at once, completed
  with `If-None-Match: *`) and writes the bounded preview; the process
  start is included.

Two inputs: a build log (compressible text, as tool output mostly is) and
random bytes (zstd cannot shrink them, so spillway stores them raw: the
same bytes boto3 sends). Reported: the median of the rounds and the ratio. The server,
a single Python process on this machine, is the bottleneck, not a network.
"""

import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import boto3

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPILLWAY = os.environ.get("SPILLWAY_BIN", os.path.join(ROOT, "target", "release", "spillway"))
SIZE = 64 << 20
ROUNDS = int(os.environ.get("SPILLWAY_BENCH_ROUNDS", "5"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_log(size: int) -> bytes:
    rng = random.Random(7)
    words = ["Compiling", "Checking", "warning:", "unused", "variable", "crate", "v0.1.0", "target", "debug", "ms"]
    lines = []
    n = 0
    i = 0
    while n < size:
        line = f"[{i:08d}] {' '.join(rng.choice(words) for _ in range(9))} {rng.randrange(10**6)}\n".encode()
        lines.append(line)
        n += len(line)
        i += 1
    return b"".join(lines)[:size]


def random_bytes(size: int) -> bytes:
    return os.urandom(size)


def measure(rounds: int = ROUNDS) -> list[tuple[str, float, float]]:
    """(input, boto3 seconds, spillway seconds): the medians of `rounds`."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rows = []
    try:
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        endpoint = f"http://127.0.0.1:{port}"
        s3 = boto3.client(
            "s3", endpoint_url=endpoint, aws_access_key_id="bench", aws_secret_access_key="bench", region_name="us-east-1"
        )
        s3.create_bucket(Bucket="bench")
        env = dict(os.environ)
        env.update(
            AWS_ENDPOINT_URL=endpoint,
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",
            SPILLWAY_S3_CACHE=tempfile.mkdtemp(),
        )
        for name, make in (("build log", build_log), ("random bytes", random_bytes)):
            base = make(SIZE)
            times = {"boto3": [], "spillway": []}
            with tempfile.TemporaryDirectory() as tmp:
                for r in range(rounds):
                    data = f"round {r} {name} {time.time_ns()}\n".encode() + base[: SIZE - 64]
                    path = os.path.join(tmp, "input")
                    with open(path, "wb") as f:
                        f.write(data)
                    stored = []

                    def via_boto3() -> float:
                        key = f"boto3/{name}/{r}"
                        t = time.perf_counter()
                        s3.upload_file(path, "bench", key)
                        dt = time.perf_counter() - t
                        stored.append(key)
                        return dt

                    def via_spillway() -> float:
                        with open(path, "rb") as stdin:
                            t = time.perf_counter()
                            p = subprocess.run(
                                [SPILLWAY, "--store", "s3://bench/spill", "apply", "--json", "--max-inline-bytes", "16KiB"],
                                stdin=stdin,
                                stdout=subprocess.PIPE,
                                env=env,
                                check=True,
                            )
                            dt = time.perf_counter() - t
                        outcome = json.loads(p.stdout)
                        assert not outcome["spill"]["dedup"], outcome
                        stored.append(outcome["spill"]["path"].split("/", 3)[3])
                        return dt

                    order = [("boto3", via_boto3), ("spillway", via_spillway)]
                    if r % 2:
                        order.reverse()
                    for k, f in order:
                        times[k].append(f())
                    # The server keeps objects in its memory: each round's
                    # go, so that the last round runs as the first did.
                    for key in stored:
                        s3.delete_object(Bucket="bench", Key=key)
            if os.environ.get("SPILLWAY_BENCH_VERBOSE"):
                print(name, {k: [round(x * 1000) for x in v] for k, v in times.items()}, file=sys.stderr)
            rows.append((name, statistics.median(times["boto3"]), statistics.median(times["spillway"])))
    finally:
        server.terminate()
        server.wait(10)
    return rows


def main() -> None:
    print(f"{SIZE >> 20} MiB per upload, {ROUNDS} rounds, moto_server on a loopback port")
    for name, b, s in measure():
        print(f"{name:>12}: boto3 {b * 1000:7.0f} ms   spillway {s * 1000:7.0f} ms   ratio {s / b:.2f}x")


if __name__ == "__main__":
    main()
