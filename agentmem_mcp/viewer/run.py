"""`agentmem ui`: bind 127.0.0.1 (a free port unless --port), print the address with this run's token, open the
browser (unless --no-browser) and serve until Ctrl-C."""

from __future__ import annotations

import socket
import sys
import threading
import webbrowser

from ..config import load_settings
from ..models import AgentmemError
from .security import Secrets

HOST = "127.0.0.1"


def listen(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 only (port 0: a free one); a busy port is a one-line error."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise AgentmemError(f"cannot listen on {HOST}:{port} ({exc.strerror}): give another --port, or --port 0 "
                            "for a free one") from None
    sock.listen(128)
    return sock


def serve(port: int = 0, open_browser: bool = True) -> int:
    from ..logs import setup_logging
    from ..preflight import home_problem

    settings = load_settings()
    problem = home_problem(settings)
    if problem:
        raise AgentmemError(f"cannot start the viewer: {problem}")
    if not 0 <= port <= 65535:
        raise AgentmemError(f"--port must be from 0 to 65535, not {port}")
    setup_logging(settings)
    import uvicorn

    from .app import build_app

    sock = listen(port)
    keys = Secrets()
    bound = sock.getsockname()[1]
    keys.allow_port(bound)
    url = f"http://{HOST}:{bound}/search?token={keys.token}"
    server = uvicorn.Server(uvicorn.Config(build_app(settings, keys), log_level="warning", access_log=False,
                                           lifespan="on", server_header=False))
    print(f"agentmem ui: {url}", flush=True)
    print("(this address carries this run's token: keep it to yourself; Ctrl-C stops the viewer)", file=sys.stderr,
          flush=True)
    if open_browser:
        threading.Timer(0.3, webbrowser.open, args=(url,)).start()
    server.run(sockets=[sock])
    return 0
