"""The `sessions` table: one row per client session, touched by every hook event; the summariser's progress
through it. The only module that writes this table's SQL.

The hook process imports this module: it imports nothing the hook does not already (no `typing`).
"""

from __future__ import annotations

from .connection import Connection

TYPE_CHECKING = False  # importing typing costs each hook process ~5 ms
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


def touch(conn: Connection, *, session_id: str, project: str | None, client: str, cwd: str | None, now: float,
          ended: bool, needs_summary: bool) -> None:
    """An event of the session at `now`: the row made on its first event, then its last event time moved on;
    `ended` ends it, `needs_summary` asks the worker for its summary; its project, once known, stays."""
    conn.execute(
        "INSERT INTO sessions (id, project, client, cwd, started_at, last_event_at, ended_at, status, "
        "needs_summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
        "last_event_at = excluded.last_event_at, ended_at = COALESCE(excluded.ended_at, sessions.ended_at), "
        "status = CASE WHEN excluded.status = 'ended' THEN 'ended' ELSE sessions.status END, "
        "needs_summary = MAX(sessions.needs_summary, excluded.needs_summary), "
        "project = COALESCE(sessions.project, excluded.project)",
        (session_id, project, client, cwd, now, now, now if ended else None, "ended" if ended else "active",
         int(needs_summary)),
    )


def due(conn: Connection, idle_before: float, limit: int) -> list[Any]:
    """Sessions to summarise, least recently active first: asked for (`needs_summary`), or idle since before
    `idle_before` with compressed observations not yet folded in."""
    return conn.execute(
        "SELECT * FROM sessions s WHERE s.needs_summary = 1 OR (s.last_event_at < ? AND EXISTS (SELECT 1 FROM "
        "observations o WHERE o.session_id = s.id AND o.id > s.summarized_upto AND o.status = 'compressed')) "
        "ORDER BY s.last_event_at LIMIT ?", (idle_before, limit)).fetchall()


def summarized_upto(conn: Connection, session_id: str) -> int | None:
    """The last observation id the session's summary folded in (None: no such session)."""
    row = conn.execute("SELECT summarized_upto FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else row[0]


def mark_summarized(conn: Connection, session_id: str, upto: int, *, needs_summary: bool,
                    summary_memory_id: str | None) -> None:
    """The summary folded in observations up to id `upto`; `summary_memory_id` (when given) is its memory."""
    conn.execute("UPDATE sessions SET summarized_upto = ?, needs_summary = ?, summary_memory_id = COALESCE(?, "
                 "summary_memory_id) WHERE id = ?", (upto, int(needs_summary), summary_memory_id, session_id))


def unsummarised(conn: Connection, project: str | None, *, leaving_out: Sequence[str | None],
                 limit: int = 2) -> list[str]:
    """The project's most recently active sessions without a summary, but those of `leaving_out`."""
    return [row[0] for row in conn.execute(
        "SELECT id FROM sessions WHERE project IS ? AND summary_memory_id IS NULL "
        + "AND id IS NOT ? " * len(leaving_out) + "ORDER BY last_event_at DESC LIMIT ?",
        (project, *leaving_out, limit))]


def summaries_of_project(conn: Connection, project: str | None) -> dict[str, str]:
    """session id -> its summary's memory id, for the project's summarised sessions."""
    return {row[0]: row[1] for row in conn.execute(
        "SELECT id, summary_memory_id FROM sessions WHERE project IS ? AND summary_memory_id IS NOT NULL", (project,))}


def cwds_of_project(conn: Connection, project: str | None) -> list[str]:
    """The working directories the project's sessions ran in."""
    return [row[0] for row in conn.execute("SELECT DISTINCT cwd FROM sessions WHERE project IS ? AND cwd IS NOT NULL",
                                           (project,))]


def count(conn: Connection, project: str | None, *, all_projects: bool = False) -> int:
    """How many sessions the project (or every project) has."""
    scope, args = ("1 = 1", []) if all_projects else ("project IS ?", [project])
    return conn.execute(f"SELECT COUNT(*) FROM sessions WHERE {scope}", args).fetchone()[0]


def count_by_client(conn: Connection, project: str | None, *, all_projects: bool = False) -> dict[str, int]:
    """How many sessions each client ran in the project (or every project), most first."""
    scope, args = ("1 = 1", []) if all_projects else ("project IS ?", [project])
    return {row[0] or "unknown": row[1] for row in conn.execute(
        f"SELECT client, COUNT(*) FROM sessions WHERE {scope} GROUP BY client ORDER BY COUNT(*) DESC, client", args)}


def ids_of_project(conn: Connection, project: str | None) -> list[str]:
    """The project's sessions, with those known only from their observations."""
    return [row[0] for row in conn.execute(
        "SELECT id FROM sessions WHERE project IS ? UNION SELECT DISTINCT session_id FROM observations "
        "WHERE project IS ? AND session_id IS NOT NULL", (project, project))]


def known(conn: Connection, session_id: str) -> bool:
    """Whether anything of the session is stored: its row or an observation."""
    return conn.execute("SELECT 1 FROM observations WHERE session_id = ? UNION ALL "
                        "SELECT 1 FROM sessions WHERE id = ? LIMIT 1", (session_id, session_id)).fetchone() is not None


