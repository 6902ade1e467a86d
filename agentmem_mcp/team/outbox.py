"""This machine's side of publishing, in its SQLite store: the outbox of what waits to be sent, the record of
what it has shared (`team_shared`: local root id -> global id), and `team_state` (machine id, pull positions,
reachability). Written in the caller's transaction; nothing here talks to the server."""

from __future__ import annotations

import time
from typing import Any

from ..db.connection import Connection

MAX_BACKOFF_S = 900.0


def backoff_seconds(attempts: int) -> float:
    """Wait before the next try of a failed publish: 5 s, 10 s, 20 s, ... at most 15 minutes."""
    return min(5.0 * 2 ** max(attempts - 1, 0), MAX_BACKOFF_S)


def state(conn: Connection, key: str, default: str | None = None) -> str | None:
    row = conn.execute("SELECT value FROM team_state WHERE key = ?", (key,)).fetchone()
    return row[0] if row else default


def set_state(conn: Connection, key: str, value: str) -> None:
    conn.execute("INSERT INTO team_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
                 "value = excluded.value", (key, value))


def machine_id(conn: Connection) -> str:
    """This machine's id on the team server: its host name and a random suffix, made once (in a transaction)."""
    found = state(conn, "machine")
    if found:
        return found
    import secrets
    import socket

    made = f"{socket.gethostname() or 'machine'}-{secrets.token_hex(3)}"
    conn.execute("INSERT OR IGNORE INTO team_state (key, value) VALUES ('machine', ?)", (made,))
    return state(conn, "machine") or made


def new_gid() -> str:
    import secrets

    return f"t_{secrets.token_hex(10)}"


def shared_record(conn: Connection, root_id: str) -> Any:
    return conn.execute("SELECT * FROM team_shared WHERE root_id = ?", (root_id,)).fetchone()


def mark_shared(conn: Connection, memory: Any, *, explicit: bool, now: float | None = None) -> str:
    """Record that a memory (a row with id, root_id, version) is to be published and queue it; returns its gid.
    Again for a memory already shared: the latest version is queued (explicit stays once set)."""
    now = time.time() if now is None else now
    found = shared_record(conn, memory["root_id"])
    gid = found["gid"] if found else new_gid()
    conn.execute("INSERT INTO team_shared (root_id, gid, memory_id, version, explicit, state, shared_at) "
                 "VALUES (?, ?, ?, 0, ?, 'queued', ?) ON CONFLICT (root_id) DO UPDATE SET "
                 "memory_id = excluded.memory_id, explicit = MAX(explicit, excluded.explicit), state = 'queued'",
                 (memory["root_id"], gid, memory["id"], int(explicit), now))
    enqueue(conn, memory["id"], "publish", explicit=explicit, now=now)
    return gid


def enqueue(conn: Connection, memory_id: str, op: str, *, explicit: bool = False, reason: str = "",
            now: float | None = None) -> None:
    """Queue a publish or a forget. A publish already waiting for the same memory is not queued twice, unless
    this one is explicit and that one is not: a sync may be sending that one as it stands (and removes it once
    sent), so the share goes as an item of its own."""
    if op == "publish" and conn.execute("SELECT 1 FROM team_outbox WHERE memory_id = ? AND op = 'publish' "
                                        "AND explicit >= ?", (memory_id, int(explicit))).fetchone():
        return
    conn.execute("INSERT INTO team_outbox (memory_id, op, explicit, reason, created_at) VALUES (?, ?, ?, ?, ?)",
                 (memory_id, op, int(explicit), reason, time.time() if now is None else now))


def due(conn: Connection, now: float, limit: int = 200) -> list[Any]:
    return conn.execute("SELECT * FROM team_outbox WHERE next_attempt_at <= ? ORDER BY seq LIMIT ?",
                        (now, limit)).fetchall()


def done(conn: Connection, seqs: list[int]) -> None:
    conn.executemany("DELETE FROM team_outbox WHERE seq = ?", [(s,) for s in seqs])


def failed(conn: Connection, seqs: list[int], error: str, now: float) -> None:
    """Keep the items for a later try, each waiting longer the more it failed."""
    for seq in seqs:
        row = conn.execute("SELECT attempts FROM team_outbox WHERE seq = ?", (seq,)).fetchone()
        if row:
            attempts = row[0] + 1
            conn.execute("UPDATE team_outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE seq = ?",
                         (attempts, now + backoff_seconds(attempts), error[:500], seq))


def pending(conn: Connection) -> dict[str, Any]:
    """How many items wait, the oldest one's age and the last error."""
    row = conn.execute("SELECT COUNT(*), MIN(created_at), MAX(attempts) FROM team_outbox").fetchone()
    last = conn.execute("SELECT last_error FROM team_outbox WHERE last_error IS NOT NULL ORDER BY seq DESC "
                        "LIMIT 1").fetchone()
    return {"waiting": row[0], "oldest": row[1], "attempts": row[2] or 0, "last_error": last[0] if last else None}
