"""Neighbouring-turn context for BM25.

What a turn of a conversation means often lives in the turns just before it: "Is that your third one?",
"Yes, the one downtown". So an episodic memory that belongs to a session is indexed for BM25 together with
the openings of the memories saved just before it in the same session. Only earlier memories are used, so
the document can be built when the memory is indexed; the memory's own text, its vector and what search
returns are unchanged. Measured on LoCoMo and LongMemEval in docs/evaluation.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..db.connection import Connection
from .tokenize import without_stamp

CONTEXT_TURNS = 2  # how many earlier memories of the same session
CONTEXT_CHARS = 200  # of each: a long earlier reply would otherwise drown the memory's own words
CONTEXT_TIER = "episodic"  # events of a session; facts and procedures stand on their own


def context_text(earlier: Sequence[str], turns: int = CONTEXT_TURNS) -> str:
    """The context of a memory from the contents of the memories before it (nearest first): each one's
    opening, without a leading timestamp in brackets, cut at a word within CONTEXT_CHARS."""
    pieces = []
    for content in earlier[:turns]:
        text = without_stamp(content)
        if len(text) > CONTEXT_CHARS:
            cut = text.rfind(" ", 0, CONTEXT_CHARS + 1)
            text = text[:cut if cut > CONTEXT_CHARS // 2 else CONTEXT_CHARS]
        if text:
            pieces.append(text)
    return "\n".join(pieces)


def turn_contexts(conn: Connection, rows: Iterable[Any]) -> dict[str, str]:
    """Memory id -> context text, for the rows (with id, tier, session_id, created_at) that get one."""
    out: dict[str, str] = {}
    for row in rows:
        if row["tier"] != CONTEXT_TIER or not row["session_id"]:
            continue
        earlier = [r[0] for r in conn.execute(
            "SELECT content FROM memories WHERE session_id = ? AND created_at < ? AND tier = ? AND is_latest = 1 "
            "ORDER BY created_at DESC LIMIT ?", (row["session_id"], row["created_at"], CONTEXT_TIER, CONTEXT_TURNS))]
        text = context_text(earlier)
        if text:
            out[row["id"]] = text
    return out
