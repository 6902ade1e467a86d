"""A damaged database: checking it, and saving what is readable into a new file beside it.

`check` runs SQLite's integrity check. `recover` never writes, moves or deletes the user's file: it opens it
read-only, makes a new database beside it with agentmem's schema, and copies every row it can read, table by
table in rowid order; a damaged page is stepped over (the next readable rowid is found by seeking ever further
ahead), and what it held is counted as lost. The vector table is not copied (`agentmem reindex` makes it again
from the chunks); the audit key and head files are copied beside the new file so its audit chain verifies. The
readable memories are also written as an `agentmem export` file (JSON lines) that `agentmem import` reads.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import sqlean

from ..files import make_private, why_unwritable
from .audit import head_path, key_path
from .connection import DatabaseError, connect
from .migrations import migrate

BATCH = 500
SKIPPED_TABLES = ("schema_migrations", "sqlite_sequence")
_DMS_BYTE = 128  # SQLite's "dead man switch" byte in the -shm file: every open connection holds a read lock on it
_FLOCK = "hhqqi4x"  # struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid


def holder(path: Path) -> int | None:
    """The id of another process that has the database at `path` open (SQLite's read lock on the -shm file's
    dead-man-switch byte), or None. While one does, what this process reads of a WAL cut short or replaced under it
    is not what the files hold once it has closed them, so damage cannot be judged yet."""
    try:
        fd = os.open(f"{path}-shm", os.O_RDONLY)
    except OSError:
        return None
    try:
        asked = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, _DMS_BYTE, 1, 0)
        kind, _, _, _, pid = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, asked))
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if kind == fcntl.F_UNLCK else pid


def describe_holder(pid: int) -> str:
    """"process N" and what it is, from its command line: agentmem's shared process, another agentmem command, or
    the program's name."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        command = ""
    if "agentmem_mcp.runtime.shared_process" in command:
        return f"process {pid}, agentmem's shared process (it exits 5 s after its last session has gone)"
    if "agentmem_mcp" in command or command.split(" ", 1)[0].endswith("/agentmem"):
        return f"process {pid}, an agentmem command"
    name = command.split(" ", 1)[0].rsplit("/", 1)[-1]
    return f"process {pid} ({name})" if name else f"process {pid}"


def check(path: Path) -> str | None:
    """What SQLite's integrity check finds wrong with the database at `path` (its first problems), or None."""
    try:
        conn = _open_read_only(path)
        try:
            rows = [row[0] for row in conn.execute("PRAGMA integrity_check(5)")]
        finally:
            conn.close()
    except DatabaseError as exc:
        return str(exc)
    return None if rows == ["ok"] else "; ".join(rows)


@dataclass
class Recovery:
    """Where `recover` wrote, and what it copied (rows per table) and lost (tables unreadable, rows skipped)."""

    database: Path
    export: Path
    copied: dict[str, int] = field(default_factory=dict)
    lost: dict[str, str] = field(default_factory=dict)
    memories: int = 0

    def describe(self) -> str:
        rows = sum(self.copied.values())
        lost = "; ".join(f"{table}: {what}" for table, what in self.lost.items()) or "nothing found damaged"
        return (f"copied {rows} rows ({self.memories} memories) into {self.database}; exported the memories to "
                f"{self.export}; lost: {lost}")


