"""Proposals on shared memories, on the server (`team_proposals`; this module is the only one writing it): a
member who is not a memory's author proposes to supersede or forget it, and the author accepts or rejects the
proposal (team.decisions). A decision is kept with the proposal (who, which machine, which role, when, why). The
author is checked in the transaction that decides, and with a role per member the server's row-level security
lets only the role that wrote a memory decide (docs/team.md). Functions take a psycopg connection."""

from __future__ import annotations

import time
from typing import Any

from ..models import InvalidInput, NotFound

OPEN_COLUMNS = ("p.id, p.gid, p.action, p.content, p.reason, p.proposer, p.origin_machine, p.created_at, p.status, "
                "p.decided_by, p.decided_at, p.decision_note, m.title, m.author, m.version, m.forgotten_at")


def propose(conn: Any, gid: str, action: str, content: str, reason: str, proposer: str, machine: str) -> None:
    """Store a proposal (the same one again is a no-op), inside the caller's transaction."""
    conn.execute("INSERT INTO team_proposals (gid, action, content, reason, proposer, origin_machine, "
                 "created_at) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                 (gid, action, content, reason, proposer, machine, time.time()))


def _rows(cur: Any) -> list[dict[str, Any]]:
    names = [d.name for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def listed(conn: Any, author_name: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """Open proposals on live memories, those on `author_name`'s memories when given, newest first."""
    return _rows(conn.execute(
        f"SELECT {OPEN_COLUMNS} FROM team_proposals p JOIN team_memories m ON m.gid = p.gid WHERE p.status = 'open' "
        "AND m.forgotten_at IS NULL AND (%(author)s::text IS NULL OR m.author = %(author)s) ORDER BY p.id DESC "
        "LIMIT %(limit)s", {"author": author_name, "limit": limit}))


def of_memory(conn: Any, gid: str) -> list[dict[str, Any]]:
    """Every proposal on a memory, open or decided, oldest first."""
    return _rows(conn.execute(f"SELECT {OPEN_COLUMNS} FROM team_proposals p JOIN team_memories m ON m.gid = p.gid "
                              "WHERE p.gid = %s ORDER BY p.id", (gid,)))


def decidable(conn: Any, proposal_id: int, author_name: str) -> dict[str, Any]:
    """The open proposal `proposal_id` on a live memory of `author_name`, locked for the decision; raises
    NotFound / InvalidInput saying why not."""
    found = _rows(conn.execute(f"SELECT {OPEN_COLUMNS} FROM team_proposals p JOIN team_memories m ON m.gid = p.gid "
                               "WHERE p.id = %s", (proposal_id,)))
    if not found:
        raise NotFound(f"no proposal #{proposal_id} on the team server (`agentmem team proposals` lists them)")
    row = found[0]
    if row["author"] != author_name:
        raise InvalidInput(f"proposal #{proposal_id} is about a memory of {row['author']}: only its author decides")
    if row["status"] != "open":
        raise InvalidInput(f"proposal #{proposal_id} was {row['status']} already by {row['decided_by']}")
    if row["forgotten_at"] is not None:
        raise InvalidInput(f"proposal #{proposal_id} is about {row['gid']}, forgotten on the team server since")
    locked = conn.execute("SELECT 1 FROM team_proposals WHERE id = %s AND status = 'open' FOR UPDATE",
                          (proposal_id,)).fetchone()
    if locked is None:  # row-level security: this role did not write the memory
        raise InvalidInput(f"proposal #{proposal_id}: the team server lets only the PostgreSQL role that wrote "
                           f"{row['gid']} decide on it")
    return row


def decide(conn: Any, proposal_id: int, status: str, who: str, machine: str, note: str) -> None:
    """Record the decision on a proposal locked by `decidable`."""
    conn.execute("UPDATE team_proposals SET status = %s, decided_by = %s, decided_machine = %s, "
                 "decided_role = current_user, decided_at = %s, decision_note = %s WHERE id = %s",
                 (status, who, machine, time.time(), note, proposal_id))
