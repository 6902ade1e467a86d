"""The vector tables: `memory_chunks` (a memory's chunks, sentence pieces and answer chunk, each with its float32
vector), `memory_vectors` (sqlite-vec's `vec0` KNN table: one binary code per chunk, partitioned by project, with
a `latest` flag) and `vector_changes` (the chunk ids each write to either table touched, so every process's copy
of the codes and of a small store's chunk vectors keeps in step). The only module that writes their SQL, and the
reads index/vectors.py, index/codes.py and index/chunk_copy.py make of them; the algorithms (chunking, the exact
cosine re-scoring, the Hamming scan of the codes) are theirs. Writes run inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import memories, meta, word_vectors
from .connection import Connection, marks

TABLE = "memory_vectors"
LOG = "vector_changes"
PIECE_INDEX = 1000  # memory_chunks.chunk_index of a memory's first sentence piece
ANSWER_INDEX = PIECE_INDEX - 1  # a memory's answer chunk: its own chunks stop far below (65,536 chars: ~90)
RESET = 0  # chunk id logged when the KNN table is re-created: every copy reloads
LOG_KEEP = 100_000  # rows of vector_changes kept; a copy that is further behind reloads
PRUNE_EVERY = 1024
_VERSIONS = {"v0.1.9"}  # sqlite-vec versions whose chunk tables `code_chunks` reads


def table_exists(conn: Connection) -> bool:
    """Whether the KNN table exists (it is made once the model is known)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone() is not None


def ensure_table(conn: Connection, model_id: str, dimension: int) -> bool:
    """Make sure the vector table fits `model_id`; call inside a write transaction.

    Returns True when the table was (re)created, which means every memory must be re-embedded:
    vectors of two models are never mixed.
    """
    current = meta.get(conn, meta.EMBEDDING_MODEL)
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
    memories.unembed_all(conn)
    word_vectors.reset(conn)
    log_changes(conn, [RESET])
    meta.put(conn, meta.EMBEDDING_MODEL, wanted)
    return True


# -- writes ---------------------------------------------------------------------------------------------


def put(conn: Connection, memory_id: str, project: str | None, latest: bool, chunks: Sequence[str],
        vectors: Sequence[Any]) -> None:
    """Replace a memory's chunks and vectors (float32 numpy arrays); its sentence pieces go too, and the worker
    gives it new ones."""
    delete(conn, [memory_id])
    memories.clear_pieces(conn, [memory_id])
    for index, (text, vector) in enumerate(zip(chunks, vectors)):
        _insert_chunk(conn, memory_id, project, latest, index, text, vector)


def _insert_chunk(conn: Connection, memory_id: str, project: str | None, latest: bool, index: int, text: str,
                  vector: Any) -> None:
    """One chunk row and its binary code in the KNN table."""
    chunk_id = conn.execute(
        "INSERT INTO memory_chunks (memory_id, chunk_index, text, embedding) VALUES (?, ?, ?, ?)",
        (memory_id, index, text, vector.tobytes())).lastrowid
    conn.execute(
        f"INSERT INTO {TABLE} (chunk_id, project, latest, embedding) VALUES (?, ?, ?, vec_quantize_binary(?))",
        (chunk_id, project or "", 1 if latest else 0, vector.tobytes()),
    )
    log_changes(conn, [chunk_id])


def put_answer(conn: Connection, memory_id: str, project: str | None, latest: bool, text: str | None,
               vector: Any) -> None:
    """Set a memory's answer chunk (None: it has none)."""
    drop_answers(conn, [memory_id])
    if text is not None:
        _insert_chunk(conn, memory_id, project, latest, ANSWER_INDEX, text, vector)


def drop_answers(conn: Connection, memory_ids: Sequence[str]) -> None:
    """Remove these memories' answer chunks, from both tables."""
    chunk_ids = [row[1] for row in answer_rows(conn, list(memory_ids), "id")]
    if chunk_ids and table_exists(conn):
        conn.executemany(f"DELETE FROM {TABLE} WHERE chunk_id = ?", [(c,) for c in chunk_ids])
        log_changes(conn, chunk_ids)
    conn.executemany("DELETE FROM memory_chunks WHERE id = ?", [(c,) for c in chunk_ids])


