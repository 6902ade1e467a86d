"""The `memories` table: its reads by id (a memory, its version chain, its latest version), the one filter that
search, listing and forgetting select memories by (`MemoryFilter`), the content hash that saves dedup on and the
audit chain binds, and every write to the table, each a named operation run inside the caller's transaction.
The only module that writes this table's SQL, and the place of the named reads of the read path, which the hooks
import: search, the briefing, prompt recall (team memory's too) and stats (`by_ids`, `best_known`, `pinned`,
`session_summaries`, `statistics`, ...). db/memory_reads.py has the reads of what maintains memories (the indexer,
lifecycle, the worker, the commands, team sharing), db/browse.py the viewer's."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..models import Memory, NotFound, check_memory_id
from .connection import Connection, marks
from .hashing import content_hash  # noqa: F401 (the content hash lives beside the audit; callers import it here)

if TYPE_CHECKING:  # the briefing's hooks import this module: no database machinery at import
    from .database import Database

COLUMNS = frozenset(Memory.__dataclass_fields__)  # what `insert` may be given; `pieces` and `words` are the index's


@dataclass(frozen=True)
class MemoryFilter:
    """Which memories a read selects, as SQL (`where`) or on rows already read (`admits`); every bound left at
    its default admits all.

    projects: the projects admitted (None: every project; a global memory's project is None); latest_only:
    no superseded versions; types / tiers: admitted when non-empty; since / until: created_at >= since and
    <= until; before: created_at < before; min_confidence; with_quarantined=False leaves out quarantined
    memories; live_at: leaves out memories whose forget_after has come by then."""

    projects: Sequence[str | None] | None = None
    latest_only: bool = False
    types: Sequence[str] = ()
    tiers: Sequence[str] = ()
    since: float | None = None
    until: float | None = None
    before: float | None = None
    min_confidence: float | None = None
    with_quarantined: bool = True
    live_at: float | None = None

    def where(self) -> tuple[str, list[Any]]:
        """The SQL condition on `memories` and its arguments."""
        where, args = ["1 = 1"], []
        if self.latest_only:
            where.append("is_latest = 1")
        if self.projects is not None:
            where.append("(" + " OR ".join(["project IS ?"] * len(self.projects)) + ")" if self.projects else "0")
            args.extend(self.projects)
        for column, values in (("type", self.types), ("tier", self.tiers)):
            if values:
                where.append(f"{column} IN ({','.join('?' * len(values))})")
                args.extend(values)
        for condition, value in (("created_at >= ?", self.since), ("created_at <= ?", self.until),
                                 ("created_at < ?", self.before), ("confidence >= ?", self.min_confidence)):
            if value is not None:
                where.append(condition)
                args.append(value)
        if not self.with_quarantined:
            where.append("quarantined IS NULL")
        if self.live_at is not None:
            where.append("(forget_after IS NULL OR forget_after > ?)")
            args.append(self.live_at)
        return " AND ".join(where), args

    def admits(self, row: Mapping[str, Any]) -> bool:
        """Whether a memory row read whole (or with the columns the filter names) passes."""
        return not (
            self.projects is not None and row["project"] not in self.projects
            or self.latest_only and not row["is_latest"]
            or self.types and row["type"] not in self.types
            or self.tiers and row["tier"] not in self.tiers
            or self.since is not None and row["created_at"] < self.since
            or self.until is not None and row["created_at"] > self.until
            or self.before is not None and row["created_at"] >= self.before
            or self.min_confidence is not None and row["confidence"] < self.min_confidence
            or not self.with_quarantined and row["quarantined"] is not None
            or self.live_at is not None and row["forget_after"] is not None and row["forget_after"] <= self.live_at
        )


class Memories:
    """Reads of the memories table of `db`, by id and by version chain."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, memory_id: str, *, within: Sequence[str | None] | None = None) -> Memory:
        """The whole memory; raises NotFound. within: the projects the caller may see (None: any); a memory
        of another project is not found, so a caller walled into a project learns nothing of the others."""
        check_memory_id(memory_id)
        row = self.db.conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None or within is not None and row["project"] not in within:
            raise NotFound(f"no memory {memory_id}" + (" in this project" if row is not None else "")
                           + ": it may have been forgotten; search again for current ids")
        return Memory.from_row(row)

    def history(self, memory_id: str, *, within: Sequence[str | None] | None = None) -> list[Memory]:
        """Every version of the memory's chain, oldest first (`within` as in `get`)."""
        memory = self.get(memory_id, within=within)
        rows = self.db.conn.execute("SELECT * FROM memories WHERE root_id = ? ORDER BY version", (memory.root_id,))
        return [Memory.from_row(row) for row in rows if within is None or row["project"] in within]

    def latest_version(self, memory_id: str) -> Memory:
        """The current version of the memory's chain (the memory itself when it is the latest)."""
        memory = self.get(memory_id)
        if memory.is_latest:
            return memory
        row = self.db.conn.execute("SELECT * FROM memories WHERE root_id = ? AND is_latest = 1",
                                   (memory.root_id,)).fetchone()
        return Memory.from_row(row) if row else memory


# -- named reads ---------------------------------------------------------------------------------------


BY_ID = "sqlite_autoindex_memories_1"  # SQLite's index of the table's primary key (id)


def by_ids(conn: Connection, memory_ids: Sequence[str], columns: str = "*",
           chosen: MemoryFilter | None = None) -> list[Any]:
    """The rows (these `columns`, the table named `m`) of those of `memory_ids` that exist and that `chosen`,
    if given, admits (as SQL)."""
    if not memory_ids:
        return []
    where, args = chosen.where() if chosen is not None else ("1 = 1", [])
    # by primary key: given the filter's project terms, the planner would walk a whole project's index instead
    return conn.execute(f"SELECT {columns} FROM memories m INDEXED BY {BY_ID} WHERE id IN ({marks(memory_ids)}) "
                        f"AND {where}", [*memory_ids, *args]).fetchall()


def admitted(conn: Connection, memory_ids: Sequence[str], chosen: MemoryFilter) -> set[str]:
    """Which of these memories `chosen` admits."""
    return {row[0] for row in by_ids(conn, memory_ids, "id", chosen)}


def words_by_id(conn: Connection, memory_ids: Sequence[str]) -> dict[str, str]:
    """id -> `words` (space-separated, as counted in the word vectors) of those of these memories that have them."""
    if not memory_ids:
        return {}
    return dict(conn.execute(f"SELECT id, words FROM memories WHERE id IN ({marks(memory_ids)}) "
                             "AND words IS NOT NULL", list(memory_ids)).fetchall())


def without_vectors(conn: Connection, memory_ids: Sequence[str]) -> set[str]:
    """Those of these memories that have no vector: by design (`embedding_model` '') or not yet (NULL: saved
    before the model was ready, or under another model, until the backfill embeds them)."""
    if not memory_ids:
        return set()
    return {row[0] for row in conn.execute(
        f"SELECT id FROM memories WHERE id IN ({marks(memory_ids)}) AND (embedding_model = '' "
        "OR embedding_model IS NULL)", list(memory_ids))}


def hashes_of(conn: Connection, memory_ids: Sequence[str]) -> set[str]:
    """The content hashes of those of these memories that exist."""
    if not memory_ids:
        return set()
    return {row[0] for row in conn.execute(f"SELECT content_hash FROM memories WHERE id IN ({marks(memory_ids)})",
                                           list(memory_ids))}


def latest_holds(hash_column: str) -> str:
    """An SQL condition, for another table's read: a latest memory here has the content hash `hash_column` (a
    column of that read)."""
    return f"EXISTS (SELECT 1 FROM memories m WHERE m.content_hash = {hash_column} AND m.is_latest = 1)"


def best_known(conn: Connection, chosen: MemoryFilter, columns: str, limit: int) -> list[Any]:
    """Up to `limit` rows (`columns`, the table named `m`) that `chosen` admits, the most important first, then
    the most used, then the last updated.

    Read one project and one tier at a time along `memories_knowledge`, in that order, so each read stops at
    `limit` rows that pass; the filter's other columns (confidence among them, which no index holds so that the
    sweep's decay rewrites no index) are checked on those rows alone."""
    return _in_order(conn, chosen, columns, ("importance", "access_count", "updated_at"), limit, by_tier=True)


def pinned(conn: Connection, chosen: MemoryFilter, columns: str, limit: int) -> list[Any]:
    """Up to `limit` pinned or P0 rows (`columns`, the table named `m`) that `chosen` admits: pinned first, then
    the most important, then the newest. Read one project at a time along `memories_pinned`, in that order."""
    return _in_order(conn, chosen, columns, ("pinned", "importance", "created_at"), limit,
                     condition=" AND (pinned = 1 OR priority = 'P0')")


def session_summaries(conn: Connection, chosen: MemoryFilter, columns: str, other_than: str | None,
                      limit: int) -> list[Any]:
    """Up to `limit` rows (`columns`, the table named `m`, `events`: how many observations the memory's session
    recorded, and `client`: the client that ran it) that `chosen` admits and whose session is not `other_than`,
    the last updated first. Read one project at a time along `memories_recent` (project, tier, type, updated_at),
    so each read stops at `limit` rows that pass."""
    return _in_order(conn, chosen, f"{columns}, (SELECT COUNT(*) FROM observations o "
                     "WHERE o.session_id = m.session_id) AS events, (SELECT s.client FROM sessions s "
                     "WHERE s.id = m.session_id) AS client", ("updated_at",), limit,
                     condition=" AND session_id IS NOT ?", condition_args=(other_than,))


def _in_order(conn: Connection, chosen: MemoryFilter, columns: str, order: Sequence[str], limit: int, *,
              by_tier: bool = False, condition: str = "", condition_args: Sequence[Any] = ()) -> list[Any]:
    """Up to `limit` rows (`columns`, and `sort_<column>` for each of `order`) that `chosen` and `condition`
    admit, by the `order` columns, each descending: read one project (and one tier, by_tier=True) at a time, each
    read stopping at `limit` rows, and merged."""
    keys = ", ".join(f"m.{column} AS sort_{column}" for column in order)
    descending = ", ".join(f"{column} DESC" for column in order)
    found: list[Any] = []
    for part in _streams(chosen, by_tier=by_tier):
        where, args = part.where()
        found += conn.execute(f"SELECT {columns}, {keys} FROM memories m WHERE {where}{condition} "
                              f"ORDER BY {descending} LIMIT ?", [*args, *condition_args, limit]).fetchall()
    found.sort(key=lambda row: tuple(row[f"sort_{column}"] for column in order), reverse=True)
    return found[:limit]


def _streams(chosen: MemoryFilter, *, by_tier: bool) -> list[MemoryFilter]:
    """`chosen` as one filter per project it names (and per tier, by_tier=True), each of which an index with
    project (and tier) as its leading equality columns reads in order; `chosen` itself when it names no project."""
    if not chosen.projects:
        return [chosen]
    tiers = [(tier,) for tier in chosen.tiers] if by_tier and chosen.tiers else [chosen.tiers]
    return [replace(chosen, projects=(project,), tiers=part) for project in dict.fromkeys(chosen.projects)
            for part in tiers]


def statistics(conn: Connection, projects: Sequence[str | None] | None, expiring_before: float) -> dict[str, Any]:
    """Counts of the latest memories of these projects (None: all): in all, superseded versions (of any version),
    by tier, type and source, by confidence band, quarantined, never used; and up to 20 of those whose
    forget_after comes by `expiring_before` (id, title, forget_after), the soonest first."""
    latest = MemoryFilter(projects=projects, latest_only=True)
    where, args = latest.where()
    scope, scope_args = MemoryFilter(projects=projects).where()
    total, never = conn.execute(f"SELECT COUNT(*), SUM(access_count = 0) FROM memories WHERE {where}",
                                args).fetchone()
    superseded = conn.execute(f"SELECT COUNT(*) FROM memories WHERE is_latest = 0 AND {scope}",
                              scope_args).fetchone()[0]
    bands = conn.execute(
        f"SELECT SUM(confidence >= 0.8), SUM(confidence >= 0.4 AND confidence < 0.8), SUM(confidence < 0.4) "
        f"FROM memories WHERE {where}", args).fetchone()
    expiring = [dict(row) for row in conn.execute(
        f"SELECT id, title, forget_after FROM memories WHERE {where} AND forget_after IS NOT NULL "
        f"AND forget_after <= ? ORDER BY forget_after LIMIT 20", [*args, expiring_before])]

    def grouped(column: str) -> dict[str, int]:
        return {row[0]: row[1] for row in conn.execute(
            f"SELECT {column}, COUNT(*) FROM memories WHERE {where} GROUP BY {column} ORDER BY {column}", args)}

    return {
        "memories": total or 0,
        "superseded_versions": superseded or 0,
        "by_tier": grouped("tier"),
        "by_type": grouped("type"),
        "by_source": grouped("source"),
        "confidence": {">=0.8": bands[0] or 0, "0.4-0.8": bands[1] or 0, "<0.4": bands[2] or 0},
        "quarantined": conn.execute(f"SELECT COUNT(*) FROM memories WHERE {where} AND quarantined IS NOT NULL",
                                    args).fetchone()[0],
        "never_accessed": never or 0,
        "expiring_within_7_days": expiring,
    }


def unembedded(conn: Connection) -> int:
    """How many memories have no vectors yet (saved before the model was ready, or after a model change)."""
    return conn.execute("SELECT COUNT(*) FROM memories INDEXED BY memories_unembedded "
                        "WHERE embedding_model IS NULL").fetchone()[0]


def vector_backlog(conn: Connection) -> dict[str, int]:
    """What the background worker has still to embed: whole memories, then their sentence pieces and words."""
    return {
        "memories": unembedded(conn),
        "sentence_pieces": conn.execute(
            "SELECT COUNT(*) FROM memories INDEXED BY memories_pieces_todo WHERE pieces IS NULL "
            "AND embedding_model IS NOT NULL AND embedding_model != ''").fetchone()[0],
        "words": conn.execute(
            "SELECT COUNT(*) FROM memories INDEXED BY memories_words_todo WHERE words IS NULL "
            "AND embedding_model IS NOT NULL AND embedding_model != ''").fetchone()[0]}


def total(conn: Connection) -> int:
    """How many memories are stored (every version)."""
    return conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]


