"""The hook's front door: hand the event to agentmem's running process, or handle it in this one.

    python -c "from agentmem_mcp.capture.hook_client import run; run()" hook [--client claude-code|cursor] EVENT

(what `agentmem install` writes) and `agentmem hook ...` both come here. (Not this file's path: when a venv is
recreated for another Python, that path is gone and Python exits 2, which Claude Code reads as "block"; a missing
module exits 1, which it does not.) Starting Python's own libraries (`re`, `json`, `pathlib`, `sqlean`) costs a
hook process more than starting the interpreter; the user's shared agentmem process (`runtime/embed_service.py`,
running while agent sessions are) has them loaded already. So this module imports only `os`, `sys`, `time` and
`_socket` (and `fcntl` when no process answers): it reads the event, sends it over `<home>/hooks.sock` (0600, in a
home nobody else can enter, never a network port), and prints the answer, which that process computes with the very
code a hook runs (`capture.hook.respond`) and sends only after the observation is committed.

When no process answers (none running, a home or socket not private, a timeout, a broken connection) the event is
handled in this process (`capture/hook.py`), as it always was: nothing is lost. If the shared process committed
and died before answering, the event is recorded again here, and the observation's count says 2. When none was
running at all (the first hook of the day, or hooks without a server), a process is started in the background for
hooks (`capture/hook_start.py`), so that the next hooks find it.

That first hook, when its event is one whose answer does not depend on what is stored (`QUIET_EVENTS`: a tool call,
a stop; not a session start or a prompt, which get context), answers at once and leaves the work to a copy of
itself (`detach`): a child forked after the input was read, in a session of its own with its stdio on the null
device, records the event (redacted there, before anything is written, as in any hook) and then starts the shared
process. The client waits for neither. Events keep their order: whoever records a hook's event outside the shared
process holds `<home>/hooks.order` (flock) while it does, the next hook waits for it before recording or detaching,
and the shared process waits for it before taking an event (capture/hook_service.py).
"""

import _socket
import os
import sys
import time

SOCKET_NAME = "hooks.sock"
MAGIC = b"agentmem-hook 1\n"
ANSWERED = b"OK\n"
HANDOFF_TIMEOUT_S = 4.5  # the process waits at most 3 s for SQLite's lock, then spools; the client allows 10 s
MAX_STDIN_BYTES = 64 * 1024 * 1024  # as capture/hook.py: larger inputs are cut there, in this process
PATH_VARIABLES = ("AGENTMEM_HOME", "AGENTMEM_DB", "AGENTMEM_INDEX_DIR", "AGENTMEM_EMBED_MODEL_PATH",
                  "AGENTMEM_CONFIG")
DATA_VARIABLES = ("AGENTMEM_HOME", "AGENTMEM_DB", "AGENTMEM_INDEX_DIR")  # relative: from ~ (config.user_path)
ORDER_LOCK = "hooks.order"
ORDER_WAIT_S = 3.5  # the hook before holds the lock while it records: at most SQLite's 3 s wait, then the spool
# The events whose answer is the same whatever is stored (lower-cased, as capture/events.py matches them): Cursor
# reads `{}`, the other clients nothing. tests/test_hook_detach.py checks them against capture/hook.py's answers.
QUIET_EVENTS = {
    "claude-code": ("posttooluse", "posttoolusefailure", "precompact", "stop", "sessionend"),
    "codex": ("posttooluse", "precompact", "stop", "sessionend"),
    "gemini": ("aftertool", "precompress", "afteragent", "sessionend"),
    "cursor": ("posttooluse", "posttoolusefailure", "aftershellexecution", "aftermcpexecution", "afterfileedit",
               "precompact", "stop", "sessionend"),
}


def user_path(text: str) -> str:
    """`config.user_path` without pathlib: `~` expanded, a relative path taken from the user's home directory."""
    path = os.path.expanduser(text.strip())
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(os.path.expanduser("~"), path))


def home_dir(env) -> str:
    """agentmem's home as `config.load_settings` finds it (without importing it: pathlib costs a hook ~4 ms)."""
    home = env.get("AGENTMEM_HOME")
    if home:
        return user_path(home)
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Application Support/agentmem")
    if os.name == "nt":
        return os.path.join(env.get("APPDATA") or os.path.expanduser("~/AppData/Roaming"), "agentmem")
    return os.path.join(env.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "agentmem")


