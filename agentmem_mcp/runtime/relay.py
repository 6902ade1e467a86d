"""`agentmem serve` as a client starts it: a relay between the client's stdio and the user's shared agentmem process.

A client starts one `agentmem serve` per agent session. A whole server holds the MCP SDK (~55 MB that cannot be
imported in part) and a store: four sessions held ~570 MB. So this module imports only `os`, `sys`, `_socket`,
`select` and `json`, no MCP SDK and no agentmem library: it connects to `<home>/sessions.sock`, the socket of the
user's shared process (runtime/embed_service.py, started here when none runs, as servers start it for the model), sends
one header (its AGENTMEM_* variables, its working directory, its pid), then copies the client's stdin to the socket
and the socket's lines to stdout until either side ends. That process serves the session (session_host.py) with the
settings of those variables and the project of that directory, as this process would have.

When the shared process cannot be used (AGENTMEM_SHARED_SERVER=0 or `shared_server = false`, no Unix sockets, a home
or a socket that is not this user's alone, it does not start or it refuses the session), `relay` returns None and
this process serves the session itself, as before. When it goes during the session, this process takes the session
over (relay_takeover.py): its own server is given the client's `initialize` and `notifications/initialized` again
(its second answer to `initialize` is not passed on), the requests left unanswered get an error, and later ones work.
"""

import _socket
import json
import os
import select
import sys
import time

from ..capture.hook_client import home_dir, private_socket, request_env

SOCKET_NAME = "sessions.sock"
MAGIC = b"agentmem-session 1\n"
ACCEPTED = b"OK\n"
ANSWER_TIMEOUT_S = 30.0  # a process just started imports the MCP SDK before it answers (~1-3 s, more under load)
START_TIMEOUT_S = 30.0
OTHER_OWNER_WAIT_S = 3.0  # our process found the home's lock taken: how long the holder has to open the socket
CHUNK = 1 << 16
SERVICE_ENTRY = ("import sys; sys.path[:1] = [p for p in sys.path[:1] if p]; "
                 "from agentmem_mcp.runtime.shared_process import main; raise SystemExit(main())")


def _off(env) -> bool:
    return env.get("AGENTMEM_SHARED_SERVER", "").strip().lower() in ("0", "false", "no", "off")


def _connect(path: str):
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(ANSWER_TIMEOUT_S)
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def _home_private(home: str) -> bool | None:
    """Whether the home is this user's alone; None when it does not exist yet (the shared process makes it)."""
    try:
        st = os.stat(home)
    except FileNotFoundError:
        return None
    except OSError:
        return False
    return st.st_uid == os.geteuid() and not st.st_mode & 0o077 and (st.st_mode & 0o170000) == 0o040000


def _start(home: str) -> int | None:
    """Start the shared process (its own session, stdio on the null device); its pid, or None."""
    null = os.devnull
    try:
        actions = [(os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0), (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0)]
        command = [sys.executable, "-c", SERVICE_ENTRY, "--home", home, "--for-session"]
        return os.posix_spawn(sys.executable, command, os.environ, file_actions=actions, setsid=True)
    except (OSError, AttributeError, TypeError, ValueError, NotImplementedError):  # e.g. no setsid for posix_spawn
        return None


def _reach(home: str, path: str):
    """A connection to the shared process, started first when none answers; None when it cannot be had."""
    private = _home_private(home)
    if private is False:
        return None
    if private and private_socket(home, path):
        sock = _connect(path)
        if sock is not None:
            return sock
    pid = _start(home)
    if pid is None:
        return None
    deadline = time.monotonic() + START_TIMEOUT_S
    exited_at = None
    while time.monotonic() < deadline:
        time.sleep(0.02)
        if private_socket(home, path):
            sock = _connect(path)
            if sock is not None:
                return sock
        if exited_at is None:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done and status != 0:
                return None
            if done:  # another process holds the home's lock: it opens the socket soon, or it does not take sessions
                exited_at = time.monotonic()
        elif time.monotonic() - exited_at > OTHER_OWNER_WAIT_S:
            return None
    return None