# -- writes, each inside the caller's transaction ----------------------------------------------------


def insert(conn: Connection, values: Mapping[str, Any]) -> None:
    """A new row with these column values (names from `COLUMNS`; lists already JSON text); the rest default."""
    unknown = set(values) - COLUMNS
    if unknown:
        raise ValueError(f"not columns of memories: {sorted(unknown)}")
    names = list(values)
    conn.execute(f"INSERT INTO memories ({', '.join(names)}) VALUES ({marks(names)})", [values[n] for n in names])


def retire(conn: Connection, memory_id: str, now: float) -> None:
    """A new version supersedes the memory: no longer the latest, valid until `now` (unless it ended before)."""
    conn.execute("UPDATE memories SET is_latest = 0, valid_to = COALESCE(valid_to, ?), updated_at = ? WHERE id = ?",
                 (now, now, memory_id))


def delete(conn: Connection, memory_ids: Sequence[str]) -> None:
    """Remove these rows (what hangs on them, vectors, links, the index, is the caller's to remove)."""
    if memory_ids:
        conn.execute(f"DELETE FROM memories WHERE id IN ({marks(memory_ids)})", list(memory_ids))


def access_values(conn: Connection, memory_ids: Sequence[str]) -> list[Any]:
    """(id, strength, confidence) of those of `memory_ids` that exist: what a use of them changes."""
    return conn.execute(f"SELECT id, strength, confidence FROM memories WHERE id IN ({marks(memory_ids)})",
                        list(memory_ids)).fetchall()


