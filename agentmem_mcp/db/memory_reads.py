"""The named reads of the `memories` table made by what maintains memories, besides those of the read path
(db/memories.py: search, the briefing, prompt recall and stats, with `MemoryFilter` and the table's writes): the
BM25 indexer's pages and a memory's neighbours in its session; what saving, confirming, consolidating and
summarising read before they write; the vector backfill's queues; what forgetting and the sweep select; the
commands' reads (list, reindex and doctor, purge, export and import); team memory's sharing; the worker's pruning.
Each is the SQL its caller ran before, unchanged. (The viewer's reads, awaited, are db/browse.py's.)"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .connection import Connection, marks

if TYPE_CHECKING:
    from .memories import MemoryFilter

# -- the BM25 indexer and a memory's neighbours ---------------------------------------------------------------


def after_rowid(conn: Connection, columns: str, after: int, limit: int) -> list[Any]:
    """Up to `limit` rows (rowid, then `columns`) past rowid `after`, in rowid order: a page of every memory."""
    return conn.execute(f"SELECT rowid, {columns} FROM memories WHERE rowid > ? ORDER BY rowid LIMIT ?",
                        (after, limit)).fetchall()


def earlier_in_session(conn: Connection, memory_id: str, limit: int) -> list[str]:
    """The contents of up to `limit` latest memories of this memory's tier and type saved before it in its
    session, nearest first."""
    return [r[0] for r in conn.execute(
        "SELECT m.content FROM memories me JOIN memories m ON m.session_id = me.session_id "
        "AND (m.created_at < me.created_at OR (m.created_at = me.created_at AND m.rowid < me.rowid)) "
        "WHERE me.id = ? AND m.tier = me.tier AND m.type = me.type AND m.is_latest = 1 "
        "ORDER BY m.created_at DESC, m.rowid DESC LIMIT ?", (memory_id, limit))]


def session_places(conn: Connection, memory_ids: Sequence[str], tier: str) -> list[Any]:
    """(session_id, created_at, rowid, type) of those of these memories that are of `tier` and in a session."""
    return conn.execute(
        f"SELECT session_id, created_at, rowid, type FROM memories WHERE id IN ({marks(memory_ids)}) "
        "AND tier = ? AND session_id IS NOT NULL", [*memory_ids, tier]).fetchall()


def later_in_session(conn: Connection, session_id: str, created_at: float, rowid: int, tier: str, type_: str,
                     limit: int) -> list[str]:
    """The ids of up to `limit` latest memories of `tier` and `type_` saved after (created_at, rowid) in the
    session, nearest first."""
    return [r[0] for r in conn.execute(
        "SELECT id FROM memories WHERE session_id = ? AND (created_at > ? OR (created_at = ? AND rowid > ?)) "
        "AND tier = ? AND type = ? AND is_latest = 1 ORDER BY created_at, rowid LIMIT ?",
        (session_id, created_at, created_at, rowid, tier, type_, limit))]


# -- saving, confirming, consolidating, summarising ------------------------------------------------------------


def row_by_id(conn: Connection, memory_id: str, columns: str = "*") -> Any:
    """The row (`columns`) of the memory, or None."""
    return conn.execute(f"SELECT {columns} FROM memories WHERE id = ?", (memory_id,)).fetchone()


def latest_by_key(conn: Connection, key: str, project: str | None, columns: str = "*") -> Any:
    """The row (`columns`) of the latest memory with this key in `project` (None: a global one), or None."""
    return conn.execute(f"SELECT {columns} FROM memories WHERE key = ? AND project IS ? AND is_latest = 1",
                        (key, project)).fetchone()


def latest_with_hash(conn: Connection, digest: str, project: str | None) -> Any:
    """(id, version) of the latest memory in `project` with this content hash, or None: what a save is a
    duplicate of."""
    return conn.execute(
        "SELECT id, version FROM memories INDEXED BY memories_hash "
        "WHERE content_hash = ? AND is_latest = 1 AND project IS ?", (digest, project)).fetchone()


def latest_unquarantined(conn: Connection, memory_ids: Sequence[str]) -> list[Any]:
    """The rows (all columns) of those of these memories that are latest versions and not quarantined."""
    return conn.execute(f"SELECT * FROM memories WHERE id IN ({marks(memory_ids)}) AND is_latest = 1 "
                        "AND quarantined IS NULL", list(memory_ids)).fetchall()


def quarantined(conn: Connection, project: str | None, every_project: bool) -> list[Any]:
    """The rows (all columns) of the quarantined memories of `project` and the global ones (or of every
    project), newest first."""
    where, args = "quarantined IS NOT NULL", []
    if not every_project:
        where += " AND (project IS ? OR project IS NULL)"
        args.append(project)
    return conn.execute(f"SELECT * FROM memories WHERE {where} ORDER BY created_at DESC", args).fetchall()


def consolidation_keyed(conn: Connection, project: str | None) -> list[Any]:
    """The rows (all columns) of consolidation's keyed memories in `project` (every version)."""
    return conn.execute(
        "SELECT * FROM memories WHERE project IS ? AND source = 'consolidation' AND key IS NOT NULL",
        (project,)).fetchall()


