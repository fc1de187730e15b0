"""An MCP server written with the official Python SDK's own server API,
whose tools return what MCP clients choke on: large text, large structured
content, images beside text, and errors."""

import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

server = MCPServer("big-outputs")

# A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000200a1e0e2a50000000049454e44ae426082"
)


@server.tool()
def big_text(lines: int) -> str:
    """A test log of `lines` lines whose one failure sits in the middle."""
    out = [f"test_{i} ... ok" for i in range(1, lines + 1)]
    out[lines // 2] = f"test_{lines // 2 + 1} ... FAILED: expected 1, got 2"
    out.append(f"{lines - 1} passed, 1 failed")
    return "\n".join(out)


@server.tool()
def big_structured(rows: int) -> dict[str, Any]:
    """A large structured result (the tool declares an output schema)."""
    return {"rows": [{"id": i, "name": f"row {i}", "ok": i != 7} for i in range(rows)], "total": rows}


@server.tool(structured_output=False)
def picture_with_caption(caption_lines: int) -> list[Any]:
    """An image between two pieces of text."""
    caption = "\n".join(f"caption line {i}" for i in range(caption_lines))
    return [caption, Image(data=PNG, format="png"), "the end"]


@server.tool(structured_output=False)
def fail_loudly(lines: int) -> str:
    """Fails with a long message."""
    raise ToolError("\n".join(f"traceback frame {i}" for i in range(lines)) + "\nValueError: the last line")


@server.tool(structured_output=False)
async def grow(ctx: Context) -> str:
    """Adds the tool `fresh` and says that the tool list changed."""

    def fresh(word: str) -> str:
        """A tool added while the server runs."""
        return word.upper()

    server.add_tool(fresh, structured_output=False)
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool(structured_output=False)
def die() -> str:
    """Exits the server at once, as a crash would."""
    os._exit(3)


if __name__ == "__main__":
    print("big-outputs server starting", file=sys.stderr)
    if os.environ.get("BIG_SERVER_PIDFILE"):
        with open(os.environ["BIG_SERVER_PIDFILE"], "w") as f:
            f.write(str(os.getpid()))
    server.run("stdio")
