"""spillway's MCP proxy and server, driven by the official Python MCP SDK as
the client, over stdio.

Needs `SPILLWAY_BIN` (the `spillway` binary) and `SERVER_EVERYTHING` (the
`mcp-server-everything` binary from @modelcontextprotocol/server-everything);
`.ci/run` sets both.
"""

import base64
import json
import os
import re
import sys
import tempfile
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).parent
SPILLWAY = os.environ.get("SPILLWAY_BIN", str(HERE.parents[2] / "target" / "debug" / "spillway"))
EVERYTHING = os.environ.get(
    "SERVER_EVERYTHING", str(HERE / "node_modules" / ".bin" / "mcp-server-everything")
)
BUDGET = 4096

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def store(tmp_path: Path) -> str:
    return str(tmp_path / "store")


@asynccontextmanager
async def session(command: str, args: list[str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            yield s


def proxied(store: str, *server: str, budget: int = BUDGET) -> tuple[str, list[str]]:
    return SPILLWAY, [
        "--store", store, "mcp", "proxy", "--max-inline-bytes", str(budget), "--", *server,
    ]


def big_server() -> list[str]:
    return [sys.executable, str(HERE / "big_server.py")]


def texts(result: Any) -> list[str]:
    return [b.text for b in result.content if b.type == "text"]


def hint(text: str) -> tuple[str, str]:
    """The id and the range a notice names."""
    start = text.index('spillway_spill_read(id="') + len('spillway_spill_read(id="')
    ident = text[start : text.index('"', start)]
    rest = text[text.index('"', start) + 3 :]
    unit, _, value = rest.partition('="')
    return ident, unit + "=" + value[: value.index('"')]


async def read_pages(s: ClientSession, uri: str, budget: int) -> tuple[str, int]:
    """A stored object read as a resource, page by page; and the pages."""
    whole, pages = "", 0
    while True:
        result = await s.read_resource(uri)
        pages += 1
        page = result.contents[0].text
        assert len(page.encode()) <= budget
        whole += page
        if len(result.contents) == 1:
            return whole, pages
        nxt = result.contents[1]
        assert result.meta is not None and result.meta["spillway/next"] == str(nxt.uri)
        assert str(nxt.uri) in nxt.text
        uri = str(nxt.uri)


# --- spillway mcp serve ---------------------------------------------------


async def test_serve_runs_a_command_and_bounds_its_output(store: str) -> None:
    async with session(SPILLWAY, ["--store", store, "mcp", "serve", "--max-inline-bytes", "2KiB"]) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert set(tools) == {"run", "run_code", "spill_read", "spill_grep"}
        assert tools["run"].input_schema["required"] == ["command"]

        small = await s.call_tool("run", {"command": "echo hi; echo err >&2"})
        assert not small.is_error
        assert texts(small) == ["hi\nerr\n"]

        failing = await s.call_tool(
            "run", {"command": "seq 1 200000; echo 'error: disk full' >&2; exit 3"}
        )
        assert failing.is_error
        (text,) = texts(failing)
        assert len(text.encode()) <= 2048
        assert text.endswith("error: disk full\n[exit status 3]")
        ident, _ = (text[text.index('spill_read(id="') + 15 :].split('"', 1)[0], None)
        grep = await s.call_tool("spill_grep", {"id": ident, "pattern": "^123456$"})
        assert texts(grep) == ["123456:123456\n"]
        read = await s.call_tool("spill_read", {"id": ident, "lines": "199999:200001"})
        assert texts(read) == ["199999\n200000\nerror: disk full\n"]

        with tempfile.TemporaryDirectory() as cwd:
            here = await s.call_tool("run", {"command": "pwd", "cwd": cwd})
            assert texts(here) == [os.path.realpath(cwd) + "\n"]
        slow = await s.call_tool("run", {"command": "sleep 30", "timeout": 0.5})
        assert slow.is_error and "[timed out after 0.5 s; its process group was killed]" in texts(slow)[0]
        bad = await s.call_tool("run", {"cwd": "/"})
        assert bad.is_error and "command" in texts(bad)[0]

        # A resource read is bounded too: page by page, the whole object
        # (the command's output, then how it ended, as every shell tool
        # stores it).
        whole, pages = await read_pages(s, f"spillway://{ident}", 2048)
        assert whole == "".join(f"{i}\n" for i in range(1, 200001)) + "error: disk full\n[exit status 3]"
        assert pages > 100
        bad = await attempt(s.read_resource(f"spillway://{ident}?lines=1:2"))
        assert "?bytes=A:B" in str(bad)


async def test_serve_run_code_calls_the_tools_from_a_program(store: str, tmp_path: Path) -> None:
    log = tmp_path / "session.jsonl"
    args = ["--store", store, "mcp", "serve", "--max-inline-bytes", "2KiB", "--timeout", "2s",
            "--session-log", str(log)]
    async with session(SPILLWAY, args) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        code_tool = tools["run_code"]
        # The description carries the SDK the program is written against.
        assert "declare const tools" in code_tool.description
        assert "run(args: {" in code_tool.description and "command: string" in code_tool.description
        assert "run_code(" not in code_tool.description
        assert code_tool.input_schema["required"] == ["code"]

        program = (
            "const [a, b] = await Promise.all([tools.run({command: 'echo one'}),"
            " tools.run({command: 'echo two'})]);\n"
            "print('got', a.trim(), b.trim());\n"
            "return {joined: a.trim() + '+' + b.trim()};"
        )
        ok = await s.call_tool("run_code", {"code": program})
        assert not ok.is_error
        assert texts(ok) == ['got one two\n{"joined":"one+two"}']

        # A nested value is complete to the program; the outer result is bounded.
        program = (
            "const out = await tools.run({command: 'seq 1 300000'});\n"
            "const lines = out.trim().split('\\n');\n"
            "for (const l of lines) if (l.endsWith('77777')) print('found ' + l);\n"
            "return lines.length;"
        )
        whole = await s.call_tool("run_code", {"code": program})
        assert texts(whole) == ["found 77777\nfound 177777\nfound 277777\n300000"]

        flood = await s.call_tool("run_code", {"code": "for (let i = 1; i <= 100000; i++) print(i);"})
        (text,) = texts(flood)
        assert len(text.encode()) <= 2048 and text.startswith("1\n2\n") and text.endswith("100000")
        ident = text[text.index('spill_read(id="') + 15 :].split('"', 1)[0]
        read = await s.call_tool("spill_read", {"id": ident, "lines": "50000:50001"})
        assert texts(read) == ["50000\n50001\n"]

        endless = await s.call_tool("run_code", {"code": "print('started'); while (true) {}"})
        assert endless.is_error
        assert texts(endless) == ["started\nCODE_RUN_FAILED: the program ran past its wall-time limit of 2 s"]
        again = await s.call_tool("run_code", {"code": "return typeof globalThis.leaked"})
        assert texts(again) == ["undefined"]

    events = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    kinds = [e["type"] for e in events]
    assert kinds.count("tool/code-dispatch-start") == 3
    assert kinds.count("tool/code-dispatch") == 3
    assert kinds.count("tool/result") == 6  # five programs and one spill_read
    starts = [e["subCallId"] for e in events if e["type"] == "tool/code-dispatch-start"]
    assert starts[0].endswith(":code:1") and starts[1].endswith(":code:2")


# --- spillway mcp proxy in front of a Python SDK server --------------------


async def test_proxy_bounds_big_text_and_reads_it_back(store: str) -> None:
    async with session(*proxied(store, *big_server())) as s:
        names = [t.name for t in (await s.list_tools()).tools]
        assert names[-2:] == ["spillway_spill_read", "spillway_spill_grep"]
        result = await s.call_tool("big_text", {"lines": 50_000})
        assert not result.is_error
        (text,) = texts(result)
        assert len(text.encode()) <= BUDGET
        assert text.endswith("49999 passed, 1 failed")
        # The structured rendition is bounded too, and still fits the
        # tool's output schema (the SDK checked it).
        assert isinstance(result.structured_content["result"], str)
        assert len(json.dumps(result.structured_content)) <= BUDGET
        ident, rng = hint(text)
        unit, _, value = rng.partition("=")
        grep = await s.call_tool("spillway_spill_grep", {"id": ident, "pattern": "FAILED"})
        assert texts(grep) == ["25001:test_25001 ... FAILED: expected 1, got 2\n"]
        page = await s.call_tool("spillway_spill_read", {"id": ident, unit: value})
        assert page.content[0].text.startswith("test_")


async def test_proxy_keeps_images_and_errors(store: str) -> None:
    async with session(*proxied(store, *big_server())) as s:
        pic = await s.call_tool("picture_with_caption", {"caption_lines": 20_000})
        kinds = [b.type for b in pic.content]
        assert kinds == ["text", "image", "text"], kinds
        assert base64.b64decode(pic.content[1].data).startswith(b"\x89PNG")
        assert sum(len(t.encode()) for t in texts(pic)) <= BUDGET
        assert texts(pic)[1] == "the end"

        err = await s.call_tool("fail_loudly", {"lines": 30_000})
        assert err.is_error
        (text,) = texts(err)
        assert len(text.encode()) <= BUDGET
        assert text.rstrip().endswith("ValueError: the last line")


async def test_proxy_bounds_structured_content_within_its_schema(store: str) -> None:
    async with session(*proxied(store, *big_server())) as s:
        result = await s.call_tool("big_structured", {"rows": 20_000})
        sc = result.structured_content
        assert sc["total"] == 20_000
        rows = sc["rows"]
        assert rows[0] == {"id": 0, "name": "row 0", "ok": True}
        assert rows[-1] == {"id": 19_999, "name": "row 19999", "ok": True}
        assert len(json.dumps(sc, separators=(",", ":"))) <= BUDGET
        # Reading the stored structure back by a pointer.
        (text,) = texts(result)
        ident = re.search(r"blake3:[0-9a-f]{16}", text).group(0)
        back = await s.call_tool("spillway_spill_read", {"id": ident, "pointer": "/rows/7"})
        assert json.loads(texts(back)[0]) == {"id": 7, "name": "row 7", "ok": False}


async def test_a_malformed_message_gets_an_error_and_the_session_goes_on(store: str) -> None:
    command, args = proxied(store, *big_server())
    process = await anyio.open_process([command, *args])
    assert process.stdin and process.stdout
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        None,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "x-7", "method": "tools/call", "params": {"name": "big_text", "arguments": {"lines": 3}}},
    ]
    for m in lines:
        await process.stdin.send((b"this is not json" if m is None else json.dumps(m).encode()) + b"\n")
    got: list[dict[str, Any]] = []
    buf = b""
    with anyio.fail_after(20):
        while len(got) < 3:
            buf += await process.stdout.receive()
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                got.append(json.loads(line))
    await process.stdin.aclose()
    with anyio.fail_after(20):
        assert await process.wait() == 0
    by_id = {str(m.get("id")): m for m in got}
    assert by_id["None"]["error"]["code"] == -32700
    assert by_id["1"]["result"]["serverInfo"]["name"] == "big-outputs"
    assert by_id["x-7"]["result"]["content"][0]["text"].endswith("2 passed, 1 failed")


