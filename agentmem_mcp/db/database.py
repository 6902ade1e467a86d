"""One SQLite file as a process uses it: a connection per thread, write transactions, WAL checkpoints, and the
watch that stops this process's writes when the file or its WAL is replaced under it."""

from __future__ import annotations

import logging
import os
import threading
from contextlib import AbstractContextManager
from pathlib import Path

from ..models import StoreDamaged
from .connection import (
    Connection,
    DatabaseError,
    FileWatch,
    checkpoint,
    connect,
    ensure_private_dir,
    make_private,
    read_only_reason,
    watch_files,
    write_transaction,
)
from .migrations import migrate

log = logging.getLogger("agentmem")

CHECKPOINT_BUSY_MS = 200  # a checkpoint waits this long for other processes' readers (it holds off writers)


class Database:
    """The SQLite file at `path`, migrated at open; `conn` is the calling thread's connection."""

    def __init__(self, path: str, *, busy_timeout_ms: int, home: str | None = None) -> None:
        self.read_only = read_only_reason(Path(path))
        if home is not None and self.read_only is None:
            ensure_private_dir(home)
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._connections: list[Connection] = []
        self._lock = threading.Lock()
        self._watch: FileWatch | None = None
        migrate(self.conn)
        self._watch = FileWatch(path)  # the files as opened: a WAL deleted under us stops our writes
        watch_files(self.conn, self._watch)

    @property
    def conn(self) -> Connection:
        """This thread's connection (sqlite connections are not shared between threads)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._watch is not None and self._connections:
                # a connection opened after the WAL was deleted would read the new, empty one: refuse instead
                self._watch.check(self._connections[0])
            conn = connect(self.path, busy_timeout_ms=self.busy_timeout_ms, read_only=self.read_only)
            if self._watch is not None:
                watch_files(conn, self._watch)
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def transaction(self) -> AbstractContextManager[Connection]:
        """A write transaction (BEGIN IMMEDIATE) on this thread's connection."""
        return write_transaction(self.conn)

    @property
    def files_problem(self) -> str | None:
        """What changed under this process among the database's files (then it writes no more), or None."""
        return None if self._watch is None else self._watch.problem

    def checkpoint(self, busy_timeout_ms: int = CHECKPOINT_BUSY_MS) -> bool:
        """Copy the WAL into the database file and empty it, waiting at most `busy_timeout_ms` for other
        processes; not when the files changed under this process (the watch refuses it). Never raises."""
        if self.files_problem is not None or self.read_only is not None:
            return False
        try:
            return checkpoint(self.conn, "TRUNCATE", busy_timeout_ms=busy_timeout_ms)
        except DatabaseError as exc:  # a damaged database: the commands say so, in their one line
            log.debug("could not checkpoint the database: %s", exc)
            return False

    def idle(self) -> None:
        """Nothing written for a while: notice database files changed under this process (`FileWatch`, which
        logs it), and checkpoint a WAL that holds anything (any process's writes)."""
        if self._watch is None:
            return
        try:
            self._watch.check(self.conn)
        except StoreDamaged:
            return
        try:
            size = os.path.getsize(f"{self.path}-wal")
        except OSError:
            return
        if size:
            self.checkpoint()

    def _last_connection(self) -> Connection | None:
        """When the WAL was replaced under this process: a connection on the files as they are now, to be closed
        after this process's own. The last connection to close checkpoints the WAL and deletes it; closed last,
        that one checkpoints the current WAL (what other processes wrote since) instead of this process's
        unlinked one, and nothing they wrote is deleted with it."""
        if self.files_problem is None:
            return None
        try:
            return connect(self.path, busy_timeout_ms=CHECKPOINT_BUSY_MS, load_vec=False)
        except Exception as exc:
            log.warning("could not open the database to close it cleanly: %s", exc)
            return None

    def close(self) -> None:
        """Checkpoint, close every thread's connection, and leave the file private to its owner."""
        self.checkpoint()
        last = self._last_connection()
        with self._lock:
            for conn in self._connections:
                try:
                    conn.close()
                except Exception:  # closing from another thread is best effort
                    pass
            self._connections.clear()
        if last is not None:
            last.close()
        self._local = threading.local()
        if self.read_only is None:
            make_private(self.path)
