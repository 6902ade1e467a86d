"""The hook's front door: hand the event to agentmem's running process, or handle it in this one.

    python -c "from agentmem_mcp.capture.hook_client import run; run()" hook [--client claude-code|cursor] EVENT

(what `agentmem install` writes) and `agentmem hook ...` both come here. (Not this file's path: when a venv is
recreated for another Python, that path is gone and Python exits 2, which Claude Code reads as "block"; a missing
module exits 1, which it does not.) Starting Python's own libraries (`re`,
`json`, `pathlib`, `sqlean`) costs a hook process more than starting the interpreter; the user's shared agentmem
process (`runtime/embed_service.py`, running while agent sessions are) has them loaded already. So this module
imports only `os`, `sys` and `_socket`: it reads the event, sends it over `<home>/hooks.sock` (0600, in a home
nobody else can enter, never a network port), and prints the answer, which that process computes with the very
code a hook runs (`capture.hook.respond`) and sends only after the observation is committed.

When no process answers (none running, a home or socket not private, a timeout, a broken connection) the event is
handled in this process (`capture/hook.py`), as it always was: nothing is lost. If the shared process committed
and died before answering, the event is recorded again here, and the observation's count says 2. When none was
running at all (the first hook of the day, or hooks without a server), this process also starts one in the
background for hooks (`capture.hook.start_shared_process`), so that the next hooks find it.
"""

import _socket
import os
import sys

SOCKET_NAME = "hooks.sock"
MAGIC = b"agentmem-hook 1\n"
ANSWERED = b"OK\n"
HANDOFF_TIMEOUT_S = 4.5  # the process waits at most 3 s for SQLite's lock, then spools; the client allows 10 s
MAX_STDIN_BYTES = 64 * 1024 * 1024  # as capture/hook.py: larger inputs are cut there, in this process
PATH_VARIABLES = ("AGENTMEM_HOME", "AGENTMEM_DB", "AGENTMEM_INDEX_DIR", "AGENTMEM_EMBED_MODEL_PATH",
                  "AGENTMEM_CONFIG")
DATA_VARIABLES = ("AGENTMEM_HOME", "AGENTMEM_DB", "AGENTMEM_INDEX_DIR")  # relative: from ~ (config.user_path)


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
            if not _alone(os.environ) and len(raw) <= MAX_STDIN_BYTES:
                answer, absent = try_hand_off(client, event, raw, os.environ)
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