def knowledge_titles(conn: Connection, session_id: str, limit: int) -> list[str]:
    """The titles of up to `limit` latest semantic and procedural memories saved in the session, other than
    consolidation's and the instructions."""
    return [r[0] for r in conn.execute(
        "SELECT title FROM memories WHERE session_id = ? AND tier IN ('semantic', 'procedural') AND source != "
        "'consolidation' AND (key IS NULL OR key NOT LIKE 'instruction:%') AND is_latest = 1 LIMIT ?",
        (session_id, limit))]


def latest_summaries(conn: Connection, project: str | None, limit: int) -> list[Any]:
    """(id, title, content) of the `limit` newest session summaries of `project` (latest versions)."""
    return conn.execute(
        "SELECT id, title, content FROM memories WHERE project IS ? AND tier = 'episodic' AND type = 'summary' "
        "AND is_latest = 1 ORDER BY created_at DESC LIMIT ?", (project, limit)).fetchall()


def merged_titles(conn: Connection, project: str | None) -> list[str]:
    """The titles of the latest facts and workflows the summaries' merge made in `project`."""
    return [r[0] for r in conn.execute(
        "SELECT title FROM memories WHERE project IS ? AND is_latest = 1 AND (key LIKE 'merge:%' OR key LIKE "
        "'workflow:llm:%')", (project,))]


def recent_known(conn: Connection, project: str | None, limit: int) -> list[Any]:
    """(id, title, content) of the `limit` newest latest memories of `project` outside the working tier."""
    return conn.execute("SELECT id, title, content FROM memories WHERE project IS ? AND is_latest = 1 AND "
                        "tier != 'working' ORDER BY created_at DESC LIMIT ?", (project, limit)).fetchall()


# -- the vector backfill (index/backfill.py) --------------------------------------------------------------------


def unembedded_rows(conn: Connection, limit: int) -> list[Any]:
    """Up to `limit` memories without vectors (id, project, is_latest, title, content, tags, files)."""
    return conn.execute("SELECT id, project, is_latest, title, content, tags, files FROM memories "
                        "INDEXED BY memories_unembedded WHERE embedding_model IS NULL LIMIT ?", (limit,)).fetchall()


def exists(conn: Connection, memory_id: str) -> bool:
    """Whether the memory is stored."""
    return conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone() is not None


def pieces_todo(conn: Connection, model_id: str, limit: int) -> list[Any]:
    """Up to `limit` memories with vectors of `model_id` whose sentence pieces and answer chunk have not been
    looked at (id, title, content, tags, files, tier, type, session_id, created_at, source)."""
    return conn.execute("SELECT id, title, content, tags, files, tier, type, session_id, created_at, source "
                        "FROM memories INDEXED BY memories_pieces_todo "
                        "WHERE embedding_model = ? AND pieces IS NULL LIMIT ?", (model_id, limit)).fetchall()


