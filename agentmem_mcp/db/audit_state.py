"""A memory's trust state, as the audit chain binds it, and the check of the memories table against the chain.

Every audit row about a memory (save, supersede, pin, release, forget, import, ...) binds the memory's state right
after the change: who wrote it (`source`), where it applies (`project`), whether it is pinned, its priority,
quarantine, expiry (`forget_after`), whether it is the latest version, its place in its version chain, importance,
key, and the hashes of its title and content; or, for a memory that is gone, its absence. Texts are bound by their
hash: the audit log keeps no memory text, since a forgotten memory's words must not outlive it there.

Replaying the chain gives, for each memory id, the state its last row bound. `check` compares the table with that:
a column changed outside agentmem (`UPDATE memories SET pinned = 1`), a row nobody audited (an inserted memory), a
row the chain saw written but that is gone (a deleted memory), or one the chain saw forgotten that is back. Columns
that change on every use without an audit row (confidence, strength, access counts, vectors) are not bound.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .connection import Connection

STATE = ("project", "tier", "type", "source", "pinned", "priority", "quarantined", "forget_after", "is_latest",
         "version", "root_id", "parent_id", "valid_to", "importance", "key", "title", "content_hash")
HASHED = frozenset({"quarantined", "key", "title"})  # bound by their hash, never as text
COLUMNS = ", ".join(STATE)
UNKNOWN = "?"  # bound by a row of the older keyed scheme: its content hash only


@dataclass(frozen=True)
class Bound:
    """What the chain's last row about a memory says: its row number, its content hash, and its state (a JSON
    object; None: the memory is gone; UNKNOWN: a row of the older scheme, which bound the content hash only)."""
    seq: int
    content_hash: str | None
    state: str | None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def encode(row: Mapping[str, Any] | Any) -> str:
    """The state of a memory row (with the STATE columns) as the chain binds it."""
    state = {}
    for name in STATE:
        value = row[name]
        state[name] = _digest(str(value)) if name in HASHED and value is not None else value
    return json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def state_of(conn: Connection, memory_id: str) -> tuple[str | None, str | None]:
    """The memory's state now (`encode`) and its content hash, or (None, None) when there is no such row."""
    row = conn.execute(f"SELECT {COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return (None, None) if row is None else (encode(row), row["content_hash"])


def check(conn: Connection, bound: Mapping[str, Bound], sealed: bool, limit: int = 20) -> list[str]:
    """What in the memories table differs from what the chain bound (at most `limit` problems, first ones first).
    sealed: every memory must have been bound (the chain is keyed and binds states since the upgrade that sealed
    the table): a memory it never saw was written outside agentmem."""
    from .hashing import content_hash

    problems: list[str] = []
    present: set[str] = set()
    for row in conn.execute(f"SELECT id, content, {COLUMNS} FROM memories ORDER BY rowid"):
        memory_id = row["id"]
        present.add(memory_id)
        if len(problems) >= limit:
            continue
        if content_hash(row["content"]) != row["content_hash"]:
            problems.append(f"memory {memory_id}: its content does not match its content_hash (edited in place)")
            continue
        said = bound.get(memory_id)
        if said is None:
            if sealed:
                problems.append(f"memory {memory_id}: no audit row wrote it (inserted outside agentmem, or its audit "
                                "rows were removed)")
        elif said.state == UNKNOWN:
            if said.content_hash not in (None, row["content_hash"]):
                problems.append(f"memory {memory_id}: its content and hash differ from what its audit row bound "
                                "(edited in place)")
        elif said.state is None:
            problems.append(f"memory {memory_id}: audit row {said.seq} removed it, but it is back in the table "
                            "(restored outside agentmem)")
        elif said.content_hash not in (None, row["content_hash"]):
            problems.append(f"memory {memory_id}: its content and hash differ from what its audit row bound "
                            "(edited in place)")
        elif changed := _changes(said.state, encode(row)):
            problems.append(f"memory {memory_id}: {changed} outside agentmem (audit row {said.seq} bound the "
                            "first values)")
    for memory_id, said in bound.items():
        if len(problems) >= limit:
            break
        if said.state is not None and said.state != UNKNOWN and memory_id not in present:
            problems.append(f"memory {memory_id}: audit row {said.seq} wrote it, but it is gone from the table "
                            "(deleted outside agentmem)")
    return problems


def _changes(was: str, now: str) -> str:
    """The columns that differ, with what the chain bound first: "source agent -> user, pinned 0 -> 1 changed"."""
    before, after = json.loads(was), json.loads(now)
    said = []
    for name in STATE:
        if before.get(name) != after.get(name):
            shown = [("(text)" if name in HASHED and v is not None else v) for v in (before.get(name), after.get(name))]
            said.append(f"{name} {shown[0]} -> {shown[1]}")
    return f"{', '.join(said)} changed" if said else ""
