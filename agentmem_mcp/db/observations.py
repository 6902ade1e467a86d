"""The `observations` table: the hook's rows (recorded, a repeat counted, an edit reported twice kept once),
the worker's queue (claiming a batch under a lease, reading it, marking what was compressed, releasing or parking
what failed, giving parked ones another try), the reads of the summariser, the rules, the briefing and
forgetting, and removal. The only module that writes this table's SQL.

The hook process imports this module: it imports nothing the hook does not already (no `typing`).
"""

from __future__ import annotations

import json

from .connection import Connection, marks

TYPE_CHECKING = False  # importing typing costs each hook process ~5 ms
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

# What the rules and the summariser read of an observation (lifecycle.consolidate.parse_observation).
PARSED_COLUMNS = ("id, session_id, project, event, tool, input, files, kind, title, facts, importance, created_at, "
                  "count, substr(output, 1, 2000) AS output")
PARKED_ERROR = "the worker stopped while processing it, every time"


def other_claimants(conn: Connection, holder: str, now: float) -> list[str]:
    """Holders other than `holder` whose claim on pending observations has not run out."""
    return [row[0] for row in conn.execute(
        "SELECT DISTINCT claimed_by FROM observations WHERE status = 'pending' AND claimed_until >= ? AND "
        "claimed_by IS NOT ?", (now, holder))]


def release_claims_of(conn: Connection, holder: str) -> None:
    """Let other workers claim what `holder` (a process that is gone) had claimed."""
    conn.execute("UPDATE observations SET claimed_until = NULL WHERE claimed_by = ? AND status = 'pending'", (holder,))


def park_exhausted(conn: Connection, max_attempts: int, now: float) -> int:
    """Park as failed the unclaimed pending observations that used up their attempts; returns how many."""
    return conn.execute(
        "UPDATE observations SET status = 'failed', claimed_by = NULL, claimed_until = NULL, error = "
        "COALESCE(error, ?) WHERE status = 'pending' AND attempts >= ? AND (claimed_until IS NULL OR "
        "claimed_until < ?)", (PARKED_ERROR, max_attempts, now)).rowcount


def claim(conn: Connection, holder: str, until: float, now: float, limit: int) -> list[int]:
    """Claim up to `limit` pending observations that are due and unclaimed (one more attempt each), oldest
    first, for `holder` until `until`; inside the caller's transaction. Returns their ids."""
    ids = [row[0] for row in conn.execute(
        "SELECT id FROM observations WHERE status = 'pending' AND (claimed_until IS NULL OR claimed_until < ?) "
        "AND (next_attempt_at IS NULL OR next_attempt_at <= ?) ORDER BY id LIMIT ?", (now, now, limit))]
    if ids:
        conn.execute(f"UPDATE observations SET claimed_by = ?, claimed_until = ?, attempts = attempts + 1 "
                     f"WHERE id IN ({marks(ids)})", [holder, until, *ids])
    return ids


def claimed_rows(conn: Connection, ids: Sequence[int], holder: str) -> list[Any]:
    """The observations of `ids` still pending and claimed by `holder`, with their session's cwd, by id."""
    return conn.execute(f"SELECT o.*, s.cwd AS session_cwd FROM observations o LEFT JOIN sessions s ON "
                        f"s.id = o.session_id WHERE o.id IN ({marks(ids)}) AND o.claimed_by = ? AND o.status = "
                        f"'pending' ORDER BY o.id", [*ids, holder]).fetchall()


def still_claimed(conn: Connection, ids: Sequence[int], holder: str) -> set[int]:
    """Which of `ids` are still pending and claimed by `holder`."""
    return {row[0] for row in conn.execute(f"SELECT id FROM observations WHERE id IN ({marks(ids)}) AND "
                                           f"claimed_by = ? AND status = 'pending'", [*ids, holder])}


def mark_compressed(conn: Connection, results: Iterable[tuple[int, Any]], holder: str, now: float) -> None:
    """Record each (id, compressed result: kind, title, facts, importance) and release its claim."""
    conn.executemany(
        "UPDATE observations SET status = 'compressed', kind = ?, title = ?, facts = ?, importance = ?, "
        "claimed_by = NULL, claimed_until = NULL, next_attempt_at = NULL, error = NULL, updated_at = ? "
        "WHERE id = ? AND claimed_by = ?",
        [(c.kind, c.title, json.dumps(c.facts, ensure_ascii=False), c.importance, now, obs_id, holder)
         for obs_id, c in results])