def record_access(conn: Connection, changes: Iterable[tuple[str, float, float]], now: float) -> None:
    """Each (id, strength, confidence): a use at `now`, counted, with the memory's new strength and confidence."""
    conn.executemany("UPDATE memories SET access_count = access_count + 1, last_accessed_at = ?, strength = ?, "
                     "confidence = ? WHERE id = ?",
                     [(now, strength, confidence, memory_id) for memory_id, strength, confidence in changes])


def pin(conn: Connection, memory_id: str, *, pinned: bool, priority: str | None, confidence: float,
        now: float) -> None:
    """The user confirms (or unpins) a memory: pinned, its priority set when given, confidence at least
    `confidence`."""
    conn.execute("UPDATE memories SET pinned = ?, priority = COALESCE(?, priority), confidence = MAX(confidence, ?), "
                 "updated_at = ? WHERE id = ?", (int(pinned), priority, confidence, now, memory_id))


def make_global(conn: Connection, memory_id: str) -> None:
    """The memory belongs to no project; its vectors (partitioned by project) are made again by the next
    embedding pass."""
    conn.execute("UPDATE memories SET project = NULL, embedding_model = NULL, pieces = NULL WHERE id = ?",
                 (memory_id,))


def set_priority(conn: Connection, memory_id: str, priority: str, confidence: float, now: float) -> None:
    """The user sets a memory's priority; its confidence becomes at least `confidence`."""
    conn.execute("UPDATE memories SET priority = ?, confidence = MAX(confidence, ?), updated_at = ? WHERE id = ?",
                 (priority, confidence, now, memory_id))


