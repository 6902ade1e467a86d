"""Graph retrieval over the entity graph (its tables: db/links.py): memories linked to the entities they name,
and to each other.

Graph retrieval: the entities a query names -> the memories that name them (rarer entities weigh
more) -> one hop through memory links (derived-from, supersedes, related) at a discount.
"""

from __future__ import annotations

import math

from ..db import links, memories
from ..db.connection import Connection
from .entities import extract_entities


def search(conn: Connection, query: str, *, limit: int = 50, hop_discount: float = 0.5,
           max_fanout: int = 2000) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """Memory ids scored by the entities they share with the query, plus a reason per id.

    Filtering by project, tier and latest happens when results are joined back against SQLite.
    """
    wanted = extract_entities(query)
    if not wanted:
        return [], {}
    total = memories.total(conn) or 1
    scores: dict[str, float] = {}
    reasons: dict[str, str] = {}
    for kind, name in wanted:
        entity = links.entity_id(conn, kind, name)
        if entity is None:
            continue
        members = links.entity_members(conn, entity, max_fanout + 1)
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
    for src, dst in links.links_touching(conn, list(seeds)):
        for origin, other in ((src, dst), (dst, src)):
            if origin in seeds and other not in scores:
                hop[other] = max(hop.get(other, 0.0), seeds[origin] * hop_discount)
                reasons.setdefault(other, f"linked to a memory that {reasons[origin]}")
    ranked = sorted([*direct, *hop.items()], key=lambda item: -item[1])[:limit]
    return ranked, reasons