def pieces_still_todo(conn: Connection, memory_id: str, model_id: str) -> Any:
    """(project, is_latest) of the memory if it still has vectors of `model_id` and no pieces looked at; None
    otherwise (re-embedded or forgotten meanwhile)."""
    return conn.execute("SELECT project, is_latest FROM memories WHERE id = ? AND embedding_model = ? "
                        "AND pieces IS NULL", (memory_id, model_id)).fetchone()


def words_todo(conn: Connection, model_id: str, limit: int) -> list[Any]:
    """Up to `limit` memories with vectors of `model_id` whose words have not been counted (id, title, content)."""
    return conn.execute("SELECT id, title, content FROM memories INDEXED BY memories_words_todo "
                        "WHERE embedding_model = ? AND words IS NULL LIMIT ?", (model_id, limit)).fetchall()


def words_still_todo(conn: Connection, memory_ids: Sequence[str], model_id: str) -> list[str]:
    """Those of these memories that still have vectors of `model_id` and words not counted."""
    return [row[0] for row in conn.execute(
        f"SELECT id FROM memories WHERE id IN ({marks(memory_ids)}) AND embedding_model = ? AND words IS NULL",
        [*memory_ids, model_id])]


# -- forgetting ----------------------------------------------------------------------------------------------

# what forgetting a memory needs of its row: the audit's detail, and whether only the user may forget it
FORGOTTEN = "id, title, type, version, project, root_id, source, pinned, priority"
PROTECTED = "(source = 'user' OR pinned = 1 OR priority = 'P0')"  # lifecycle.forget.protected, in SQL


def protected_among(conn: Connection, memory_ids: Sequence[str]) -> list[str]:
    """The ids among `memory_ids` of memories only the user may forget or replace (their own, pinned or P0)."""
    ids = list(dict.fromkeys(memory_ids))
    found: list[str] = []
    for start in range(0, len(ids), 500):
        batch = ids[start:start + 500]
        found += [row[0] for row in conn.execute(
            f"SELECT id FROM memories WHERE id IN ({marks(batch)}) AND {PROTECTED}", batch)]
    return found


def in_chains(conn: Connection, root_ids: Sequence[str]) -> list[Any]:
    """The rows (`FORGOTTEN`) of every version of these chains (their root ids)."""
    return conn.execute(f"SELECT {FORGOTTEN} FROM memories WHERE root_id IN ({marks(root_ids)})",
                        list(root_ids)).fetchall()


def of_session(conn: Connection, session_id: str, columns: str) -> list[Any]:
    """The rows (`columns`) of the memories saved in the session (every version)."""
    return conn.execute(f"SELECT {columns} FROM memories WHERE session_id = ?", (session_id,)).fetchall()


def admitted(conn: Connection, chosen: MemoryFilter, columns: str) -> list[Any]:
    """The rows (`columns`) of the memories `chosen` admits, in no particular order."""
    where, args = chosen.where()
    return conn.execute(f"SELECT {columns} FROM memories WHERE {where}", args).fetchall()


def citing(conn: Connection, sources: Sequence[str]) -> list[str]:
    """The ids of the memories that name one of these sources ("obs:<id>" or a memory id) in their source ids."""
    return [row[0] for row in conn.execute(
        "SELECT DISTINCT m.id FROM memories m, json_each(m.source_ids) s WHERE s.value IN (SELECT value FROM "
        "json_each(?))", (json.dumps(list(sources)),))]


def session_projects(conn: Connection, session_id: str) -> set[str | None]:
    """The projects of the session's records: its row, its observations and its memories."""
    return {row[0] for row in conn.execute(
        "SELECT project FROM sessions WHERE id = ? UNION SELECT project FROM observations WHERE session_id = ? "
        "UNION SELECT project FROM memories WHERE session_id = ?", (session_id, session_id, session_id))}


# -- the forgetting sweep --------------------------------------------------------------------------------------


