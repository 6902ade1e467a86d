"""What the viewer lists and shows (`agentmem ui`: memories, their versions, links and entities, sessions and their
events, the audit log, the live feed, the lifecycle charts' sample), as reads awaited on a read-only aiosqlite
connection (viewer/state.py opens it), so that the async request handlers never hold the event loop while SQLite
reads. The viewer's searches, briefings, sweeps and checks go through the library instead, on a worker thread;
these reads only list what is stored."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the connection is the caller's: this module awaits its reads and imports no aiosqlite
    import aiosqlite

MEMORY_LIST_COLUMNS = ("id, project, tier, type, title, source, confidence, priority, pinned, version, is_latest, "
                       "created_at, access_count, quarantined")


def _scope(project: str | None, everywhere: bool) -> tuple[str, list[Any]]:
    """Memories of `project` and the global ones, or of every project when `everywhere`."""
    return ("1 = 1", []) if everywhere else ("(project IS ? OR project IS NULL)", [project])


async def projects(db: aiosqlite.Connection) -> list[str]:
    """Every project named by a session or a memory. The memories' are found by skipping from one project to the
    next in the `memories_latest` index (a lookup per project, not a read of every memory's entry)."""
    rows = await db.execute_fetchall(
        "WITH RECURSIVE named(project) AS (SELECT MIN(project) FROM memories WHERE project IS NOT NULL UNION ALL "
        "SELECT (SELECT MIN(project) FROM memories WHERE project > named.project) FROM named "
        "WHERE named.project IS NOT NULL) "
        "SELECT project FROM sessions WHERE project IS NOT NULL UNION "
        "SELECT project FROM named WHERE project IS NOT NULL ORDER BY 1")
    return [row[0] for row in rows]


@dataclass(frozen=True)
class MemoryListing:
    """Which memories a list of the viewer shows: of `project` (and the global ones) or `everywhere`; of `types` and
    `tiers` (empty: any); superseded versions too with `history`; only the quarantined ones with `quarantined`."""
    project: str | None
    everywhere: bool
    types: Sequence[str] = ()
    tiers: Sequence[str] = ()
    history: bool = False
    quarantined: bool = False


async def memory_page(db: aiosqlite.Connection, listing: MemoryListing, *, limit: int, offset: int,
                      ) -> tuple[list[dict[str, Any]], int]:
    """One page of the memories `listing` names, the latest stored first, and how many match in all."""
    where, args = _scope(listing.project, listing.everywhere)
    clauses = [where]
    if not listing.history:
        clauses.append("is_latest = 1")
    if listing.quarantined:
        clauses.append("quarantined IS NOT NULL")
    for column, values in (("type", listing.types), ("tier", listing.tiers)):
        if values:
            clauses.append(f"{column} IN ({','.join('?' * len(values))})")
            args = [*args, *values]
    clause = " AND ".join(clauses)
    total = (await db.execute_fetchall(f"SELECT COUNT(*) FROM memories WHERE {clause}", args))[0][0]
    # latest stored first (rowid order: no sort, so a page costs what it reads, not the whole table)
    rows = await db.execute_fetchall(f"SELECT {MEMORY_LIST_COLUMNS} FROM memories WHERE {clause} "
                                     "ORDER BY rowid DESC LIMIT ? OFFSET ?", [*args, limit, offset])
    return [dict(row) for row in rows], total


async def memory(db: aiosqlite.Connection, memory_id: str) -> dict[str, Any] | None:
    rows = await db.execute_fetchall("SELECT * FROM memories WHERE id = ?", (memory_id,))
    return _decoded(rows[0]) if rows else None


def _decoded(row: Any) -> dict[str, Any]:
    data = dict(row)
    for name in ("tags", "files", "source_ids"):
        if name in data:
            data[name] = json.loads(data[name] or "[]")
    return data


async def versions(db: aiosqlite.Connection, root_id: str) -> list[dict[str, Any]]:
    rows = await db.execute_fetchall("SELECT * FROM memories WHERE root_id = ? ORDER BY version", (root_id,))
    return [_decoded(row) for row in rows]


async def links(db: aiosqlite.Connection, memory_id: str) -> list[dict[str, Any]]:
    """The memory's links both ways, with the other memory's title (None when it is gone)."""
    rows = await db.execute_fetchall(
        "SELECT l.relation, 'to' AS direction, l.dst_id AS other, m.title FROM memory_links l "
        "LEFT JOIN memories m ON m.id = l.dst_id WHERE l.src_id = ? UNION ALL "
        "SELECT l.relation, 'from', l.src_id, m.title FROM memory_links l "
        "LEFT JOIN memories m ON m.id = l.src_id WHERE l.dst_id = ? LIMIT 200", (memory_id, memory_id))
    return [dict(row) for row in rows]


async def entities(db: aiosqlite.Connection, memory_id: str) -> list[dict[str, Any]]:
    rows = await db.execute_fetchall(
        "SELECT e.kind, e.name FROM memory_entities me JOIN entities e ON e.id = me.entity_id "
        "WHERE me.memory_id = ? ORDER BY e.kind, e.name LIMIT 200", (memory_id,))
    return [dict(row) for row in rows]


async def audit_rows(db: aiosqlite.Connection, *, memory_ids: Sequence[str] = (), limit: int = 50,
                     offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """Audit rows, newest first: of these memories, or all of them."""
    where, args = "1 = 1", []
    if memory_ids:
        where, args = f"memory_id IN ({','.join('?' * len(memory_ids))})", list(memory_ids)
    total = (await db.execute_fetchall(f"SELECT COUNT(*) FROM audit WHERE {where}", args))[0][0]
    rows = await db.execute_fetchall(f"SELECT seq, at, action, memory_id, project, detail, scheme FROM audit "
                                     f"WHERE {where} ORDER BY seq DESC LIMIT ? OFFSET ?", [*args, limit, offset])
    return [dict(row) for row in rows], total


async def session_page(db: aiosqlite.Connection, *, project: str | None, everywhere: bool, limit: int,
                       offset: int) -> tuple[list[dict[str, Any]], int]:
    """Sessions, latest activity first, with how much each captured."""
    where, args = ("1 = 1", []) if everywhere else ("s.project IS ?", [project])
    total = (await db.execute_fetchall(f"SELECT COUNT(*) FROM sessions s WHERE {where}", args))[0][0]
    rows = await db.execute_fetchall(
        f"SELECT s.*, (SELECT COUNT(*) FROM observations o WHERE o.session_id = s.id) AS events, "
        f"(SELECT COUNT(*) FROM observations o WHERE o.session_id = s.id AND o.event = 'prompt') AS prompts, "
        f"m.title AS summary_title FROM sessions s LEFT JOIN memories m ON m.id = s.summary_memory_id "
        f"WHERE {where} ORDER BY s.last_event_at DESC LIMIT ? OFFSET ?", [*args, limit, offset])
    return [dict(row) for row in rows], total


async def session(db: aiosqlite.Connection, session_id: str) -> dict[str, Any] | None:
    rows = await db.execute_fetchall("SELECT * FROM sessions WHERE id = ?", (session_id,))
    return dict(rows[0]) if rows else None


async def observations(db: aiosqlite.Connection, session_id: str, *, after: int = 0, limit: int = 500,
                       ) -> list[dict[str, Any]]:
    """A session's captured events in order, after observation id `after`."""
    rows = await db.execute_fetchall(
        "SELECT id, event, tool, prompt, input, files, count, status, kind, title, facts, created_at "
        "FROM observations WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?", (session_id, after, limit))
    return [_decoded(row) for row in rows]


async def session_memories(db: aiosqlite.Connection, session_id: str) -> list[dict[str, Any]]:
    """What was made of a session: its latest memories (summary, compressed events), in time order."""
    rows = await db.execute_fetchall(
        f"SELECT {MEMORY_LIST_COLUMNS}, content FROM memories WHERE session_id = ? AND is_latest = 1 "
        "ORDER BY created_at LIMIT 500", (session_id,))
    return [dict(row) for row in rows]


async def latest_ids(db: aiosqlite.Connection) -> dict[str, int]:
    """Where the live feed starts: the newest observation id and memory rowid."""
    rows = await db.execute_fetchall("SELECT (SELECT COALESCE(MAX(id), 0) FROM observations), "
                                     "(SELECT COALESCE(MAX(rowid), 0) FROM memories)")
    return {"observation": rows[0][0], "memory": rows[0][1]}


async def changes(db: aiosqlite.Connection, *, after_observation: int, after_memory: int,
                  session_id: str | None = None, limit: int = 50) -> dict[str, Any]:
    """Observations and memories stored after the marks (ids, rowids: for the live feed), oldest first; each
    memory's `mark` is its rowid."""
    where, args = "id > ?", [after_observation]
    if session_id:
        where, args = "id > ? AND session_id = ?", [after_observation, session_id]
    obs = await db.execute_fetchall(f"SELECT id, session_id, project, client, event, tool, prompt, title, status, "
                                    f"created_at "
                                    f"FROM observations WHERE {where} ORDER BY id LIMIT ?", [*args, limit])
    mems = await db.execute_fetchall(f"SELECT rowid AS mark, {MEMORY_LIST_COLUMNS} FROM memories WHERE rowid > ? "
                                     "ORDER BY rowid LIMIT ?", (after_memory, limit))
    return {"observations": [dict(r) for r in obs], "memories": [dict(r) for r in mems]}


async def lifecycle_sample(db: aiosqlite.Connection, now: float, sample: int, week: float,
                           ) -> tuple[list[Any], int, int | None]:
    """The latest memories for the lifecycle charts, counted by (confidence bin, retention bin now, tier, creation
    `week` number): bins 0..9 of 0..1, retention by the SQL function `retention(days, strength)` that the
    connection has registered (`lifecycle.retention.retention`). Over `sample` rows they are drawn from every k-th
    rowid (point lookups, not a scan of the table). Returns the counted rows, k, and (when k > 1) how many latest
    memories there are in all."""
    low, high = (await db.execute_fetchall("SELECT COALESCE(MIN(rowid), 0), COALESCE(MAX(rowid), -1) FROM memories"))[0]
    step = max(1, -(-(high - low + 1) // sample))
    rows = await db.execute_fetchall(
        "WITH RECURSIVE picked(r) AS (SELECT ? UNION ALL SELECT r + ? FROM picked WHERE r + ? <= ?) "
        "SELECT MIN(CAST(m.confidence * 10 AS INTEGER), 9), MIN(CAST(retention((? - COALESCE(m.last_accessed_at, "
        "m.created_at)) / 86400.0, m.strength) * 10 AS INTEGER), 9), m.tier, CAST(m.created_at / ? AS INTEGER), "
        "COUNT(*) FROM picked JOIN memories m ON m.rowid = picked.r WHERE m.is_latest = 1 GROUP BY 1, 2, 3, 4",
        (low, step, step, high, now, week))
    sampled = None
    if step > 1:
        sampled = (await db.execute_fetchall("SELECT COUNT(*) FROM memories WHERE is_latest = 1"))[0][0]
    return list(rows), step, sampled
