"""The append-only audit log, as a keyed hash chain that catches tampering.

Rows record what happened to which memory, when and why, never the memory's content; a row about a memory binds
that memory's content hash as it was at that moment. Each row carries the HMAC-SHA256 of its fields and of the
previous row's hash, under a key that lives outside the database (`<database>.audit-key`, 0600, created on first
use): without the key nobody can edit a row and recompute the chain. The last row's seq and hash are also written
outside the database after each commit (`<database>.audit-head`, 0600; once at the end of a `batched()` block, such
as a worker pass), so removing the last rows, or all of them, is noticed too. `verify` checks all of this, plus
that the memories' content still matches their hashes.

A row about a memory also binds the memory's trust state after the change (scheme `hmac-sha256+state`,
db/audit_state.py): source, project, pin, priority, quarantine, expiry, latest version, ... or its absence once
forgotten. `verify` replays the chain and compares the memories table with it, so a trust column changed, a memory
inserted or deleted outside agentmem, or the audit rows of existing memories removed, are reported. Migration
`m016_audit_state` sealed the state of every memory of an existing home once (`seal_all`, a `seal` row each).

Rows written before the key existed (scheme `sha256`, an unkeyed chain) are verified as they are; the first keyed
row binds the last of them, so they cannot be rewritten afterwards either. Rows of the first keyed scheme
(`hmac-sha256`, content hash only) are verified as they are too. See docs/security.md.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import audit_state
from .connection import Connection, OperationalError, after_commit
from .pausepoint import pause

GENESIS = "0" * 64
STATED, KEYED, UNKEYED = "hmac-sha256+state", "hmac-sha256", "sha256"
SEALING_MIGRATION = "m016_audit_state"  # since it ran, every memory has a row that bound its state
TRIGGERS = {"audit_no_update": "BEFORE UPDATE ON audit", "audit_no_delete": "BEFORE DELETE ON audit"}
_KEYS: dict[str, bytes] = {}


_FILES: weakref.WeakKeyDictionary[Connection, Path | None] = weakref.WeakKeyDictionary()


def database_file(conn: Connection) -> Path | None:
    """The file of the connection's main database (None for an in-memory one), looked up once per connection: a
    sweep appends a row for each of thousands of memories it removes."""
    try:
        return _FILES[conn]
    except (KeyError, TypeError):
        pass
    found = None
    for _, name, path in conn.execute("PRAGMA database_list"):
        if name == "main":
            found = Path(path) if path else None
            break
    try:
        _FILES[conn] = found
    except TypeError:  # a connection class without weak references
        pass
    return found


def key_path(database: Path) -> Path:
    return Path(f"{database}.audit-key")


def head_path(database: Path) -> Path:
    return Path(f"{database}.audit-head")


def _write_private(path: Path, text: str, *, exclusive: bool = False, sync: bool = True) -> None:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        if sync:
            os.fsync(out.fileno())


_batch = threading.local()  # per thread: the depth of `batched()` and the heads it holds back


@contextmanager
def batched() -> Iterator[None]:
    """Within this block, this thread's commits record the chain's head outside the database once, at the end,
    instead of after each commit (a worker pass commits once per observation). Until then the file lags behind
    the database, which `verify` accepts: the head is a lower bound of the rows that must be there."""
    _batch.depth = getattr(_batch, "depth", 0) + 1
    if _batch.depth == 1:
        _batch.heads = {}
    try:
        yield
    finally:
        _batch.depth -= 1
        if _batch.depth == 0:
            heads, _batch.heads = _batch.heads, {}
            for database, head in heads.items():
                write_head(Path(database), head)


def audit_key(database: Path, *, create: bool = True) -> bytes | None:
    """The chain's key, read from its file (created with 32 random bytes when missing and `create`)."""
    cached = _KEYS.get(str(database))
    if cached is not None:
        return cached
    path = key_path(database)
    if not path.exists() and create:
        try:
            _write_private(path, secrets.token_hex(32) + "\n", exclusive=True)
        except FileExistsError:  # another process made it meanwhile
            pass
    try:
        key = bytes.fromhex(path.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    if len(key) < 16:
        return None
    _KEYS[str(database)] = key
    return key


def _payload(prev_hash: str, at: float, action: str, memory_id: str | None, project: str | None, detail: str,
             content_hash: str | None) -> bytes:
    return json.dumps([prev_hash, repr(at), action, memory_id, project, detail, content_hash],
                      ensure_ascii=False).encode("utf-8")


def _unkeyed_hash(prev_hash: str, at: float, action: str, memory_id: str | None, project: str | None,
                  detail: str) -> str:
    payload = json.dumps([prev_hash, repr(at), action, memory_id, project, detail], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _keyed_hash(key: bytes, *fields: Any) -> str:
    return hmac.new(key, _payload(*fields), hashlib.sha256).hexdigest()


def _stated_hash(key: bytes, prev_hash: str, at: float, action: str, memory_id: str | None, project: str | None,
                 detail: str, content_hash: str | None, state: str | None) -> str:
    payload = json.dumps([prev_hash, repr(at), action, memory_id, project, detail, content_hash, state],
                         ensure_ascii=False).encode("utf-8")
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def append(conn: Connection, action: str, memory_id: str | None = None, project: str | None = None,
           detail: dict[str, Any] | None = None, at: float | None = None) -> None:
    """Append one audit row; call inside the write transaction that made the change, after it. The row binds the
    memory's state as the change left it (or its absence); the head file is updated once the transaction commits."""
    at = time.time() if at is None else at
    detail_json = json.dumps(detail or {}, sort_keys=True, ensure_ascii=False)
    row = conn.execute("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    prev_hash = row[0] if row else GENESIS
    database = database_file(conn)
    key = audit_key(database) if database is not None else None
    state = bound = None
    if key is None:  # an in-memory database, or a key file that cannot be written: the unkeyed chain
        scheme, digest = UNKEYED, _unkeyed_hash(prev_hash, at, action, memory_id, project, detail_json)
    else:
        if memory_id is not None:
            state, bound = audit_state.state_of(conn, memory_id)
        scheme, digest = STATED, _stated_hash(key, prev_hash, at, action, memory_id, project, detail_json, bound,
                                              state)
    seq = conn.execute(
        "INSERT INTO audit (at, action, memory_id, project, detail, prev_hash, hash, content_hash, scheme, state) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
        (at, action, memory_id, project, detail_json, prev_hash, digest, bound, scheme, state)).fetchone()[0]
    if key is not None:
        _record_head(conn, database, {"seq": seq, "hash": digest})
    pause(f"audit:{action}")


def _record_head(conn: Connection, database: Path, head: dict[str, Any]) -> None:
    """Write the head file once the transaction commits: once per transaction, with its last row."""
    if conn.in_transaction:
        after_commit(conn, lambda: write_head(database, head), key=("audit-head", str(database)))
    else:
        write_head(database, head)


def seal_all(conn: Connection, reason: str) -> int:
    """Bind the state of every memory as it is now, one `seal` row each, then a summary row (inside the caller's
    write transaction): the upgrade to state-binding rows, once. Returns how many memories were sealed; nothing is
    written for a database without memories or without a key."""
    rows = conn.execute(f"SELECT id, {audit_state.COLUMNS} FROM memories ORDER BY rowid").fetchall()
    database = database_file(conn)
    key = audit_key(database) if rows and database is not None else None
    if key is None:
        return 0
    last = conn.execute("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    prev_hash, at = (last[0] if last else GENESIS), time.time()
    detail = json.dumps({"reason": reason}, sort_keys=True, ensure_ascii=False)
    values = []
    for row in rows:
        state = audit_state.encode(row)
        digest = _stated_hash(key, prev_hash, at, "seal", row["id"], row["project"], detail, row["content_hash"],
                              state)
        values.append((at, "seal", row["id"], row["project"], detail, prev_hash, digest, row["content_hash"],
                       STATED, state))
        prev_hash = digest
    conn.executemany("INSERT INTO audit (at, action, memory_id, project, detail, prev_hash, hash, content_hash, "
                     "scheme, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
    append(conn, "seal", None, None, {"reason": reason, "memories": len(rows)}, at=at)
    return len(rows)


def last_of(conn: Connection, memory_id: str) -> Any:
    """(action, detail) of the memory's newest audit row, or None."""
    return conn.execute("SELECT action, detail FROM audit WHERE memory_id = ? ORDER BY seq DESC LIMIT 1",
                        (memory_id,)).fetchone()


def read_head(database: Path) -> dict[str, Any] | None:
    try:
        head = json.loads(head_path(database).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return head if isinstance(head, dict) and isinstance(head.get("seq"), int) else None


def write_head(database: Path, head: dict[str, Any]) -> None:
    """Record the chain's last row outside the database, unless a later row is recorded already (two processes
    commit in one order and may write their heads in the other)."""
    if getattr(_batch, "depth", 0) and head_path(database).exists():  # the first head is written at once
        held = _batch.heads.get(str(database))
        if held is None or held["seq"] < head["seq"]:
            _batch.heads[str(database)] = head
        return
    path = head_path(database)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock, last writer wins
        fcntl = None
    try:
        fd = os.open(f"{path}.lock", os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError:
        return
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        current = read_head(database)
        if current is None or current["seq"] < head["seq"]:
            temporary = Path(f"{path}.{os.getpid()}.tmp")
            # no fsync: the database's own commits are not synced either (WAL, synchronous=NORMAL), and a head
            # synced ahead of a database that lost its last commits in a power cut would read as rows removed
            _write_private(temporary, json.dumps(head) + "\n", sync=False)
            os.replace(temporary, path)
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclass(frozen=True)
class AuditVerdict:
    ok: bool
    rows: int
    first_bad_seq: int | None = None
    problem: str = ""
    keyed_rows: int = 0
    memory_problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if not self.ok:
            where = f"row {self.first_bad_seq}: " if self.first_bad_seq is not None else ""
            return f"{where}{self.problem}"
        legacy = self.rows - self.keyed_rows
        return f"{self.rows} rows" + (f" ({legacy} from before the keyed chain)" if legacy else "")


def verify(conn: Connection) -> AuditVerdict:
    """Recompute the chain from the first row; check its end against the head file, and the memories table against
    what the chain bound (db/audit_state.py): every memory's content against its hash, its trust state against the
    last row about it, and that the memories it wrote, and only those, are there. The first problem is reported."""
    database = database_file(conn)
    key = audit_key(database, create=False) if database is not None else None
    prev_hash, count, keyed, last_seq = GENESIS, 0, 0, 0
    bound: dict[str, audit_state.Bound] = {}
    for seq, at, action, memory_id, project, detail, stored_prev, stored_hash, content, scheme, state in conn.execute(
        "SELECT seq, at, action, memory_id, project, detail, prev_hash, hash, content_hash, scheme, state FROM audit "
        "ORDER BY seq"
    ):
        count += 1
        if stored_prev != prev_hash or seq != last_seq + 1:
            return AuditVerdict(False, count, seq, "prev_hash does not match the previous row: a row before it was "
                                "removed or rewritten")
        if scheme in (KEYED, STATED):
            if key is None:
                return AuditVerdict(False, count, seq, f"the chain's key {key_path(database)} is missing or "
                                    "unreadable: the keyed rows cannot be checked")
            expected = (_stated_hash(key, prev_hash, at, action, memory_id, project, detail, content, state)
                        if scheme == STATED else _keyed_hash(key, prev_hash, at, action, memory_id, project, detail,
                                                            content))
            keyed += 1
        else:
            if keyed:
                return AuditVerdict(False, count, seq, "an unkeyed row after keyed ones: the row was forged")
            expected = _unkeyed_hash(prev_hash, at, action, memory_id, project, detail)
        if not hmac.compare_digest(expected, stored_hash):
            return AuditVerdict(False, count, seq, "row content does not match its hash: the row was edited")
        if memory_id is not None and scheme != UNKEYED:
            bound[memory_id] = audit_state.Bound(seq, content, state if scheme == STATED else audit_state.UNKNOWN)
        prev_hash, last_seq = stored_hash, seq
    problem = _check_head(database, key, last_seq, prev_hash)
    if problem:
        return AuditVerdict(False, count, None, problem, keyed)
    memory_problems = audit_state.check(conn, bound, sealed=key is not None and _sealed(conn))
    if memory_problems:
        if count == 0:
            memory_problems.insert(0, "the audit log is empty but the database holds memories: its rows were "
                                   "removed (or the memories inserted) outside agentmem")
        return AuditVerdict(False, count, None, memory_problems[0], keyed, memory_problems)
    return AuditVerdict(True, count, keyed_rows=keyed)


def _sealed(conn: Connection) -> bool:
    """True once migration m016 has sealed the memories: from then on every memory has an audit row."""
    try:
        return conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (SEALING_MIGRATION,)).fetchone() \
            is not None
    except OperationalError:  # no migrations table: not a database agentmem made
        return False


def _check_head(database: Path | None, key: bytes | None, last_seq: int, last_hash: str) -> str:
    if database is None or key is None:
        return ""
    head = read_head(database)
    if head is None:
        if last_seq == 0:
            return ""
        return (f"the chain's head file {head_path(database)} is missing or unreadable, so removed rows at the "
                "end could not be noticed")
    if head["seq"] > last_seq:
        return (f"the audit log ends at row {last_seq} but row {head['seq']} was written: "
                f"{head['seq'] - last_seq} rows at its end were removed")
    if head["seq"] == last_seq and head.get("hash") != last_hash:
        return f"row {last_seq} is not the row that was written last (its hash differs from the head file)"
    return ""


def check_triggers(conn: Connection) -> list[str]:
    """The triggers that make the audit table append-only that are missing or changed."""
    present = {name: sql or "" for name, sql in conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit'")}
    problems = []
    for name, clause in TRIGGERS.items():
        sql = " ".join(present.get(name, "").split())
        if clause not in sql or "RAISE(ABORT" not in sql:
            problems.append(f"trigger {name} is missing or changed: the audit log can be edited")
    return problems
