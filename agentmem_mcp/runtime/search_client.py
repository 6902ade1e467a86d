"""`agentmem search`'s front door: ask the user's running shared process (runtime/embed_service.py, which holds the
embedding model while agent sessions run) to search, instead of loading the model in this process (~290 MB, most of
a second). The other side is runtime/search_service.py.

Like a hook (capture/hook_client.py), this imports little: it sends the command's variables (AGENTMEM_*), its
directory and its arguments over `<home>/search.sock` (0600, in a home nobody else can enter, never a network port),
and the process answers with the very `Store.search` answer this process would have computed, with the same
settings. When no process answers (none running, another model there, a socket not private, a timeout), the command
searches in its own process, as it always did.
"""

from __future__ import annotations

import json
import os

from ..capture.hook_client import home_dir, private_socket, request_env

SOCKET_NAME = "search.sock"
MAGIC = b"agentmem-search 1\n"
TIMEOUT_S = 30.0  # a first search in the process opens the store (a rebuild of a damaged index can take longer)
MAX_ANSWER = 64 * 1024 * 1024


def remote_search(search: dict, *, project: str | None, global_: bool, env=None) -> dict | None:
    """The shared process's answer to `search` (the keyword arguments of `Store.search`) in this directory:
    {"ok": true, "result": SearchResult.to_dict()} or {"ok": false, "error": message}; None when no process took
    it (the caller searches itself)."""
    import _socket

    env = os.environ if env is None else env
    if os.name == "nt" or not hasattr(_socket, "AF_UNIX"):
        return None
    home = home_dir(env)
    path = os.path.join(home, SOCKET_NAME)
    if len(path) > 100 or not private_socket(home, path):
        return None
    request = {"env": request_env(env), "cwd": os.getcwd(), "project": project, "global": global_, "search": search}
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(TIMEOUT_S)
        sock.connect(path)
        sock.sendall(MAGIC + json.dumps(request).encode("utf-8", "surrogateescape"))
        sock.shutdown(_socket.SHUT_WR)
        chunks, size = [], 0
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_ANSWER:
                return None
    except OSError:
        return None
    finally:
        sock.close()
    try:
        answer = json.loads(b"".join(chunks))
    except ValueError:  # no answer: the process would not take it
        return None
    return answer if isinstance(answer, dict) and isinstance(answer.get("ok"), bool) else None
