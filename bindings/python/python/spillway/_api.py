"""Spiller, Stage, Store and run: the Rust engine in Python's idioms."""

from __future__ import annotations

import asyncio
import io
import os
import signal
from datetime import timedelta
from pathlib import Path
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    TypeVar,
    Union,
)

from . import _spillway
from ._errors import StoreError
from ._types import GcReport, Outcome, RunResult, Stats, StoredObject, VerifyReport

__all__ = [
    "Spiller",
    "Stage",
    "AsyncStage",
    "Store",
    "run",
    "run_async",
    "default_store",
]

PathLike = Union[str, "os.PathLike[str]"]
Size = Union[int, str]
Seconds = Union[int, float, str, timedelta]
Data = Union[str, bytes, bytearray, memoryview]

_T = TypeVar("_T")

#: How old an abandoned temp file must be before verify or gc removes it.
DEFAULT_GRACE = 15 * 60.0


def default_store() -> Path:
    """The store the CLI uses when given none: ``$SPILLWAY_STORE``, else
    ``$XDG_CACHE_HOME/spillway``, else ``~/.cache/spillway``."""
    path, _ = _default_store()
    return Path(path)


def _location(store: PathLike) -> str:
    # An ``s3://`` URL stays as written (a Path would fold its ``//``).
    text = os.fspath(store)
    return text if isinstance(text, str) else os.fsdecode(text)


def _default_store() -> "tuple[str, bool]":
    # The second value says whether the store was chosen (not the built-in
    # default), in which case notices name it, as the CLI's do.
    # One rule for every front end, in the Rust core.
    found = _spillway.default_store()
    if found is None:
        raise StoreError("no store directory: pass store=... or set SPILLWAY_STORE")
    return found


