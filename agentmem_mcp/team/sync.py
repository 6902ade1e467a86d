"""Publishing and pulling: the outbox drained to the server, the server's changes pulled into this machine's
copy. Run by the worker (a lifecycle step of `agentmem serve`) and by `agentmem team sync`; safe to run from
several processes at once (publishing is idempotent: a version the server has is not written twice).

What is published (docs/team.md): the latest version of every semantic or procedural memory of a project
(unless team_share_knowledge = false), and what a user shares by id; never a working memory (raw captured
events) nor a quarantined one. A shared memory that is superseded here is published as its next version; one
forgotten here on request (`forget`, or retired by consolidation) is forgotten on the server (or proposed to its
author); one that merely faded away here (the sweep) stays on the server for the others.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..db import audit, memory_reads
from ..db.connection import write_transaction
from . import NEVER_SHARED_TIERS, SHARED_TIERS, TEAM_WIDE, author, mirror, outbox, reach
from . import server as team_server
from .credentials import TeamConfigError
from .identity import project_key
from .remote import TeamPermissionError, TeamUnreachable

if TYPE_CHECKING:
    from ..parts import Parts as Store  # an operation is given the store's parts

log = logging.getLogger("agentmem.team")

PUBLISH_BATCH = 200
PULL_BATCH = 2000
RECONCILE_BATCH = 5000  # knowledge queued for sharing at most in one sync (the rest at the next)
TEAM_FORGET_ACTIONS = ("forget", "retire")  # audit actions that forget on the team server too


@dataclass
class SyncReport:
    """What one sync did."""
    queued: int = 0
    published: int = 0
    proposed: int = 0
    forgotten: int = 0
    pulled: int = 0
    waiting: int = 0
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        parts = [f"published {self.published}", f"pulled {self.pulled}"]
        if self.forgotten:
            parts.append(f"forgotten {self.forgotten}")
        if self.proposed:
            parts.append(f"proposed to their authors {self.proposed}")
        if self.waiting:
            parts.append(f"{self.waiting} waiting in the outbox")
        return ", ".join(parts) + (f"; {self.error}" if self.error else "")


def check_shareable(row: Any) -> None:
    """Raise InvalidInput when a memory may not be shared (working tier, quarantined, superseded)."""
    from ..models import InvalidInput

    if row["tier"] in NEVER_SHARED_TIERS:
        raise InvalidInput(f"{row['id']} is a raw captured event (tier {row['tier']}): those never leave this "
                           "machine. Save what matters in it as a memory (`agentmem save`) and share that")
    if row["quarantined"] is not None:
        raise InvalidInput(f"{row['id']} is quarantined ({row['quarantined']}): it is shared only once the user "
                           "has released it")


def share(store: Store, memory_id: str) -> str:
    """Queue a memory (its latest version) for the team; returns its global id. Raises when team memory is off
    or read-only, or the memory may not be shared."""
    from ..models import InvalidInput

    settings = store.settings
    if not settings.team_url:
        raise InvalidInput("team memory is not configured: set team_url in config.toml or AGENTMEM_TEAM_URL "
                           "(docs/team.md)")
    if settings.team_read_only:
        raise InvalidInput("team memory is read-only for this member (team_read_only = true): nothing is "
                           "published; the memory stays on this machine")
    from ..models import NotFound, check_memory_id

    found = memory_reads.row_by_id(store.conn, check_memory_id(memory_id), "root_id")
    if found is None:
        raise NotFound(f"no memory {memory_id}: it may have been forgotten; search again for current ids")
    row = memory_reads.newest_of_chain(store.conn, found[0])
    check_shareable(row)
    with store.transaction() as conn:
        return outbox.mark_shared(conn, row, explicit=True)


def share_now(store: Store, memory_id: str) -> str:
    """Share a memory and try to publish it at once; the answer says what happened (it never raises for the
    team's sake: a memory that may not be shared says why, one the server cannot take yet waits in the outbox)."""
    from ..models import AgentmemError

    try:
        gid = share(store, memory_id)
    except AgentmemError as exc:
        return f"not shared: {exc}"
    report = sync(store, pull_changes=False, force=True)
    if report.error:
        return f"shared as {gid}: queued, published when the team server answers ({report.error})"
    return f"shared with the team as {gid}"


def reconcile(store: Store) -> int:
    """Queue what changed here since the last sync: knowledge not yet shared, new versions of shared memories,
    shared memories forgotten here. Returns how many items were queued."""
    settings = store.settings
    if settings.team_read_only:
        return 0
    queued = 0
    conn = store.conn
    with write_transaction(conn):
        if settings.team_share_knowledge:
            for row in memory_reads.unshared_knowledge(conn, SHARED_TIERS, RECONCILE_BATCH):
                outbox.mark_shared(conn, row, explicit=False)
                queued += 1
        for row in memory_reads.shared_behind(conn):
            if row["quarantined"] is None and row["tier"] not in NEVER_SHARED_TIERS:
                outbox.mark_shared(conn, row, explicit=False)
                queued += 1
        for gone in conn.execute("SELECT root_id, memory_id FROM team_shared s WHERE state != 'forgetting' AND "
                                 f"NOT {memory_reads.chain_held('s.root_id')}").fetchall():
            last = audit.last_of(conn, gone["memory_id"])
            if last is not None and last["action"] in TEAM_FORGET_ACTIONS:
                reason = (json.loads(last["detail"] or "{}") or {}).get("reason", "")
                conn.execute("UPDATE team_shared SET state = 'forgetting' WHERE root_id = ?", (gone["root_id"],))
                outbox.enqueue(conn, gone["memory_id"], "forget", reason=str(reason)[:200])
                queued += 1
            else:  # faded here (the sweep): the team keeps it, this machine stops following it
                conn.execute("DELETE FROM team_shared WHERE root_id = ?", (gone["root_id"],))
    return queued


def _payload(store: Store, row: Any, gid: str, explicit: bool, who: str, machine: str) -> dict[str, Any]:
    from ..index.document import memory_text

    key = project_key(row["project"]) or TEAM_WIDE
    files = [_relative(f, row["project"]) for f in json.loads(row["files"] or "[]")]
    embedding = None
    if store.embedder.ready:
        text = memory_text(row["title"], row["content"], json.loads(row["tags"]), files, for_vectors=True)
        vectors = store.embedder.embed([text])
        embedding = list(vectors[0]) if vectors else None
    return {"gid": gid, "project_key": key, "tier": row["tier"], "type": row["type"], "title": row["title"],
            "content": row["content"], "tags": json.loads(row["tags"] or "[]"), "files": files,
            "source": row["source"], "confidence": row["confidence"], "importance": row["importance"],
            "explicit": explicit, "author": who, "origin_machine": machine, "version": row["version"],
            "content_hash": row["content_hash"], "created_at": row["created_at"], "updated_at": row["updated_at"],
            "embedding": embedding}


def _relative(path: str, root: str | None) -> str:
    """A file path as the team sees it: relative to the project's root (another machine's root differs)."""
    if root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1:]
    return path


