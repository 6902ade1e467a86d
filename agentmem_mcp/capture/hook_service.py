"""Hooks taken over a socket by the user's shared agentmem process (the other side of capture/hook_client.py).

The shared embedding process (runtime/embed_service.py) runs while agent sessions do, holds the home's lock, and
listens on `<home>/hooks.sock` as well (0600; it refuses peers of another user where the system says who they are).
Each connection is one hook event: the hook's variables and its input; the answer is sent after
`capture.hook.respond` has recorded the event (committed, or spooled), so an acknowledged event is stored. A request
that cannot be read gets no answer, and the hook process then handles its event itself. An event is taken once the
hooks before it that record outside this process are done (`<home>/hooks.order`, capture/hook_client.py), so that
a session's events keep their order.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from ..runtime.socket_listener import PrivateListener
from .hook_client import ANSWERED, MAX_STDIN_BYTES, SOCKET_NAME, decode_request, take_turn

log = logging.getLogger("agentmem.hook_service")

MAX_REQUEST = MAX_STDIN_BYTES + 1024 * 1024  # the input and the variables
READ_TIMEOUT_S = 10.0
ORDER_WAIT_S = 1.0  # the hook waits 4.5 s for its answer, and taking the event may wait 3 s for SQLite's lock


def _takes_hooks(env: dict[str, str]) -> bool:
    """The hook's settings let this process take it (`hook_handoff`, also readable from config.toml)."""
    from ..config import ConfigError, load_settings

    try:
        return load_settings(env, on_warning=lambda _: None).hook_handoff
    except ConfigError:
        return False  # the hook process reports a bad config in its own way


class HookListener(PrivateListener):
    """Accepts hook events on `<home>/hooks.sock` on a thread, one thread per event, until `stop`."""

    NAME = "hooks"
    BACKLOG = 64

    def __init__(self, home: Path) -> None:
        super().__init__(home / SOCKET_NAME)
        self.home = home
        self._connections: Any = None
        self.handled = 0
        self.last_event = float("-inf")  # time.monotonic() of the last event taken

    def prepare(self) -> None:
        try:  # what every hook needs, imported before the first one comes
            from ..db import migrations  # noqa: F401
            from ..recall import context  # noqa: F401
            from . import hook, observations  # noqa: F401

            self._connections = hook.Connections()
        except Exception:
            log.exception("hook socket: cannot import the hook's modules")

    def take(self, conn: socket.socket) -> None:
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
            self.last_event = time.monotonic()
            turn = take_turn(str(self.home), timeout=ORDER_WAIT_S)
            if turn is not None:  # only waited for: the events handed over are ordered by their hooks' answers
                os.close(turn)
            from .hook import respond

            text = respond(client, event, raw, env, connections=self._connections)
            self.handled += 1
            try:
                conn.sendall(ANSWERED + (text or "").encode())
            except OSError:
                pass

    def stop(self) -> None:
        """Stop accepting, remove the socket if it is still ours, and close the pooled connections."""
        super().stop()
        if self._connections is not None:
            self._connections.close()
