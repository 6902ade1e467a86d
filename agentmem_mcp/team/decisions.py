"""Deciding on a proposal, on any machine of the memory's author: `agentmem team accept N` / `reject N`. The
server checks the author (and, with a role per member, the role) in the transaction that decides.

- On the machine that shared the memory (it holds it: `team_shared`), the local store stays the working copy:
  accepting a supersede saves the proposed text here first as the memory's next version (so redaction and the
  trust rules apply to it like to any save), and that version is what the server publishes, in the transaction
  that marks the proposal accepted; accepting a forget forgets the memory on the server and here.
- On another machine of the same author, the next version is built from the server's current one and the
  proposed text (redacted again, refused when it reads as instructions to an agent, embedded here) and published
  from this machine; the machine holding the memory takes that version into its own store at its next pull
  (`sync.pull`), and a forget likewise.

Each is recorded in `team_history` with the proposal's id (team.proposals, team.remote).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from ..db import memory_reads
from ..models import InvalidInput
from . import author, outbox
from . import server as team_server
from .proposals import decidable, decide

if TYPE_CHECKING:
    from ..parts import Parts as Store  # an operation is given the store's parts


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
    return memory_reads.latest_shared_as(store.conn, gid)


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
            from ..lifecycle.forget import ForgetRequest, forget

            forget(store, ForgetRequest(ids=[local["id"]], reason=f"team proposal #{proposal_id} accepted"))
            with store.transaction() as conn:
                conn.execute("DELETE FROM team_shared WHERE gid = ?", (row["gid"],))
        return f"#{proposal_id} accepted: {row['gid']} is forgotten on the team server" + \
            (" and here" if local is not None else "")
    payload = _next_version(store, row, local, who, machine) if local is not None else \
        _next_version_from_server(store, row, who, machine)
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
    """The next version of a memory this machine holds (`local`), with the proposed text, saved here first (the
    local store is the working copy: redaction and the trust rules apply to it like to any save)."""
    from ..lifecycle.remember import SaveRequest, save
    from .sync import _payload

    _refuse_instructions(row, row["content"])
    saved = save(store, SaveRequest(
        row["content"], supersedes=local["id"], type=local["type"], tier=local["tier"], project=local["project"],
        source="user", tags=json.loads(local["tags"] or "[]"), importance=local["importance"]))
    new = memory_reads.row_by_id(store.conn, saved.id)
    record = outbox.shared_record(store.conn, new["root_id"])
    payload = _payload(store, new, row["gid"], bool(record and record["explicit"]), who, machine)
    if payload["version"] <= row["version"]:
        raise InvalidInput(f"this machine's copy of {row['gid']} (version {payload['version']}) is behind the "
                           f"team server's (version {row['version']}): run `agentmem team sync` first")
    return {**payload, "memory_id": new["id"]}


def _refuse_instructions(row: dict[str, Any], content: str) -> None:
    from ..trust.policy import instruction_reason

    reason = instruction_reason(content)
    if reason:
        raise InvalidInput(f"proposal #{row['id']}'s text reads as instructions to an agent ({reason}): not "
                           "accepted; reject it, or save your own wording with --supersedes")


def _next_version_from_server(store: Store, row: dict[str, Any], who: str, machine: str) -> dict[str, Any]:
    """The next version of a memory shared by this author from another machine: the server's current version with
    the proposed text (redacted, checked like a save, embedded here), published from this machine."""
    from ..capture.redact import redact
    from ..db.memories import content_hash
    from ..index.document import memory_text
    from ..lifecycle.remember import derive_title

    current = team_server(store.settings).memory(row["gid"])
    if current is None or current["forgotten_at"] is not None:
        raise InvalidInput(f"proposal #{row['id']} is about {row['gid']}, forgotten on the team server since")
    content = redact(row["content"]).strip()
    if not content:
        raise InvalidInput(f"proposal #{row['id']} proposes no text: reject it")
    _refuse_instructions(row, content)
    title = derive_title(content)
    text = memory_text(title, content, current["tags"], current["files"], for_vectors=True)
    vectors = store.embedder.embed([text]) if store.embedder.ready else None
    now = time.time()
    return {**{k: current[k] for k in ("gid", "project_key", "tier", "type", "tags", "files", "confidence",
                                         "importance", "explicit", "created_at")},
            "title": title, "content": content, "source": "user", "author": who, "origin_machine": machine,
            "version": current["version"] + 1, "content_hash": content_hash(content), "updated_at": now,
            "embedding": list(vectors[0]) if vectors else None}