def publish_due(store: Store, report: SyncReport, *, force: bool = False) -> None:
    """Send what the outbox holds, batch by batch; an item leaves the outbox only once the server committed it.
    On failure the batch stays, retried later with backoff (TeamUnreachable / TeamPermissionError re-raised);
    force=True (a sync the user asked for) sends the items still waiting out their backoff too."""
    settings = store.settings
    server = team_server(settings)
    who = author(settings)
    conn = store.conn
    with write_transaction(conn):
        machine = outbox.machine_id(conn)
    while True:
        items = outbox.due(conn, float("inf") if force else time.time(), PUBLISH_BATCH)
        if not items:
            return
        publish, forgets, skipped = [], [], []
        for item in items:
            if item["op"] == "forget":
                forgets.append(item)
                continue
            row = memory_reads.row_by_id(conn, item["memory_id"])
            record = outbox.shared_record(conn, row["root_id"]) if row else None
            if row is None or record is None or not row["is_latest"] or row["quarantined"] is not None:
                skipped.append(item["seq"])  # forgotten, superseded or quarantined since: its successor is queued
                continue
            publish.append((item, row, record))
        try:
            payloads = [_payload(store, row, record["gid"], bool(record["explicit"] or item["explicit"]), who,
                                 machine) for item, row, record in publish]
            outcomes = server.publish(payloads) if payloads else []
            for item in forgets:
                record = conn.execute("SELECT gid FROM team_shared WHERE memory_id = ?",
                                      (item["memory_id"],)).fetchone()
                if record is None:
                    continue
                outcome = server.forget(record["gid"], author=who, machine=machine, reason=item["reason"])
                report.forgotten += outcome == "forgotten"
                report.proposed += outcome == "proposed"
        except (TeamUnreachable, TeamPermissionError) as exc:
            with write_transaction(conn):
                outbox.failed(conn, [i["seq"] for i in items if i["seq"] not in skipped], str(exc), time.time())
                outbox.done(conn, skipped)
            raise
        with write_transaction(conn):
            for (_item, row, record), outcome in zip(publish, outcomes):
                conn.execute("UPDATE team_shared SET version = ?, state = ? WHERE root_id = ?",
                             (row["version"], outcome, record["root_id"]))
                report.published += outcome in ("published", "exists")
                report.proposed += outcome == "proposed"
            conn.executemany("DELETE FROM team_shared WHERE memory_id = ? AND state = 'forgetting'",
                             [(i["memory_id"],) for i in forgets])
            outbox.done(conn, [i["seq"] for i in items])


def project_keys(store: Store) -> list[str]:
    """The team identities of the projects this machine works on (its sessions' and memories'), and the
    team-wide key."""
    projects = memory_reads.projects_worked_on(store.conn)
    if store.project:
        projects.add(store.project)
    return sorted({k for k in (project_key(p) for p in projects) if k} | {TEAM_WIDE})


