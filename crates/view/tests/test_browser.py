"""`spillway view` in a real browser: Debian's Chromium, driven by Playwright.

The session is made by real runs: `spillway code --session-log` and
`spillway mcp serve --session-log` under the official MCP Python SDK's
client. Needs `SPILLWAY_BIN` (the `spillway` binary) and Chromium at
`CHROMIUM` (default: `chromium` on the PATH); `.ci/run` installs both and
keeps the screenshot in `target/ci-artifacts/`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from playwright.sync_api import Browser, Page, expect, sync_playwright

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
SPILLWAY = os.environ.get("SPILLWAY_BIN", str(ROOT / "target" / "debug" / "spillway"))
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("SPILLWAY_ARTIFACTS", ROOT / "target" / "ci-artifacts"))
# A term that only the stored output holds: it sits in the omitted middle.
NEEDLE = "zebra-only-in-the-spill"

PROGRAM = f"""const big = await tools.run({{command: "seq 1 5000 | sed 's/^/row /'; echo '{NEEDLE} 42'; seq 1 2000 | sed 's/^/tail /'"}});
const small = await tools.run({{command: 'echo small'}});
print('rows', big.split('\\n').length);
return {{small: small.trim()}};
"""


def spillway(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([SPILLWAY, *args], input=input, capture_output=True, timeout=120)


def events(log: Path) -> list[dict]:
    out = []
    for line in log.read_text().splitlines()[1:]:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


async def mcp_calls(env: dict[str, str], log: Path) -> None:
    """Two outer calls through `mcp serve` under the official client."""
    args = ["mcp", "serve", "--max-inline-bytes", "4KiB", "--session-log", str(log)]
    params = StdioServerParameters(command=SPILLWAY, args=args, env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            r = await s.call_tool("run_code", {
                "code": "const a = await tools.run({command: 'seq 1 3000'}); return a.length",
                "description": "count three thousand lines",
            })
            assert not r.is_error
            r = await s.call_tool("run", {"command": "echo from-mcp; exit 3"})
            assert r.is_error


@dataclass
class Made:
    dir: Path
    store: Path
    log: Path


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    d = tmp_path_factory.mktemp("view")
    # The default store, so that the notices (and the screenshot) name no
    # folder of this machine's.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPILLWAY_")}
    env["XDG_CACHE_HOME"] = str(d / "cache")
    store, log = d / "cache" / "spillway", d / "session.jsonl"
    prog = d / "prog.js"
    prog.write_text(PROGRAM)
    r = subprocess.run([SPILLWAY, "code", "--max-inline-bytes", "8KiB", "--session-log", str(log),
                        str(prog)], capture_output=True, timeout=120, env=env, cwd=d)
    assert r.returncode == 0, r.stderr
    anyio.run(mcp_calls, env, log)
    return Made(d, store, log)


class Viewer:
    def __init__(self, store: Path, *sessions: Path) -> None:
        self.proc = subprocess.Popen(
            [SPILLWAY, "--store", str(store), "view", *map(str, sessions)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        assert line.startswith("spillway view: http://127.0.0.1:"), line
        self.url = line.split(": ", 1)[1].strip()

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            assert self.proc.wait(timeout=5) == 128 + signal.SIGINT
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"],
        )
        yield b
        b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    p = context.new_page()
    p.set_default_timeout(15_000)
    yield p
    context.close()


@pytest.fixture
def viewer(made: Made) -> Iterator[Viewer]:
    v = Viewer(made.store, made.log)
    yield v
    v.stop()


def open_view(page: Page, v: Viewer) -> None:
    page.goto(v.url)
    page.wait_for_selector("body[data-ready='true']")


def first_dispatch(page: Page):
    """The first card's first nested call, opened."""
    first = page.locator("[data-card]").first
    first.locator("details.dispatches > summary").click()
    dispatch = first.locator("[data-dispatch]").first
    dispatch.locator("summary").click()
    return dispatch


def test_one_card_per_outer_call_with_its_nested_calls_inside(made: Made, viewer: Viewer, page: Page) -> None:
    open_view(page, viewer)
    log = events(made.log)
    calls = [e["callId"] for e in log if e["type"] == "tool/call"]
    assert len(calls) == 3
    cards = page.locator("[data-card]")
    expect(cards).to_have_count(len(calls))
    assert [cards.nth(i).get_attribute("data-card") for i in range(len(calls))] == calls
    # Nested calls are inside their card, never cards of their own.
    for call in calls:
        subs = [e["subCallId"] for e in log
                if e["type"] == "tool/code-dispatch-start" and e["parentCallId"] == call]
        card = page.locator(f"[data-card='{call}']")
        got = card.locator("[data-dispatch]")
        expect(got).to_have_count(len(subs))
        assert [got.nth(i).get_attribute("data-dispatch") for i in range(len(subs))] == subs
    assert page.locator("[data-card*=':code:']").count() == 0
    # The program is shown as code; a failed call is marked.
    first = page.locator(f"[data-card='{calls[0]}']")
    expect(first.locator("pre.code")).to_contain_text("tools.run")
    expect(page.locator(f"[data-card='{calls[2]}']")).to_have_attribute("data-state", "error")
    expect(page.locator(f"[data-card='{calls[1]}'] h2")).to_have_text("count three thousand lines")


