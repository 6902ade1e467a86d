"""Neighbouring-turn context, for BM25 and for one more vector.

What a turn of a conversation means often lives in the turns just before it: "Is that your third one?",
"Yes, the one downtown". So an episodic memory that belongs to a session is indexed for BM25 together with
the openings of the memories saved just before it in the same session. Only earlier memories are used, so
the document can be built when the memory is indexed; the memory's own text and what search returns are
unchanged.

An answer is the same for the vectors: "We even won a trophy!" says nothing of what was asked ("What did
your team win at the end of the season?"). A memory that answers a question someone else asked in the turn
just before it, in the same session, gets one more vector, its *answer chunk*: that question, then the
memory (`answer_text`). Turns are told apart by a leading "Name: " (how conversations are saved: "Caroline:
...", "user: ...", "assistant: ..."), so a speaker's next message after their own question gets none. The
background worker embeds it with the sentence pieces (`Store.add_sentence_pieces`); search scores a memory
by its own vectors or its answer chunk, whichever is closer (index/vectors.py). Measured on LoCoMo and
LongMemEval in docs/evaluation.md.
"""

from __future__ import annotations

import re
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


def earlier_turns(conn: Connection, row: Any, turns: int = CONTEXT_TURNS) -> list[str]:
    """The contents of the memories saved just before this one (a row with tier, session_id, created_at) in
    its session, nearest first; none for a memory outside a session or not an event."""
    if row["tier"] != CONTEXT_TIER or not row["session_id"]:
        return []
    return [r[0] for r in conn.execute(
        "SELECT content FROM memories WHERE session_id = ? AND created_at < ? AND tier = ? AND is_latest = 1 "
        "ORDER BY created_at DESC LIMIT ?", (row["session_id"], row["created_at"], CONTEXT_TIER, turns))]


def turn_contexts(conn: Connection, rows: Iterable[Any]) -> dict[str, str]:
    """Memory id -> context text, for the rows (with id, tier, session_id, created_at) that get one."""
    out: dict[str, str] = {}
    for row in rows:
        text = context_text(earlier_turns(conn, row))
        if text:
            out[row["id"]] = text
    return out


def later_turns(conn: Connection, memory_ids: Sequence[str], turns: int = CONTEXT_TURNS) -> set[str]:
    """The memories whose context includes one of these (the `turns` events saved just after each in its
    session): what they were indexed and embedded with must be redone when these are forgotten."""
    out: set[str] = set()
    for start in range(0, len(memory_ids), 500):
        part = list(memory_ids[start:start + 500])
        for session_id, created_at in conn.execute(
                f"SELECT session_id, created_at FROM memories WHERE id IN ({','.join('?' * len(part))}) "
                "AND tier = ? AND session_id IS NOT NULL", [*part, CONTEXT_TIER]).fetchall():
            out.update(r[0] for r in conn.execute(
                "SELECT id FROM memories WHERE session_id = ? AND created_at > ? AND tier = ? AND is_latest = 1 "
                "ORDER BY created_at LIMIT ?", (session_id, created_at, CONTEXT_TIER, turns)))
    return out - set(memory_ids)


_SPEAKER = re.compile(r"([^:\n\[\]]{1,40}):\s")  # "Caroline: ", "user: " at the start of a turn
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
ANSWER_CHARS = 900  # of the answer itself, as a chunk (index/vectors.py CHUNK_CHARS)


def asked_before(earlier: str, content: str) -> str | None:
    """The question a turn answers: the last question of the turn just before it, when the two are turns of
    a conversation ("Name: text") by different speakers; None otherwise."""
    before, turn = without_stamp(earlier), without_stamp(content)
    asker, speaker = _SPEAKER.match(before), _SPEAKER.match(turn)
    if not asker or not speaker or asker.group(1).strip().casefold() == speaker.group(1).strip().casefold():
        return None
    questions = [s.strip() for s in _SENTENCE_END.split(before[asker.end():]) if s.rstrip().endswith("?")]
    return questions[-1] if questions else None


def answer_text(question: str, content: str) -> str:
    """What the answer chunk embeds: the question, then the answer (its opening, for a long one)."""
    turn = without_stamp(content)
    if len(turn) > ANSWER_CHARS:
        cut = turn.rfind(" ", 0, ANSWER_CHARS + 1)
        turn = turn[:cut if cut > ANSWER_CHARS // 2 else ANSWER_CHARS]
    return f"{question}\n{turn}"


def answer_chunk(conn: Connection, row: Any) -> str | None:
    """The answer chunk's text of a memory (a row with tier, session_id, created_at, content), or None."""
    earlier = earlier_turns(conn, row, 1)
    question = asked_before(earlier[0], row["content"]) if earlier else None
    return answer_text(question, row["content"]) if question else None
