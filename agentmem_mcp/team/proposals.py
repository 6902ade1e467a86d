"""Proposals on shared memories (`team_proposals` on the server; this module is the only one writing it): a member
who is not a memory's author proposes to supersede or forget it, and the author accepts or rejects the proposal.
A decision is kept with the proposal (who, which machine, which role, when, why); an accepted supersede publishes
the proposed text as the memory's next version and an accepted forget forgets it, each recorded in `team_history`
with the proposal's id. The server checks the author in the same transaction, and with a role per member its
row-level security lets only the role that wrote a memory decide (docs/team.md).

On the author's machine the local store stays the working copy: accepting a supersede of a memory this machine
shared saves the proposed text locally as the memory's next version first (so redaction and the trust rules apply
to it like to any save), and that version is what the server gets; accepting a forget forgets it here too.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from ..models import InvalidInput, NotFound
from . import author, outbox
from . import server as team_server

if TYPE_CHECKING:
    from ..store import Store  # accepting saves and forgets through the store

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


# this machine's side ---------------------------------------------------------------------------------------

def _who(store: Store) -> tuple[str, str]:
    settings = store.settings
    if not settings.team_url:
        raise InvalidInput("team memory is not configured: set team_url in config.toml or AGENTMEM_TEAM_URL "
                           "(docs/team.md)")
    if settings.team_read_only:
        raise InvalidInput("team memory is read-only for this member (team_read_only = true): nothing is decided")
    with store.transaction() as conn:
        return author(settings), outbox.machine_id(conn)


def _local_latest(store: Store, gid: str) -> Any:
    """This machine's latest version of the shared memory `gid`, or None when it does not hold it."""
    return store.conn.execute("SELECT m.* FROM team_shared s JOIN memories m ON m.root_id = s.root_id AND "
                              "m.is_latest = 1 WHERE s.gid = ?", (gid,)).fetchone()


def accept(store: Store, proposal_id: int, note: str = "") -> str:
    """Accept an open proposal on one of this member's shared memories; returns what was done."""
    who, machine = _who(store)
    server = team_server(store.settings)
    with server.connection() as conn:
        row = _peek(conn, proposal_id, who)
    local = _local_latest(store, row["gid"])
    if row["action"] == "forget":
        server.accept_forget(proposal_id, who, machine, note)
        if local is not None:
            store.forget(ids=[local["id"]], reason=f"team proposal #{proposal_id} accepted")
            with store.transaction() as conn:
                conn.execute("DELETE FROM team_shared WHERE gid = ?", (row["gid"],))
        return f"#{proposal_id} accepted: {row['gid']} is forgotten on the team server" + \
            (" and here" if local is not None else "")
    payload = _next_version(store, row, local, who, machine)
    server.accept_supersede(proposal_id, who, machine, payload, note)
    if local is not None:
        with store.transaction() as conn:
            conn.execute("UPDATE team_shared SET memory_id = ?, version = ?, state = 'published' WHERE gid = ?",
                         (payload["memory_id"], payload["version"], row["gid"]))
    return f"#{proposal_id} accepted: {row['gid']} is now version {payload['version']} (proposed by " \
        f"{row['proposer']})"


def reject(store: Store, proposal_id: int, note: str = "") -> str:
    """Reject an open proposal on one of this member's shared memories (the memory stays as it is)."""
    who, machine = _who(store)
    server = team_server(store.settings)
    with server.connection() as conn, conn.transaction():
        row = decidable(conn, proposal_id, who)
        decide(conn, proposal_id, "rejected", who, machine, note)
    return f"#{proposal_id} rejected: {row['gid']} stays as it is ({row['proposer']} sees it in its history)"


def _peek(conn: Any, proposal_id: int, who: str) -> dict[str, Any]:
    """The checks of `decidable` before anything is done here (the server makes them again when it decides)."""
    with conn.transaction():
        return decidable(conn, proposal_id, who)


def _next_version(store: Store, row: dict[str, Any], local: Any, who: str, machine: str) -> dict[str, Any]:
    """The memory's next version with the proposed text, saved here first (the local store is the working copy:
    redaction and the trust rules apply to it like to any save); raises when this machine does not hold it."""
    from ..trust import instruction_reason
    from .sync import _payload

    if local is None:
        raise InvalidInput(f"{row['gid']} was not shared from this machine: accept proposal #{row['id']} on the "
                           "machine that shared it (its working copy), or reject it")
    reason = instruction_reason(row["content"])
    if reason:
        raise InvalidInput(f"proposal #{row['id']}'s text reads as instructions to an agent ({reason}): not "
                           "accepted; reject it, or save your own wording with --supersedes")
    saved = store.save(row["content"], supersedes=local["id"], type=local["type"], tier=local["tier"],
                       project=local["project"], source="user", tags=json.loads(local["tags"] or "[]"),
                       importance=local["importance"])
    new = store.conn.execute("SELECT * FROM memories WHERE id = ?", (saved.id,)).fetchone()
    record = outbox.shared_record(store.conn, new["root_id"])
    payload = _payload(store, new, row["gid"], bool(record and record["explicit"]), who, machine)
    if payload["version"] <= row["version"]:
        raise InvalidInput(f"this machine's copy of {row['gid']} (version {payload['version']}) is behind the "
                           f"team server's (version {row['version']}): run `agentmem team sync` first")
    return {**payload, "memory_id": new["id"]}
