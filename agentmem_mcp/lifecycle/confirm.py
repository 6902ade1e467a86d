"""What only the user does to a memory: confirm (pin) it, and release it from quarantine.

An agent's or the worker's memory is saved P1, unpinned and project-scoped (lifecycle/remember.py); the
user confirms it with `agentmem pin ID` (optionally as P0 and global). A memory whose text reads as
instructions to an AI agent is quarantined; the user lists, releases or forgets it with `agentmem quarantine`.
Each change is a row in the audit log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..db import audit, index_outbox, memories, memory_reads
from ..db import vectors as vector_rows
from ..models import PRIORITIES, InvalidInput, Memory, check_choice
from .forget import ForgetRequest, forget
from .retention import USER_CONFIRMED_CONFIDENCE

if TYPE_CHECKING:
    from ..parts import Parts


def pin(store: Parts, memory_id: str, *, priority: str | None = None, make_global: bool = False,
        unpin: bool = False) -> Memory:
    """Confirm a memory as the user's: pinned (or unpinned with unpin=True), its confidence raised to the
    user-confirmed level, priority set when given, and made global (true in every project) with make_global.
    Returns the memory as it is now."""
    memory = store.memories.latest_version(memory_id)
    if priority is not None:
        check_choice("priority", priority, PRIORITIES)
    now = store.now()
    with store.transaction() as conn:
        memories.pin(conn, memory.id, pinned=not unpin, priority=priority, confidence=USER_CONFIRMED_CONFIDENCE,
                     now=now)
        if make_global and memory.project is not None:
            # the vectors are partitioned by project: they are made again by the next embedding pass
            vector_rows.delete(conn, [memory.id])
            memories.make_global(conn, memory.id)
        index_outbox.queue(conn, [memory.id], now)
        audit.append(conn, "unpin" if unpin else "pin", memory.id, None if make_global else memory.project,
                     {"priority": priority or memory.priority, "global": make_global or memory.project is None,
                      "source": memory.source}, at=now)
    store.indexer.index_soon()
    if make_global:
        store.backfill.prepare()
    return store.memories.get(memory.id)


def set_priority(store: Parts, memory_id: str, priority: str) -> Memory:
    """Set a memory's priority (P0 never decays, P2 may expire) and nothing else: the pin stays as it is. The user
    decided, so its confidence is raised to the user-confirmed level, as `pin` does. Returns the memory as it is now."""
    check_choice("priority", priority, PRIORITIES)
    memory = store.memories.latest_version(memory_id)
    now = store.now()
    with store.transaction() as conn:
        memories.set_priority(conn, memory.id, priority, USER_CONFIRMED_CONFIDENCE, now)
        audit.append(conn, "priority", memory.id, memory.project,
                     {"from": memory.priority, "to": priority, "source": memory.source}, at=now)
    return store.memories.get(memory.id)


def quarantined(store: Parts, *, all_projects: bool = False) -> list[Memory]:
    """The quarantined memories of the store's project (and global ones), or of every project; newest first."""
    return [Memory.from_row(row) for row in memory_reads.quarantined(store.conn, store.project, all_projects)]


def release(store: Parts, memory_id: str) -> Memory:
    """Let a quarantined memory be searched and injected again (the user has read it and trusts it)."""
    memory = _quarantined(store, memory_id)
    now = store.now()
    with store.transaction() as conn:
        memories.release(conn, memory.id, now)
        index_outbox.queue(conn, [memory.id], now)
        audit.append(conn, "release", memory.id, memory.project, {"was": memory.quarantined}, at=now)
    store.indexer.index_soon()
    return store.memories.get(memory.id)


def forget_quarantined(store: Parts, memory_id: str) -> Any:
    """Forget a quarantined memory (every version of it); see `lifecycle.forget.forget`."""
    memory = _quarantined(store, memory_id)
    return forget(store, ForgetRequest(ids=[memory.id], reason="forgotten from quarantine"))


def _quarantined(store: Parts, memory_id: str) -> Memory:
    memory = store.memories.get(memory_id)
    if memory.quarantined is None:
        raise InvalidInput(f"{memory_id} is not quarantined: `agentmem forget {memory_id}` forgets any memory")
    return memory
