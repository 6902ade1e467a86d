"""One embedding model per user, shared by every `agentmem serve` of that user.

A loaded model takes ~170 MB, so the servers do not load one each: the first server that needs vectors (or the
first relay, relay.py) starts `python -m agentmem_mcp.runtime.shared_process`, a process of the same user that
loads the model once and answers over a Unix socket in the home (`embed.sock`, 0600; never a network port). It refuses a
home that others can enter, answers only peers of its own user (SO_PEERCRED where the system has it), and exits once no
request came for `embed_idle_seconds`, EMPTY_GRACE_S (5 s) after its last server or session disconnected, or when
its socket file is removed or replaced; never while it serves an agent session (session_host.py).

`SharedEmbedder` is the servers' side: an `Embedder` whose vectors come from that process. When it cannot reach the
process (none can start, the home is not private, another model is loaded there) it loads its own model, as
before. When the process dies in the middle of a request, that request is embedded again with a model of its own,
so nothing is lost; the next requests go back to a shared process (started again) once one answers, and the
server's own model is then let go.

The wire format: a request is a 4-byte big-endian length and a JSON object; an answer is the same, followed,
for vectors, by `count * dim` little-endian float32 numbers.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..index.embedder import Embedder
from ..index.heap import release_freed
from .lease import process_alive
from .socket_listener import other_user

log = logging.getLogger("agentmem.embed_service")

SOCKET_NAME = "embed.sock"
LOCK_NAME = "embed.lock"
MAX_FRAME = 64 * 1024 * 1024
START_TIMEOUT_S = 60.0  # a cold start loads the model: ~1-3 s here, more on a busy machine
EMPTY_GRACE_S = 5.0  # a server that restarts reconnects within this; then the model's memory goes back
SESSION_FIRST_WAIT_S = 5.0  # how long the model waits for the first session's server (see EmbedService)
RETRY_AFTER_S = 5.0  # after a failure, how long a server embeds on its own before it tries the shared process again
_LENGTH = struct.Struct(">I")


class ServiceUnavailable(RuntimeError):
    """The shared embedding process cannot be used (the message says why)."""


class ServiceGone(ServiceUnavailable):
    """The connection was closed before the request was sent (the process exited between requests)."""


def socket_path(home: Path) -> Path:
    return home / SOCKET_NAME


def home_problem(home: Path) -> str | None:
    """Why the shared process may not listen in (or be trusted from) `home`; None when the home is a folder of
    this user that nobody else can enter."""
    try:
        st = os.stat(home)
    except OSError as exc:
        return f"the home {home} cannot be read ({exc.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return f"the home {home} is not a folder"
    if os.name != "nt" and st.st_uid != os.geteuid():
        return f"the home {home} belongs to another user (uid {st.st_uid})"
    if os.name != "nt" and st.st_mode & 0o077:
        return f"the home {home} is open to other users (mode {oct(stat.S_IMODE(st.st_mode))}): chmod 700 it"
    return None


def _send(sock: socket.socket, header: dict[str, Any], body: bytes = b"") -> None:
    data = json.dumps(header).encode()
    sock.sendall(_LENGTH.pack(len(data)) + data + body)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the connection was closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _recv_header(sock: socket.socket) -> dict[str, Any]:
    (size,) = _LENGTH.unpack(_recv_exact(sock, _LENGTH.size))
    if size > MAX_FRAME:
        raise ConnectionError(f"a frame of {size} bytes is over the limit")
    header = json.loads(_recv_exact(sock, size))
    if not isinstance(header, dict):
        raise ConnectionError("a frame is not a JSON object")
    return header


# -- the servers' side ------------------------------------------------------------------------------------------


class ServiceClient:
    """One connection to the shared process, checked: its socket belongs to this user, and it has our model."""

    def __init__(self, home: Path, model_name: str, model_path: Path | None, timeout: float = 120.0) -> None:
        path = socket_path(home)
        problem = home_problem(home)
        if problem:
            raise ServiceUnavailable(problem)
        try:
            st = os.stat(path)
        except OSError:
            raise ServiceUnavailable("no shared embedding process is running") from None
        if not stat.S_ISSOCK(st.st_mode) or (os.name != "nt" and st.st_uid != os.geteuid()):
            raise ServiceUnavailable(f"{path} is not a socket of this user")
        if len(os.fsencode(str(path))) > 100:
            raise ServiceUnavailable(f"{path} is too long for a Unix socket")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(str(path))
            _send(self.sock, {"op": "hello"})
            hello = _recv_header(self.sock)
        except (OSError, ValueError) as exc:
            self.sock.close()
            raise ServiceUnavailable(f"the shared embedding process does not answer ({exc})") from None
        want = {"model": model_name, "model_path": str(model_path) if model_path else None}
        if {k: hello.get(k) for k in want} != want or not hello.get("ok"):
            self.sock.close()
            raise ServiceUnavailable(f"the shared embedding process has another model ({hello.get('model')})")
        self.dimension = int(hello["dim"])
        self.pid = int(hello["pid"])
        self._lock = threading.Lock()

    def embed(self, kind: str, texts: Sequence[str]) -> list[Any]:
        """Vectors for `texts` ("passage" or "query"). ServiceGone when the process had closed the connection
        before this request; ServiceUnavailable when it failed during it."""
        import numpy as np

        with self._lock:
            if self._closed_by_peer():
                raise ServiceGone("the shared embedding process closed the connection")
            try:
                _send(self.sock, {"op": "embed", "kind": kind, "texts": list(texts)})
                header = _recv_header(self.sock)
                if not header.get("ok"):
                    raise ServiceUnavailable(f"the shared embedding process failed: {header.get('error')}")
                count, dim = int(header["count"]), int(header["dim"])
                body = _recv_exact(self.sock, count * dim * 4)
            except (OSError, ValueError) as exc:
                self.close()
                raise ServiceUnavailable(f"the shared embedding process went away during a request ({exc})") from None
        matrix = np.frombuffer(body, dtype="<f4").reshape(count, dim)
        return [row.copy() for row in matrix]

    def _closed_by_peer(self) -> bool:
        import select

        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            return bool(readable) and not self.sock.recv(1, socket.MSG_PEEK)
        except (OSError, ValueError):
            return True

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def start_service(home: Path, model_name: str, model_path: Path | None, idle_seconds: int) -> subprocess.Popen:
    """Start the shared process, detached from the caller's session, its stdio and its file descriptors (an MCP
    server's stdin and stdout are its client's pipes)."""
    command = [sys.executable, "-m", "agentmem_mcp.runtime.shared_process", "--home", str(home), "--model", model_name,
               "--idle-seconds", str(idle_seconds)]
    if model_path is not None:
        command += ["--model-path", str(model_path)]
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            close_fds=True, start_new_session=True)


def connect_or_start(home: Path, model_name: str, model_path: Path | None, idle_seconds: int,
                     timeout: float = START_TIMEOUT_S) -> ServiceClient:
    """A connection to the shared process, started first if none runs (waiting up to `timeout` for its model)."""
    try:
        return ServiceClient(home, model_name, model_path)
    except ServiceUnavailable as exc:
        if home_problem(home) or "another model" in str(exc) or "not a socket" in str(exc):
            raise
    proc = start_service(home, model_name, model_path, idle_seconds)
    deadline = time.monotonic() + timeout
    last: ServiceUnavailable | None = None
    while time.monotonic() < deadline:
        try:
            return ServiceClient(home, model_name, model_path)
        except ServiceUnavailable as exc:
            last = exc
        code = proc.poll()
        # our process exits at once (0) when another one holds the lock: keep waiting for that one's socket
        if code not in (None, 0):
            raise ServiceUnavailable(f"the shared embedding process could not start (exit code {code}; see the log)")
        time.sleep(0.05)
    raise ServiceUnavailable(f"the shared embedding process did not answer within {timeout:.0f} s ({last})")


class SharedEmbedder(Embedder):
    """An `Embedder` whose model lives in the shared process; a model of its own when that cannot be used."""

    def __init__(self, home: Path, model_name: str, model_path: Path | None = None, *, enabled: bool = True,
                 idle_seconds: int = 600, start_timeout: float = START_TIMEOUT_S) -> None:
        super().__init__(model_name, model_path, enabled=enabled)
        self.home = home
        self.idle_seconds = idle_seconds
        self.start_timeout = start_timeout
        self._client: ServiceClient | None = None
        self._local: Embedder | None = None
        self._state_lock = threading.RLock()
        self._retry_at = 0.0
        self._restarter: threading.Thread | None = None
        self._usable = False  # loaded: vectors come from the shared process, or else from a model of our own

    @property
    def ready(self) -> bool:
        return self._usable

    @property
    def shared(self) -> bool:
        """Whether vectors come from the shared process right now."""
        return self._client is not None

    @property
    def service_pid(self) -> int | None:
        """The shared process's pid; None when there is none. A process found gone (killed, or exited while only
        kept query vectors were asked for) is let go, and another is reached or started in the background."""
        client = self._client
        if client is None:
            return None
        if process_alive(client.pid):
            return client.pid
        self._drop_client(client)
        with self._state_lock:
            self._start_reconnect()
        return None

    def load(self) -> bool:
        """Reach (or start) the shared process; load a model of our own if that fails."""
        with self._lock:
            if self._loaded.is_set():
                return self.ready
            try:
                if not self.enabled:
                    return False
                try:
                    self._set_client(connect_or_start(self.home, self.model_name, self.model_path, self.idle_seconds,
                                                      self.start_timeout))
                except ServiceUnavailable as exc:
                    log.info("embedding with a model of this process: %s", exc)
                    self._retry_at = time.monotonic() + RETRY_AFTER_S
                    self._load_local()
                self._usable = self._client is not None or self._local is not None and self._local.ready
            finally:
                self._loaded.set()
        return self.ready

    def _embed_passages(self, texts: list[str]) -> list[Any] | None:
        return self._embed("passage", texts)

    def _embed_query(self, text: str) -> Any | None:
        vectors = self._embed("query", [text])
        return vectors[0] if vectors else None

    def _embed(self, kind: str, texts: list[str]) -> list[Any] | None:
        client = self._shared_client()
        if client is not None:
            try:
                return client.embed(kind, texts)
            except ServiceGone as exc:  # exited between requests (idle, or killed): reach a new one now
                self._drop_client(client)
                log.info("%s; reconnecting", exc)
                try:
                    self._set_client(connect_or_start(self.home, self.model_name, self.model_path, self.idle_seconds,
                                                      self.start_timeout))
                    return self._client.embed(kind, texts) if self._client is not None else None
                except ServiceUnavailable as again:
                    log.warning("embedding here: %s", again)
            except ServiceUnavailable as exc:
                log.warning("embedding this request here instead: %s", exc)
            self._drop_client(client)
        local = self._load_local()
        if local is None:
            return None
        if kind == "query":
            vector = local.embed_query(texts[0])
            return None if vector is None else [vector]
        return local.embed(texts)

    def _shared_client(self) -> ServiceClient | None:
        """The connection to use, or None (embed here); after a failure, tries the shared process again in the
        background now and then."""
        with self._state_lock:
            if self._client is not None:
                return self._client
            if time.monotonic() >= self._retry_at:
                self._start_reconnect()
        return None

    def _start_reconnect(self) -> None:
        """Reach or start the shared process on a thread of its own, unless one is at it already (called under
        `_state_lock`); the next retry waits RETRY_AFTER_S."""
        if self._restarter is None or not self._restarter.is_alive():
            self._retry_at = time.monotonic() + RETRY_AFTER_S
            self._restarter = threading.Thread(target=self._reconnect, name="agentmem-embed-reconnect", daemon=True)
            self._restarter.start()

    def _reconnect(self) -> None:
        try:
            self._set_client(connect_or_start(self.home, self.model_name, self.model_path, self.idle_seconds,
                                              self.start_timeout))
        except ServiceUnavailable as exc:
            log.info("still embedding here: %s", exc)

    def _set_client(self, client: ServiceClient) -> None:
        with self._state_lock:
            old, self._client = self._client, client
            self.dimension = client.dimension
            self._error = None
            local, self._local = self._local, None
        if old is not None and old is not client:
            old.close()
        if local is not None:  # the shared process answers again: our own model goes
            del local
            release_freed()

    def _drop_client(self, client: ServiceClient) -> None:
        with self._state_lock:
            if self._client is client:
                self._client = None
                self._retry_at = time.monotonic() + RETRY_AFTER_S
        client.close()

    def _load_local(self) -> Embedder | None:
        with self._state_lock:
            local = self._local
            if local is None:
                local = self._local = Embedder(self.model_name, self.model_path, enabled=self.enabled,
                                               cache_dir=self.cache_dir)
        if not local.load():
            self._error = local.error
            return None
        self.dimension = local.dimension
        return local

    def close(self) -> None:
        with self._state_lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()


# -- the shared process ------------------------------------------------------------------------------------------


class EmbedService:
    """The shared process: one model, a private socket, one thread per connected server.

    model_name None: no model (the settings turn embeddings off); the socket then answers that it has none.
    `sessions`, when set before `run`: what also serves agent sessions here (session_host.SessionListener: `start`,
    `stop`, `active`, `last_end`, `server_built`), started before the model loads; the process stays while a session
    is served. `session_first`: started by a relay, whose session's server is built before the model loads (the
    two would share the interpreter's time; a server also answers `initialize` before it loads its model)."""

    def __init__(self, home: Path, model_name: str | None, model_path: Path | None, idle_seconds: float) -> None:
        self.home, self.path = home, socket_path(home)
        self.model_name, self.model_path = model_name, model_path
        self.idle_seconds = idle_seconds
        self.embedder: Embedder | None = Embedder(model_name, model_path) if model_name else None
        self.sessions: Any = None
        self.session_first = False
        self.model_on_demand = False
        self.hooks: Any = None
        self.last_request = time.monotonic()
        self.busy = 0
        self.connections = 0
        self.last_disconnect = time.monotonic()
        self._state = threading.Lock()
        self.stopping = threading.Event()

    def run(self) -> int:
        """Serve until idle; 0 also when another process already serves this home, 1 when the model cannot load."""
        import fcntl

        problem = home_problem(self.home)
        if problem:
            log.warning("shared embedding process not started: %s", problem)
            return 1
        lock_fd = os.open(self.home / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return 0  # another one is starting or running
            sessions = self._take_sessions()
            try:
                if sessions is not None and self.session_first:  # its `initialize` answer first, as a server's
                    sessions.server_built.wait(SESSION_FIRST_WAIT_S)
                if self.embedder is not None and not self.model_on_demand and not self.embedder.load():
                    log.warning("shared embedding process: the model cannot load: %s", self.embedder.error)
                    if sessions is None:
                        return 1
                    self.embedder = None  # the sessions go on, on BM25 + graph, as a server of their own would
                listener = self._listen()
                hooks = self.hooks = self._take_hooks()
                if hooks is not None and self.model_on_demand:  # started by a hook: the next ones come soon
                    hooks.last_event = time.monotonic()
                searches = self._take_searches()
                try:
                    (log.info if self.embedder is not None else log.debug)(
                        "shared process %d serving %s on %s", os.getpid(), self.model_name, self.path)
                    self._accept_until_idle(listener)
                finally:
                    if searches is not None:
                        searches.stop()
                    if hooks is not None:
                        hooks.stop()
                    self._remove_socket(listener)
            finally:
                if sessions is not None:
                    sessions.stop()
            return 0
        finally:
            os.close(lock_fd)

    def _take_sessions(self) -> Any:
        """Start serving agent sessions (`sessions`), before the model loads: a relay waits for its `initialize`
        answer. None without them or when the socket cannot be made (relays then serve their sessions alone)."""
        if self.sessions is None:
            return None
        try:
            self.sessions.start()
        except OSError as exc:
            log.warning("shared process: sessions not taken (%s)", exc)
            return None
        return self.sessions

    def shared_embedder_for(self, settings: Any) -> Embedder | None:
        """This process's model for a session with `settings`, when they ask for the same one; None: the session
        embeds its own way (server.AppState)."""
        embedder = self.embedder
        if embedder is None or not (settings.embeddings and settings.shared_embedder):
            return None
        same_path = (str(settings.embed_model_path.absolute()) if settings.embed_model_path else None) == \
            (str(self.model_path.absolute()) if self.model_path else None)
        return embedder if settings.embed_model == self.model_name and same_path else None

    def _take_hooks(self) -> Any:
        """Also take hook events over `<home>/hooks.sock` (capture/hook_service.py): this process already has what a
        hook process spends most of its time importing. None if the socket cannot be made (hooks then run alone)."""
        from ..capture.hook_service import HookListener

        hooks = HookListener(self.home)
        try:
            hooks.start()
        except OSError as exc:
            log.warning("shared embedding process: hooks not taken (%s)", exc)
            return None
        return hooks

    def _take_searches(self) -> Any:
        """Also take the `agentmem search` command's searches over `<home>/search.sock` (search_service.py): this
        process has the model the command would otherwise load. None without a model, or if the socket cannot be
        made (the command then searches in its own process)."""
        if self.embedder is None:
            return None
        from .search_service import SearchListener

        searches = SearchListener(self.home, self.shared_embedder_for)
        try:
            searches.start()
        except OSError as exc:
            log.warning("shared process: searches not taken (%s)", exc)
            return None
        return searches

    def _listen(self) -> socket.socket:
        from ..files import listen_private_socket

        listener, self.socket_id = listen_private_socket(self.path, 16)
        return listener

    def _socket_is_ours(self) -> bool:
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_ino, st.st_dev) == self.socket_id

    def _accept_until_idle(self, listener: socket.socket) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if self._done(time.monotonic()) or not self._socket_is_ours():
                    return
                continue
            uid = other_user(conn)
            if uid is not None:
                log.warning("shared embedding process: refused a connection from uid %d", uid)
                conn.close()
                continue
            with self._state:
                self.connections += 1
            threading.Thread(target=self._serve_connection, args=(conn,), daemon=True).start()

    def _done(self, now: float) -> bool:
        """Whether to exit: no session, and no request or hook for `idle_seconds`; or no server or session for
        EMPTY_GRACE_S (its memory goes back). A process started by hooks (`model_on_demand`) that has not loaded the
        model is kept up by hooks, up to `idle_seconds` apart; one a server started leaves with its last session."""
        sessions = self.sessions.active if self.sessions is not None else 0
        last_left = max(self.last_disconnect, self.sessions.last_end if self.sessions is not None else 0.0)
        last_hook = self.hooks.last_event if self.hooks is not None else float("-inf")
        holds_model = self.embedder is not None and (self.embedder.ready or not self.model_on_demand)
        with self._state:
            idle = sessions == 0 and self.busy == 0 and now - max(self.last_request, last_left, last_hook) > \
                self.idle_seconds
            deserted = sessions == 0 and self.connections == 0 and now - last_left > min(EMPTY_GRACE_S,
                                                                                        self.idle_seconds)
        return idle or deserted and (not self.model_on_demand or holds_model or now - last_hook > self.idle_seconds)

    def _serve_connection(self, conn: socket.socket) -> None:
        try:
            self._requests(conn)
        finally:
            with self._state:
                self.connections -= 1
                self.last_disconnect = time.monotonic()

    def _requests(self, conn: socket.socket) -> None:
        with conn:
            while not self.stopping.is_set():
                try:
                    request = _recv_header(conn)
                except (OSError, ValueError):
                    return
                with self._state:
                    self.busy += 1
                try:
                    self._answer(conn, request)
                except (OSError, ValueError):
                    return
                finally:
                    with self._state:
                        self.busy -= 1
                        self.last_request = time.monotonic()

    def _answer(self, conn: socket.socket, request: dict[str, Any]) -> None:
        op = request.get("op")
        if op == "hello":
            if self.embedder is not None and not self.embedder.ready and not self.embedder.load():
                log.warning("shared process: the model cannot load: %s", self.embedder.error)
            _send(conn, {"ok": self.embedder is not None and self.embedder.ready, "model": self.model_name,
                         "pid": os.getpid(),
                         "dim": self.embedder.dimension if self.embedder is not None else None,
                         "model_path": str(self.model_path) if self.model_path else None})
            return
        if self.embedder is None or not self.embedder.ready:
            _send(conn, {"ok": False, "error": "no model in this process"})
            return
        texts = request.get("texts")
        if op != "embed" or not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            _send(conn, {"ok": False, "error": "expected {op: embed, kind, texts: [str]}"})
            return
        try:
            if request.get("kind") == "query":
                vectors = [self.embedder.embed_query(text) for text in texts]
            else:
                vectors = self.embedder.embed(texts) or []
        except Exception as exc:  # the server embeds this request itself
            log.exception("shared embedding process: embedding failed")
            _send(conn, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
            return
        import numpy as np

        dim = self.embedder.dimension or 0
        body = np.asarray(vectors, dtype="<f4").reshape(len(vectors), dim).tobytes() if vectors else b""
        _send(conn, {"ok": True, "count": len(vectors), "dim": dim}, body)

    def _remove_socket(self, listener: socket.socket) -> None:
        listener.close()
        if self._socket_is_ours():
            try:
                os.unlink(self.path)
            except OSError:
                pass
