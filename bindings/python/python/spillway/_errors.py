"""The exceptions spillway raises. Each carries the Rust library's message."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ._types import Outcome

__all__ = ["SpillwayError", "PolicyError", "StoreError", "IdError", "RangeError"]


class SpillwayError(Exception):
    """The base of every spillway exception."""


class PolicyError(SpillwayError, ValueError):
    """A policy value was refused: the message names it and says what fits."""


class StoreError(SpillwayError, OSError):
    """The store failed.

    ``kind`` is a stable name to branch on: ``no_space``,
    ``permission_denied``, ``read_only``, ``not_regular_file``,
    ``not_found``, ``ambiguous``, ``corrupt``, ``out_of_range``,
    ``other_io`` (for an S3 store also any other failed request) or
    ``config`` (a malformed ``s3://`` URL or a missing setting).

    When a stage could not store an over-budget output and its policy says
    ``on_store_error="fail"``, ``outcome`` is the bounded preview all the
    same, so nothing the tool printed is lost to the model.
    """

    kind: Optional[str] = None
    outcome: Optional["Outcome"] = None

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class IdError(SpillwayError, ValueError):
    """A content id or id prefix did not parse."""


class RangeError(SpillwayError, ValueError):
    """A ``lines=`` or ``bytes=`` range did not parse."""
