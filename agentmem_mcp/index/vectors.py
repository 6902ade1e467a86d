"""Vectors in the same database as their memory, so they commit together.

Each memory is split into chunks (`memory_chunks`); every chunk keeps its float32 vector in
`memory_chunks.embedding` and a binary-quantised copy (one bit per dimension) in a sqlite-vec `vec0`
table whose rowid is the chunk id. The partition key is the project ('' = global) and `latest` is a
metadata column, so the KNN filters on both inside sqlite-vec. Search takes the nearest binary codes
by Hamming distance (32x less data to scan than floats: ~5x faster at 100k), then re-scores those
candidates exactly by cosine on the float vectors. A memory's vector score is its best chunk.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..db.connection import Connection

TABLE = "memory_vectors"
CHUNK_CHARS = 900
CHUNK_OVERLAP = 150
MIN_CANDIDATES = 160
CANDIDATES_PER_RESULT = 2

_SENTENCE_END = re.compile(r"(?<=[.!?。！？\n])\s+")


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


def table_exists(conn: Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone() is not None


def ensure_table(conn: Connection, model_id: str, dimension: int) -> bool:
    """Make sure the vector table fits `model_id`; call inside a write transaction.

    Returns True when the table was (re)created, which means every memory must be re-embedded:
    vectors of two models are never mixed.
    """
    row = conn.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
    current = row[0] if row else None
    wanted = f"{model_id}|{dimension}|bit+f32"
    if current == wanted and table_exists(conn):
        return False
    conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    conn.execute("DELETE FROM memory_chunks")
    conn.execute(
        f"CREATE VIRTUAL TABLE {TABLE} USING vec0(chunk_id INTEGER PRIMARY KEY, project TEXT PARTITION KEY, "
        f"latest INTEGER, embedding BIT[{int(dimension)}])"
    )
    # '' marks a memory that has no vector by design (see remember.prepare_saves' vector_text)
    conn.execute("UPDATE memories SET embedding_model = NULL WHERE embedding_model IS NOT ''")
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('embedding_model', ?)", (wanted,))
    return True


def put(conn: Connection, memory_id: str, project: str | None, latest: bool, chunks: Sequence[str],
        vectors: Sequence[Any]) -> None:
    """Replace a memory's chunks and vectors (inside the caller's transaction)."""
    delete(conn, [memory_id])
    for index, (text, vector) in enumerate(zip(chunks, vectors)):
        chunk_id = conn.execute(
            "INSERT INTO memory_chunks (memory_id, chunk_index, text, embedding) VALUES (?, ?, ?, ?)",
            (memory_id, index, text, vector.tobytes())).lastrowid
        conn.execute(
            f"INSERT INTO {TABLE} (chunk_id, project, latest, embedding) VALUES (?, ?, ?, vec_quantize_binary(?))",
            (chunk_id, project or "", 1 if latest else 0, vector.tobytes()),
        )


def delete(conn: Connection, memory_ids: Sequence[str]) -> None:
    if not memory_ids:
        return
    marks = ",".join("?" * len(memory_ids))
    chunk_ids = [row[0] for row in conn.execute(
        f"SELECT id FROM memory_chunks WHERE memory_id IN ({marks})", list(memory_ids))]
    if not chunk_ids:
        return
    if table_exists(conn):
        # One rowid lookup per chunk: vec0 would scan the whole table for `chunk_id IN (subquery)`.
        conn.executemany(f"DELETE FROM {TABLE} WHERE chunk_id = ?", [(chunk_id,) for chunk_id in chunk_ids])
    conn.execute(f"DELETE FROM memory_chunks WHERE memory_id IN ({marks})", list(memory_ids))


def set_latest(conn: Connection, memory_id: str, latest: bool) -> None:
    if not table_exists(conn):
        return
    for (chunk_id,) in conn.execute("SELECT id FROM memory_chunks WHERE memory_id = ?", (memory_id,)).fetchall():
        conn.execute(f"UPDATE {TABLE} SET latest = ? WHERE chunk_id = ?", (1 if latest else 0, chunk_id))


def knn(conn: Connection, query: Any, *, projects: Sequence[str | None] | None, latest_only: bool,
        k: int = 50, candidates: int | None = None) -> list[tuple[str, float]]:
    """Memory ids with their best cosine similarity, best first. `candidates`: how many binary-code
    neighbours to re-score exactly (default: max(160, 2k); the scan costs ~0.13 ms per candidate at 100k)."""
    if not table_exists(conn):
        return []
    sql = (f"SELECT chunk_id FROM {TABLE} WHERE embedding MATCH vec_quantize_binary(?) AND k = ?")
    args: list[Any] = [query.tobytes(), candidates or max(MIN_CANDIDATES, k * CANDIDATES_PER_RESULT)]
    if projects is not None:
        keys = sorted({p or "" for p in projects})
        sql += f" AND project IN ({','.join('?' * len(keys))})"
        args.extend(keys)
    if latest_only:
        sql += " AND latest = 1"
    chunk_ids = [row[0] for row in conn.execute(sql, args)]
    if not chunk_ids:
        return []
    rows = conn.execute(
        f"SELECT memory_id, embedding FROM memory_chunks WHERE id IN ({','.join('?' * len(chunk_ids))})",
        chunk_ids).fetchall()
    best: dict[str, float] = {}
    _keep_best(best, rows, query)
    return sorted(best.items(), key=lambda item: -item[1])[:k]


def _keep_best(best: dict[str, float], rows: Sequence[Any], query: Any) -> None:
    """Exact cosines of (memory_id, embedding) rows against the query; each memory keeps its best chunk."""
    import numpy as np

    if not rows:
        return
    matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32).reshape(len(rows), -1)
    for (memory_id, _), similarity in zip(rows, (matrix @ query).tolist()):
        if similarity > best.get(memory_id, -2.0):
            best[memory_id] = similarity


def similarities(conn: Connection, query: Any, memory_ids: Sequence[str]) -> dict[str, float]:
    """The exact best-chunk cosine of each given memory that has a vector (memories without one are left
    out): what the vector retriever would have scored them, for candidates it did not return."""
    ids = list(dict.fromkeys(memory_ids))
    best: dict[str, float] = {}
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        rows = conn.execute(f"SELECT memory_id, embedding FROM memory_chunks WHERE memory_id IN "
                            f"({','.join('?' * len(part))}) AND embedding IS NOT NULL", part).fetchall()
        _keep_best(best, [row for row in rows if len(row[1]) == query.nbytes], query)
    return best