def sweep_rows(conn: Connection) -> Any:
    """A cursor over every latest memory as plain tuples (no row factory: a million rows are read), for the sweep
    to fetch a page at a time: id, importance, priority ('P0' when pinned), confidence, created_at,
    last_accessed_at, access_count, tier, forget_after (`forgetting.MemoryFacts`' fields, in order), then
    strength, title, rowid."""
    cursor = conn.cursor()
    cursor.row_factory = None
    cursor.execute(
        "SELECT id, importance, CASE WHEN pinned THEN 'P0' ELSE priority END, confidence, created_at, "
        "last_accessed_at, access_count, tier, forget_after, strength, title, rowid FROM memories WHERE is_latest = 1")
    return cursor


def count_latest(conn: Connection) -> int:
    """How many memories are latest versions."""
    return conn.execute("SELECT COUNT(*) FROM memories WHERE is_latest = 1").fetchone()[0]


def latest_among(conn: Connection, memory_ids: Sequence[str], columns: str) -> list[Any]:
    """The rows (`columns`) of those of these memories that are latest versions."""
    return conn.execute(f"SELECT {columns} FROM memories WHERE id IN ({marks(memory_ids)}) AND is_latest = 1",
                        list(memory_ids)).fetchall()


def superseded_before(conn: Connection, cutoff: float, limit: int) -> list[Any]:
    """The rows (`FORGOTTEN`) of up to `limit` superseded versions last changed (superseded) before `cutoff`,
    oldest first."""
    return conn.execute(f"SELECT {FORGOTTEN} FROM memories WHERE is_latest = 0 AND updated_at < ? "
                        "ORDER BY updated_at LIMIT ?", (cutoff, limit)).fetchall()


# -- the commands: list, reindex and doctor, purge, export and import -------------------------------------------


def page(conn: Connection, chosen: MemoryFilter, columns: str, limit: int, offset: int) -> tuple[list[Any], int]:
    """One page of the rows (`columns`) that `chosen` admits, newest first, and how many it admits in all."""
    where, args = chosen.where()
    count = conn.execute(f"SELECT COUNT(*) FROM memories WHERE {where}", args).fetchone()[0]
    rows = conn.execute(f"SELECT {columns} FROM memories WHERE {where} ORDER BY created_at DESC, id "
                        f"LIMIT ? OFFSET ?", [*args, limit, offset]).fetchall()
    return rows, count


def chains(conn: Connection, chosen: MemoryFilter) -> Iterable[Any]:
    """Every row (all columns) that `chosen` admits, chain by chain, oldest version first."""
    where, args = chosen.where()
    return conn.execute(f"SELECT * FROM memories WHERE {where} ORDER BY root_id, version", args)


def ids_query(chosen: MemoryFilter) -> tuple[str, list[Any]]:
    """A query of the ids of the memories `chosen` admits, and its arguments, for another table's read to
    select by (`IN (...)`)."""
    where, args = chosen.where()
    return f"SELECT id FROM memories WHERE {where}", args


def projects_of(conn: Connection, memory_ids: Sequence[str]) -> dict[str, str | None]:
    """memory id -> its project (None: global), for the ids that exist."""
    found: dict[str, str | None] = {}
    ids = list(memory_ids)
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        found.update((row[0], row[1]) for row in conn.execute(
            f"SELECT id, project FROM memories WHERE id IN ({marks(chunk)})", chunk))
    return found


def all_ids(conn: Connection) -> set[str]:
    """The id of every stored memory (every version)."""
    return {row[0] for row in conn.execute("SELECT id FROM memories")}


def count_in_project(conn: Connection, project: str | None) -> int:
    """How many memories (every version) belong to `project` (None: the global ones)."""
    return conn.execute("SELECT COUNT(*) FROM memories WHERE project IS ?", (project,)).fetchone()[0]


def roots_in_project(conn: Connection, project: str | None, limit: int) -> list[str]:
    """Up to `limit` version chains (their root ids) with a memory in `project`."""
    return [row[0] for row in conn.execute(
        "SELECT DISTINCT root_id FROM memories WHERE project IS ? LIMIT ?", (project, limit))]


def count_existing(conn: Connection, memory_ids: Sequence[str | None]) -> int:
    """How many of these ids are stored memories."""
    return conn.execute(f"SELECT COUNT(*) FROM memories WHERE id IN ({marks(memory_ids)})",
                        list(memory_ids)).fetchone()[0]


