"""The entity graph's tables: `entities` (a kind and a name), `memory_entities` (which memories name which
entity) and `memory_links` (supersedes, conflicts_with, derived_from, related between two memories). The only
module that writes their SQL; graph retrieval (index/graph.py) reads them through it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from .connection import Connection, marks


def link_entities(conn: Connection, memory_id: str, entities: Iterable[tuple[str, str]]) -> None:
    """Attach entities (kind, name) to a memory, inside the caller's transaction."""
    for kind, name in entities:
        conn.execute("INSERT OR IGNORE INTO entities (kind, name) VALUES (?, ?)", (kind, name))
        conn.execute(
            "INSERT OR IGNORE INTO memory_entities (memory_id, entity_id) "
            "SELECT ?, id FROM entities WHERE kind = ? AND name = ?",
            (memory_id, kind, name),
        )


def unlink_memories(conn: Connection, memory_ids: Sequence[str]) -> None:
    """Drop these memories' entities and every link from or to them, inside the caller's transaction."""
    if not memory_ids:
        return
    ids = marks(memory_ids)
    conn.execute(f"DELETE FROM memory_entities WHERE memory_id IN ({ids})", list(memory_ids))
    conn.execute(f"DELETE FROM memory_links WHERE src_id IN ({ids}) OR dst_id IN ({ids})",
                 list(memory_ids) * 2)


def add_link(conn: Connection, src_id: str, dst_id: str, relation: str, at: float | None = None) -> None:
    """Link two memories (kept once per relation), inside the caller's transaction."""
    conn.execute(
        "INSERT OR IGNORE INTO memory_links (src_id, dst_id, relation, created_at) VALUES (?, ?, ?, ?)",
        (src_id, dst_id, relation, time.time() if at is None else at),
    )


def keep_derived_from(conn: Connection, memory_id: str, sources: Sequence[str]) -> None:
    """Drop the memory's derived_from links to memories other than `sources`, inside the caller's transaction."""
    kept = marks(sources) or "''"
    conn.execute(f"DELETE FROM memory_links WHERE src_id = ? AND relation = 'derived_from' AND dst_id NOT IN "
                 f"({kept})", [memory_id, *sources])


def entity_id(conn: Connection, kind: str, name: str) -> int | None:
    row = conn.execute("SELECT id FROM entities WHERE kind = ? AND name = ?", (kind, name)).fetchone()
    return None if row is None else row[0]


def entity_members(conn: Connection, entity: int, limit: int) -> list[str]:
    """Up to `limit` memories that name the entity."""
    return [row[0] for row in conn.execute("SELECT memory_id FROM memory_entities WHERE entity_id = ? LIMIT ?",
                                           (entity, limit))]


def links_touching(conn: Connection, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(src, dst) of every link from or to one of these memories."""
    return [(row[0], row[1]) for row in conn.execute(
        f"SELECT src_id, dst_id FROM memory_links WHERE src_id IN ({marks(memory_ids)}) OR dst_id IN "
        f"({marks(memory_ids)})", list(memory_ids) * 2)]


def links_within(conn: Connection, memories_sql: str, args: Sequence[Any]) -> list[Any]:
    """Every link (src_id, dst_id, relation, created_at) whose two ends are among the memory ids that
    `memories_sql` (a SELECT of ids, with `args`) selects, by src_id."""
    return conn.execute(f"SELECT src_id, dst_id, relation, created_at FROM memory_links WHERE src_id IN "
                        f"({memories_sql}) AND dst_id IN ({memories_sql}) ORDER BY src_id", [*args, *args]).fetchall()
