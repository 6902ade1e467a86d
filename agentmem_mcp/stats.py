"""What is in the store: counts, confidence, quarantine, expiry, the last sweep, the outbox and LLM spend."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .db import meta, observations, sessions

if TYPE_CHECKING:
    from .parts import Parts


def _grouped(conn: Any, column: str, where: str, args: list[Any]) -> dict[str, int]:
    return {row[0]: row[1] for row in conn.execute(
        f"SELECT {column}, COUNT(*) FROM memories WHERE {where} GROUP BY {column} ORDER BY {column}", args)}


def stats(store: Parts, *, project: str | None = ..., all_projects: bool = False) -> dict[str, Any]:
    """Counts of latest memories by tier, type and source, confidence bands, quarantined memories (kept but never
    searched or injected: `agentmem quarantine list`), usage and upkeep state."""
    conn = store.conn
    now = time.time()
    project = store.project if project is ... else project
    where, args = "is_latest = 1", []
    if not all_projects:
        where += " AND (project IS ? OR project IS NULL)"
        args.append(project)
    total, never, superseded = conn.execute(
        f"SELECT COUNT(*), SUM(access_count = 0), "
        f"(SELECT COUNT(*) FROM memories WHERE is_latest = 0 AND (project IS ? OR project IS NULL OR ?)) "
        f"FROM memories WHERE {where}", [project, all_projects, *args]).fetchone()
    bands = conn.execute(
        f"SELECT SUM(confidence >= 0.8), SUM(confidence >= 0.4 AND confidence < 0.8), SUM(confidence < 0.4) "
        f"FROM memories WHERE {where}", args).fetchone()
    expiring = [dict(row) for row in conn.execute(
        f"SELECT id, title, forget_after FROM memories WHERE {where} AND forget_after IS NOT NULL "
        f"AND forget_after <= ? ORDER BY forget_after LIMIT 20", [*args, now + 7 * 86400])]
    sweep = meta.get(conn, meta.LAST_SWEEP)
    day = time.strftime("%Y-%m-%d", time.gmtime(now))
    spend = conn.execute("SELECT COALESCE(SUM(input_tokens + output_tokens), 0), COUNT(*) FROM llm_ledger "
                         "WHERE day = ?", (day,)).fetchone()
    return {
        "project": None if all_projects else project,
        "all_projects": all_projects,
        "memories": total or 0,
        "superseded_versions": superseded or 0,
        "by_tier": _grouped(conn, "tier", where, args),
        "by_type": _grouped(conn, "type", where, args),
        "by_source": _grouped(conn, "source", where, args),
        "confidence": {">=0.8": bands[0] or 0, "0.4-0.8": bands[1] or 0, "<0.4": bands[2] or 0},
        "quarantined": conn.execute(f"SELECT COUNT(*) FROM memories WHERE {where} AND quarantined IS NOT NULL",
                                    args).fetchone()[0],
        "never_accessed": never or 0,
        "expiring_within_7_days": expiring,
        "last_sweep": sweep,
        "observations": observations.status_counts(conn, project, all_projects=all_projects),
        "sessions": sessions.count(conn, project, all_projects=all_projects),
        "index_backlog": store.indexer.backlog(),
        # what the background worker has still to embed: whole memories, then their sentence pieces and words
        "vector_backlog": {
            "memories": conn.execute("SELECT COUNT(*) FROM memories WHERE embedding_model IS NULL").fetchone()[0],
            "sentence_pieces": conn.execute(
                "SELECT COUNT(*) FROM memories INDEXED BY memories_pieces_todo WHERE pieces IS NULL "
                "AND embedding_model IS NOT NULL AND embedding_model != ''").fetchone()[0],
            "words": conn.execute(
                "SELECT COUNT(*) FROM memories INDEXED BY memories_words_todo WHERE words IS NULL "
                "AND embedding_model IS NOT NULL AND embedding_model != ''").fetchone()[0]},
        "embedder": store.embedder.status,
        "llm_today": {"tokens": spend[0], "calls": spend[1], "budget": store.settings.llm_daily_tokens,
                      "provider": store.settings.llm},
    }


def format_sweep(sweep: dict[str, Any] | None, now: float | None = None) -> str:
    """The last forgetting sweep in a line: when (UTC and how long ago), the strategy and what it changed."""
    from .cli_views import age

    if not sweep:
        return "never"
    at = sweep.get("at")
    when = "at an unknown time"
    if isinstance(at, (int, float)):
        now = time.time() if now is None else now
        when = f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(at))} ({age(max(now - at, 0.0))})"
    removed = sum(int(sweep.get(key) or 0) for key in ("deleted", "expired", "low_confidence"))
    return (f"{when}, {sweep.get('strategy', '?')}: removed {removed} of {sweep.get('scored', 0)} memories, "
            f"decayed {sweep.get('decayed', 0)}, pruned {sweep.get('pruned_versions', 0)} old versions")


def format_stats(data: dict[str, Any]) -> str:
    """The human-readable form of `stats()`."""
    def line(label: str, mapping: dict[str, Any]) -> str:
        return f"{label:12} " + ("  ".join(f"{k} {v}" for k, v in mapping.items()) or "-")

    scope = "all projects" if data.get("all_projects", True) else "none (global memories only)"
    lines = [
        f"project      {data['project'] or scope}",
        f"memories     {data['memories']} latest, {data['superseded_versions']} superseded versions",
        line("by tier", data["by_tier"]),
        line("by type", data["by_type"]),
        line("by source", data["by_source"]),
        line("confidence", data["confidence"]),
        f"quarantined  {data['quarantined']}" + ("  (agentmem quarantine list)" if data["quarantined"] else ""),
        f"never used   {data['never_accessed']}",
        f"expiring 7d  {len(data['expiring_within_7_days'])}",
        f"last sweep   {format_sweep(data['last_sweep'])}",
        line("observations", data["observations"]),
        f"index queue  {data['index_backlog']}",
        f"vector queue {data['vector_backlog']['memories']} memories, "
        f"{data['vector_backlog']['sentence_pieces']} awaiting sentence pieces, "
        f"{data['vector_backlog']['words']} awaiting word vectors",
        f"embedder     {data['embedder']}",
        f"llm today    {data['llm_today']['tokens']} / {data['llm_today']['budget']} tokens "
        f"({data['llm_today']['provider']})",
    ]
    return "\n".join(lines)
