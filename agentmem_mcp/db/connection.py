"""Opening the SQLite database: sqlean with sqlite-vec loaded, WAL, busy timeout, private files.

The database's folder is created 0700 when missing; an existing folder agentmem did not create keeps its mode
(see files.py)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import sqlean

from ..files import ensure_private_dir, make_private, why_unwritable
from .ownership import first_look, refusal

DatabaseError = sqlean.DatabaseError
OperationalError = sqlean.OperationalError
IntegrityError = sqlean.IntegrityError


def is_damage(exc: BaseException) -> bool:
    """Whether an error says the database's files cannot be used (damaged, cut short, replaced, not a database),
    rather than a lock, a constraint or a mistake in a statement: retrying or going on with other rows won't help."""
    if not isinstance(exc, DatabaseError) or isinstance(exc, IntegrityError):
        return False
    text = str(exc)
    return not isinstance(exc, OperationalError) or any(
        sign in text for sign in ("disk I/O error", "malformed", "not a database", "vtable constructor failed"))



def read_only_reason(path: Path) -> str | None:
    """Why an existing database at `path` can only be read (its file or its folder cannot be written), said with
    the real cause and what to do; None when it can be written or does not exist yet (then opening creates it)."""
    if not path.exists():
        return None
    for target in (path, path.parent):
        why = why_unwritable(target)
        if why is None:
            continue
        what = "the database" if target == path else "the folder of the database"
        if "read-only filesystem" in why:
            return (f"{what} {target} {why}: remount it read-write, or point AGENTMEM_HOME (or AGENTMEM_DB) at a "
                    "writable place; reading works meanwhile")
        return (f"{what} {target} {why}: `chmod u+w {target}` if it is yours (or `chown` it to you); reading works "
                "meanwhile")
    return None


def marks(values: Sequence[object]) -> str:
    """The placeholders of an `IN (...)` list of these values: "?,?,?"."""
    return ",".join("?" * len(values))


class Connection(sqlean.Connection):
    """A sqlean connection that may carry the `FileWatch` of the process that opened it (see `watch_files`), and,
    opened read-only, why the database cannot be written (`read_only`)."""

    watch: FileWatch | None = None
    read_only: str | None = None


FileId = tuple[int, int] | None  # (device, inode) of a file, None: missing


def _file_id(path: str) -> FileId:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


class FileWatch:
    """The database file, its WAL and its shared-memory index as this process opened them.

    While a process has the database open, SQLite keeps the same three files (it deletes the WAL only when the last
    connection closes). A WAL deleted or replaced under a running process makes SQLite go on writing into the old,
    unlinked file, which no other process sees and which is lost when this one exits; a replaced database file takes
    every later write with it. `check` notices either: the first time, if only the WAL changed, it copies what this
    process's WAL holds into the database file (a checkpoint, so nothing acknowledged is lost), logs one line, and
    from then on every write transaction on a watched connection raises StoreDamaged."""

    def __init__(self, database: Path) -> None:
        self.database = str(database)
        self.seen = self._ids()
        self.problem: str | None = None
        self._lock = threading.Lock()

    def _ids(self) -> tuple[FileId, FileId, FileId]:
        return _file_id(self.database), _file_id(self.database + "-wal"), _file_id(self.database + "-shm")

    def check(self, conn: Connection) -> None:
        """Raise StoreDamaged if the files changed since they were opened (now or before)."""
        if self.problem is None:
            with self._lock:
                self._look(conn)
        if self.problem is not None:
            from ..models import StoreDamaged

            raise StoreDamaged(f"nothing was saved: {self.problem}")

    def _look(self, conn: Connection) -> None:
        if self.problem is None:
            changed = {name: is_ for name, was, is_ in zip(("database", "write-ahead log", "shared-memory file"),
                                                            self.seen, self._ids()) if was is not None and was != is_}
            if not changed:
                return
            gone = ", ".join(f"{name} {'deleted' if is_ is None else 'replaced'}" for name, is_ in changed.items())
            kept = self._rescue(conn) if list(changed) == ["write-ahead log"] else ""
            self.problem = (f"the memory database's files changed under this agentmem process ({gone}: "
                            f"{self.database}){kept}. This process writes nothing more, so nothing is acknowledged "
                            "that would be lost: restart it (reconnect the MCP server), then run `agentmem doctor`")
            import logging  # not at the top: the hooks never need it (~6 ms)

            logging.getLogger("agentmem").error("%s", self.problem)

    def _rescue(self, conn: Connection) -> str:
        """Copy every page this process's (unlinked) WAL holds into the database file."""
        try:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except DatabaseError as exc:
            return f"; what it held could not be copied into the database file ({exc})"
        if busy:
            return "; what it held could not all be copied into the database file (another process was reading)"
        return "; everything saved before was copied into the database file"


def watch_files(conn: Connection, watch: FileWatch) -> None:
    """Make every write transaction on `conn` check `watch` first and after its commit."""
    conn.watch = watch


def checkpoint(conn: Connection, mode: str = "TRUNCATE", busy_timeout_ms: int | None = None) -> bool:
    """Copy the WAL into the database file (`PRAGMA wal_checkpoint(mode)`; TRUNCATE also empties the WAL file).
    busy_timeout_ms: how long to wait for other processes' readers and writers (the connection's own timeout
    otherwise). Returns whether it completed (False: another process was busy; the next checkpoint does it)."""
    if mode not in ("PASSIVE", "FULL", "RESTART", "TRUNCATE"):
        raise ValueError(f"unknown checkpoint mode {mode!r}")
    previous = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    if busy_timeout_ms is not None:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    try:
        busy, _, _ = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
    except OperationalError as exc:
        if "locked" not in str(exc) and "busy" not in str(exc):
            raise
        busy = 1
    finally:
        if busy_timeout_ms is not None:
            conn.execute(f"PRAGMA busy_timeout = {int(previous)}")
    return not busy


