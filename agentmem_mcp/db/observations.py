"""The `observations` table as the worker's queue: claiming a batch under a lease, reading it, marking what
was compressed, releasing or parking what failed, and giving parked ones another try.

The hook's own INSERT stays in capture/observations.py (the hook process imports as little as it can).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .connection import Connection

PARKED_ERROR = "the worker stopped while processing it, every time"


def _marks(ids: Sequence[Any]) -> str:
    return ",".join("?" * len(ids))


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
                     f"WHERE id IN ({_marks(ids)})", [holder, until, *ids])
    return ids


def claimed_rows(conn: Connection, ids: Sequence[int], holder: str) -> list[Any]:
    """The observations of `ids` still pending and claimed by `holder`, with their session's cwd, by id."""
    return conn.execute(f"SELECT o.*, s.cwd AS session_cwd FROM observations o LEFT JOIN sessions s ON "
                        f"s.id = o.session_id WHERE o.id IN ({_marks(ids)}) AND o.claimed_by = ? AND o.status = "
                        f"'pending' ORDER BY o.id", [*ids, holder]).fetchall()


def still_claimed(conn: Connection, ids: Sequence[int], holder: str) -> set[int]:
    """Which of `ids` are still pending and claimed by `holder`."""
    return {row[0] for row in conn.execute(f"SELECT id FROM observations WHERE id IN ({_marks(ids)}) AND "
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