def release(conn: Connection, memory_id: str, now: float) -> None:
    """The user releases a memory from quarantine."""
    conn.execute("UPDATE memories SET quarantined = NULL, updated_at = ? WHERE id = ?", (now, memory_id))


def set_sources(conn: Connection, changes: Iterable[tuple[str, Sequence[str]]], *,
                updated_at: float | None = None) -> None:
    """Each (id, sources): the memory's source ids replaced; `updated_at` given: it is changed then too."""
    if updated_at is None:
        conn.executemany("UPDATE memories SET source_ids = ? WHERE id = ?",
                         [(json.dumps(list(sources)), memory_id) for memory_id, sources in changes])
    else:
        conn.executemany("UPDATE memories SET source_ids = ?, updated_at = ? WHERE id = ?",
                         [(json.dumps(list(sources)), updated_at, memory_id) for memory_id, sources in changes])


def decay(conn: Connection, column: str, changes: Sequence[tuple[float, int, str, float]]) -> int:
    """The sweep's decay of `column` ('confidence' or 'strength'): each (new value, rowid, id, value read),
    compare-and-set on the value read and on being the latest, so a memory used or superseded meanwhile keeps
    its fresher value. Returns how many rows changed."""
    if column not in ("confidence", "strength"):
        raise ValueError(f"the sweep decays confidence or strength, not {column!r}")
    before = conn.total_changes
    conn.executemany(f"UPDATE memories SET {column} = ? WHERE rowid = ? AND id = ? AND {column} = ? AND "
                     "is_latest = 1", changes)  # in rowid order (the order read), so pages are visited once
    return conn.total_changes - before