def holds_copy(conn: Connection, memory_id: str, digest: str, project: str | None, version: int,
               root_id: str | None) -> bool:
    """Whether the memory is stored already: its id, or its content (hash) as the same version of the same chain
    in the same project."""
    return conn.execute(
        "SELECT 1 FROM memories WHERE id = ? OR (content_hash = ? AND project IS ? AND version = ? AND root_id = ?)",
        (memory_id, digest, project, version, root_id)).fetchone() is not None


# -- team memory's sharing (team_shared, which chains this machine shared, is team memory's table: agentmem_mcp/team/)


def newest_of_chain(conn: Connection, root_id: str) -> Any:
    """The row (all columns) of the chain's latest version (its newest when none is the latest), or None."""
    return conn.execute("SELECT * FROM memories WHERE root_id = ? ORDER BY is_latest DESC, version DESC "
                        "LIMIT 1", (root_id,)).fetchone()


def latest_of_chain(conn: Connection, root_id: str) -> Any:
    """The row (all columns) of the chain's latest version, or None."""
    return conn.execute("SELECT * FROM memories WHERE root_id = ? AND is_latest = 1", (root_id,)).fetchone()


def unshared_knowledge(conn: Connection, tiers: Sequence[str], limit: int) -> list[Any]:
    """(id, root_id) of up to `limit` latest, unquarantined memories of these tiers in a project whose chain is
    not shared yet."""
    return conn.execute(
        f"SELECT id, root_id FROM memories WHERE is_latest = 1 AND quarantined IS NULL "
        f"AND tier IN ({marks(tiers)}) AND project IS NOT NULL AND root_id NOT IN "
        f"(SELECT root_id FROM team_shared) LIMIT ?", [*tiers, limit]).fetchall()


def shared_behind(conn: Connection) -> list[Any]:
    """(id, root_id, quarantined, tier) of the latest versions of shared chains that are not the version shared."""
    return conn.execute(
        "SELECT m.id, m.root_id, m.quarantined, m.tier FROM team_shared s JOIN memories m "
        "ON m.root_id = s.root_id AND m.is_latest = 1 WHERE m.id != s.memory_id").fetchall()


def chain_held(root_column: str) -> str:
    """An SQL condition, for another table's read: the chain whose root id is `root_column` (a column of that read)
    has a memory here."""
    return f"EXISTS (SELECT 1 FROM memories m WHERE m.root_id = {root_column})"


def latest_shared_as(conn: Connection, gid: str) -> Any:
    """The row (all columns) of the latest version of the chain shared as `gid`, or None."""
    return conn.execute("SELECT m.* FROM team_shared s JOIN memories m ON m.root_id = s.root_id AND "
                        "m.is_latest = 1 WHERE s.gid = ?", (gid,)).fetchone()


def projects_worked_on(conn: Connection) -> set[str]:
    """The projects named by a session or a memory."""
    return {row[0] for row in conn.execute(
        "SELECT DISTINCT project FROM sessions WHERE project IS NOT NULL UNION "
        "SELECT DISTINCT project FROM memories WHERE project IS NOT NULL")}


# -- the worker's pruning of observations ----------------------------------------------------------------------


def observations_named(conn: Connection) -> set[str]:
    """The observations ("obs:<id>") that a memory outside the working tier names as a source."""
    return {r[0] for r in conn.execute("SELECT DISTINCT j.value FROM memories m, json_each(m.source_ids) j "
                                       "WHERE m.tier != 'working' AND j.value LIKE 'obs:%'")}


def working_naming(conn: Connection, names: Sequence[str]) -> list[Any]:
    """(id, project, type, version, source_ids) of the working memories that name one of these sources."""
    return conn.execute(
        f"SELECT DISTINCT m.id, m.project, m.type, m.version, m.source_ids FROM memories m, "
        f"json_each(m.source_ids) j WHERE m.tier = 'working' AND j.value IN ({marks(names)})",
        list(names)).fetchall()
