"""The KNN table's binary codes held in this process and scanned with numpy: the vector retriever's first pass.

sqlite-vec's `vec0` table (db/vectors.py) keeps one 384-bit code per chunk and finds the nearest codes by
scanning all of them, at about a microsecond a code on these cores: fine at 10k, most of a second at a
million. `CodeMatrix` holds the same codes in numpy arrays, one per 64-bit word of a code, and computes the
same Hamming distances (XOR and popcount): the same answer as vec0's scan, at a few nanoseconds a code; a
histogram of the distances, counted block by block as they are computed, finds the cut-off, so only the nearest
are sorted. The rows a scan leaves out (other projects, superseded memories, deleted codes) get a distance past
any real one from a per-filter array made once and updated as each code is written (FILTERS_KEPT filters are
kept), so a scan does not build its mask again. A scan over more than
PARALLEL_ABOVE codes is split into whole blocks over SCAN_THREADS threads (numpy's loops release the GIL; the
calling thread scans one part itself). Over more than COARSE_ABOVE
codes (past what was measured) it scans in two passes: the distance over the first COARSE_WORDS words (256
bits) of every code picks the `COARSE_FACTOR` x `count` nearest, and the full distance picks `count` among
those; that first pass can miss codes the full distance would have kept, for a faster scan (how many, and how
much faster: scripts/bench_vectors.py, docs/benchmarks.md). The exact cosine
re-scoring that follows (vectors.knn) is unchanged.

The copy is read once per process and database from vec0's own storage (its chunk tables, one row per 1024
codes: a few hundred milliseconds at a million), and kept in step through `vector_changes`: every write to
the KNN table appends the chunk ids it touched (db/vectors.py, in the writer's transaction), and each scan
first applies the changes logged since the copy was made, whichever process made them. The log keeps its
last LOG_KEEP rows (db/vectors.py, where every SQL statement of these tables is); a copy older than that, a
vec0 table re-created (a new model: logged as chunk 0) or a vec0 storage this module does not recognise
(another sqlite-vec version) reloads or falls back to vec0's own scan.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..db import vectors as vector_rows
from ..db.connection import Connection, database_file

log = logging.getLogger("agentmem")

RELOAD_ABOVE = 20_000  # more changes than this since a copy was made: reload it rather than apply them
COARSE_ABOVE = 2_000_000  # codes (after the project and latest filters) above which the scan takes two passes
COARSE_WORDS = 4
COARSE_FACTOR = 32


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
        self.past = 64 * words + 1  # the distance an excluded row gets: past any real one
        self.filters: dict[tuple[tuple[int, ...] | None, bool], _Filter] = {}

    # loading ------------------------------------------------------------------------------------------

    def load(self, conn: Connection) -> bool:
        """Read every code from vec0's chunk tables; False when their layout is not the one this reads."""
        import numpy as np

        seq = vector_rows.last_change(conn)  # before the codes: a change committed meanwhile is applied again later
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
        self.filters.clear()

    # keeping in step --------------------------------------------------------------------------------------

    def refresh(self, conn: Connection) -> bool:
        """Apply what `vector_changes` logged since this copy was made (reloading when it is too far behind);
        False when the copy cannot be made (vec0's own scan must serve)."""
        first, last = vector_rows.change_bounds(conn)
        if last == self.seq:
            return True
        if last < self.seq or (first > self.seq + 1) or last - self.seq > RELOAD_ABOVE:
            return self.load(conn)  # a new log (the database was replaced), or one pruned past this copy
        changed = vector_rows.changed_chunks(conn, self.seq, last)
        if vector_rows.RESET in changed:
            return self.load(conn)
        for chunk_id in dict.fromkeys(changed):
            self._put(chunk_id, vector_rows.code_row(conn, self.table, chunk_id))
        self.seq = last
        return True

    def _put(self, chunk_id: int, row: Any) -> None:
        import numpy as np

        at = int(np.searchsorted(self.ids[:self.size], chunk_id))
        present = at < self.size and self.ids[at] == chunk_id
        if row is None:
            if present:
                self.alive[at] = False
                self._refilter(at, True)
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
        self._refilter(at, present)

    # filters ----------------------------------------------------------------------------------------------

    def _filter(self, projects: Sequence[str] | None, latest_only: bool) -> _Filter:
        """The rows a scan keeps for these projects (None: all) and latest flag: made once, then kept in step
        by every row written (`_refilter`), so a scan between two writes does not build it again."""
        import numpy as np

        wanted = None
        if projects is not None:
            numbers = sorted({self.projects[p] for p in projects if p in self.projects})
            if len(numbers) < len(self.projects):
                wanted = tuple(numbers)
        key = (wanted, latest_only)
        found = self.filters.pop(key, None)
        if found is not None:
            self.filters[key] = found  # the most recently used last: the first is dropped when one more is made
            return found
        n = self.size
        keep = self.alive[:n].copy()
        if latest_only:
            keep &= self.latest[:n]
        if wanted is not None:
            allowed = np.zeros(len(self.projects), dtype=bool)
            allowed[list(wanted)] = True
            keep &= allowed[self.project[:n]]  # a gather: np.isin sorts, 20x slower at 1M
        penalty = np.full(len(self.ids), self.past, dtype=np.uint16)  # rows still to come are excluded till written
        penalty[:n][keep] = 0
        if len(self.filters) >= FILTERS_KEPT:
            self.filters.pop(next(iter(self.filters)))
        found = self.filters[key] = _Filter(wanted, latest_only, penalty, int(np.count_nonzero(keep)))
        return found

    def _refilter(self, at: int, present: bool) -> None:
        """Row `at` was written or deleted: each filter's verdict on it again (a new row was excluded before)."""
        for kept in self.filters.values():
            was = present and kept.penalty[at] == 0
            now = bool(self.alive[at]) and (bool(self.latest[at]) or not kept.latest_only) \
                and (kept.wanted is None or int(self.project[at]) in kept.wanted)
            kept.penalty[at] = 0 if now else self.past
            kept.count += int(now) - int(was)

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
        self.filters.clear()

    def _grow(self, extra: int) -> None:
        import numpy as np

        self.ids = np.concatenate([self.ids, np.zeros(extra, np.int64)])
        self.codes = np.concatenate([self.codes, np.zeros((self.words, extra), np.uint64)], axis=1)
        self.project = np.concatenate([self.project, np.zeros(extra, np.int32)])
        self.latest = np.concatenate([self.latest, np.zeros(extra, bool)])
        self.alive = np.concatenate([self.alive, np.zeros(extra, bool)])
        self.filters.clear()

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
        kept = self._filter(projects, latest_only)
        scanned = kept.count
        if scanned == 0:
            return []
        penalty = None if scanned == n else kept.penalty
        count = min(count, scanned)
        if two_passes is None:
            two_passes = scanned > COARSE_ABOVE
        coarse_words = min(COARSE_WORDS, self.words)
        if two_passes and scanned > count * COARSE_FACTOR:
            coarse, counts = _distances(self.codes, query, coarse_words, n, penalty, self.past)
            rows = _smallest(coarse, count * COARSE_FACTOR, limit=64 * coarse_words, counts=counts)
            full = _distance_of_rows(self.codes, query, rows)
            picked = _smallest(full, count, limit=64 * self.words)
            found = rows[picked]
        else:
            full, counts = _distances(self.codes, query, self.words, n, penalty, self.past)
            found = picked = _smallest(full, count, limit=64 * self.words, counts=counts)
        order = np.lexsort((self.ids[found], full[picked]))[:count]
        return self.ids[found[order]].tolist()