class VectorExtensionError(RuntimeError):
    """sqlite-vec could not be loaded into the connection."""


def vec_extension_path() -> str:
    """Path of the sqlite-vec loadable library, found without importing sqlite_vec (slow import)."""
    import importlib.util

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.origin:
        raise VectorExtensionError("the sqlite-vec package is not installed: pip install sqlite-vec")
    return os.path.join(os.path.dirname(spec.origin), "vec0")


def connect(path: Path, *, busy_timeout_ms: int = 10000, load_vec: bool = True, secure_delete: bool = True,
            read_only: str | None = None) -> Connection:
    """Open the database at `path` in WAL mode with a busy timeout and SQLite's secure_delete on (what a write
    deletes or replaces is zeroed on disk; secure_delete=False only for measuring what that costs).

    The connection is in autocommit mode (isolation_level=None); writes go through `write_transaction`,
    which takes the write lock up front with BEGIN IMMEDIATE. A database that is not agentmem's raises
    ForeignDatabaseError before anything in it changes (`ownership`).

    read_only: why the database cannot be written (`files.why_unwritable`); the connection then only reads (and
    `write_transaction` on it raises StoreReadOnly with that reason), and nothing on disk is created or changed.
    """
    if read_only is not None:
        conn = _connect_read_only(path, busy_timeout_ms, read_only)
    else:
        ensure_private_dir(path.parent)
        old_umask = os.umask(0o077)
        try:
            conn = sqlean.connect(str(path), timeout=busy_timeout_ms / 1000, isolation_level=None,
                                  check_same_thread=False, factory=Connection)
        finally:
            os.umask(old_umask)
    conn.row_factory = sqlean.Row
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    why = first_look(conn)
    if why is not None:  # another program's database: refused before its journal mode or file mode changes
        conn.close()
        raise refusal(path, why)
    if read_only is None and conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    # Deleted rows are overwritten with zeros, so forgotten text does not linger in free pages (docs/security.md)
    conn.execute(f"PRAGMA secure_delete = {'ON' if secure_delete else 'OFF'}")
    if load_vec:
        load_vector_extension(conn)
    if read_only is None:
        make_private(path)
    return conn


def _connect_read_only(path: Path, busy_timeout_ms: int, reason: str) -> Connection:
    """A connection that only reads. A WAL database needs its shared-memory file, which a folder that cannot be
    written cannot get: then the file is opened as immutable, which is safe on a read-only filesystem (nobody can
    change it) and, for a permission, reads what the database file holds (not a WAL another process still writes)."""
    uri = path.absolute().as_uri()
    for suffix in ("?mode=ro", "?mode=ro&immutable=1"):
        try:
            conn = sqlean.connect(uri + suffix, uri=True, timeout=busy_timeout_ms / 1000, isolation_level=None,
                                  check_same_thread=False, factory=Connection)
        except OperationalError:
            if suffix.endswith("immutable=1"):
                raise
            continue
        try:
            conn.execute("PRAGMA schema_version").fetchone()  # opening is lazy: this reads the file
        except OperationalError:
            conn.close()
            if suffix.endswith("immutable=1"):
                raise
            continue
        conn.read_only = reason
        return conn
    raise AssertionError("unreachable")


def load_vector_extension(conn: Connection) -> None:
    try:
        conn.enable_load_extension(True)
        conn.load_extension(vec_extension_path())
        conn.enable_load_extension(False)
    except (AttributeError, DatabaseError) as exc:
        raise VectorExtensionError(
            f"cannot load sqlite-vec into SQLite ({exc}); reinstall with `pip install --force-reinstall "
            "sqlite-vec sqlean-py`") from exc


_AFTER_COMMIT: dict[int, dict[object, Callable[[], None]]] = {}


def after_commit(conn: Connection, action: Callable[[], None], key: object = None) -> None:
    """Run `action` once the write transaction open on `conn` commits (dropped if it rolls back). An action given
    with the `key` of one already waiting replaces it, in its place (the audit's head file: only the last row
    counts)."""
    _AFTER_COMMIT.setdefault(id(conn), {})[object() if key is None else key] = action


def _run_after_commit(conn: Connection, committed: bool) -> None:
    for action in _AFTER_COMMIT.pop(id(conn), {}).values():
        if committed:
            action()


@contextmanager
def write_transaction(conn: Connection) -> Iterator[Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolling back on any error. A lock held by another process past the
    busy timeout raises StoreBusy, a full disk StoreFull (nothing was written in either case). On a watched
    connection (`watch_files`), database files changed under the process raise StoreDamaged, before anything is
    written or, when they changed during the transaction, after its commit (which then went to a file no other
    process sees)."""
    if getattr(conn, "read_only", None) is not None:
        from ..models import StoreReadOnly

        raise StoreReadOnly(f"nothing was changed: {conn.read_only}")
    watch = getattr(conn, "watch", None)
    if watch is not None:
        watch.check(conn)
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
    if watch is not None:
        try:
            watch.check(conn)
        except BaseException:
            _AFTER_COMMIT.pop(id(conn), None)
            raise
    _run_after_commit(conn, True)


def database_file(conn: Connection) -> str | None:
    """The path of the connection's main database file; None for an in-memory or temporary database."""
    for _, name, path in conn.execute("PRAGMA database_list"):
        if name == "main":
            return path or None
    return None
