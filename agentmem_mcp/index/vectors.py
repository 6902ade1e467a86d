"""Vectors in the same database as their memory, so they commit together.

Each memory is split into chunks (`memory_chunks`); every chunk keeps its float32 vector in
`memory_chunks.embedding` and a binary-quantised copy (one bit per dimension) in a sqlite-vec `vec0`
table whose rowid is the chunk id. The partition key is the project ('' = global) and `latest` is a
metadata column, so the KNN filters on both inside sqlite-vec. Search takes the nearest binary codes
by Hamming distance (32x less data to scan than floats: ~5x faster at 100k), then re-scores those
candidates exactly by cosine on the float vectors. A memory's vector score is its best chunk, or, for a
memory of several sentences, that and its best sentence piece together.

A memory of one chunk that says several things ("I'm after throw pillows. By the way, I got a coffee table
three weeks ago.") is also embedded sentence by sentence: its pieces. They live in `memory_chunks` only
(chunk_index from PIECE_INDEX on), never in the KNN table, so the scan costs what it did; every candidate
that KNN, BM25 or the graph found is then scored on both: (best chunk + best piece) / 2 (what it adds on
LongMemEval and LoCoMo: docs/evaluation.md). Saving does not wait for them:
the background worker embeds them (`Store.add_sentence_pieces`) and counts them in `memories.pieces`.

A turn that answers a question asked just before it also gets an *answer chunk* (index/neighbours.py): the
question and the turn together, at chunk_index ANSWER_INDEX, in the KNN table like any chunk. The memory
then scores its own vectors' score or its answer chunk's cosine, whichever is higher. The worker embeds it
with the pieces.

The tables' SQL, writes and reads, is db/vectors.py's; this module holds the chunking and the scoring.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..db import vectors as vector_rows
from ..db.connection import Connection
from ..db.vectors import ANSWER_INDEX, PIECE_INDEX, TABLE  # noqa: F401 (PIECE_INDEX: the scripts' name for it)
from . import chunk_copy, codes
from .tokenize import without_stamp

CHUNK_CHARS = 900
CHUNK_OVERLAP = 150
MIN_CANDIDATES = 160
CANDIDATES_PER_RESULT = 2

_SENTENCE_END = re.compile(r"(?<=[.!?。！？\n])\s+")
PIECE_MIN_CHARS = 40  # shorter sentences join the next one ("Thanks! I got it.")


def sentence_pieces(text: str, min_chars: int = PIECE_MIN_CHARS) -> list[str]:
    """The sentence pieces of a text that fits in one chunk; none for a text of a single piece (its chunk
    says the same) or one longer than a chunk (its chunks already split it)."""
    text = without_stamp(text)
    if len(text) > CHUNK_CHARS:
        return []
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(text):
        current = f"{current} {sentence}".strip() if current else sentence.strip()
        if len(current) >= min_chars:
            pieces.append(current)
            current = ""
    if current and pieces:
        pieces[-1] = f"{pieces[-1]} {current}"
    pieces = said_once(pieces)
    return pieces if len(pieces) > 1 else []


def said_once(pieces: list[str]) -> list[str]:
    """The pieces less those another piece already says (the same words, case and spacing aside, inside it): a
    line that repeats its title ("Prompt: add a test" then "add a test") has one thing to say, not two."""
    folded = [" ".join(p.casefold().split()) for p in pieces]
    return [p for i, (p, f) in enumerate(zip(pieces, folded))
            if not any(f in other and (f != other or j < i) for j, other in enumerate(folded) if j != i)]


def memory_pieces(text: str, body: str) -> list[str]:
    """The sentence pieces of a memory embedded as `text` (title + body + ...): those of its body, when the
    whole text fits in one chunk (a longer one is split into chunks already)."""
    return sentence_pieces(body) if len(chunk_text(text)) == 1 else []


SUMMARY_PIECE_CHARS = 300  # a summary line's start says what it is about; a long list of files adds little


def summary_pieces(body: str, min_chars: int = PIECE_MIN_CHARS, limit: int = SUMMARY_PIECE_CHARS) -> list[str]:
    """The pieces of a session summary, whatever its length: each line ("Commits: ...", "Tests: ...") and
    each item of a line listed with " · " (the outcome's reports; short items join their neighbour), so a
    question about one of the things a session did meets that thing's own vector rather than a chunk of the
    whole session."""
    pieces: list[str] = []
    for line in body.splitlines():
        own: list[str] = []
        current = ""
        for item in (i.strip() for i in line.split(" · ")):
            if item:
                current = f"{current} · {item}" if current else item
                if len(current) >= min_chars:
                    own.append(current[:limit])
                    current = ""
        if current:
            own = [*own[:-1], f"{own[-1]} · {current}"[:limit]] if own else [current[:limit]]
        pieces += own
    return pieces if len(pieces) > 1 else []


def combine(chunk: float, piece: float | None, answer: float | None = None) -> float:
    """A memory's vector score from its best chunk and its best sentence piece, or its answer chunk's cosine
    if that is higher (None: it has no piece, no answer chunk)."""
    own = chunk if piece is None else (chunk + piece) / 2
    return own if answer is None else max(own, answer)


def chunk_text(text: str, size: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP) -> list[str]:
    """Split text into chunks of at most ~size characters, on sentence boundaries where possible."""
    text = text.strip()
    if len(text) <= size:
        return [text] if text else []
    pieces = [p for p in _SENTENCE_END.split(text) if p]
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        while len(piece) > size:  # a sentence longer than a chunk: hard split
            head, piece = piece[:size], piece[size - overlap:]
            if current:
                chunks.append(current)
                current = ""
            chunks.append(head)
        if current and len(current) + 1 + len(piece) > size:
            chunks.append(current)
            tail = current[-overlap:]
            current = f"{tail[tail.find(' ') + 1:] if ' ' in tail else tail} {piece}"
        else:
            current = f"{current} {piece}" if current else piece
    if current:
        chunks.append(current)
    return chunks



def knn(conn: Connection, query: Any, *, projects: Sequence[str | None] | None, latest_only: bool,
        k: int = 50, candidates: int | None = None, scan: str = "codes", copy_limit: int = 0,
        ) -> list[tuple[str, float]]:
    """Memory ids with their best cosine similarity, best first. `candidates`: how many binary-code
    neighbours to re-score exactly (default: max(160, 2k)). `scan`: "codes" finds them in this process's
    copy of the codes (index/codes.py) when it can, "vec0" always by sqlite-vec's exhaustive scan; the bench's
    A/B also asks for "codes, one pass" and "codes, two passes". `copy_limit`: the re-scoring reads the chunks'
    vectors from this process's copy of them (index/chunk_copy.py) when the store holds at most this many
    (0: always from SQLite), and the copy keeps the answers of the last queries until a vector is written (by any
    process); the scores are the same."""
    if not vector_rows.table_exists(conn):
        return []
    with chunk_copy.held(conn, copy_limit) as copy:
        key = ("knn", query.tobytes(), None if projects is None else tuple(projects), latest_only, k, candidates,
               scan)
        if copy is not None and (kept := copy.answers.get(key)) is not None:
            return list(kept)
        chunk_ids = nearest_chunks(conn, query, projects=projects, latest_only=latest_only,
                                   count=candidates or max(MIN_CANDIDATES, k * CANDIDATES_PER_RESULT), scan=scan)
        if not chunk_ids:
            return []
        reads = _Reads(conn, copy)
        rows = reads.chunk_rows(chunk_ids)
        best: dict[str, float] = {}
        answers: dict[str, float] = {}
        _keep_best(best, [r for r in rows if r[2] != ANSWER_INDEX], query)
        _keep_best(answers, [r for r in rows if r[2] == ANSWER_INDEX], query)
        only_answer = [m for m in answers if m not in best]
        if only_answer:  # found by its answer chunk alone: its own chunks count too
            best.update(_best_rows(reads, query, only_answer, pieces=False))
        _keep_best(answers, reads.answer_rows([m for m in best if m not in answers]), query)
        scored = _with_pieces(reads, query, best)
        found = sorted(((m, combine(s, None, answers.get(m))) for m, s in scored.items()),
                       key=lambda item: -item[1])[:k]
        if copy is not None:
            copy.keep(key, found)
    return found


class _Reads:
    """The chunk rows the re-scoring reads, from this process's copy (held by the caller) or from SQLite."""

    def __init__(self, conn: Connection, copy: chunk_copy.ChunkCopy | None) -> None:
        self.conn, self.copy = conn, copy

    def chunk_rows(self, chunk_ids: Sequence[int]) -> list[Any]:
        if self.copy is not None:
            return self.copy.chunk_rows(chunk_ids)
        return vector_rows.chunk_rows(self.conn, chunk_ids)

    def memory_chunk_rows(self, memory_ids: Sequence[str], pieces: bool) -> list[Any]:
        if self.copy is not None:
            return self.copy.memory_chunk_rows(memory_ids, pieces)
        return vector_rows.memory_chunk_rows(self.conn, memory_ids, pieces)

    def answer_rows(self, memory_ids: Sequence[str]) -> list[Any]:
        if self.copy is not None:
            return self.copy.answer_rows(memory_ids)
        return vector_rows.answer_rows(self.conn, memory_ids)


def nearest_chunks(conn: Connection, query: Any, *, projects: Sequence[str | None] | None, latest_only: bool,
                   count: int, scan: str = "codes") -> list[int]:
    """The chunk ids of the `count` binary codes nearest the query's (Hamming distance), nearest first."""
    keys = None if projects is None else sorted({p or "" for p in projects})
    code = vector_rows.quantize(conn, query.tobytes())
    if scan.startswith("codes"):
        two_passes = {"codes, one pass": False, "codes, two passes": True}.get(scan)
        found = codes.nearest(conn, TABLE, len(code) * 8, code, count, keys, latest_only, two_passes)
        if found is not None:
            return found
    return vector_rows.scan(conn, query.tobytes(), count, keys, latest_only)


def _keep_best(best: dict[str, float], rows: Sequence[Any], query: Any) -> None:
    """Exact cosines of (memory_id, embedding, ...) rows against the query; each memory keeps its best row."""
    import numpy as np

    rows = [row for row in rows if row[1] is not None and len(row[1]) == query.nbytes]
    if not rows:
        return
    matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32).reshape(len(rows), -1)
    for row, similarity in zip(rows, (matrix @ query).tolist()):
        if similarity > best.get(row[0], -2.0):
            best[row[0]] = similarity