def fail(conn: Connection, obs_id: int, holder: str, error: str, max_attempts: int, now: float,
         backoff: Callable[[int], float]) -> int | None:
    """A claimed observation failed: park it (its attempts are used up) or release it for a try after
    `backoff(attempts)` seconds. Returns 1 if parked, 0 if released, None when `holder` no longer claims it."""
    row = conn.execute("SELECT attempts FROM observations WHERE id = ? AND claimed_by = ?",
                       (obs_id, holder)).fetchone()
    if row is None:
        return None
    parked = row["attempts"] >= max_attempts
    conn.execute("UPDATE observations SET status = ?, claimed_by = NULL, claimed_until = NULL, "
                 "next_attempt_at = ?, error = ? WHERE id = ?",
                 ("failed" if parked else "pending", now + backoff(row["attempts"]), error[:500], obs_id))
    return int(parked)


def retry_failed(conn: Connection) -> int:
    """Give every parked observation a fresh set of attempts; returns how many."""
    return conn.execute("UPDATE observations SET status = 'pending', attempts = 0, next_attempt_at = NULL, "
                        "claimed_by = NULL, claimed_until = NULL, error = NULL WHERE status = 'failed'").rowcount


# -- the hook's rows ------------------------------------------------------------------------------


def add(conn: Connection, *, session_id: str, project: str | None, client: str, event: str, tool: str | None,
        input: str | None, output: str | None, prompt: str | None, files: str, extra: str, fingerprint: str,
        now: float) -> int:
    """Record an event (input, files and extra as JSON text); the same event again in the session (same
    fingerprint) counts once more on its row. Returns the row's id."""
    return int(conn.execute(
        "INSERT INTO observations (session_id, project, client, event, tool, input, output, prompt, files, "
        "extra, fingerprint, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (session_id, fingerprint) DO UPDATE SET count = count + 1, "
        "updated_at = excluded.updated_at RETURNING id",
        (session_id, project, client, event, tool, input, output, prompt, files, extra, fingerprint, now, now),
    ).fetchone()[0])


def recent_events(conn: Connection, session_id: str, event: str, since: float, limit: int = 20) -> list[Any]:
    """(id, tool, files, input) of the session's `event` rows created since `since`, newest first."""
    return conn.execute("SELECT id, tool, files, input FROM observations WHERE session_id = ? AND event = ? AND "
                        "created_at >= ? ORDER BY id DESC LIMIT ?", (session_id, event, since, limit)).fetchall()


def replace_event(conn: Connection, obs_id: int, *, event: str, tool: str | None, input: str | None,
                  output: str | None, fingerprint: str, now: float) -> None:
    """Another report of the same edit takes the row's place; raises IntegrityError when the session already
    has a row with that fingerprint."""
    conn.execute("UPDATE observations SET event = ?, tool = ?, input = ?, output = ?, fingerprint = ?, "
                 "updated_at = ? WHERE id = ?", (event, tool, input, output, fingerprint, now, obs_id))


# -- reads ----------------------------------------------------------------------------------------


def of_session_after(conn: Connection, session_id: str, after: int, limit: int) -> list[Any]:
    """The session's rows after id `after` (`PARSED_COLUMNS` and status), oldest first, at most `limit`."""
    return conn.execute(f"SELECT {PARSED_COLUMNS}, status FROM observations WHERE session_id = ? AND id > ? "
                        "ORDER BY id LIMIT ?", (session_id, after, limit)).fetchall()


def session_events(conn: Connection, session_id: str, limit: int = 2000) -> list[Any]:
    """(event, tool, input, prompt, files, created_at) of the session's rows, oldest first, at most `limit`."""
    return conn.execute("SELECT event, tool, input, prompt, files, created_at FROM observations WHERE session_id = ? "
                        "ORDER BY id LIMIT ?", (session_id, limit)).fetchall()


def stop_after(conn: Connection, session_id: str, after: int, events: Sequence[str]) -> bool:
    """Whether the session has a row of one of `events` after id `after`."""
    return bool(conn.execute(f"SELECT EXISTS (SELECT 1 FROM observations WHERE session_id = ? AND id > ? AND event "
                             f"IN ({marks(events)}))", (session_id, after, *events)).fetchone()[0])


