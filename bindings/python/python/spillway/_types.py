"""The values spillway returns: plain, frozen dataclasses whose ``to_dict()``
is the JSON the CLI prints for the same thing."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple

__all__ = [
    "Outcome",
    "StoredObject",
    "RunResult",
    "VerifyReport",
    "CorruptObject",
    "Misplaced",
    "GcReport",
    "Stats",
]

#: The length of the short id the notices print (``blake3:`` and 16 hex digits).
SHORT_ID_LEN = 7 + 16


@dataclass(frozen=True)
class StoredObject:
    """A stored object: the ``spill`` field of ``spillway apply --json``."""

    id: str
    """``blake3:`` and 64 lowercase hex digits."""
    path: str
    """Its file in the store."""
    bytes: int
    """Its size before compression."""
    stored_bytes: int
    """Its size on disk."""
    compression: str
    """``"none"`` or ``"zstd"``."""
    truncated: bool = False
    """Whether it holds less than the output (``max_spill_bytes``)."""
    dedup: bool = False
    """Whether this write found it already stored."""

    @property
    def short_id(self) -> str:
        """The id as notices print it, which ``Store.resolve`` takes."""
        return self.id[:SHORT_ID_LEN]

    def to_dict(self) -> Dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def _from_dict(cls, d: Dict[str, Any]) -> "StoredObject":
        return cls(**d)


@dataclass(frozen=True)
class Outcome:
    """What a policy made of an output: the model-facing ``content`` and the
    facts behind it. The fields are those of ``spillway apply --json``."""

    spilled: bool
    """Whether ``content`` is a preview rather than the input verbatim."""
    content: str = field(repr=False)
    """The model-facing text, within the policy's budget."""
    total_bytes: int
    total_lines: int
    head_bytes: int
    """``content[:head_bytes]`` (in UTF-8 bytes) is the start of the input."""
    tail_bytes: int
    """The last ``tail_bytes`` bytes of ``content`` end the input."""
    omitted_bytes: int
    omitted_lines: int
    omitted_range: Optional[Tuple[int, int]]
    """The first and last omitted line, 1-based, inclusive."""
    invalid_utf8: bool
    binary: bool
    spill: Optional[StoredObject]
    """The stored full output, when it was stored."""
    store_error: Optional[str]
    """Why the full output could not be stored, when it could not."""
    store_error_kind: Optional[str]
    format: str = "text"
    """``"json"`` when ``content`` is a JSON preview (a document of the
    input's shape with markers), else ``"text"``."""
    json_error: Optional[str] = None
    """With ``format="json"`` in the policy: why the input got the text
    preview instead."""
    rendered: bool = False
    """Whether the terminal render changed the text (escapes removed,
    progress frames dropped, repeats folded)."""
    salient_lines: Tuple[int, ...] = ()
    """The raw line numbers of the salient lines shown between the head and
    the notice."""
    content_tokens: Optional[int] = None
    """The content's length in tokens, when the policy has a token budget."""
    tokenizer: Optional[str] = None
    """The tokenizer ``content_tokens`` was counted with."""

    def __str__(self) -> str:
        return self.content

    def to_dict(self) -> Dict[str, Any]:
        """The outcome as ``spillway apply --json`` prints it."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.omitted_range is not None:
            d["omitted_range"] = list(self.omitted_range)
        if self.spill is not None:
            d["spill"] = self.spill.to_dict()
        d["salient_lines"] = list(self.salient_lines)
        return d

    @classmethod
    def _from_dict(cls, d: Dict[str, Any]) -> "Outcome":
        d = dict(d)
        if d.get("omitted_range") is not None:
            d["omitted_range"] = tuple(d["omitted_range"])
        if d.get("spill") is not None:
            d["spill"] = StoredObject._from_dict(d["spill"])
        d["salient_lines"] = tuple(d.get("salient_lines", ()))
        return cls(**d)


@dataclass(frozen=True)
class RunResult:
    """What ``spillway.run`` returns: the outcome of the command's merged
    output and how the command ended."""

    outcome: Outcome
    returncode: int
    """The exit status, or ``-N`` when signal ``N`` ended it (as
    ``subprocess`` says)."""
    timed_out: bool
    """Whether it was killed for running past ``timeout``."""
    output_cut: bool
    """Whether something it started still held its output when it exited,
    so that reading stopped after ``drain`` seconds."""
    args: Tuple[str, ...] = ()

    @property
    def content(self) -> str:
        return self.outcome.content

    def check_returncode(self) -> None:
        """Raises ``subprocess.CalledProcessError`` (with the bounded
        content as its output) when the command failed."""
        if self.returncode != 0:
            import subprocess

            raise subprocess.CalledProcessError(
                self.returncode, list(self.args), output=self.outcome.content
            )

    def to_dict(self) -> Dict[str, Any]:
        d = self.outcome.to_dict()
        d["returncode"] = self.returncode
        d["timed_out"] = self.timed_out
        d["output_cut"] = self.output_cut
        return d


@dataclass(frozen=True)
class CorruptObject:
    id: str
    reason: str
    quarantined: Optional[str]


@dataclass(frozen=True)
class Misplaced:
    path: str
    kind: str
    quarantined: Optional[str]


@dataclass(frozen=True)
class VerifyReport:
    """What ``Store.verify`` found, as ``spillway verify --json``."""

    ok: int
    ok_bytes: int
    corrupt: List[CorruptObject]
    temp_removed: int
    not_regular: List[Misplaced]

    @property
    def clean(self) -> bool:
        return not self.corrupt and not self.not_regular

    @classmethod
    def _from_dict(cls, d: Dict[str, Any]) -> "VerifyReport":
        d = dict(d)
        d["corrupt"] = [CorruptObject(**c) for c in d["corrupt"]]
        d["not_regular"] = [Misplaced(**m) for m in d["not_regular"]]
        return cls(**d)


@dataclass(frozen=True)
class GcReport:
    """What ``Store.gc`` removed, as ``spillway gc --json``."""

    removed: List[StoredObject]
    freed_bytes: int
    kept_referenced: int
    restored: int
    remaining_objects: int
    remaining_bytes: int
    temp_removed: int

    @classmethod
    def _from_dict(cls, d: Dict[str, Any]) -> "GcReport":
        d = dict(d)
        d["removed"] = [StoredObject._from_dict(o) for o in d["removed"]]
        return cls(**d)


@dataclass(frozen=True)
class Stats:
    """Totals over a store, as ``spillway stats --json``."""

    objects: int
    zstd_objects: int
    stored_bytes: int
    bytes: int
    temp_files: int
    quarantined: int
    ratio: float
    """``bytes / stored_bytes``: how much compression saves."""