def _best_rows(reads: _Reads, query: Any, memory_ids: Sequence[str], pieces: bool,
               answers: dict[str, float] | None = None) -> dict[str, float]:
    """Each given memory's best cosine over its chunks, or over its sentence pieces; `answers`, if given,
    collects the answer chunks' cosines (from the chunks' rows)."""
    ids = list(dict.fromkeys(memory_ids))
    best: dict[str, float] = {}
    for start in range(0, len(ids), 500):
        rows = reads.memory_chunk_rows(ids[start:start + 500], pieces)
        _keep_best(best, [r for r in rows if r[2] != ANSWER_INDEX], query)
        if answers is not None:
            _keep_best(answers, [r for r in rows if r[2] == ANSWER_INDEX], query)
    return best


def _with_pieces(reads: _Reads, query: Any, chunk_best: dict[str, float]) -> dict[str, float]:
    """Each memory's score from its best chunk (given) and its best sentence piece (looked up)."""
    piece_best = _best_rows(reads, query, list(chunk_best), pieces=True)
    return {memory_id: combine(score, piece_best.get(memory_id)) for memory_id, score in chunk_best.items()}


def similarities(conn: Connection, query: Any, memory_ids: Sequence[str], copy_limit: int = 0) -> dict[str, float]:
    """The exact vector score of each given memory that has a vector (memories without one are left out):
    what the vector retriever would have scored them, for candidates it did not return. `copy_limit`: as
    for `knn`."""
    answers: dict[str, float] = {}
    with chunk_copy.held(conn, copy_limit) as copy:
        key = ("similarities", query.tobytes(), tuple(memory_ids))
        if copy is not None and (kept := copy.answers.get(key)) is not None:
            return dict(kept)
        reads = _Reads(conn, copy)
        scores = _with_pieces(reads, query, _best_rows(reads, query, memory_ids, pieces=False, answers=answers))
        found = {memory_id: combine(score, None, answers.get(memory_id)) for memory_id, score in scores.items()}
        if copy is not None:
            copy.keep(key, found)
    return found