def decay_both(conn: Connection, changes: Sequence[tuple[float, float, int, str, float, float]]) -> int:
    """The sweep's decay of confidence and strength in one write of each row: each (new confidence, new strength,
    rowid, id, confidence read, strength read), compare-and-set on both values read and on being the latest.
    Returns how many rows changed; a row whose either value changed meanwhile is left to `decay`, column by
    column."""
    before = conn.total_changes
    conn.executemany("UPDATE memories SET confidence = ?, strength = ? WHERE rowid = ? AND id = ? AND confidence = ? "
                     "AND strength = ? AND is_latest = 1", changes)
    return conn.total_changes - before


def set_embedded(conn: Connection, memory_id: str, model_id: str) -> None:
    """The memory's vectors are those of `model_id`."""
    conn.execute("UPDATE memories SET embedding_model = ? WHERE id = ?", (model_id, memory_id))


def unembed_all(conn: Connection) -> None:
    """The embedding model changed: every memory is embedded again, pieces included ('' marks a memory that
    has no vector by design and keeps it)."""
    conn.execute("UPDATE memories SET embedding_model = NULL, pieces = NULL WHERE embedding_model IS NOT ''")


def set_pieces(conn: Connection, memory_id: str, count: int | None) -> None:
    """How many sentence-piece vectors the memory has (None: to be looked at again by the worker)."""
    conn.execute("UPDATE memories SET pieces = ? WHERE id = ?", (count, memory_id))


def clear_pieces(conn: Connection, memory_ids: Sequence[str]) -> None:
    """The worker looks at these memories' sentence pieces and answer chunk again."""
    conn.executemany("UPDATE memories SET pieces = NULL WHERE id = ?", [(m,) for m in memory_ids])


def set_words(conn: Connection, words: Iterable[tuple[str, str]]) -> None:
    """Each (id, words): the memory's words, space-separated, counted in the word vectors."""
    conn.executemany("UPDATE memories SET words = ? WHERE id = ?", [(text, memory_id) for memory_id, text in words])


def unword_all(conn: Connection) -> None:
    """The word vectors were emptied: every memory's words are counted again."""
    conn.execute("UPDATE memories SET words = NULL WHERE words IS NOT NULL")