def put_pieces(conn: Connection, memory_id: str, pieces: Sequence[str], vectors: Sequence[Any]) -> None:
    """Set a memory's sentence pieces (none: it has none) beside its chunks, and count them."""
    dropped = [row[0] for row in conn.execute(
        "SELECT id FROM memory_chunks WHERE memory_id = ? AND chunk_index >= ?", (memory_id, PIECE_INDEX))]
    conn.execute("DELETE FROM memory_chunks WHERE memory_id = ? AND chunk_index >= ?", (memory_id, PIECE_INDEX))
    added = [conn.execute("INSERT INTO memory_chunks (memory_id, chunk_index, text, embedding) VALUES (?, ?, ?, ?)",
                          (memory_id, PIECE_INDEX + i, text, vector.tobytes())).lastrowid
             for i, (text, vector) in enumerate(zip(pieces, vectors))]
    log_changes(conn, [*dropped, *added])
    memories.set_pieces(conn, memory_id, len(pieces))


def delete(conn: Connection, memory_ids: Sequence[str]) -> None:
    """Remove every chunk of these memories, from both tables."""
    if not memory_ids:
        return
    ids = marks(memory_ids)
    chunk_ids = [row[0] for row in conn.execute(
        f"SELECT id FROM memory_chunks WHERE memory_id IN ({ids})", list(memory_ids))]
    if not chunk_ids:
        return
    if table_exists(conn):
        # One rowid lookup per chunk: vec0 would scan the whole table for `chunk_id IN (subquery)`.
        conn.executemany(f"DELETE FROM {TABLE} WHERE chunk_id = ?", [(chunk_id,) for chunk_id in chunk_ids])
        log_changes(conn, chunk_ids)
    conn.execute(f"DELETE FROM memory_chunks WHERE memory_id IN ({ids})", list(memory_ids))


def set_latest(conn: Connection, memory_id: str, latest: bool) -> None:
    """Flag the memory's codes in the KNN table as the latest version or not."""
    if not table_exists(conn):
        return
    chunk_ids = [row[0] for row in conn.execute(
        "SELECT id FROM memory_chunks WHERE memory_id = ? AND chunk_index < ?", (memory_id, PIECE_INDEX))]
    for chunk_id in chunk_ids:
        conn.execute(f"UPDATE {TABLE} SET latest = ? WHERE chunk_id = ?", (1 if latest else 0, chunk_id))
    log_changes(conn, chunk_ids)


def log_changes(conn: Connection, chunk_ids: Sequence[int]) -> None:
    """Record that these chunks changed (inserted, deleted, re-flagged; a sentence piece has no code, and the
    codes' copy passes over it); the log keeps its last LOG_KEEP rows."""
    if not chunk_ids:
        return
    conn.executemany(f"INSERT INTO {LOG} (chunk_id) VALUES (?)", [(int(c),) for c in chunk_ids])
    last = conn.execute(f"SELECT MAX(seq) FROM {LOG}").fetchone()[0] or 0
    if last // PRUNE_EVERY != (last - len(chunk_ids)) // PRUNE_EVERY:
        conn.execute(f"DELETE FROM {LOG} WHERE seq <= ?", (last - LOG_KEEP,))


# -- reads of the chunks -----------------------------------------------------------------------------------


def chunk_rows(conn: Connection, chunk_ids: Sequence[int]) -> list[Any]:
    """(memory_id, embedding, chunk_index) of these chunks."""
    return conn.execute(f"SELECT memory_id, embedding, chunk_index FROM memory_chunks WHERE id IN "
                        f"({marks(chunk_ids)})", list(chunk_ids)).fetchall()


def chunk_count(conn: Connection) -> int:
    """How many rows `memory_chunks` holds (chunks, sentence pieces and answer chunks)."""
    return conn.execute("SELECT COUNT(*) FROM memory_chunks").fetchone()[0]


def all_chunks(conn: Connection) -> list[Any]:
    """(id, memory_id, chunk_index, embedding) of every chunk: what index/chunk_copy.py holds."""
    return conn.execute("SELECT id, memory_id, chunk_index, embedding FROM memory_chunks").fetchall()


def chunks_by_id(conn: Connection, chunk_ids: Sequence[int]) -> list[Any]:
    """(id, memory_id, chunk_index, embedding) of these chunks (those still there)."""
    return conn.execute(f"SELECT id, memory_id, chunk_index, embedding FROM memory_chunks WHERE id IN "
                        f"({marks(chunk_ids)})", list(chunk_ids)).fetchall()


