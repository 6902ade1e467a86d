"""A small store's chunk vectors held in this process: the vector retriever's exact re-scoring without SQL reads.

After the binary-code scan (index/codes.py) picks its candidates, `vectors.knn` scores them exactly on their
float32 vectors and their memories' sentence pieces and answer chunks, and fusion does the same for the
candidates the other retrievers found: a few hundred `memory_chunks` rows read from SQLite per search. When the
database holds at most `vector_copy_chunks` chunks (the setting), `ChunkCopy` keeps every row of that table this
re-scoring reads (memory id, chunk index, float32 vector as stored) and answers the same three reads
(`chunk_rows`, `memory_chunk_rows`, `answer_rows` of db/vectors.py) with the same rows in the same order, so the
scores computed from them are the same to the last bit. While no change is applied, it also keeps the results of
the last re-scorings (`vectors.knn` and `vectors.similarities` of a query, functions of the query and of these
rows and codes): a question asked again is answered without scanning or scoring again.

It is kept in step like the codes: every write to `memory_chunks` (chunks, sentence pieces, answer chunks) and to
the KNN table appends the chunk ids it touched to `vector_changes` in the writer's transaction (db/vectors.py), and
each read first applies the changes logged since the copy was made, whichever process made them (a hook, the
worker, another session, the CLI): a forgotten or edited memory is never scored on its old vectors. A copy too far
behind the log (pruned past it), a re-created table (a new model) or a store grown past the limit reloads or drops
the copy; inside a write transaction the copy serves only when nothing was logged since it was made (the
transaction's own uncommitted writes are read from SQLite).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from ..db import vectors as vector_rows
from ..db.connection import Connection, database_file

log = logging.getLogger("agentmem")

RELOAD_ABOVE = 5_000  # more changes than this since the copy was made: read it again rather than apply them
ANSWERS_KEPT = 256  # re-scorings (queries x filters) a copy keeps
BATCH = 500  # memory ids per statement in db/vectors.py's reads, whose row order this copies


Row = tuple[str, "bytes | None", int]  # (memory_id, embedding, chunk_index), as db/vectors.py's reads give them


class ChunkCopy:
    """One database's `memory_chunks` rows as the re-scoring reads them: chunk id -> (memory id, embedding,
    chunk index), and each memory's rows in chunk index order, its chunks (answer chunk included) apart from its
    sentence pieces."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.rows: dict[int, Row] = {}
        self.by_memory: dict[str, dict[int, int]] = {}  # memory id -> chunk index -> chunk id
        self.ordered: dict[str, tuple[list[Row], list[Row]]] = {}  # memory id -> (its chunks, its pieces)
        self.seq = -1  # the last change applied; -1: not loaded
        self.lock = threading.Lock()
        self.answers: dict[tuple, Any] = {}  # the last re-scorings' results (`vectors.knn`), while nothing changes

    def load(self, conn: Connection) -> bool:
        """Read every chunk; False when the store holds more than `limit` of them (no copy is kept)."""
        self._clear()
        seq = vector_rows.last_change(conn)  # before the rows: a change committed meanwhile is applied again later
        if vector_rows.chunk_count(conn) > self.limit:
            return False
        for chunk_id, memory_id, chunk_index, embedding in vector_rows.all_chunks(conn):
            self._put(chunk_id, memory_id, chunk_index, embedding)
        if len(self.rows) > self.limit:
            self._clear()
            return False
        self._order(self.by_memory)
        self.seq = seq
        return True

    def refresh(self, conn: Connection) -> bool:
        """Apply what `vector_changes` logged since the copy was made; False when no copy can serve."""
        if self.seq < 0:
            return self.load(conn)
        last = vector_rows.last_change(conn)
        if last == self.seq:
            return True
        first = vector_rows.change_bounds(conn)[0]
        if last < self.seq or first > self.seq + 1 or last - self.seq > RELOAD_ABOVE:
            return self.load(conn)  # a new log (the database was replaced), or one pruned past this copy
        self.answers = {}
        changed = list(dict.fromkeys(vector_rows.changed_chunks(conn, self.seq, last)))
        if vector_rows.RESET in changed:
            return self.load(conn)
        touched = {row[0] for row in map(self.rows.get, changed) if row is not None}
        for chunk_id in changed:
            self._drop(chunk_id)
        for start in range(0, len(changed), BATCH):
            for chunk_id, memory_id, chunk_index, embedding in vector_rows.chunks_by_id(
                    conn, changed[start:start + BATCH]):
                self._put(chunk_id, memory_id, chunk_index, embedding)
                touched.add(memory_id)
        if len(self.rows) > self.limit:
            self._clear()
            return False
        self._order(touched)
        self.seq = last
        return True

    def _clear(self) -> None:
        self.rows, self.by_memory, self.ordered, self.answers, self.seq = {}, {}, {}, {}, -1

    def keep(self, key: tuple, answer: Any) -> None:
        """Keep a re-scoring's result (a function of the query and of the rows held): it serves the same question
        until a change is applied (`refresh`, `load`), which forgets them all."""
        if len(self.answers) >= ANSWERS_KEPT:
            self.answers.pop(next(iter(self.answers)))
        self.answers[key] = answer

    def _put(self, chunk_id: int, memory_id: str, chunk_index: int, embedding: bytes | None) -> None:
        self.rows[chunk_id] = (memory_id, embedding, chunk_index)
        self.by_memory.setdefault(memory_id, {})[chunk_index] = chunk_id

    def _drop(self, chunk_id: int) -> None:
        row = self.rows.pop(chunk_id, None)
        if row is None:
            return
        indexes = self.by_memory.get(row[0])
        if indexes is not None and indexes.get(row[2]) == chunk_id:
            del indexes[row[2]]
            if not indexes:
                del self.by_memory[row[0]]

    def _order(self, memory_ids: Any) -> None:
        """Each of these memories' rows in chunk index order, chunks apart from pieces (none: it has none left)."""
        for memory_id in memory_ids:
            indexes = self.by_memory.get(memory_id)
            if not indexes:
                self.ordered.pop(memory_id, None)
                continue
            rows = [self.rows[indexes[i]] for i in sorted(indexes)]
            self.ordered[memory_id] = ([r for r in rows if r[2] < vector_rows.PIECE_INDEX],
                                       [r for r in rows if r[2] >= vector_rows.PIECE_INDEX])

    # the reads, row for row as db/vectors.py's ------------------------------------------------------------

    def chunk_rows(self, chunk_ids: Sequence[int]) -> list[Row]:
        """`vector_rows.chunk_rows`: these chunks' rows, by ascending chunk id (SQLite's order for `id IN`)."""
        rows = self.rows
        return [rows[c] for c in sorted(set(chunk_ids)) if c in rows]

    def memory_chunk_rows(self, memory_ids: Sequence[str], pieces: bool) -> list[Row]:
        """`vector_rows.memory_chunk_rows`: per batch of BATCH ids, by memory id then chunk index (the order of
        the (memory_id, chunk_index) index SQLite reads them by)."""
        ordered = self.ordered
        side = 1 if pieces else 0
        found: list[Row] = []
        for start in range(0, len(memory_ids), BATCH):
            for memory_id in sorted(set(memory_ids[start:start + BATCH])):
                both = ordered.get(memory_id)
                if both is not None:
                    found += both[side]
        return found

    def answer_rows(self, memory_ids: Sequence[str]) -> list[tuple[str, bytes | None]]:
        """`vector_rows.answer_rows` (their embeddings): per batch, by memory id."""
        rows, by_memory = self.rows, self.by_memory
        found: list[tuple[str, bytes | None]] = []
        for start in range(0, len(memory_ids), BATCH):
            for memory_id in sorted(set(memory_ids[start:start + BATCH])):
                chunk_id = by_memory.get(memory_id, {}).get(vector_rows.ANSWER_INDEX)
                if chunk_id is not None:
                    found.append(rows[chunk_id][:2])
        return found