# --- spillway mcp proxy in front of @modelcontextprotocol/server-everything --


def sample(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    if kind == "string":
        return "hello"
    if kind == "integer":
        return max(1, schema.get("minimum", 1))
    if kind == "number":
        return max(1, schema.get("minimum", 1))
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object":
        return {k: sample(v) for k, v in schema.get("properties", {}).items() if k in schema.get("required", [])}
    return None


def plain(x: Any) -> Any:
    return x.model_dump(mode="json", exclude_none=True) if hasattr(x, "model_dump") else x


async def attempt(call: Any) -> Any:
    """The answer, or the failure: the same failure both ways is what counts."""
    try:
        with anyio.fail_after(30):
            return plain(await call)
    except Exception as e:  # noqa: BLE001
        return {"raised": type(e).__name__, "message": str(e)}


async def outcome(s: ClientSession, name: str, args: dict[str, Any]) -> Any:
    return await attempt(s.call_tool(name, args))


SKIP = {
    # Starts a background timer that writes log notifications: stateful
    # across calls, compared by its first answer only.
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
}


async def test_server_everything_works_through_the_proxy_as_without_it(store: str) -> None:
    assert Path(EVERYTHING).exists(), "npm ci in crates/mcp/tests first"
    async with session(EVERYTHING, ["stdio"]) as direct, session(*proxied(store, EVERYTHING, "stdio", budget=65536)) as via:
        d_tools = (await direct.list_tools()).tools
        v_tools = (await via.list_tools()).tools
        assert [plain(t) for t in v_tools[:-2]] == [plain(t) for t in d_tools]
        assert [t.name for t in v_tools[-2:]] == ["spillway_spill_read", "spillway_spill_grep"]
        for tool in d_tools:
            args = sample(tool.input_schema)
            if "duration" in args:
                args["duration"] = 1
            if "steps" in args:
                args["steps"] = 1
            a = await outcome(direct, tool.name, args)
            b = await outcome(via, tool.name, args)
            if tool.name in SKIP:
                continue
            assert a == b, tool.name
        assert plain(await direct.list_prompts()) == plain(await via.list_prompts())
        for prompt in (await direct.list_prompts()).prompts:
            args = {a.name: "hello" for a in (prompt.arguments or []) if a.required}
            a = await attempt(direct.get_prompt(prompt.name, args))
            b = await attempt(via.get_prompt(prompt.name, args))
            assert a == b, prompt.name
        d_res = (await direct.list_resources()).resources
        assert plain(await via.list_resources()) == plain(await direct.list_resources())
        for r in d_res[:5]:
            assert await attempt(direct.read_resource(r.uri)) == await attempt(via.read_resource(r.uri))
        d_templates = [plain(t) for t in (await direct.list_resource_templates()).resource_templates]
        v_templates = [plain(t) for t in (await via.list_resource_templates()).resource_templates]
        assert v_templates[: len(d_templates)] == d_templates
        assert v_templates[-1]["uri_template"] == "spillway://{id}"


async def test_server_everything_oversized_text_comes_back_bounded(store: str) -> None:
    async with session(*proxied(store, EVERYTHING, "stdio", budget=1024)) as via:
        message = "x" * 50_000 + " THE END"
        echo = await via.call_tool("echo", {"message": message})
        (text,) = texts(echo)
        assert len(text.encode()) <= 1024
        assert text.endswith("THE END")
        ident, _ = hint(text)
        whole = await via.call_tool("spillway_spill_read", {"id": ident, "bytes": "0:"})
        assert "spill_read" in texts(whole)[0]  # a page of it, with the continuation
        whole, pages = await read_pages(via, f"spillway://{ident}", 1024)
        assert whole.endswith(message) and pages > 1


# --- spillway mcp proxy --code-mode ------------------------------------------


def code_mode(store: str, *rest: str, budget: int = BUDGET) -> tuple[str, list[str]]:
    return SPILLWAY, ["--store", store, "mcp", "proxy", "--code-mode", "--max-inline-bytes", str(budget), *rest]


async def run_code(s: ClientSession, code: str) -> tuple[str, bool]:
    result = await s.call_tool("run_code", {"code": code})
    (text,) = texts(result)
    return text, bool(result.is_error)


async def test_code_mode_runs_programs_over_one_server(store: str, tmp_path: Path) -> None:
    log = tmp_path / "session.jsonl"
    command, args = code_mode(
        store, "--memory", "512MiB", "--timeout", "20s", "--session-log", str(log), "--", *big_server()
    )
    async with session(command, args) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert set(tools) == {"run_code", "spillway_spill_read", "spillway_spill_grep"}
        sdk = tools["run_code"].description
        # The SDK names every upstream tool with its parameters.
        for name in ["big_text", "big_structured", "picture_with_caption", "fail_loudly"]:
            assert f"  {name}(args: {{" in sdk, sdk
        for name in ["grow", "die"]:  # no parameters
            assert f"  {name}(args: Record<string, unknown>)" in sdk, sdk
        assert "lines: number;" in sdk and "rows: number;" in sdk
        # A declared output schema types the value: the SDK wraps a string.
        assert "result: string;" in sdk

        # Parallel calls; structured content comes as a value.
        text, err = await run_code(s, (
            "const [a, b] = await Promise.all([tools.big_text({lines: 10}), tools.big_structured({rows: 3})]);\n"
            "return {lines: a.result.split('\\n').length, total: b.total, second: b.rows[1].name};"
        ))
        assert not err, text
        assert json.loads(text) == {"lines": 11, "total": 3, "second": "row 1"}

        # A 50 MB nested result, whole to the program, filtered to one line.
        text, err = await run_code(s, (
            "const out = (await tools.big_text({lines: 3000000})).result;\n"
            "print('bytes', out.length);\n"
            "return out.split('\\n').filter(l => l.includes('FAILED'));"
        ))
        assert not err, text
        first, result = text.split("\n", 1)
        assert int(first.split()[1]) > 50_000_000
        assert json.loads(result) == ["test_1500001 ... FAILED: expected 1, got 2"]

        # A large JSON value: its preview is JSON, and its markers read back.
        text, err = await run_code(s, "return (await tools.big_structured({rows: 5000})).rows;")
        assert not err and len(text.encode()) <= BUDGET
        preview = json.loads(text)
        assert preview[0] == {"id": 0, "name": "row 0", "ok": True}
        marker = next(v for v in preview if isinstance(v, str) and "spillway_spill_read" in v)
        m = re.search(r'spillway_spill_read\(id="([^"]+)", pointer="([^"]*)"\)', marker)
        assert m, marker
        read = await s.call_tool("spillway_spill_read", {"id": m.group(1), "pointer": m.group(2)})
        assert not read.is_error, texts(read)

        # Blocks that are not all text come as the content array.
        text, err = await run_code(s, (
            "const c = await tools.picture_with_caption({caption_lines: 2});\n"
            "return c.map(b => b.type + (b.type === 'image' ? ':' + b.mimeType : ''));"
        ))
        assert (json.loads(text), err) == (["text", "image:image/png", "text"], False)

        # A nested error is an Error the program can catch.
        text, err = await run_code(s, (
            "try { await tools.fail_loudly({lines: 3}); return 'no error'; }\n"
            "catch (e) { return e.message.split('\\n').pop(); }"
        ))
        assert (text, err) == ("ValueError: the last line", False)

        # The server adds a tool and says so: the SDK declares it next time.
        assert "fresh(" not in sdk
        text, err = await run_code(s, "return await tools.grow({});")
        assert (text, err) == ("grown", False)
        with anyio.fail_after(10):
            while True:
                sdk = {t.name: t for t in (await s.list_tools()).tools}["run_code"].description
                if "  fresh(args: {" in sdk:
                    break
                await anyio.sleep(0.1)
        text, err = await run_code(s, "return await tools.fresh({word: 'new'});")
        assert (text, err) == ("NEW", False)

        # A server that dies fails the run, caught or not; the next call
        # starts it again.
        text, err = await run_code(s, (
            "print('before');\n"
            "try { await tools.die({}); } catch (e) { print('caught'); }\n"
            "return 'after';"
        ))
        assert err and text.startswith("before\nCODE_RUN_FAILED: ") and text.endswith("exited"), text
        text, err = await run_code(s, "return (await tools.big_text({lines: 1})).result;")
        assert (text, err) == ("test_1 ... FAILED: expected 1, got 2\n0 passed, 1 failed", False)

        # Past the time limit: CODE_RUN_FAILED with the logs so far.
        text, err = await run_code(s, "print('spinning'); while (true) {}")
        assert err and text == "spinning\nCODE_RUN_FAILED: the program ran past its wall-time limit of 20 s"

    events = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    kinds = [e["type"] for e in events]
    assert kinds.count("tool/call") == kinds.count("tool/result") == 10
    assert kinds.count("tool/code-dispatch-start") == kinds.count("tool/code-dispatch") == 10


async def test_code_mode_over_several_servers_from_a_file(store: str, tmp_path: Path) -> None:
    servers = tmp_path / "mcp.json"
    servers.write_text(json.dumps({"mcpServers": {
        "big": {"command": sys.executable, "args": [str(HERE / "big_server.py")],
                "env": {"BIG_SERVER_PIDFILE": str(tmp_path / "big.pid")}},
        "everything": {"command": EVERYTHING, "args": [], "env": {"SPILLWAY_TEST": "1"}},
    }}))
    command, args = code_mode(store, "--servers", str(servers), "--present", "both")
    async with session(command, args) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        sdk = tools["run_code"].description
        assert "  big: {\n" in sdk and "  everything: {\n" in sdk
        assert "    big_text(args: {" in sdk and "    echo(args: {" in sdk
        # With --present both the upstream tools are listed too.
        assert "big.big_text" in tools and "everything.echo" in tools
        text, err = await run_code(s, (
            "const [e, t] = await Promise.all([tools.everything.echo({message: 'hi'}), tools.big.big_text({lines: 2})]);\n"
            "return [e, t.result.split('\\n')[0]];"
        ))
        assert not err, text
        echoed, first = json.loads(text)
        assert "hi" in json.dumps(echoed) and first == "test_1 ... ok"
        # A nested call's progress reaches the client under its own token.
        seen: list[tuple[float, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, message))

        long = await s.call_tool(
            "run_code",
            {"code": "await tools.everything['trigger-long-running-operation']({duration: 1, steps: 3}); return 'ok'"},
            progress_callback=on_progress,
        )
        assert texts(long) == ["ok"], texts(long)
        assert len(seen) >= 2, seen
        assert [p for p, _ in seen] == sorted(p for p, _ in seen)
        # Each message names the server and the tool.
        assert all(m and m.startswith("everything.trigger-long-running-operation: ") for _, m in seen), seen

        # A direct call (--present both) keeps the client's progress token.
        seen.clear()
        long = await s.call_tool(
            "everything.trigger-long-running-operation", {"duration": 1, "steps": 2},
            progress_callback=on_progress,
        )
        assert not long.is_error and len(seen) >= 1, (texts(long), seen)

        direct = await s.call_tool("big.big_text", {"lines": 100000})
        (t,) = texts(direct)
        assert len(t.encode()) <= BUDGET and "spillway_spill_read" in t
    # The client went away: the proxy stopped the servers it started.
    pid = int((tmp_path / "big.pid").read_text())
    with anyio.fail_after(15):
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            await anyio.sleep(0.1)


async def test_code_mode_over_server_everything(store: str) -> None:
    async with session(*code_mode(store, "--", EVERYTHING)) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        sdk = tools["run_code"].description
        # One server: its tools at the top of `tools`, bracket access for a
        # name that is not an identifier.
        assert "  echo(args: {" in sdk and '  "get-sum"(args: {' in sdk
        text, err = await run_code(s, (
            "const [e, sum, sc] = await Promise.all([tools.echo({message: 'hi'}), tools['get-sum']({a: 2, b: 3}),\n"
            "  tools['get-structured-content']({location: 'Chicago'})]);\n"
            "return {e, sum, sc: typeof sc};"
        ))
        assert not err, text
        v = json.loads(text)
        assert "hi" in v["e"] and "5" in json.dumps(v["sum"]) and v["sc"] == "object"


async def test_code_mode_says_which_server_cannot_be_reached(store: str, tmp_path: Path) -> None:
    servers = tmp_path / "mcp.json"
    servers.write_text(json.dumps({"mcpServers": {
        "big": {"command": sys.executable, "args": [str(HERE / "big_server.py")]},
        "broken": {"command": str(tmp_path / "no-such-server")},
    }}))
    async with session(*code_mode(store, "--servers", str(servers))) as s:
        sdk = {t.name: t for t in (await s.list_tools()).tools}["run_code"].description
        assert 'Not available now: cannot start the MCP server "broken"' in sdk
        assert "    big_text(args: {" in sdk
        text, err = await run_code(s, "return [Object.keys(tools), (await tools.big.big_text({lines: 1})).result.length]")
        assert not err and json.loads(text)[1] > 0, text