def pull(store: Store, report: SyncReport) -> None:
    """Bring this machine's copy up to date with the server, project key by project key, from where the last
    pull stopped (the server's change sequence); from the start when another version of agentmem checked the copy
    (mirror.checked_by)."""
    server = team_server(store.settings)
    conn = store.conn
    checker = mirror.checked_by()
    with write_transaction(conn):
        machine = outbox.machine_id(conn)
        if outbox.state(conn, "checked_by") != checker:  # another agentmem's trust rules checked the copy
            conn.execute("DELETE FROM team_state WHERE key LIKE 'pulled:%'")
            outbox.set_state(conn, "checked_by", checker)
    for key in project_keys(store):
        after = int(outbox.state(conn, f"pulled:{key}", "0") or 0)
        while True:
            rows = server.changes(key, after, PULL_BATCH)
            if not rows:
                break
            held = {r["gid"]: r for r in conn.execute("SELECT * FROM team_shared")}
            for row in rows:
                if row["gid"] in held:
                    report.pulled += adopt(store, row, held[row["gid"]], machine)
            with write_transaction(conn):
                report.pulled += mirror.apply(conn, [r for r in rows if r["gid"] not in held], set(held))
                after = max(r["change_seq"] for r in rows)
                outbox.set_state(conn, f"pulled:{key}", str(after))
            if len(rows) < PULL_BATCH:
                break
    with write_transaction(conn):
        outbox.set_state(conn, "pulled_at", str(time.time()))


def sync(store: Store, *, publish: bool = True, pull_changes: bool = True, force: bool = False) -> SyncReport:
    """Reconcile, publish what waits (force: even what waits out a backoff) and pull what changed; never raises
    for an unreachable server (the report says so and the outbox keeps everything)."""
    report = SyncReport()
    home = store.settings.home
    try:
        if publish:
            report.queued = reconcile(store)
            if not store.settings.team_read_only:
                publish_due(store, report, force=force)
        if pull_changes:
            pull(store, report)
        reach.mark_reachable(home)
    except TeamUnreachable as exc:
        report.error = str(exc)
        reach.mark_unreachable(home, str(exc))
    except (TeamPermissionError, TeamConfigError) as exc:  # a role without rights, no driver: the outbox waits
        report.error = str(exc)
    report.waiting = outbox.pending(store.conn)["waiting"]
    return report


WORKER_EVERY_S = 30.0


def worker_step(store: Store, last: dict[str, float]) -> SyncReport | None:
    """The worker's team step: publish what waits (at most every WORKER_EVERY_S) and pull when this machine's
    copy is older than team_refresh_seconds. `last` keeps when it last ran (per worker)."""
    now = time.time()
    if now - last.get("at", 0.0) < min(WORKER_EVERY_S, store.settings.team_refresh_seconds):
        return None
    last["at"] = now
    pulled = float(outbox.state(store.conn, "pulled_at", "0") or 0)
    report = sync(store, pull_changes=now - pulled >= store.settings.team_refresh_seconds)
    if report.error:
        log.info("team memory: %s", report.error)
    return report


def adopt(store: Store, row: dict[str, Any], record: Any, machine: str) -> bool:
    """A memory this machine shared (`record`, its team_shared row), changed on the server from another machine of
    its author (a proposal accepted there, or a forget): take the change into the local store, the working copy,
    so that this machine neither shows the old text nor publishes over the new one. Returns whether it did."""
    from ..lifecycle.forget import ForgetRequest, forget
    from ..lifecycle.remember import SaveRequest, save
    from ..trust.policy import instruction_reason

    conn = store.conn
    local = memory_reads.latest_of_chain(conn, record["root_id"])
    if row["forgotten_at"] is not None:
        if record["state"] == "forgetting":
            return False  # this machine's own forget, on its way
        if local is not None:
            forget(store, ForgetRequest(ids=[local["id"]], reason=f"forgotten on the team server by {row['author']}"))
        with write_transaction(conn):
            conn.execute("DELETE FROM team_shared WHERE gid = ?", (row["gid"],))
        return True
    if row["origin_machine"] == machine or row["version"] <= record["version"] or local is None:
        return False
    if instruction_reason(f"{row['title']}\n{row['content']}"):
        log.warning("team memory %s version %s reads as instructions to an agent: not taken into this store",
                    row["gid"], row["version"])
        return False
    saved = save(store, SaveRequest(
        row["content"], title=row["title"], supersedes=local["id"], type=local["type"], tier=local["tier"],
        project=local["project"], source="user", tags=json.loads(local["tags"] or "[]"), importance=row["importance"]))
    with write_transaction(conn):
        conn.execute("UPDATE team_shared SET memory_id = ?, version = ?, state = 'published' WHERE gid = ?",
                     (saved.id, row["version"], row["gid"]))
    return True