def recover(path: Path, now: float | None = None) -> Recovery:
    """Copy what is readable of the database at `path` into `<name>.recovered-<time>.db` beside it (and export its
    memories to `<name>.recovered-<time>.jsonl`); the damaged file is only read."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    target = path.with_name(f"{path.stem}.recovered-{stamp}.db")
    if target.exists():
        raise FileExistsError(f"{target} exists already; wait a second and run it again")
    report = Recovery(database=target, export=target.with_suffix(".jsonl"))
    source = _open_read_only(path)
    out = connect(target, load_vec=False)
    try:
        migrate(out)
        tables = _tables(out)
        out.execute("PRAGMA foreign_keys = OFF")
        for table, columns in tables.items():
            _copy_table(source, out, table, columns, report)
        _write_export(out, report)
    finally:
        source.close()
        out.close()
    for copy_from, copy_to in ((key_path(path), key_path(target)), (head_path(path), head_path(target))):
        if copy_from.exists():
            shutil.copyfile(copy_from, copy_to)
            make_private(copy_to)
    make_private(target)
    return report


def _open_read_only(path: Path) -> sqlean.Connection:
    """The database opened read-only (its WAL, if any, is read; nothing is written to the folder but SQLite's
    shared-memory file; in a folder that cannot be written, the database file alone is read, as immutable); a
    database SQLite cannot open at all raises DatabaseError."""
    if not path.is_file():
        raise DatabaseError(f"{path} does not exist")
    immutable = "&immutable=1" if why_unwritable(path.parent) else ""  # no shared-memory file can be made there
    conn = sqlean.connect(f"file:{path}?mode=ro{immutable}", uri=True, isolation_level=None)
    conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    return conn


def _tables(conn: sqlean.Connection) -> dict[str, list[str]]:
    """agentmem's ordinary tables (not virtual tables, their shadow tables, nor SQLite's), with their columns."""
    names = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY rowid")]
    virtual = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'")]
    return {name: [row[1] for row in conn.execute(f'PRAGMA table_info("{name}")')] for name in names
            if name not in SKIPPED_TABLES and not any(name.startswith(f"{v}_") for v in virtual)}


def _copy_table(source: sqlean.Connection, out: sqlean.Connection, table: str, columns: list[str],
                report: Recovery) -> None:
    try:
        present = {row[1] for row in source.execute(f'PRAGMA table_info("{table}")')}
        rowid = not source.execute("SELECT 1 FROM sqlite_master WHERE name = ? AND sql LIKE '%WITHOUT ROWID%'",
                                   (table,)).fetchone()
    except DatabaseError as exc:
        report.lost[table] = f"unreadable ({exc})"
        return
    shared = [c for c in columns if c in present]
    if not shared:
        return
    names = ", ".join(f'"{c}"' for c in shared)
    verb = "INSERT OR IGNORE" if table == "audit" else "INSERT OR REPLACE"  # the audit table is append-only
    insert = f'{verb} INTO "{table}" ({names}) VALUES ({", ".join("?" * len(shared))})'
    copied, skipped = 0, []
    out.execute("BEGIN")
    try:
        rows = _readable_rows(source, table, names, skipped) if rowid else _all_rows(source, table, names, skipped)
        for row in rows:
            out.execute(insert, tuple(row))
            copied += 1
        out.execute("COMMIT")
    except BaseException:
        out.execute("ROLLBACK")
        raise
    report.copied[table] = copied
    if skipped:
        report.lost[table] = ", ".join(skipped)
    if table == "memories":
        report.memories = copied


def _readable_rows(source: sqlean.Connection, table: str, names: str, skipped: list[str]) -> Iterator[tuple]:
    """The table's rows in rowid order, stepping over damaged pages (noted in `skipped` as rowid ranges)."""
    last = -(2 ** 63)
    while True:
        try:
            rows = source.execute(f'SELECT rowid, {names} FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT ?',
                                  (last, BATCH)).fetchall()
        except DatabaseError:
            rows = _one_by_one(source, table, names, last)
            if not rows:
                after = _next_readable(source, table, last)
                if after is None:
                    skipped.append(f"rows after rowid {last if last > -(2 ** 63) else 0} (unreadable)")
                    return
                skipped.append(f"rowids {last + 1}..{after - 1}" if last > -(2 ** 63) else f"rowids below {after}")
                last = after - 1
                continue
        if not rows:
            return
        for row in rows:
            yield tuple(row)[1:]
        last = rows[-1][0]


def _one_by_one(source: sqlean.Connection, table: str, names: str, last: int) -> list[tuple]:
    """The rows after `last` up to the first unreadable one."""
    rows: list[tuple] = []
    while len(rows) < BATCH:
        try:
            row = source.execute(f'SELECT rowid, {names} FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT 1',
                                 (rows[-1][0] if rows else last,)).fetchone()
        except DatabaseError:
            break
        if row is None:
            break
        rows.append(tuple(row))
    return rows


def _next_readable(source: sqlean.Connection, table: str, last: int) -> int | None:
    """The first readable rowid some way after `last` (seeking 1, 2, 4, ... rowids further), or None."""
    start = max(last, 0)
    step = 1
    while start + step < 2 ** 62:
        try:
            row = source.execute(f'SELECT rowid FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT 1',
                                 (start + step,)).fetchone()
            return None if row is None else row[0]
        except DatabaseError:
            step *= 2
    return None


def _all_rows(source: sqlean.Connection, table: str, names: str, skipped: list[str]) -> Iterator[tuple]:
    """A table without rowids, read whole (a damaged one is lost past its first bad page)."""
    cursor = source.execute(f'SELECT {names} FROM "{table}"')
    while True:
        try:
            row = cursor.fetchone()
        except DatabaseError as exc:
            skipped.append(f"the rest ({exc})")
            return
        if row is None:
            return
        yield tuple(row)


def _write_export(conn: sqlean.Connection, report: Recovery) -> None:
    """The recovered memories and links as `agentmem export` writes them (see upkeep/transfer.py)."""
    from ..models import EXPORT_FORMAT as FORMAT
    from ..models import Memory

    old = os.umask(0o077)
    try:
        with open(report.export, "w", encoding="utf-8") as out:
            out.write(json.dumps({"kind": "header", "format": FORMAT}) + "\n")
            for row in conn.execute("SELECT * FROM memories ORDER BY root_id, version"):
                out.write(json.dumps({"kind": "memory", **Memory.from_row(row).to_dict()}, ensure_ascii=False) + "\n")
            for row in conn.execute("SELECT src_id, dst_id, relation, created_at FROM memory_links ORDER BY src_id"):
                out.write(json.dumps({"kind": "link", **dict(row)}) + "\n")
    finally:
        os.umask(old)
