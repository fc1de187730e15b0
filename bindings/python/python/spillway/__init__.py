"""spillway: bounded, line-aware previews of tool output for AI agent
harnesses, with the full output stored once, content-addressed.

    >>> import spillway
    >>> spiller = spillway.Spiller("/tmp/spill", max_inline_bytes="8KiB")
    >>> outcome = spiller.apply(huge_tool_output)
    >>> outcome.content          # what the model reads: head, notice, tail
    >>> outcome.spill.id         # the full output, in the store

The engine is the Rust library of the same name; this package is a thin
binding over it. The same input and policy give the same content and the
same id here, in the CLI and in Rust.
"""

from ._api import (
    AsyncStage,
    Spiller,
    Stage,
    Store,
    default_store,
    run,
    run_async,
)
from ._errors import IdError, PolicyError, RangeError, SpillwayError, StoreError
from ._spillway import __version__
from ._types import (
    CorruptObject,
    GcReport,
    Misplaced,
    Outcome,
    RunResult,
    Stats,
    StoredObject,
    VerifyReport,
)

__all__ = [
    "AsyncStage",
    "CorruptObject",
    "GcReport",
    "IdError",
    "Misplaced",
    "Outcome",
    "PolicyError",
    "RangeError",
    "RunResult",
    "Spiller",
    "SpillwayError",
    "Stage",
    "Stats",
    "Store",
    "StoredObject",
    "StoreError",
    "VerifyReport",
    "__version__",
    "default_store",
    "run",
    "run_async",
]