def test_an_expanded_notice_is_exactly_what_spillway_show_gives(made: Made, viewer: Viewer, page: Page) -> None:
    open_view(page, viewer)
    dispatch = first_dispatch(page)
    notice = dispatch.locator("[data-notice]")
    expect(notice).to_have_count(1)
    object_id = notice.get_attribute("data-object")
    lines = notice.get_attribute("data-lines")
    assert object_id and lines
    notice.click()
    omitted = dispatch.locator("[data-omitted]")
    expect(omitted.locator("pre")).to_have_count(1)
    # "more" continues at the exact next offset until the range is shown.
    while omitted.locator("button.more").count() > 0:
        n = omitted.locator("pre").count()
        omitted.locator("button.more").click()
        expect(omitted.locator("pre")).to_have_count(n + 1)
    shown = "".join(omitted.locator("pre").evaluate_all("ps => ps.map(p => p.textContent)"))
    r = spillway("--store", str(made.store), "show", object_id, "--lines", lines)
    assert r.returncode == 0, r.stderr
    assert shown == r.stdout.decode()
    assert NEEDLE in shown
    # Activated again, it folds.
    notice.click()
    expect(omitted).to_have_count(0)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    notice.click()
    expect(dispatch.locator("[data-omitted] pre")).to_have_count(1)
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / "view.png"))


def test_a_term_only_the_stored_output_holds_is_found_and_opened(made: Made, viewer: Viewer, page: Page) -> None:
    open_view(page, viewer)
    search = page.locator("input[type=search]")
    search.fill(NEEDLE)
    search.press("Enter")
    expect(page.locator("#results-summary")).to_contain_text("0 hits")
    expect(page.locator("[data-hit]")).to_have_count(0)
    page.locator("#spills").check()
    hit = page.locator("[data-hit]")
    expect(hit).to_have_count(1)
    assert hit.get_attribute("data-object")
    hit.click()
    mark = page.locator(f"[data-omitted] mark[data-line='{hit.get_attribute('data-line')}']")
    expect(mark).to_contain_text(NEEDLE)
    expect(mark).to_be_in_viewport()


def test_a_call_appended_to_the_log_appears_without_a_reload(made: Made, viewer: Viewer, page: Page) -> None:
    open_view(page, viewer)
    before = page.locator("[data-card]").count()
    page.evaluate("() => { window.sameDocument = true }")
    r = spillway("--store", str(made.store), "code", "--session-log", str(made.log),
                 input=b"await tools.run({command: 'echo appended'}); return 'live'")
    assert r.returncode == 0, r.stderr
    new = events(made.log)[-1]
    assert new["type"] == "tool/result"
    card = page.locator(f"[data-card='{new['callId']}']")
    expect(card).to_have_count(1, timeout=3000)
    expect(card.locator(":scope > .content")).to_contain_text("live")
    expect(card.locator("[data-dispatch]")).to_have_attribute("data-state", "ok")
    expect(page.locator("[data-card]")).to_have_count(before + 1)
    # A line that is not an event is counted on the page, never hidden.
    with open(made.log, "a") as f:
        f.write("not an event\n")
    expect(page.locator("[data-bad-lines='1']")).to_contain_text("1 line is not an event")
    assert page.evaluate("() => window.sameDocument") is True


def test_a_gone_object_says_so_on_its_notice_and_the_rest_works(made: Made, page: Page, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(made.store, store)
    r = spillway("--store", str(store), "gc", "--max-bytes", "0")
    assert r.returncode == 0, r.stderr
    v = Viewer(store, made.log)
    try:
        open_view(page, v)
        dispatch = first_dispatch(page)
        notice = dispatch.locator("[data-notice]")
        notice.click()
        expect(dispatch.locator("[data-omitted] [role=alert]")).to_contain_text("no stored object")
        assert (notice.get_attribute("data-error") or "").startswith("no stored object")
        # The rest of the page still works: the other cards, the search.
        expect(page.locator("[data-card]")).to_have_count(len([e for e in events(made.log) if e["type"] == "tool/call"]))
        page.locator("input[type=search]").fill("from-mcp")
        page.locator("input[type=search]").press("Enter")
        expect(page.locator("[data-hit]")).to_have_count(1)
    finally:
        v.stop()
