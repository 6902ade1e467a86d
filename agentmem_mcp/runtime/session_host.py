"""Agent sessions served by the user's shared process, one per relay (the other side of runtime/relay.py).

The shared process (embed_service.py, run by shared_process.py) listens on `<home>/sessions.sock` (0600, in a
home nobody else can enter; it refuses peers of another user where the system says who they are). A relay sends one
header: its agentmem variables, its working directory, its pid. The session gets settings built from those variables
(`load_settings(env)`: the relay's environment and config file, not this process's), the project of that directory
(or of the client's MCP roots, as a server of its own would), the shared model when the settings ask for the same
one, and a store of its own; then the MCP SDK serves it over the socket, on a thread and event loop of its own, until
the relay closes its side. A header this process cannot serve (another home, a config error, `shared_server = false`,
a home agentmem cannot use) is answered with a refusal, and the relay then serves its session itself.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .relay import ACCEPTED, MAGIC, SOCKET_NAME
from .socket_listener import PrivateListener

log = logging.getLogger("agentmem.sessions")

HEADER_TIMEOUT_S = 10.0
MAX_HEADER = 1024 * 1024


class SessionListener(PrivateListener):
    """Accepts relays on `<home>/sessions.sock` on a thread and serves each on a thread of its own, until `stop`.

    embedder_for(settings) gives the model a session with those settings shares (None: its own way, as
    `server.AppState` chooses). `active` counts the sessions being served; `last_end` is when the last one ended;
    `server_built` is set once a session's server is built."""

    NAME = "sessions"
    BACKLOG = 16

    def __init__(self, home: Path, embedder_for: Callable[[Any], Any]) -> None:
        super().__init__(home / SOCKET_NAME)
        self.home = home
        self.embedder_for = embedder_for
        self.active = 0
        self.last_end = time.monotonic()
        self.server_built = threading.Event()  # a session's server is built: the MCP SDK is imported
        self._state = threading.Lock()

    def take(self, conn: socket.socket) -> None:
        with self._state:
            self.active += 1
        threading.Thread(target=self._serve, args=(conn,), name="agentmem-session", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn, conn.makefile("rb") as incoming:
                opened = self._open(conn, incoming)
                if opened is not None:
                    import anyio

                    anyio.run(self._session, conn, incoming, *opened)
        except Exception:
            log.exception("a relayed session failed")
        finally:
            with self._state:
                self.active -= 1
                self.last_end = time.monotonic()

    def _open(self, conn: socket.socket, incoming: Any) -> tuple[Any, str, int] | None:
        """(settings, directory, relay pid) of a relay's header, answered OK; None once it is refused or unreadable."""
        from ..config import ConfigError, load_settings
        from ..preflight import home_problem

        conn.settimeout(HEADER_TIMEOUT_S)
        try:
            if incoming.readline(len(MAGIC) + 1) != MAGIC:
                return None
            header = json.loads(incoming.readline(MAX_HEADER))
            env, workdir, pid = dict(header["env"]), str(header["cwd"]), int(header["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        try:
            settings = load_settings(env, on_warning=lambda _: None)
            problem = (None if settings.shared_server else "shared_server is off") or \
                (None if settings.home == self.home else f"another home ({settings.home})") or home_problem(settings)
        except ConfigError as exc:
            problem = str(exc)
        try:
            if problem:
                log.debug("session of relay %d served by the relay itself: %s", pid, problem)
                conn.sendall(b"NO " + problem.encode("utf-8", "replace")[:500] + b"\n")
                return None
            conn.sendall(ACCEPTED)
            conn.settimeout(None)
        except OSError:
            return None
        log.debug("serving the session of relay %d in %s", pid, workdir)
        return settings, workdir, pid

    async def _session(self, conn: socket.socket, incoming: Any, settings: Any, workdir: str, pid: int) -> None:
        from ..server.app import build_server, serve_lines

        server = build_server(settings, workdir=workdir, embedder=self.embedder_for(settings))
        self.server_built.set()
        await serve_lines(server, _SocketLines(incoming), _SocketOut(conn))
        log.debug("the session of relay %d ended", pid)


class _SocketLines:
    """The relay's lines, read on a worker thread, as the SDK's stdio transport reads stdin."""

    def __init__(self, incoming: Any) -> None:
        self.incoming = incoming

    def __aiter__(self) -> _SocketLines:
        return self

    async def __anext__(self) -> str:
        import anyio

        try:
            line = await anyio.to_thread.run_sync(self.incoming.readline, abandon_on_cancel=True)
        except (OSError, ValueError):
            line = b""
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", "replace")


class _SocketOut:
    """The session's answers to the relay (each message is one `write` of a line)."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn

    async def write(self, text: str) -> None:
        import anyio

        try:
            await anyio.to_thread.run_sync(self.conn.sendall, text.encode("utf-8"))
        except OSError:  # the relay went: its side's end closes the session
            pass

    async def flush(self) -> None:
        return None
