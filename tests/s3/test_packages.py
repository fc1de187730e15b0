"""The Python and Node.js packages and the MCP server take the same
s3:// store URL as the CLI."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, ROOT, spill_env
from test_s3 import keys, log_lines

PREFIX = "team/spill"


def test_python_package(tmp_path, moto, s3, bucket, monkeypatch):
    spillway = pytest.importorskip("spillway") if os.environ.get("SPILLWAY_S3_OPTIONAL") else __import__("spillway")
    for k, v in spill_env(moto.endpoint, tmp_path / "cache").items():
        if k.startswith(("AWS_", "SPILLWAY_")):
            monkeypatch.setenv(k, v)
    url = f"s3://{bucket}/{PREFIX}"
    data = log_lines(5_000, 51)
    sp = spillway.Spiller(store=url, max_inline_bytes=2048)
    out = sp.apply(data)
    assert out.spill is not None and str(out.spill.path).startswith(f"s3://{bucket}/{PREFIX}/v1/objects/")
    assert f"--store {url} show" in out.content
    store = spillway.Store(url)
    assert store.location == url
    assert store.read(out.spill.id) == data
    assert store.read(out.spill.id, lines="2:3") == b"".join(data.splitlines(keepends=True)[1:3])
    assert [o.id for o in store.list()] == [out.spill.id]
    again = spillway.Spiller(store=store, max_inline_bytes=2048).apply(data)
    assert again.spill is not None and again.spill.dedup
    with pytest.raises(spillway.StoreError) as e:
        spillway.Store("s3://Bad_Bucket/x")
    assert e.value.kind == "config"


def test_node_package(tmp_path, moto, bucket):
    node_dir = ROOT / "bindings" / "node"
    url = f"s3://{bucket}/{PREFIX}"
    script = """
import { Spiller, Store } from './lib/index.js'
const data = Buffer.from(Array.from({ length: 4000 }, (_, i) => `line ${i} of the build\\n`).join(''))
const sp = new Spiller({ store: process.env.URL, maxInlineBytes: 2048 })
const out = await sp.apply(data)
const store = new Store(process.env.URL)
const back = await store.read(out.spill.id)
console.log(JSON.stringify({ path: out.spill.path, same: Buffer.compare(back, data) === 0, root: store.root,
  listed: (await store.list()).map((o) => o.id), id: out.spill.id }))
"""
    env = spill_env(moto.endpoint, tmp_path / "cache")
    env["URL"] = url
    p = subprocess.run(
        ["node", "--input-type=module", "-e", script], cwd=node_dir, env=env, capture_output=True, timeout=120
    )
    assert p.returncode == 0, p.stderr.decode()
    got = json.loads(p.stdout)
    assert got["path"].startswith(f"s3://{bucket}/{PREFIX}/v1/objects/") and got["same"]
    assert got["root"] == url and got["listed"] == [got["id"]]


def test_mcp_server(tmp_path, moto, s3, bucket):
    url = f"s3://{bucket}/{PREFIX}"
    env = spill_env(moto.endpoint, tmp_path / "cache")
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "run", "arguments": {"command": "seq 1 100000"}}},
    ]
    p = subprocess.Popen(
        [BIN, "--store", url, "mcp", "serve", "--max-inline-bytes", "2KiB"],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert p.stdin is not None and p.stdout is not None
    for m in msgs:
        p.stdin.write((json.dumps(m) + "\n").encode())
    p.stdin.flush()
    replies = {}
    while 2 not in replies:
        line = p.stdout.readline()
        assert line, p.stderr.read() if p.stderr else b""
        r = json.loads(line)
        replies[r.get("id")] = r
    text = replies[2]["result"]["content"][0]["text"]
    assert "spill_read" in text and "omitted lines" in text and len(text) < 4096
    objects = keys(s3, bucket, "objects/")
    assert len(objects) == 1
    hexid = next(iter(objects)).split("/objects/")[1].replace("/", "")[:64]
    read = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "spill_read", "arguments": {"id": f"blake3:{hexid[:16]}", "lines": "50000:50002"}}}
    p.stdin.write((json.dumps(read) + "\n").encode())
    p.stdin.flush()
    r = json.loads(p.stdout.readline())
    assert r["id"] == 3
    assert "50000\n50001\n50002" in r["result"]["content"][0]["text"]
    p.stdin.close()
    p.wait(30)
