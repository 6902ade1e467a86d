"""The append-only audit log: each row carries the hash of the previous one, so edits are detectable.

Rows record what happened to which memory, when and why, never the memory's content.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from ..pausepoint import pause
from .connection import Connection

GENESIS = "0" * 64


def _row_hash(prev_hash: str, at: float, action: str, memory_id: str | None, project: str | None,
              detail: str) -> str:
    payload = json.dumps([prev_hash, repr(at), action, memory_id, project, detail], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def append(conn: Connection, action: str, memory_id: str | None = None, project: str | None = None,
           detail: dict[str, Any] | None = None, at: float | None = None) -> None:
    """Append one audit row; call inside the write transaction that made the change."""
    at = time.time() if at is None else at
    detail_json = json.dumps(detail or {}, sort_keys=True, ensure_ascii=False)
    row = conn.execute("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    prev_hash = row[0] if row else GENESIS
    conn.execute(
        "INSERT INTO audit (at, action, memory_id, project, detail, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (at, action, memory_id, project, detail_json, prev_hash,
         _row_hash(prev_hash, at, action, memory_id, project, detail_json)),
    )
    pause(f"audit:{action}")


@dataclass(frozen=True)
class AuditVerdict:
    ok: bool
    rows: int
    first_bad_seq: int | None = None
    problem: str = ""


def verify(conn: Connection) -> AuditVerdict:
    """Recompute the hash chain from the first row; report the first row that does not match."""
    prev_hash = GENESIS
    count = 0
    for seq, at, action, memory_id, project, detail, stored_prev, stored_hash in conn.execute(
        "SELECT seq, at, action, memory_id, project, detail, prev_hash, hash FROM audit ORDER BY seq"
    ):
        count += 1
        if stored_prev != prev_hash:
            return AuditVerdict(False, count, seq, "prev_hash does not match the previous row: a row was removed")
        if _row_hash(prev_hash, at, action, memory_id, project, detail) != stored_hash:
            return AuditVerdict(False, count, seq, "row content does not match its hash: the row was edited")
        prev_hash = stored_hash
    return AuditVerdict(True, count)
