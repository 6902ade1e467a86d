"""Neighbouring memories of a session: context for BM25, and one more vector for a memory that answers.

What an event of a session means often lives in the events just before it: a reply "Done, I skipped the hook
for this commit" says nothing of what was asked ("Would you like me to skip the hook, or fix the pre-existing
issues first?"); a chat turn "Yes, the one downtown" nothing of "Is that your third one?". The neighbours of a
memory are the memories of the same kind (tier and type) saved just before it in the same session, in the
order they were saved (time, then insertion: the worker writes a session's turn notes with one time).

- BM25: a short episodic memory (a chat turn, a one-line reply; CONTEXT_FOR_CHARS) is indexed together with
  the openings of its two neighbours before it; a longer one (a report, a summary) carries its own context.
  Only earlier memories are used, so the document can be built when the memory is indexed; the memory's own
  text and what search returns are unchanged.
- Vectors: a memory whose neighbour just before it asks something gets one more vector, its *answer chunk*:
  that neighbour's last question, then the memory (`answer_text`). The background worker embeds it with the
  sentence pieces (`Store.add_sentence_pieces`); search scores a memory by its own vectors or its answer
  chunk, whichever is closer (index/vectors.py).

Nothing here reads who wrote a memory or when beyond its session, kind and order; a leading timestamp in
brackets is left out of what is copied. Measured on LoCoMo and the coding evaluation in docs/evaluation.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..db import memory_reads
from ..db.connection import Connection
from .tokenize import without_stamp

CONTEXT_TURNS = 2  # how many earlier memories of the same session
CONTEXT_CHARS = 200  # of each: a long earlier reply would otherwise drown the memory's own words
CONTEXT_TIER = "episodic"  # events of a session; facts and procedures stand on their own
CONTEXT_FOR_CHARS = 400  # a memory longer than this (a report, a summary) carries its own context in BM25


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


def earlier_turns(conn: Connection, row: Any, turns: int = CONTEXT_TURNS) -> list[str]:
    """The contents of the neighbours saved just before this memory (a row with id, tier, type, session_id):
    the memories of its tier and type in its session, latest versions, nearest first; none for a memory
    outside a session or not an event."""
    if row["tier"] != CONTEXT_TIER or not row["session_id"]:
        return []
    return memory_reads.earlier_in_session(conn, row["id"], turns)


def turn_contexts(conn: Connection, rows: Iterable[Any]) -> dict[str, str]:
    """Memory id -> context text, for the rows (with id, tier, type, session_id, content) that get one."""
    out: dict[str, str] = {}
    for row in rows:
        if len(row["content"]) > CONTEXT_FOR_CHARS:
            continue
        text = context_text(earlier_turns(conn, row))
        if text:
            out[row["id"]] = text
    return out


def later_turns(conn: Connection, memory_ids: Sequence[str], turns: int = CONTEXT_TURNS) -> set[str]:
    """The memories whose neighbours include one of these (the `turns` events of the same kind saved just after
    each in its session): what they were indexed and embedded with must be redone when these are forgotten."""
    out: set[str] = set()
    for start in range(0, len(memory_ids), 500):
        part = list(memory_ids[start:start + 500])
        for session_id, created_at, rowid, type_ in memory_reads.session_places(conn, part, CONTEXT_TIER):
            out.update(memory_reads.later_in_session(conn, session_id, created_at, rowid, CONTEXT_TIER, type_, turns))
    return out - set(memory_ids)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
ANSWER_CHARS = 900  # of the answer itself, as a chunk (index/vectors.py CHUNK_CHARS)
QUESTION_CHARS = 300  # of the question: a long one is cut to its end, where the asking is


def asked_before(earlier: str) -> str | None:
    """The question a memory may answer: the last question of the neighbour just before it (a sentence or line
    ending in "?"); None when that neighbour asks nothing."""
    questions = [s.strip() for s in _SENTENCE_END.split(without_stamp(earlier)) if s.rstrip().endswith("?")]
    return questions[-1][-QUESTION_CHARS:].lstrip() if questions else None


def answer_text(question: str, content: str) -> str:
    """What the answer chunk embeds: the question, then the answer (its opening, for a long one)."""
    turn = without_stamp(content)
    if len(turn) > ANSWER_CHARS:
        cut = turn.rfind(" ", 0, ANSWER_CHARS + 1)
        turn = turn[:cut if cut > ANSWER_CHARS // 2 else ANSWER_CHARS]
    return f"{question}\n{turn}"


def answer_chunk(conn: Connection, row: Any) -> str | None:
    """The answer chunk's text of a memory (a row with id, tier, type, session_id, content), or None."""
    earlier = earlier_turns(conn, row, 1)
    question = asked_before(earlier[0]) if earlier else None
    return answer_text(question, row["content"]) if question else None
