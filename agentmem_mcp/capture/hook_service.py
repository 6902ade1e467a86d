"""Hooks taken over a socket by the user's shared agentmem process (the other side of capture/hook_client.py).

The shared embedding process (index/embed_service.py) runs while agent sessions do, holds the home's lock, and
listens on `<home>/hooks.sock` as well (0600; it refuses peers of another user where the system says who they are).
Each connection is one hook event: the hook's variables and its input; the answer is sent after
`capture.hook.respond` has recorded the event (committed, or spooled), so an acknowledged event is stored. A request
that cannot be read gets no answer, and the hook process then handles its event itself.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import threading
from pathlib import Path
from typing import Any

from .hook_client import ANSWERED, MAX_STDIN_BYTES, SOCKET_NAME, decode_request

log = logging.getLogger("agentmem.hook_service")

MAX_REQUEST = MAX_STDIN_BYTES + 1024 * 1024  # the input and the variables
READ_TIMEOUT_S = 10.0


def _peer_uid(conn: socket.socket) -> int | None:
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return uid


def _takes_hooks(env: dict[str, str]) -> bool:
    """The hook's settings let this process take it (`hook_handoff`, also readable from config.toml)."""
    from ..config import ConfigError, load_settings

    try:
        return load_settings(env, on_warning=lambda _: None).hook_handoff
    except ConfigError:
        return False  # the hook process reports a bad config in its own way


class HookListener:
    """Accepts hook events on `<home>/hooks.sock` on a thread, one thread per event, until `stop`."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / SOCKET_NAME
        self._listener: socket.socket | None = None
        self._socket_id: tuple[int, int] | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._connections: Any = None
        self.handled = 0

    def start(self) -> None:
        """Bind the socket (the caller holds the home's lock, so a socket left there is stale) and serve."""
        from ..files import listen_private_socket

        listener, self._socket_id = listen_private_socket(self.path, 64)
        self._listener = listener
        self._thread = threading.Thread(target=self._accept, name="agentmem-hooks", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        assert self._listener is not None
        try:  # what every hook needs, imported before the first one comes
            from .. import context  # noqa: F401
            from ..db import migrations  # noqa: F401
            from . import hook, observations  # noqa: F401

            self._connections = hook.Connections()
        except Exception:
            log.exception("hook socket: cannot import the hook's modules")
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            uid = _peer_uid(conn)
            if uid is not None and uid != os.geteuid():
                log.warning("hook socket: refused a connection from uid %d", uid)
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), name="agentmem-hook", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(READ_TIMEOUT_S)
                chunks, size = [], 0
                while chunk := conn.recv(1 << 20):
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > MAX_REQUEST:
                        return  # the hook handles an input this large itself
                client, event, env, raw = decode_request(b"".join(chunks))
                if Path(env.get("AGENTMEM_HOME", "")) != self.home or not _takes_hooks(env):
                    return
            except (OSError, ValueError):
                return
            from .hook import respond

            text = respond(client, event, raw, env, connections=self._connections)
            self.handled += 1
            try:
                conn.sendall(ANSWERED + (text or "").encode())
            except OSError:
                pass

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
        if self._connections is not None:
            self._connections.close()