def request_env(env) -> dict:
    """The variables that decide what a hook does (AGENTMEM_*), paths made absolute here, where they were set."""
    sent = {key: value for key, value in env.items() if key.startswith("AGENTMEM_")}
    for key in PATH_VARIABLES:
        if sent.get(key):
            value = sent[key]
            sent[key] = user_path(value) if key in DATA_VARIABLES else os.path.abspath(os.path.expanduser(value))
    sent["AGENTMEM_HOME"] = home_dir(env)
    return sent


def encode_request(client: str, event: str, env: dict, raw: bytes) -> bytes:
    fields = [client, event, *(f"{key}={value}" for key, value in env.items())]
    return MAGIC + "\0".join(fields).encode("utf-8", "surrogateescape") + b"\0\0" + raw


def decode_request(data: bytes) -> tuple:
    """(client, event, env, raw) of a request; ValueError if it is not one."""
    if not data.startswith(MAGIC) or b"\0\0" not in data:
        raise ValueError("not an agentmem hook request")
    head, raw = data[len(MAGIC):].split(b"\0\0", 1)
    client, event, *pairs = head.decode("utf-8", "surrogateescape").split("\0")
    env = dict(pair.split("=", 1) for pair in pairs)
    return client, event, env, raw


def private_socket(home: str, path: str) -> bool:
    """The home and its socket `path` belong to this user and nobody else can enter the home (what is sent over it,
    a hook's event or a relayed session, is not redacted yet)."""
    try:
        home_st, sock_st = os.stat(home), os.lstat(path)
    except OSError:
        return False
    uid = os.geteuid()
    return (home_st.st_uid == uid and not home_st.st_mode & 0o077 and sock_st.st_uid == uid
            and (sock_st.st_mode & 0o170000) == 0o140000)


def _private_or_missing(home: str) -> bool:
    """The home is this user's and nobody else can enter it, or it is not made yet (the hook makes it private)."""
    try:
        st = os.stat(home)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return st.st_uid == os.geteuid() and not st.st_mode & 0o077


def hand_off(client: str, event: str, raw: bytes, env) -> bytes | None:
    """What to print, as the running process answered (b"" for nothing); None when no process took the event."""
    return try_hand_off(client, event, raw, env)[0]


def try_hand_off(client: str, event: str, raw: bytes, env) -> tuple:
    """(`hand_off`'s answer, whether no process listens: no socket, or a socket nobody accepts on). A socket that
    is not private, a timeout or a broken connection is not "none listens": something is there."""
    if os.name == "nt" or not hasattr(_socket, "AF_UNIX"):
        return None, False
    home = home_dir(env)
    path = os.path.join(home, SOCKET_NAME)
    if len(path) > 100:
        return None, False
    if not private_socket(home, path):
        return None, _private_or_missing(home) and not os.path.lexists(path)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(HANDOFF_TIMEOUT_S)
        try:
            sock.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):  # a socket left by a process that died
            return None, True
        sock.sendall(encode_request(client, event, request_env(env), raw))
        sock.shutdown(_socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    except OSError:  # a dead socket, a timeout: this process handles the event
        return None, False
    finally:
        sock.close()
    answer = b"".join(chunks)
    return (answer[len(ANSWERED):] if answer.startswith(ANSWERED) else None), False


def quiet_answer(client: str, event: str) -> bytes | None:
    """What a hook prints for `event` whatever is stored (`QUIET_EVENTS`); None for an event that may print context."""
    if event.strip().lower() not in QUIET_EVENTS.get(client, ()):
        return None
    return b"{}" if client == "cursor" else b""


def take_turn(home: str, *, create: bool = False, timeout: float = ORDER_WAIT_S) -> int | None:
    """A descriptor of `<home>/hooks.order` that holds its lock (flock: a forked child holds it too), once whoever
    records an earlier hook's event has let it go, or once `timeout` has passed (an event is never held back for
    long: its order then goes before its being recorded in time). None when there is no such file (no hook has
    detached in this home: nothing to wait for) and `create` is false, or it cannot be had."""
    try:
        import fcntl
    except ImportError:  # no flock here (Windows): hooks never detach there
        return None
    flags = os.O_RDWR | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | (os.O_CREAT if create else 0)
    try:
        fd = os.open(os.path.join(home, ORDER_LOCK), flags, 0o600)
    except OSError:
        return None
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                return fd
            time.sleep(0.002)
        except OSError:
            os.close(fd)
            return None


def _starts_process(env, home: str) -> bool:
    """This hook may start the shared process: AGENTMEM_HOOK_STARTS_PROCESS is not off, and the config file does not
    set `hook_starts_process` or `hook_handoff` (either way: reading it here would cost what detaching saves)."""
    if env.get("AGENTMEM_HOOK_STARTS_PROCESS", "").strip().lower() in ("0", "false", "no", "off"):
        return False
    config = env.get("AGENTMEM_CONFIG")
    path = os.path.abspath(os.path.expanduser(config)) if config else os.path.join(home, "config.toml")
    try:
        with open(path, "rb") as handle:
            text = handle.read(1 << 20)
    except OSError:
        return True
    return b"hook_starts_process" not in text and b"hook_handoff" not in text


def _private_home(home: str) -> bool:
    try:
        st = os.stat(home)
    except OSError:
        return False
    return st.st_uid == os.geteuid() and not st.st_mode & 0o077 and (st.st_mode & 0o170000) == 0o040000


def detach(client: str, event: str, raw: bytes, turn: int) -> bool:
    """Record the event in a forked child, which then starts the shared process for the next hooks, and return
    True in the parent (the hook answers and exits); False when no child could be made (this process records it).
    The child holds the order lock `turn` until the event is committed (or spooled), is in a session of its own
    (the client's timeout kills none of it) and keeps none of the client's pipes, so the client waits for nothing."""
    if not hasattr(os, "fork") or not hasattr(os, "setsid") or turn <= 2:  # a client that closed our stdio
        return False
    sys.stdout.flush()
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid:
        os.close(turn)  # the child's copy holds the lock
        return True
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, turn)
        os.closerange(turn + 1, max(turn + 2, 1024))
        from agentmem_mcp.capture.hook import record_detached

        record_detached(client, event, raw, turn)
    finally:
        os._exit(0)