def memory_chunk_rows(conn: Connection, memory_ids: Sequence[str], pieces: bool) -> list[Any]:
    """(memory_id, embedding, chunk_index) of these memories' chunks (answer chunks included), or of their
    sentence pieces."""
    rows: list[Any] = []
    for start in range(0, len(memory_ids), 500):
        part = list(memory_ids[start:start + 500])
        rows += conn.execute(
            f"SELECT memory_id, embedding, chunk_index FROM memory_chunks "
            f"WHERE memory_id IN ({marks(part)}) AND chunk_index {'>=' if pieces else '<'} ?",
            [*part, PIECE_INDEX]).fetchall()
    return rows


def answer_rows(conn: Connection, memory_ids: Sequence[str], column: str = "embedding") -> list[Any]:
    """The (memory_id, `column`) rows of these memories' answer chunks (most have none)."""
    if column not in ("embedding", "id"):
        raise ValueError(f"an answer chunk's embedding or id, not {column!r}")
    rows: list[Any] = []
    for start in range(0, len(memory_ids), 500):
        part = list(memory_ids[start:start + 500])
        rows += conn.execute(f"SELECT memory_id, {column} FROM memory_chunks WHERE chunk_index = ? "
                             f"AND memory_id IN ({marks(part)})", [ANSWER_INDEX, *part]).fetchall()
    return rows


# -- reads of the KNN table --------------------------------------------------------------------------------


def quantize(conn: Connection, vector: bytes) -> bytes:
    """The binary code sqlite-vec makes of a float32 vector (one bit per dimension)."""
    return conn.execute("SELECT vec_quantize_binary(?)", (vector,)).fetchone()[0]


def scan(conn: Connection, vector: bytes, count: int, projects: Sequence[str] | None,
         latest_only: bool) -> list[int]:
    """vec0's own exhaustive scan: the chunk ids of the `count` codes nearest the vector's, among these
    projects' ('' = global; None: all) and, if latest_only, the latest memories', nearest first."""
    sql = f"SELECT chunk_id FROM {TABLE} WHERE embedding MATCH vec_quantize_binary(?) AND k = ?"
    args: list[Any] = [vector, count]
    if projects is not None:
        sql += f" AND project IN ({marks(projects)})"
        args.extend(projects)
    if latest_only:
        sql += " AND latest = 1"
    return [row[0] for row in conn.execute(sql, args)]


def code_row(conn: Connection, table: str, chunk_id: int) -> Any:
    """(project, latest, code) of one chunk in the KNN table `table`; None when it is not there."""
    return conn.execute(f"SELECT project, latest, embedding FROM {table} WHERE chunk_id = ?", (chunk_id,)).fetchone()


def code_chunks(conn: Connection, table: str) -> list[Any] | None:
    """(size, project, validity, rowids, codes, latest flags) of each of vec0's storage chunks of `table`, read
    from its shadow tables, in chunk order; None when they are not those written by the sqlite-vec versions in
    _VERSIONS. Raises what SQLite raises when the shadow tables are not there."""
    version = conn.execute(f"SELECT value FROM {table}_info WHERE key = 'CREATE_VERSION'").fetchone()
    if version is None or version[0] not in _VERSIONS:
        return None
    return conn.execute(
        f"SELECT c.size, c.partition00, c.validity, c.rowids, v.vectors, m.data FROM {table}_chunks c "
        f"JOIN {table}_vector_chunks00 v ON v.rowid = c.chunk_id "
        f"JOIN {table}_metadatachunks00 m ON m.rowid = c.chunk_id ORDER BY c.chunk_id").fetchall()


def last_change(conn: Connection) -> int:
    """The sequence number of the last logged change (0: none)."""
    return conn.execute(f"SELECT MAX(seq) FROM {LOG}").fetchone()[0] or 0


def change_bounds(conn: Connection) -> tuple[int, int]:
    """The first and last sequence numbers the log still holds (0, 0 when it is empty)."""
    # two statements: SQLite reads a lone MIN or MAX of the key off the b-tree's end, both at once by a full scan
    first = conn.execute(f"SELECT MIN(seq) FROM {LOG}").fetchone()[0]
    return first or 0, last_change(conn)


def changed_chunks(conn: Connection, after: int, upto: int) -> list[int]:
    """The chunk ids logged after sequence number `after` up to `upto`, in the order logged."""
    return [row[0] for row in conn.execute(
        f"SELECT chunk_id FROM {LOG} WHERE seq > ? AND seq <= ? ORDER BY seq", (after, upto))]
