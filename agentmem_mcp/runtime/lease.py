"""The worker lease: one row in `leases` naming the process that runs background work, until it expires.

Whoever holds the lease renews it while it is alive. When the holder dies its lease expires and another
process takes it over; on the same host a holder whose process is gone is taken over at once.
Holders are named `host:pid:random`, so two processes never mistake each other's lease for their own.
`LeaseKeeper` is the thread that keeps taking and renewing it for a process that wants to work.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable

from ..db.connection import Connection, write_transaction

log = logging.getLogger("agentmem.lease")

WORKER_LEASE = "worker"
LEASE_TTL = 30.0
RENEW_EVERY = 10.0
IDLE_SLEEP = (2.0, 30.0)  # seconds between a holder's passes: after a busy one, and at most after idle ones


def new_holder() -> str:
    """A name for this process as a lease holder (or a claimant of work items)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def process_alive(pid: int) -> bool:
    """Whether a process runs under `pid` (a zombie, killed and not yet reaped, does not). Where there is no
    /proc (macOS), a signal 0 tells, and a zombie counts as running."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return False  # /proc is there and has no such process
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder_alive(holder: str | None) -> bool | None:
    """False when `holder` ran on this host and its process is gone; True when it runs here; None when
    unknown (another host, or a name that is not `host:pid:random`)."""
    if not holder:
        return None
    parts = holder.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return None
    pid = int(parts[1])
    return pid == os.getpid() or process_alive(pid)


def acquire(conn: Connection, holder: str, *, name: str = WORKER_LEASE, ttl: float = LEASE_TTL,
            now: float | None = None) -> bool:
    """Take or renew the lease `name` for `holder` for `ttl` seconds. Returns whether `holder` holds it.

    The lease is free when nobody holds it, when it expired, or when its holder's process is gone.
    """
    now = time.time() if now is None else now
    with write_transaction(conn):
        row = conn.execute("SELECT holder, expires_at FROM leases WHERE name = ?", (name,)).fetchone()
        free = (row is None or row["holder"] == holder or row["expires_at"] <= now
                or holder_alive(row["holder"]) is False)
        if free:
            conn.execute("INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) "
                         "DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at",
                         (name, holder, now + ttl))
        return free


def release(conn: Connection, holder: str, *, name: str = WORKER_LEASE) -> None:
    """Give the lease up, if `holder` still holds it."""
    with write_transaction(conn):
        conn.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))


def current(conn: Connection, *, name: str = WORKER_LEASE, now: float | None = None) -> tuple[str, float] | None:
    """(holder, seconds left) of a live lease, or None."""
    now = time.time() if now is None else now
    row = conn.execute("SELECT holder, expires_at FROM leases WHERE name = ?", (name,)).fetchone()
    if row is None or row["expires_at"] <= now:
        return None
    return row["holder"], row["expires_at"] - now


class LeaseKeeper:
    """A daemon thread that takes and renews the worker lease; `held` says whether this process has it."""

    def __init__(self, connection: Callable[[], Connection], holder: str | None = None, *,
                 ttl: float = LEASE_TTL, every: float = RENEW_EVERY) -> None:
        self.connection = connection
        self.holder = holder or new_holder()
        self.ttl = ttl
        self.every = every
        self.held = threading.Event()
        self.tried = threading.Event()  # set once the first attempt to take the lease is over
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> LeaseKeeper:
        self._thread = threading.Thread(target=self._run, name="agentmem-lease", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                ok = acquire(self.connection(), self.holder, ttl=self.ttl)
            except Exception as exc:  # a busy database: try again at the next renewal
                log.warning("could not renew the worker lease: %s", exc)
                ok = False
            (self.held.set if ok else self.held.clear)()
            self.tried.set()
            self._stop.wait(self.every)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.held.is_set():
            self.held.clear()
            try:
                release(self.connection(), self.holder)
            except Exception as exc:
                log.warning("could not release the worker lease: %s", exc)
