"""A listener on a private Unix socket of the home, for the shared process's sockets (hooks.sock, sessions.sock;
embed.sock checks its peers with `other_user` too).

The socket is 0600 from the moment it exists (files.listen_private_socket), in a home nobody else can enter; where
the system says who is at the other end (SO_PEERCRED), a peer of another user is refused and logged.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import threading
from pathlib import Path

log = logging.getLogger("agentmem")


def other_user(conn: socket.socket) -> int | None:
    """The uid of the peer when it is not this process's user; None when it is, or the system does not say."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return uid if uid != os.geteuid() else None


class PrivateListener:
    """Accepts connections on `path` on a thread of its own until `stop`, and hands each one from this user to
    `take(conn)` (on the accepting thread: it starts its own thread for the work). `prepare()` runs on that thread
    before the first accept. Subclasses set NAME (the thread's and the log's) and BACKLOG."""

    NAME = "socket"
    BACKLOG = 16

    def __init__(self, path: Path) -> None:
        self.path = path
        self._listener: socket.socket | None = None
        self._socket_id: tuple[int, int] | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind the socket (the caller holds the home's lock, so a socket left there is stale) and serve."""
        from ..files import listen_private_socket

        self._listener, self._socket_id = listen_private_socket(self.path, self.BACKLOG)
        self._thread = threading.Thread(target=self._accept, name=f"agentmem-{self.NAME}", daemon=True)
        self._thread.start()

    def prepare(self) -> None:
        """Run once on the accepting thread before the first connection."""

    def take(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def _accept(self) -> None:
        assert self._listener is not None
        self.prepare()
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            uid = other_user(conn)
            if uid is not None:
                log.warning("%s socket: refused a connection from uid %d", self.NAME, uid)
                conn.close()
                continue
            self.take(conn)

    def stop(self) -> None:
        """Stop accepting and remove the socket if it is still ours."""
        self._stopping.set()
        if self._listener is not None:
            self._listener.close()
        try:
            st = os.stat(self.path)
            if (st.st_ino, st.st_dev) == self._socket_id:
                os.unlink(self.path)
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(timeout=2.0)