def _seconds(what: str, value: Seconds) -> float:
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, str):
        return _spillway.parse_duration(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be seconds, a timedelta or a string such as '7d'")
    return float(value)


def _size(what: str, value: Size) -> int:
    if isinstance(value, str):
        return _spillway.parse_size(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be a number of bytes or a string such as '1GiB'")
    return value


def _outcome(call: Callable[[], Dict[str, Any]]) -> Outcome:
    try:
        return Outcome._from_dict(call())
    except StoreError as e:
        if isinstance(e.outcome, dict):
            e.outcome = Outcome._from_dict(e.outcome)
        raise


class Store:
    """A spill store: a private directory of content-addressed objects,
    written once, crash-safe, read back verified.

    Ids may be given whole (``blake3:`` and 64 hex digits) or as any unique
    prefix of at least 4 hex digits, such as the short id a notice prints.
    """

    __slots__ = ("_native",)

    def __init__(self, path: PathLike) -> None:
        self._native = _spillway.Store(_location(path))

    @classmethod
    def _wrap(cls, native: _spillway.Store) -> "Store":
        store = cls.__new__(cls)
        store._native = native
        return store

    @property
    def root(self) -> Path:
        """The store's directory (for an S3 store, see :attr:`location`)."""
        return Path(self._native.root)

    @property
    def location(self) -> str:
        """Where the store is, as it was opened: a directory, or
        ``s3://BUCKET/PREFIX``."""
        return str(self._native.root)

    def read(
        self,
        id: str,
        *,
        lines: Optional[str] = None,
        bytes: Optional[str] = None,
    ) -> bytes:
        """An object's bytes, verified against its id: all of them, the
        lines ``"A:B"`` (1-based, inclusive) or the bytes ``"A:B"``
        (0-based, half-open), as ``spillway show`` takes them. A notice's
        read hint gives the range of what it omitted."""
        return self._native.read(id, lines=lines, bytes=bytes)

    def read_text(self, id: str, *, lines: Optional[str] = None, bytes: Optional[str] = None) -> str:
        """``read`` decoded as UTF-8, invalid bytes replaced."""
        return self.read(id, lines=lines, bytes=bytes).decode("utf-8", "replace")

    def resolve(self, prefix: str) -> str:
        """The full id of the one object whose id starts with ``prefix``."""
        return self._native.resolve(prefix)

    def list(self) -> List[StoredObject]:
        """Every object in the store."""
        return [StoredObject._from_dict(o) for o in self._native.list()]

    def verify(self, *, grace: Seconds = DEFAULT_GRACE) -> VerifyReport:
        """Re-hashes every object, moves corrupt ones to quarantine, and
        removes temp files of dead writers older than ``grace``."""
        return VerifyReport._from_dict(self._native.verify(_seconds("grace", grace)))

    def gc(
        self,
        *,
        max_bytes: Optional[Size] = None,
        max_age: Optional[Seconds] = None,
        keep_referenced_by: Iterable[PathLike] = (),
        dry_run: bool = False,
        grace: Seconds = DEFAULT_GRACE,
    ) -> GcReport:
        """Removes least-recently-used objects until the store takes at most
        ``max_bytes`` on disk, and objects unused for longer than
        ``max_age``; never those a session log in ``keep_referenced_by``
        refers to. A dedup hit counts as a use."""
        keep = [Path(p).read_bytes().decode("utf-8", "replace") for p in keep_referenced_by]
        report = self._native.gc(
            None if max_bytes is None else _size("max_bytes", max_bytes),
            None if max_age is None else _seconds("max_age", max_age),
            keep,
            dry_run,
            _seconds("grace", grace),
        )
        return GcReport._from_dict(report)

    def stats(self) -> Stats:
        """Totals over the store."""
        return Stats(**self._native.stats())

    def __repr__(self) -> str:
        return f"spillway.Store({str(self.root)!r})"



class Spiller:
    """A spill policy over a store. Build one per harness and share it:
    every method is thread-safe, and the heavy work (hashing, compressing,
    writing, fsync) runs without the GIL.

    Every setting defaults as in the CLI and is checked as the Rust policy
    checks it; a bad one raises ``PolicyError`` naming it. Sizes take a
    number of bytes or a string such as ``"32KiB"``.

    ``store`` is a directory (created private if missing) or a ``Store``;
    without one, the CLI's default store is used.
    """

    __slots__ = ("_native", "_store")

    def __init__(
        self,
        store: Union[PathLike, Store, None] = None,
        *,
        max_inline_bytes: Optional[Size] = None,
        max_inline_lines: Optional[int] = None,
        head_percent: Optional[int] = None,
        max_spill_bytes: Optional[Size] = None,
        compression: Optional[str] = None,
        level: Optional[int] = None,
        on_store_error: Optional[str] = None,
        durability: Optional[str] = None,
        format: Optional[str] = None,
        render: Optional[str] = None,
        salient: Optional[Sequence[Union[str, Mapping[str, str]]]] = None,
        salient_percent: Optional[int] = None,
        max_inline_tokens: Optional[int] = None,
        tokenizer: Optional[str] = None,
        notice: Optional[Mapping[str, str]] = None,
    ) -> None:
        config: Dict[str, Any] = {}
        for key, value in (
            ("max_inline_bytes", max_inline_bytes),
            ("max_inline_lines", max_inline_lines),
            ("head_percent", head_percent),
            ("max_spill_bytes", max_spill_bytes),
            ("compression", compression),
            ("zstd_level", level),
            ("on_store_error", on_store_error),
            ("durability", durability),
            ("format", format),
            ("render", render),
            ("salient_percent", salient_percent),
            ("max_inline_tokens", max_inline_tokens),
            ("tokenizer", tokenizer),
        ):
            if value is not None:
                config[key] = value
        if salient is not None:
            if isinstance(salient, (str, bytes)):
                raise TypeError(
                    "salient must be a sequence of regular expressions or {pattern, rank} mappings, not one string"
                )
            config["salient"] = [p if isinstance(p, str) else dict(p) for p in salient]
        if notice is not None:
            config["notice"] = dict(notice)
        if isinstance(store, Store):
            root, named = store.location, True
        elif store is None:
            root, named = _default_store()
        else:
            root, named = _location(store), True
        self._native = _spillway.Spiller(root, config, named)
        self._store = Store._wrap(self._native.store())

    @property
    def store(self) -> Store:
        """The store outputs are spilled to."""
        return self._store

    @property
    def policy(self) -> Dict[str, Any]:
        """The policy in force, with the config file's keys."""
        return self._native.policy()

    def apply(self, data: Data) -> Outcome:
        """Applies the policy to a whole output (``str`` or bytes-like).

        Text decoded with ``errors="surrogateescape"`` is stored as the
        original bytes."""
        return _outcome(lambda: self._native.apply(data))

    def stage(self) -> "Stage":
        """A stage for an output that arrives in chunks: a binary file-like
        object that holds at most about the budget in memory."""
        return Stage(self._native.stage())

    async def apply_async(self, data: Data) -> Outcome:
        """``apply`` on a worker thread, for async harnesses."""
        return await asyncio.to_thread(self.apply, data)

    def stage_async(self) -> "AsyncStage":
        """``stage`` for async harnesses: writes run on a worker thread."""
        return AsyncStage(self.stage())

    def __repr__(self) -> str:
        p = self.policy
        return (
            f"spillway.Spiller(store={str(self.store.root)!r}, "
            f"max_inline_bytes={p.get('max_inline_bytes')!r})"
        )


class Stage:
    """An output being measured, previewed and stored as it arrives.

    A writable binary stream: ``write``, ``writelines`` and ``flush`` work
    as on a file, so ``shutil.copyfileobj(proc.stdout, stage)`` streams a
    subprocess's output in bounded memory. ``finish()`` (or ``close()``, or
    leaving a ``with`` block normally) ends the input and returns the
    ``Outcome``, also kept as ``stage.outcome``. Leaving a ``with`` block by
    an exception aborts the stage: nothing is stored.
    """

    __slots__ = ("_native", "outcome")

    def __init__(self, native: _spillway.Stage) -> None:
        self._native = native
        self.outcome: Optional[Outcome] = None

    def write(self, data: Union[bytes, bytearray, memoryview]) -> int:
        """Feeds a chunk; returns its length."""
        return self._native.write(data)

    def writelines(self, lines: Iterable[Union[bytes, bytearray, memoryview]]) -> None:
        for line in lines:
            self._native.write(line)

    def flush(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on a finished stage")

    def finish(self) -> Outcome:
        """Ends the input: stores it when it is over budget (once, by
        content) and returns the outcome. When the store fails and the
        policy says ``on_store_error="fail"``, raises ``StoreError`` whose
        ``outcome`` is the bounded preview."""
        self.outcome = _outcome(self._native.finish)
        return self.outcome

    def abort(self) -> None:
        """Drops the stage; nothing is stored."""
        self._native.abort()

    def close(self) -> None:
        """``finish()``, unless the stage is already finished."""
        if not self._native.finished:
            self.finish()

    @property
    def closed(self) -> bool:
        return self._native.finished

    @property
    def bytes_written(self) -> int:
        return self._native.bytes_written

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise io.UnsupportedOperation("a stage has no file descriptor")

    def __enter__(self) -> "Stage":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __repr__(self) -> str:
        state = "finished" if self.closed else f"{self.bytes_written} bytes written"
        return f"<spillway.Stage {state}>"


class AsyncStage:
    """A ``Stage`` for asyncio: ``await stage.write(chunk)``,
    ``await stage.finish()``, and ``async with``. Writes run on a worker
    thread, in the order they were awaited."""

    __slots__ = ("_stage", "_lock")

    def __init__(self, stage: Stage) -> None:
        self._stage = stage
        self._lock: Optional[asyncio.Lock] = None

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            return await asyncio.to_thread(fn, *args)

    async def write(self, data: Union[bytes, bytearray, memoryview]) -> int:
        return await self._call(self._stage.write, data)

    async def writelines(self, lines: Iterable[Union[bytes, bytearray, memoryview]]) -> None:
        for line in lines:
            await self.write(line)

    async def finish(self) -> Outcome:
        return await self._call(self._stage.finish)

    async def abort(self) -> None:
        await self._call(self._stage.abort)

    @property
    def outcome(self) -> Optional[Outcome]:
        return self._stage.outcome

    @property
    def closed(self) -> bool:
        return self._stage.closed

    @property
    def bytes_written(self) -> int:
        return self._stage.bytes_written

    async def __aenter__(self) -> "AsyncStage":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            if not self.closed:
                await self.finish()
        else:
            await self.abort()


def _argv(args: Union[PathLike, bytes, Sequence[Union[PathLike, bytes]]]) -> List[str]:
    if isinstance(args, (str, bytes, os.PathLike)):
        args = [args]
    argv = [os.fsdecode(a) for a in args]
    if not argv:
        raise ValueError("args is empty: give the program to run")
    return argv


def _run_native(
    args: Any,
    spiller: Optional[Spiller],
    policy: Dict[str, Any],
    timeout: Optional[Seconds],
    cwd: Optional[PathLike],
    env: Optional[Mapping[str, str]],
    drain: Seconds,
    token: Any,
) -> RunResult:
    if spiller is not None and policy:
        raise TypeError("give a spiller or policy settings, not both")
    if spiller is None:
        spiller = Spiller(**policy)
    argv = _argv(args)
    try:
        result = _spillway.run(
            argv,
            spiller._native,
            timeout=None if timeout is None else _seconds("timeout", timeout),
            drain=_seconds("drain", drain),
            cwd=None if cwd is None else os.fspath(cwd),
            env=None if env is None else [(os.fsdecode(k), os.fsdecode(v)) for k, v in env.items()],
            token=token,
        )
    except StoreError as e:
        if isinstance(e.outcome, dict):
            e.outcome = Outcome._from_dict(e.outcome)
        raise
    returncode = result.pop("returncode")
    timed_out = result.pop("timed_out")
    output_cut = result.pop("output_cut")
    return RunResult(
        outcome=Outcome._from_dict(result),
        returncode=returncode,
        timed_out=timed_out,
        output_cut=output_cut,
        args=tuple(argv),
    )


def run(
    args: Union[PathLike, bytes, Sequence[Union[PathLike, bytes]]],
    *,
    spiller: Optional[Spiller] = None,
    timeout: Optional[Seconds] = None,
    cwd: Optional[PathLike] = None,
    env: Optional[Mapping[str, str]] = None,
    drain: Seconds = 1.0,
    **policy: Any,
) -> RunResult:
    """Runs a command, as ``spillway run`` does: stdout and stderr merged
    on one pipe (in the order written), streamed through a stage, stdin
    closed. Returns the outcome and how the command ended.

    ``timeout`` kills the command's process group. ``drain`` is how long to
    keep reading after the command exits while something it started still
    holds its output. Policy settings (``max_inline_bytes=...``) may be
    given instead of a ``spiller``. Ctrl-C is passed on to the command; once
    it has ended and its output is stored, ``KeyboardInterrupt`` is raised.
    A program that cannot be started raises ``FileNotFoundError`` or
    ``PermissionError``, as ``subprocess`` does.
    """
    return _run_native(args, spiller, policy, timeout, cwd, env, drain, None)


async def run_async(
    args: Union[PathLike, bytes, Sequence[Union[PathLike, bytes]]],
    *,
    spiller: Optional[Spiller] = None,
    timeout: Optional[Seconds] = None,
    cwd: Optional[PathLike] = None,
    env: Optional[Mapping[str, str]] = None,
    drain: Seconds = 1.0,
    **policy: Any,
) -> RunResult:
    """``run`` for asyncio, on a worker thread. Cancelling the task sends
    SIGTERM to the command and waits for it to end (its output is stored)
    before the cancellation goes on."""
    token = _spillway.RunToken()
    task = asyncio.ensure_future(
        asyncio.to_thread(_run_native, args, spiller, policy, timeout, cwd, env, drain, token)
    )
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        token.signal(signal.SIGTERM)
        try:
            await task
        except Exception:
            pass
        raise
