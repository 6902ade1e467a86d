"""What is in the store: counts, confidence, quarantine, expiry, the last sweep, the outbox and LLM spend."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..capture.clients import NAMES
from ..db import memories, meta, observations, sessions
from .ages import age

if TYPE_CHECKING:
    from ..parts import Parts


def stats(store: Parts, *, project: str | None = ..., all_projects: bool = False) -> dict[str, Any]:
    """Counts of latest memories by tier, type and source, confidence bands, quarantined memories (kept but never
    searched or injected: `agentmem quarantine list`), sessions by the client that ran them, usage and upkeep
    state."""
    conn = store.conn
    now = time.time()
    project = store.project if project is ... else project
    counts = memories.statistics(conn, None if all_projects else [project, None], now + 7 * 86400)
    sweep = meta.get(conn, meta.LAST_SWEEP)
    day = time.strftime("%Y-%m-%d", time.gmtime(now))
    spend = conn.execute("SELECT COALESCE(SUM(input_tokens + output_tokens), 0), COUNT(*) FROM llm_ledger "
                         "WHERE day = ?", (day,)).fetchone()
    return {
        "project": None if all_projects else project,
        "all_projects": all_projects,
        **counts,
        "last_sweep": sweep,
        "observations": observations.status_counts(conn, project, all_projects=all_projects),
        "sessions": sessions.count(conn, project, all_projects=all_projects),
        "sessions_by_client": sessions.count_by_client(conn, project, all_projects=all_projects),
        "index_backlog": store.indexer.backlog(),
        "vector_backlog": memories.vector_backlog(conn),
        "embedder": store.embedder.status,
        "llm_today": {"tokens": spend[0], "calls": spend[1], "budget": store.settings.llm_daily_tokens,
                      "provider": store.settings.llm},
    }


def format_sweep(sweep: dict[str, Any] | None, now: float | None = None) -> str:
    """The last forgetting sweep in a line: when (UTC and how long ago), the strategy and what it changed."""
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
        f"sessions     {data.get('sessions', 0)}" + (" (" + ", ".join(
            f"{NAMES.get(c, c)} {n}" for c, n in data.get("sessions_by_client", {}).items()) + ")"
            if data.get("sessions_by_client") else ""),
        f"index queue  {data['index_backlog']}",
        f"vector queue {data['vector_backlog']['memories']} memories, "
        f"{data['vector_backlog']['sentence_pieces']} awaiting sentence pieces, "
        f"{data['vector_backlog']['words']} awaiting word vectors",
        f"embedder     {data['embedder']}",
        f"llm today    {data['llm_today']['tokens']} / {data['llm_today']['budget']} tokens "
        f"({data['llm_today']['provider']})",
    ]
    return "\n".join(lines)
