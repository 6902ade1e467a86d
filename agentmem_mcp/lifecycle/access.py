"""Access tracking: a memory that is returned or injected has been used."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..db import memories
from .retention import confidence_on_access, strengthen


def note_access(conn: Any, memory_ids: Sequence[str], now: float) -> None:
    """A hit is a use: refresh last access, count it, strengthen retention, nudge confidence.
    Call inside a write transaction."""
    rows = memories.access_values(conn, memory_ids)
    memories.record_access(conn, [(r["id"], min(strengthen(r["strength"]), 1e6), confidence_on_access(r["confidence"]))
                                  for r in rows], now)