def _introduce(sock, env) -> bytes | None:
    """Send the header; the bytes that came after the acceptance, or None when the session is refused."""
    header = {"env": request_env(env), "cwd": os.getcwd(), "pid": os.getpid()}
    sock.sendall(MAGIC + json.dumps(header).encode("utf-8", "surrogateescape") + b"\n")
    answer = b""
    while b"\n" not in answer:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        answer += chunk
    line, rest = answer.split(b"\n", 1)
    return rest if line + b"\n" == ACCEPTED else None


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _message(line: bytes):
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or nested too deep: the server answers it, not us
        return None
    return message if isinstance(message, dict) else None


class Relay:
    """The copy loop, and what a takeover needs: the client's handshake and the requests not answered yet."""

    def __init__(self, sock, received: bytes) -> None:
        self.sock = sock
        self.from_client = b""  # the client's bytes after its last whole line
        self.from_server = received  # the shared process's bytes after its last whole line (not passed on yet)
        self.handshake: list = []  # the client's `initialize` and `notifications/initialized` lines
        self.initialize_id = None
        self.initialized = False  # the client has the answer to its `initialize`
        self.waiting: dict = {}  # the client's requests not answered yet: id -> method

    def run(self) -> int:
        sock = self.sock
        sock.settimeout(None)
        watched = [0, sock]
        while True:
            ready, _, _ = select.select(watched, [], [])
            if sock in ready:  # first: a process that went is noticed before more of the client's lines go to it
                try:
                    data = sock.recv(CHUNK)
                except OSError:
                    data = b""
                if not data:
                    return self._take_over() if 0 in watched else 0
                whole = self._server_lines(data)
                if whole:
                    try:
                        _write_all(1, whole)
                    except OSError:  # the client closed its stdin too
                        return 0
            if 0 in ready:
                data = os.read(0, CHUNK)
                if not data:  # the client went: the session ends once the shared process has closed it
                    watched = [sock]
                    try:
                        sock.shutdown(_socket.SHUT_WR)
                    except OSError:
                        pass
                    continue
                try:
                    sock.sendall(data)
                except OSError:  # it had gone: these bytes reached nobody, and go to this process's server
                    self.from_client += data
                    return self._take_over()
                self._client_lines(data)

    def _client_lines(self, data: bytes) -> None:
        lines = (self.from_client + data).split(b"\n")
        self.from_client = lines.pop()
        for line in lines:
            message = _message(line)
            if message is None or "method" not in message:
                continue
            if message["method"] == "initialize":
                self.handshake = [line + b"\n"]
                self.initialize_id = message.get("id")
            elif message["method"] == "notifications/initialized":
                self.handshake.append(line + b"\n")
            if "id" in message:
                self.waiting[_key(message["id"])] = message["id"]

    def _server_lines(self, data: bytes) -> bytes:
        data = self.from_server + data
        cut = data.rfind(b"\n") + 1
        whole, self.from_server = data[:cut], data[cut:]
        if self.waiting:
            for line in whole.split(b"\n")[:-1]:
                message = _message(line)
                if message is not None and "id" in message and "method" not in message:
                    self.waiting.pop(_key(message["id"]), None)
                    if self.handshake and _key(message["id"]) == _key(self.initialize_id):
                        self.initialized = True
        return whole

    def _take_over(self) -> int:
        self.sock.close()
        for _ in range(50):  # it may have been this relay's child: no zombie for the session's length (its socket
            try:  # closes a moment before it becomes one)
                if os.waitpid(-1, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                break
            time.sleep(0.01)
        unanswered = [i for k, i in self.waiting.items() if not (self.handshake and k == _key(self.initialize_id))]
        from .relay_takeover import take_over

        return take_over(self.handshake, self.from_client, unanswered,
                         swallow=_key(self.initialize_id) if self.initialized else None)


def _key(request_id) -> str:
    return json.dumps(request_id)


def relay():
    """Relay this session to the shared process; its exit code once it ended, or None when this process must
    serve the session itself (nothing was read from stdin then)."""
    env = os.environ
    if _off(env) or os.name == "nt" or not hasattr(_socket, "AF_UNIX") or not hasattr(os, "posix_spawn"):
        return None
    try:
        if os.isatty(0):
            return None
        home = home_dir(env)
        path = os.path.join(home, SOCKET_NAME)
        if len(path) > 100:
            return None
        sock = _reach(home, path)
        if sock is None:
            return None
        try:
            received = _introduce(sock, env)
        except OSError:
            received = None
        if received is None:
            sock.close()
            return None
    except Exception:  # whatever went wrong before the session began: this process serves it
        return None
    return Relay(sock, received).run()