_COPIES: dict[str, ChunkCopy] = {}
_GUARD = threading.Lock()


@contextlib.contextmanager
def held(conn: Connection, limit: int) -> Iterator[ChunkCopy | None]:
    """This process's copy of the database's chunks, brought up to date and held (no other thread changes it)
    while inside; None when SQL must serve (`limit` 0, a store of more chunks than `limit`, an in-memory
    database, a write transaction that changed vectors, a database without the change log)."""
    key = database_file(conn) if limit > 0 else None
    if key is None:
        yield None
        return
    with _GUARD:
        found = _COPIES.get(key)
        if found is None or found.limit != limit:
            found = _COPIES[key] = ChunkCopy(limit)
    with found.lock:
        try:
            if conn.in_transaction:  # the transaction's own writes are not committed: serve only an unchanged copy
                ready = found.seq >= 0 and vector_rows.last_change(conn) == found.seq
            else:
                ready = found.refresh(conn)
        except Exception as error:  # e.g. no vector_changes table (a database opened by an older version)
            log.info("chunk vectors read from SQLite: %s", error)
            found.seq, ready = -1, False
        if ready:
            yield found
            return
    yield None  # SQLite serves, with no lock held


def forget(conn: Connection) -> None:
    """Drop this process's copy for the database (it is read again when next needed)."""
    key = database_file(conn)
    with _GUARD:
        _COPIES.pop(key or "", None)
