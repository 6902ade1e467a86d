"""The KNN table's binary codes held in this process and scanned with numpy: the vector retriever's first pass.

sqlite-vec's `vec0` table (index/vectors.py) keeps one 384-bit code per chunk and finds the nearest codes by
scanning all of them, at about a microsecond a code on these cores: fine at 10k, most of a second at a
million. `CodeMatrix` holds the same codes in numpy arrays, one per 64-bit word of a code, and computes the
same Hamming distances (XOR and popcount): the same answer as vec0's scan, at a few nanoseconds a code; a
histogram of the distances finds the cut-off, so only the nearest are sorted. Over more than COARSE_ABOVE
codes (past what was measured) it scans in two passes: the distance over the first COARSE_WORDS words (256
bits) of every code picks the `COARSE_FACTOR` x `count` nearest, and the full distance picks `count` among
those; that first pass can miss codes the full distance would have kept (at a million synthetic codes it
kept 82-87% of them, for a scan 1.4x faster: scripts/bench_vectors.py, docs/benchmarks.md). The exact cosine
re-scoring that follows (vectors.knn) is unchanged.

The copy is read once per process and database from vec0's own storage (its chunk tables, one row per 1024
codes: a few hundred milliseconds at a million), and kept in step through `vector_changes`: every write to
the KNN table appends the chunk ids it touched (vectors.py, in the writer's transaction), and each scan
first applies the changes logged since the copy was made, whichever process made them. The log keeps its
last LOG_KEEP rows; a copy older than that, a vec0 table re-created (a new model: logged as chunk 0) or a
vec0 storage this module does not recognise (another sqlite-vec version) reloads or falls back to vec0's
own scan.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from ..db.connection import Connection

log = logging.getLogger("agentmem")

LOG = "vector_changes"
LOG_KEEP = 100_000  # rows of vector_changes kept; a copy that is further behind reloads
PRUNE_EVERY = 1024
RELOAD_ABOVE = 20_000  # more changes than this since a copy was made: reload it rather than apply them
COARSE_ABOVE = 2_000_000  # codes (after the project and latest filters) above which the scan takes two passes
COARSE_WORDS = 4
COARSE_FACTOR = 32
RESET = 0  # chunk id logged when the KNN table is re-created: every copy reloads
_VERSIONS = {"v0.1.9"}  # sqlite-vec versions whose chunk tables `_read_chunks` reads


def log_changes(conn: Connection, chunk_ids: Sequence[int]) -> None:
    """Record that these chunks' codes changed (inserted, deleted or re-flagged), in the caller's transaction."""
    if not chunk_ids:
        return
    conn.executemany(f"INSERT INTO {LOG} (chunk_id) VALUES (?)", [(int(c),) for c in chunk_ids])
    last = conn.execute("SELECT MAX(seq) FROM vector_changes").fetchone()[0] or 0
    if last // PRUNE_EVERY != (last - len(chunk_ids)) // PRUNE_EVERY:
        conn.execute(f"DELETE FROM {LOG} WHERE seq <= ?", (last - LOG_KEEP,))


class CodeMatrix:
    """One database's KNN codes: chunk ids (ascending), their codes as `words` uint64 rows, project numbers,
    latest flags and whether each row is still in the table."""

    def __init__(self, table: str, words: int) -> None:
        import numpy as np

        self.table = table
        self.words = words
        self.size = 0
        self.ids = np.empty(0, dtype=np.int64)
        self.codes = np.empty((words, 0), dtype=np.uint64)
        self.project = np.empty(0, dtype=np.int32)
        self.latest = np.empty(0, dtype=bool)
        self.alive = np.empty(0, dtype=bool)
        self.projects: dict[str, int] = {}
        self.seq = 0
        self.lock = threading.Lock()

    # loading ------------------------------------------------------------------------------------------

    def load(self, conn: Connection) -> bool:
        """Read every code from vec0's chunk tables; False when their layout is not the one this reads."""
        import numpy as np

        seq = _last_seq(conn)  # before the codes: a change committed meanwhile is applied again later
        chunks = _read_chunks(conn, self.table, self.words)
        if chunks is None:
            return False
        ids, codes, projects, latest = [], [], [], []
        self.projects = {}
        for project, rowids, vectors, flags, valid in chunks:
            number = self.projects.setdefault(project, len(self.projects))
            ids.append(rowids[valid])
            codes.append(vectors[valid])
            latest.append(flags[valid] != 0)
            projects.append(np.full(int(valid.sum()), number, dtype=np.int32))
        self.size = 0
        if ids:
            all_ids = np.concatenate(ids)
            order = np.argsort(all_ids, kind="stable")
            self._set(all_ids[order], np.concatenate(codes)[order], np.concatenate(projects)[order],
                      np.concatenate(latest)[order])
        else:
            self._set(np.empty(0, np.int64), np.empty((0, self.words), np.uint64), np.empty(0, np.int32),
                      np.empty(0, bool))
        self.seq = seq
        return True

    def _set(self, ids: Any, codes: Any, projects: Any, latest: Any) -> None:
        import numpy as np

        self.size = len(ids)
        capacity = max(1024, self.size + self.size // 8)
        self.ids = np.zeros(capacity, dtype=np.int64)
        self.ids[:self.size] = ids
        self.codes = np.zeros((self.words, capacity), dtype=np.uint64)
        self.codes[:, :self.size] = codes.T
        self.project = np.zeros(capacity, dtype=np.int32)
        self.project[:self.size] = projects
        self.latest = np.zeros(capacity, dtype=bool)
        self.latest[:self.size] = latest
        self.alive = np.zeros(capacity, dtype=bool)
        self.alive[:self.size] = True

    # keeping in step --------------------------------------------------------------------------------------

    def refresh(self, conn: Connection) -> bool:
        """Apply what `vector_changes` logged since this copy was made (reloading when it is too far behind);
        False when the copy cannot be made (vec0's own scan must serve)."""
        first, last = conn.execute(f"SELECT MIN(seq), MAX(seq) FROM {LOG}").fetchone()
        first, last = first or 0, last or 0
        if last == self.seq:
            return True
        if last < self.seq or (first > self.seq + 1) or last - self.seq > RELOAD_ABOVE:
            return self.load(conn)  # a new log (the database was replaced), or one pruned past this copy
        changed = [row[0] for row in conn.execute(
            f"SELECT chunk_id FROM {LOG} WHERE seq > ? AND seq <= ? ORDER BY seq", (self.seq, last))]
        if RESET in changed:
            return self.load(conn)
        for chunk_id in dict.fromkeys(changed):
            row = conn.execute(f"SELECT project, latest, embedding FROM {self.table} WHERE chunk_id = ?",
                               (chunk_id,)).fetchone()
            self._put(chunk_id, row)
        self.seq = last
        return True

    def _put(self, chunk_id: int, row: Any) -> None:
        import numpy as np

        at = int(np.searchsorted(self.ids[:self.size], chunk_id))
        present = at < self.size and self.ids[at] == chunk_id
        if row is None:
            if present:
                self.alive[at] = False
            return
        project, latest, code = row
        if not present:
            if at < self.size:  # an id below one already held (ids are reused only after deletions): rare
                self._insert_at(at, chunk_id)
            else:
                self._append(chunk_id)
        self.codes[:, at] = np.frombuffer(code, dtype=np.uint64, count=self.words)
        self.project[at] = self.projects.setdefault(project, len(self.projects))
        self.latest[at] = bool(latest)
        self.alive[at] = True

    def _append(self, chunk_id: int) -> None:
        if self.size == len(self.ids):
            self._grow(max(1024, self.size // 2))
        self.ids[self.size] = chunk_id
        self.size += 1

    def _insert_at(self, at: int, chunk_id: int) -> None:
        self._append(chunk_id)  # room for one more, then shift the tail right by one
        n = self.size
        self.ids[at + 1:n] = self.ids[at:n - 1].copy()
        self.codes[:, at + 1:n] = self.codes[:, at:n - 1].copy()
        self.project[at + 1:n] = self.project[at:n - 1].copy()
        self.latest[at + 1:n] = self.latest[at:n - 1].copy()
        self.alive[at + 1:n] = self.alive[at:n - 1].copy()
        self.ids[at] = chunk_id

    def _grow(self, extra: int) -> None:
        import numpy as np

        self.ids = np.concatenate([self.ids, np.zeros(extra, np.int64)])
        self.codes = np.concatenate([self.codes, np.zeros((self.words, extra), np.uint64)], axis=1)
        self.project = np.concatenate([self.project, np.zeros(extra, np.int32)])
        self.latest = np.concatenate([self.latest, np.zeros(extra, bool)])
        self.alive = np.concatenate([self.alive, np.zeros(extra, bool)])

    # scanning -------------------------------------------------------------------------------------------------

    def nearest(self, query_code: bytes, count: int, projects: Sequence[str] | None, latest_only: bool,
                two_passes: bool | None = None) -> list[int]:
        """The chunk ids of the `count` codes nearest the query's (Hamming), among live rows of these projects
        (None: all) and, if latest_only, of latest memories; nearest first. two_passes: None = over
        COARSE_ABOVE codes; True or False to choose (the bench's A/B)."""
        import numpy as np

        n = self.size
        if n == 0 or count <= 0:
            return []
        query = np.frombuffer(query_code, dtype=np.uint64, count=self.words)
        keep = self.alive[:n].copy()
        if latest_only:
            keep &= self.latest[:n]
        if projects is not None:
            wanted = [self.projects[p] for p in projects if p in self.projects]
            if len(wanted) < len(self.projects):
                keep &= np.isin(self.project[:n], np.asarray(wanted, dtype=np.int32))
        rows = np.flatnonzero(keep) if not keep.all() else None
        scanned = n if rows is None else len(rows)
        if two_passes is None:
            two_passes = scanned > COARSE_ABOVE
        coarse_words = min(COARSE_WORDS, self.words)
        if two_passes and scanned > count * COARSE_FACTOR:
            coarse = _distance(self.codes, query, range(coarse_words), rows, n)
            picked = _smallest(coarse, count * COARSE_FACTOR, limit=64 * coarse_words)
            rows = picked if rows is None else rows[picked]
        full = _distance(self.codes, query, range(self.words), rows, n)
        picked = _smallest(full, count, limit=64 * self.words)
        found = picked if rows is None else rows[picked]
        order = np.lexsort((self.ids[found], full[picked]))[:count]
        return self.ids[found[order]].tolist()


def _distance(codes: Any, query: Any, words: range, rows: Any, n: int) -> Any:
    """Hamming distances (uint16) to the query over these 64-bit words, of the given rows (None: the first n)."""
    import numpy as np

    total = None
    for w in words:
        column = codes[w, :n] if rows is None else codes[w, rows]
        bits = _popcount(np.bitwise_xor(column, query[w]))
        if total is None:
            total = bits.astype(np.uint16)
        else:
            total += bits
    return total


def _popcount(values: Any) -> Any:
    """Set bits of each uint64 (uint8): numpy's own count from numpy 2, a byte table before."""
    import numpy as np

    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(values)
    table = np.array([bin(b).count("1") for b in range(256)], dtype=np.uint8)
    return table[values.view(np.uint8).reshape(len(values), 8)].sum(axis=1, dtype=np.uint8)


def _smallest(distances: Any, count: int, limit: int) -> Any:
    """Row numbers of about the `count` smallest distances (all rows at the cut-off distance included, so
    ties do not depend on order): a histogram of the distances gives the cut-off."""
    import numpy as np

    if len(distances) <= count:
        return np.arange(len(distances))
    histogram = np.cumsum(np.bincount(distances, minlength=limit + 1))
    cut = int(np.searchsorted(histogram, count))
    return np.flatnonzero(distances <= cut)


def _last_seq(conn: Connection) -> int:
    return conn.execute(f"SELECT MAX(seq) FROM {LOG}").fetchone()[0] or 0


def _read_chunks(conn: Connection, table: str, words: int) -> list[tuple[str, Any, Any, Any, Any]] | None:
    """(project, rowids, codes, latest flags, validity) of each of vec0's chunks of `table`, from its shadow
    tables; None when their layout is not the one written by the sqlite-vec versions in _VERSIONS."""
    import numpy as np

    try:
        version = conn.execute(f"SELECT value FROM {table}_info WHERE key = 'CREATE_VERSION'").fetchone()
        if version is None or version[0] not in _VERSIONS:
            return None
        rows = conn.execute(
            f"SELECT c.size, c.partition00, c.validity, c.rowids, v.vectors, m.data FROM {table}_chunks c "
            f"JOIN {table}_vector_chunks00 v ON v.rowid = c.chunk_id "
            f"JOIN {table}_metadatachunks00 m ON m.rowid = c.chunk_id ORDER BY c.chunk_id").fetchall()
    except Exception as error:  # a table this does not know: vec0's own scan serves
        log.info("vector codes not read from %s: %s", table, error)
        return None
    chunks = []
    for size, project, validity, rowids, vectors, flags in rows:
        if (len(validity) * 8 != size or len(rowids) != 8 * size or len(vectors) != 8 * words * size
                or len(flags) != 8 * size):
            log.info("vector codes not read from %s: a chunk of an unexpected layout", table)
            return None
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little").astype(bool)
        chunks.append((project, np.frombuffer(rowids, dtype=np.int64),
                       np.frombuffer(vectors, dtype=np.uint64).reshape(size, words),
                       np.frombuffer(flags, dtype=np.int64), valid))
    return chunks


_MATRICES: dict[str, CodeMatrix] = {}
_GUARD = threading.Lock()


def nearest(conn: Connection, table: str, dimension_bits: int, query_code: bytes, count: int,
            projects: Sequence[str] | None, latest_only: bool, two_passes: bool | None = None) -> list[int] | None:
    """`CodeMatrix.nearest` on this process's copy of the database's KNN codes, brought up to date first; None
    when vec0's own scan must serve (an in-memory database, a storage layout this does not read, a database
    without the change log)."""
    key = _database_key(conn)
    if key is None or dimension_bits % 64:
        return None
    with _GUARD:
        found = _MATRICES.get(key)
        if found is None or found.words != dimension_bits // 64:
            found = _MATRICES[key] = CodeMatrix(table, dimension_bits // 64)
            found.seq = -1  # not loaded yet
    with found.lock:
        if conn.in_transaction:  # changes it sees may be its own, uncommitted: the copy takes only committed ones
            current = found.seq >= 0 and _last_seq(conn) == found.seq
            return found.nearest(query_code, count, projects, latest_only, two_passes) if current else None
        try:
            ready = found.load(conn) if found.seq < 0 else found.refresh(conn)
        except Exception as error:  # e.g. no vector_changes table (a database opened by an older version)
            log.info("vector codes unavailable: %s", error)
            ready = False
        if not ready:
            found.seq = -1
            return None
        return found.nearest(query_code, count, projects, latest_only, two_passes)


def forget(conn: Connection) -> None:
    """Drop this process's copy for the database (it is reloaded when next needed)."""
    key = _database_key(conn)
    with _GUARD:
        _MATRICES.pop(key or "", None)


def _database_key(conn: Connection) -> str | None:
    for _, name, path in conn.execute("PRAGMA database_list"):
        if name == "main":
            return path or None
    return None
