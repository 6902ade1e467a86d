"""Opening the SQLite database: sqlean with sqlite-vec loaded, WAL, busy timeout, private files.

The database's folder is created 0700 when missing; an existing folder agentmem did not create keeps its mode
(see files.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlean

from ..files import ensure_private_dir, make_private

Connection = sqlean.Connection
DatabaseError = sqlean.DatabaseError
OperationalError = sqlean.OperationalError
IntegrityError = sqlean.IntegrityError


class VectorExtensionError(RuntimeError):
    """sqlite-vec could not be loaded into the connection."""


def vec_extension_path() -> str:
    """Path of the sqlite-vec loadable library, found without importing sqlite_vec (slow import)."""
    import importlib.util

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.origin:
        raise VectorExtensionError("the sqlite-vec package is not installed: pip install sqlite-vec")
    return os.path.join(os.path.dirname(spec.origin), "vec0")


def connect(path: Path, *, busy_timeout_ms: int = 10000, load_vec: bool = True, secure_delete: bool = True
            ) -> Connection:
    """Open the database at `path` in WAL mode with a busy timeout and SQLite's secure_delete on (what a write
    deletes or replaces is zeroed on disk; secure_delete=False only for measuring what that costs).

    The connection is in autocommit mode (isolation_level=None); writes go through `write_transaction`,
    which takes the write lock up front with BEGIN IMMEDIATE.
    """
    ensure_private_dir(path.parent)
    old_umask = os.umask(0o077)
    try:
        conn = sqlean.connect(str(path), timeout=busy_timeout_ms / 1000, isolation_level=None,
                              check_same_thread=False)
    finally:
        os.umask(old_umask)
    conn.row_factory = sqlean.Row
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    # Deleted rows are overwritten with zeros, so forgotten text does not linger in free pages (docs/security.md)
    conn.execute(f"PRAGMA secure_delete = {'ON' if secure_delete else 'OFF'}")
    if load_vec:
        load_vector_extension(conn)
    make_private(path)
    return conn


def load_vector_extension(conn: Connection) -> None:
    try:
        conn.enable_load_extension(True)
        conn.load_extension(vec_extension_path())
        conn.enable_load_extension(False)
    except (AttributeError, DatabaseError) as exc:
        raise VectorExtensionError(
            f"cannot load sqlite-vec into SQLite ({exc}); reinstall with `pip install --force-reinstall "
            "sqlite-vec sqlean-py`") from exc


_AFTER_COMMIT: dict[int, list[Callable[[], None]]] = {}


def after_commit(conn: Connection, action: Callable[[], None]) -> None:
    """Run `action` once the write transaction open on `conn` commits (dropped if it rolls back)."""
    _AFTER_COMMIT.setdefault(id(conn), []).append(action)


def _run_after_commit(conn: Connection, committed: bool) -> None:
    for action in _AFTER_COMMIT.pop(id(conn), ()):
        if committed:
            action()


@contextmanager
def write_transaction(conn: Connection) -> Iterator[Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolling back on any error. A lock held by another process past the
    busy timeout raises StoreBusy, a full disk StoreFull (nothing was written in either case)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except OperationalError as exc:
        if "locked" not in str(exc) and "busy" not in str(exc):
            raise
        from ..models import StoreBusy

        raise StoreBusy("the memory database is locked by another process (a long write or a stuck program); "
                        "nothing was saved, retry in a moment. `agentmem doctor` shows who holds it") from exc
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException as exc:
        _run_after_commit(conn, False)
        # A failed COMMIT may leave the transaction open (and the write lock held), or SQLite may already
        # have rolled it back (SQLITE_FULL, SQLITE_IOERR): roll back only what is still open.
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except DatabaseError:
                pass
        if isinstance(exc, OperationalError) and "full" in str(exc):
            from ..models import StoreFull

            raise StoreFull("the disk holding the memory database is full; nothing was saved. Free some space, "
                            "then retry") from exc
        raise
    _run_after_commit(conn, True)