def last_extra_naming(conn: Connection, session_id: str, word: str) -> str | None:
    """The `extra` JSON text of the session's last row whose extra contains `word`."""
    row = conn.execute("SELECT extra FROM observations WHERE session_id = ? AND extra LIKE ? ORDER BY id DESC "
                       "LIMIT 1", (session_id, f"%{word}%")).fetchone()
    return None if row is None else row[0]


def compressed_of_project(conn: Connection, project: str | None, kinds: Sequence[str]) -> list[Any]:
    """The project's compressed rows of these kinds (`PARSED_COLUMNS`), oldest first."""
    return conn.execute(f"SELECT {PARSED_COLUMNS} FROM observations WHERE project IS ? AND status = 'compressed' "
                        f"AND kind IN ({marks(kinds)}) ORDER BY id", (project, *kinds)).fetchall()


def compressed_since(conn: Connection, project: str | None, after: int) -> tuple[float, int | None]:
    """The summed importance and the last id of the project's compressed rows after id `after`."""
    total, last = conn.execute("SELECT COALESCE(SUM(importance), 0), MAX(id) FROM observations WHERE project IS ? "
                               "AND status = 'compressed' AND id > ?", (project, after)).fetchone()
    return total, last


def last_compressed_by_project(conn: Connection) -> list[tuple[str | None, int, int]]:
    """(project, last compressed id, sessions of the project with a summary) for every project with compressed
    rows."""
    return [tuple(row) for row in conn.execute(
        "SELECT o.project, MAX(o.id), (SELECT COUNT(*) FROM sessions s WHERE s.project IS o.project "
        "AND s.summary_memory_id IS NOT NULL) FROM observations o WHERE o.status = 'compressed' GROUP BY o.project")]


def status_counts(conn: Connection, project: str | None, *, all_projects: bool = False) -> dict[str, int]:
    """status -> how many rows of the project (or of every project) have it."""
    scope, args = ("1 = 1", []) if all_projects else ("project IS ?", [project])
    return {row[0]: row[1] for row in conn.execute(
        f"SELECT status, COUNT(*) FROM observations WHERE {scope} GROUP BY status", args)}


def last_recorded_at(conn: Connection) -> float | None:
    """When the newest observation was recorded (None: none yet)."""
    row = conn.execute("SELECT created_at FROM observations ORDER BY id DESC LIMIT 1").fetchone()
    return None if row is None else float(row[0])


def failed_count(conn: Connection) -> int:
    """How many rows are parked as failed."""
    return conn.execute("SELECT COUNT(*) FROM observations WHERE status = 'failed'").fetchone()[0]


def count_of_session(conn: Connection, session_id: str) -> int:
    return conn.execute("SELECT COUNT(*) FROM observations WHERE session_id = ?", (session_id,)).fetchone()[0]


def times_of(conn: Connection, ids: Sequence[int]) -> dict[int, float]:
    """When each of these observations happened (an id no longer stored is left out)."""
    found: dict[int, float] = {}
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), 500):
        chunk = unique[start:start + 500]
        found.update(conn.execute(f"SELECT id, created_at FROM observations WHERE id IN ({','.join('?' * len(chunk))})",
                                  chunk).fetchall())
    return found


def ids_of_session(conn: Connection, session_id: str) -> list[int]:
    return [row[0] for row in conn.execute("SELECT id FROM observations WHERE session_id = ?", (session_id,))]


def prunable(conn: Connection, before: float, below: float, limit: int = 5000) -> list[int]:
    """Compressed rows created before `before` with importance under `below`, oldest first, at most `limit`."""
    return [row[0] for row in conn.execute(
        "SELECT id FROM observations WHERE status = 'compressed' AND created_at < ? AND COALESCE(importance, 0) < ? "
        "ORDER BY id LIMIT ?", (before, below, limit))]


# -- removal --------------------------------------------------------------------------------------


def delete_session(conn: Connection, session_id: str) -> None:
    """Remove the session's rows, inside the caller's transaction."""
    conn.execute("DELETE FROM observations WHERE session_id = ?", (session_id,))


def delete(conn: Connection, ids: Sequence[int]) -> None:
    """Remove these rows, inside the caller's transaction."""
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        conn.execute(f"DELETE FROM observations WHERE id IN ({marks(part)})", part)