FILTERS_KEPT = 4  # filters (projects x latest flag) a copy keeps between scans, each a uint16 per code


@dataclass
class _Filter:
    """The rows a scan keeps: `penalty` is 0 for a kept row and past any real distance for an excluded one."""
    wanted: tuple[int, ...] | None  # project numbers; None: every project
    latest_only: bool
    penalty: Any
    count: int  # rows kept


BLOCK = 65_536  # codes per block of the scan: its temporaries stay in the CPU's cache
SCAN_THREADS = max(1, min(4, os.cpu_count() or 1))  # threads a long scan is split over (numpy frees the GIL)
PARALLEL_ABOVE = 4 * BLOCK  # codes below which one thread scans (a thread's hand-off costs more than it saves)
_POOL: Any = None
_POOL_GUARD = threading.Lock()


def _parts(n: int) -> list[tuple[int, int]]:
    """[start, end) ranges of whole blocks, one per scan thread (one range for a short scan)."""
    if n < PARALLEL_ABOVE or SCAN_THREADS == 1:
        return [(0, n)]
    blocks = -(-n // BLOCK)
    per = -(-blocks // SCAN_THREADS)
    return [(start, min(n, start + per * BLOCK)) for start in range(0, n, per * BLOCK)]


def _in_parts(work: Callable[[int, int], Any], n: int) -> list[Any]:
    """work(start, end) over `_parts(n)`: on the scan threads when there are several parts, in order."""
    global _POOL
    parts = _parts(n)
    if len(parts) == 1:
        return [work(*parts[0])]
    with _POOL_GUARD:
        if _POOL is None:
            from concurrent.futures import ThreadPoolExecutor

            _POOL = ThreadPoolExecutor(SCAN_THREADS, thread_name_prefix="agentmem-scan")
    futures = [_POOL.submit(work, start, end) for start, end in parts[1:]]
    first = work(*parts[0])  # the calling thread scans a part itself
    return [first, *(future.result() for future in futures)]


def _distances(codes: Any, query: Any, words: int, n: int, penalty: Any, past: int) -> tuple[Any, Any]:
    """Hamming distances (uint16) to the query over the first `words` 64-bit words of the first n codes, and
    their histogram (`past` + 1 bins), a block at a time while the block is in the CPU's cache, split over the
    scan threads. `penalty` (uint16, or None: every row kept) is 0 for a kept row and `past` (beyond any real
    distance) for an excluded one: the distance is raised to it, which is cheaper than gathering the rows kept
    or assigning through a mask."""
    import numpy as np

    total = np.empty(n, dtype=np.uint16)

    def scan(first: int, last: int) -> Any:
        xor = np.empty(min(last - first, BLOCK), dtype=np.uint64)
        bits = np.empty(min(last - first, BLOCK), dtype=np.uint8)
        counts = np.zeros(past + 1, dtype=np.int64)
        for start in range(first, last, BLOCK):
            end = min(last, start + BLOCK)
            size = end - start
            block = total[start:end]
            for w in range(words):
                np.bitwise_xor(codes[w, start:end], query[w], out=xor[:size])
                _popcount(xor[:size], bits[:size])
                if w == 0:
                    block[:] = bits[:size]
                else:
                    block += bits[:size]
            if penalty is not None:
                np.maximum(block, penalty[start:end], out=block)
            counts += np.bincount(block, minlength=past + 1)
        return counts

    return total, np.sum(_in_parts(scan, n), axis=0)


def _distance_of_rows(codes: Any, query: Any, rows: Any) -> Any:
    """Hamming distances (uint16) to the query over every word, of the given rows."""
    import numpy as np

    total = np.zeros(len(rows), dtype=np.uint16)
    for w in range(codes.shape[0]):
        total += _popcount(np.bitwise_xor(codes[w, rows], query[w]))
    return total


def _popcount(values: Any, out: Any = None) -> Any:
    """Set bits of each uint64 (uint8): numpy's own count from numpy 2, a byte table before."""
    import numpy as np

    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(values, out=out) if out is not None else np.bitwise_count(values)
    table = np.array([bin(b).count("1") for b in range(256)], dtype=np.uint8)
    counted = table[values.view(np.uint8).reshape(len(values), 8)].sum(axis=1, dtype=np.uint8)
    if out is None:
        return counted
    out[:] = counted
    return out


def _smallest(distances: Any, count: int, limit: int, counts: Any = None) -> Any:
    """Row numbers of about the `count` smallest distances up to `limit` (all rows at the cut-off distance
    included, so ties do not depend on order): a histogram of the distances (`counts`, if the scan made it)
    gives the cut-off. Rows past `limit` (excluded ones) are never picked."""
    import numpy as np

    if len(distances) <= count:
        return np.flatnonzero(distances <= limit)
    n = len(distances)
    if counts is None:
        counts = np.sum(_in_parts(lambda start, end: np.bincount(distances[start:end], minlength=limit + 2), n),
                        axis=0)
    histogram = np.cumsum(counts)
    cut = min(int(np.searchsorted(histogram, count)), limit)
    rows = _in_parts(lambda start, end: np.flatnonzero(distances[start:end] <= cut) + start, n)
    return rows[0] if len(rows) == 1 else np.concatenate(rows)


def _read_chunks(conn: Connection, table: str, words: int) -> list[tuple[str, Any, Any, Any, Any]] | None:
    """(project, rowids, codes, latest flags, validity) of each of vec0's chunks of `table`, from its shadow
    tables (db/vectors.code_chunks); None when their layout is not one this reads."""
    import numpy as np

    try:
        rows = vector_rows.code_chunks(conn, table)
        if rows is None:
            return None
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
    key = database_file(conn)
    if key is None or dimension_bits % 64:
        return None
    with _GUARD:
        found = _MATRICES.get(key)
        if found is None or found.words != dimension_bits // 64:
            found = _MATRICES[key] = CodeMatrix(table, dimension_bits // 64)
            found.seq = -1  # not loaded yet
    with found.lock:
        if conn.in_transaction:  # changes it sees may be its own, uncommitted: the copy takes only committed ones
            current = found.seq >= 0 and vector_rows.last_change(conn) == found.seq
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
    key = database_file(conn)
    with _GUARD:
        _MATRICES.pop(key or "", None)
