"""The entity graph in SQLite: memories linked to the entities they name, and to each other.

Graph retrieval: the entities a query names -> the memories that name them (rarer entities weigh
more) -> one hop through memory links (derived-from, supersedes, related) at a discount.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence

from ..db.connection import Connection
from .entities import extract_entities


def link_entities(conn: Connection, memory_id: str, entities: Iterable[tuple[str, str]]) -> None:
    """Attach entities to a memory (inside the caller's transaction)."""
    for kind, name in entities:
        conn.execute("INSERT OR IGNORE INTO entities (kind, name) VALUES (?, ?)", (kind, name))
        conn.execute(
            "INSERT OR IGNORE INTO memory_entities (memory_id, entity_id) "
            "SELECT ?, id FROM entities WHERE kind = ? AND name = ?",
            (memory_id, kind, name),
        )


def unlink_memories(conn: Connection, memory_ids: Sequence[str]) -> None:
    if not memory_ids:
        return
    marks = ",".join("?" * len(memory_ids))
    conn.execute(f"DELETE FROM memory_entities WHERE memory_id IN ({marks})", list(memory_ids))
    conn.execute(f"DELETE FROM memory_links WHERE src_id IN ({marks}) OR dst_id IN ({marks})",
                 list(memory_ids) * 2)


def add_link(conn: Connection, src_id: str, dst_id: str, relation: str, at: float | None = None) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO memory_links (src_id, dst_id, relation, created_at) VALUES (?, ?, ?, ?)",
        (src_id, dst_id, relation, time.time() if at is None else at),
    )


def search(conn: Connection, query: str, *, limit: int = 50, hop_discount: float = 0.5,
           max_fanout: int = 2000) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """Memory ids scored by the entities they share with the query, plus a reason per id.

    Filtering by project, tier and latest happens when results are joined back against SQLite.
    """
    wanted = extract_entities(query)
    if not wanted:
        return [], {}
    total = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] or 1
    scores: dict[str, float] = {}
    reasons: dict[str, str] = {}
    for kind, name in wanted:
        row = conn.execute("SELECT id FROM entities WHERE kind = ? AND name = ?", (kind, name)).fetchone()
        if row is None:
            continue
        members = [r[0] for r in conn.execute(
            "SELECT memory_id FROM memory_entities WHERE entity_id = ? LIMIT ?", (row[0], max_fanout + 1))]
        if not members or len(members) > max_fanout:
            continue  # an entity named by almost everything says nothing
        weight = math.log(1 + total / len(members))
        for memory_id in members:
            scores[memory_id] = scores.get(memory_id, 0.0) + weight
            reasons.setdefault(memory_id, f"names {name}")
    if not scores:
        return [], {}
    direct = sorted(scores.items(), key=lambda item: -item[1])[:limit]
    hop: dict[str, float] = {}
    seeds = dict(direct[:10])
    marks = ",".join("?" * len(seeds))
    for src, dst in conn.execute(
        f"SELECT src_id, dst_id FROM memory_links WHERE src_id IN ({marks}) OR dst_id IN ({marks})",
        list(seeds) * 2,
    ):
        for origin, other in ((src, dst), (dst, src)):
            if origin in seeds and other not in scores:
                hop[other] = max(hop.get(other, 0.0), seeds[origin] * hop_discount)
                reasons.setdefault(other, f"linked to a memory that {reasons[origin]}")
    ranked = sorted([*direct, *hop.items()], key=lambda item: -item[1])[:limit]
    return ranked, reasons
