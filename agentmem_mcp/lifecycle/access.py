"""Access tracking: a memory that is returned or injected has been used."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .retention import confidence_on_access, strengthen


def note_access(conn: Any, memory_ids: Sequence[str], now: float) -> None:
    """A hit is a use: refresh last access, count it, strengthen retention, nudge confidence.
    Call inside a write transaction."""
    marks = ",".join("?" * len(memory_ids))
    rows = conn.execute(f"SELECT id, strength, confidence FROM memories WHERE id IN ({marks})",
                        list(memory_ids)).fetchall()
    conn.executemany(
        "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ?, strength = ?, "
        "confidence = ? WHERE id = ?",
        [(now, min(strengthen(r["strength"]), 1e6), confidence_on_access(r["confidence"]), r["id"])
         for r in rows])