def parse_args(argv: list) -> tuple:
    """(client, event or None, wants help) from `[hook] [--client C] EVENT`."""
    args = list(argv[1:] if argv[:1] == ["hook"] else argv)
    client, event = "claude-code", None
    while args:
        arg = args.pop(0)
        if arg in ("-h", "--help"):
            return client, event, True
        if arg == "--client" and args:
            client = args.pop(0)
        elif arg.startswith("--client="):
            client = arg.split("=", 1)[1]
        elif event is None:
            event = arg
    return client, event, False


def _alone(env) -> bool:
    """agentmem is off (AGENTMEM_DISABLE), or hooks are not to be handed off (AGENTMEM_HOOK_HANDOFF=0)."""
    return (env.get("AGENTMEM_DISABLE", "").strip().lower() in ("1", "true", "yes", "on")
            or env.get("AGENTMEM_HOOK_HANDOFF", "").strip().lower() in ("0", "false", "no", "off"))


class _Prefixed:
    """A stream that gives `head` first, then the rest of `stream` (an input already read in part)."""

    def __init__(self, head: bytes, stream) -> None:
        self.head, self.stream = head, stream

    def read(self, size: int = -1) -> bytes:
        if not self.head:
            return self.stream.read(size)
        if size < 0:
            data, self.head = self.head + self.stream.read(), b""
            return data
        data, self.head = self.head[:size], self.head[size:]
        return data


def main(argv: list) -> int:
    """`hook [--client C] EVENT`: hand off or handle; always exits 0 (through os._exit, see capture/hook.py)."""
    client, event, wants_help = parse_args(argv)
    stdin = sys.stdin.buffer
    absent = False
    if event is not None and not wants_help:
        raw = b""
        answer, absent = None, False
        try:
            raw = stdin.read(MAX_STDIN_BYTES + 1)
            env = os.environ
            if not _alone(env) and len(raw) <= MAX_STDIN_BYTES:
                answer, absent = try_hand_off(client, event, raw, env)
                if answer is None:  # recorded here or by a child of this process: after the hooks before it
                    home = home_dir(env)
                    quiet = quiet_answer(client, event) if absent and _starts_process(env, home) else None
                    detaching = quiet is not None and _private_home(home)
                    turn = take_turn(home, create=detaching)
                    if detaching and turn is not None and detach(client, event, raw, turn):
                        answer = quiet
        except BaseException:
            answer = None
        if answer is not None:
            try:
                sys.stdout.buffer.write(answer)
                sys.stdout.flush()
            except BaseException:
                pass
            os._exit(0)
        stdin = _Prefixed(raw, stdin)
    from agentmem_mcp.capture.hook import main as in_process

    return in_process(client, event, wants_help, stdin, start_process=absent)


def run() -> None:
    """The entry of the command `agentmem install` writes (see the module's docstring)."""
    raise SystemExit(main(sys.argv[1:]))


if __name__ == "__main__":
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]  # run as a script: this folder's modules must not shadow the standard library's
    raise SystemExit(main(sys.argv[1:]))
