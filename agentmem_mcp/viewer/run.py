"""`agentmem ui`: bind 127.0.0.1 (a free port unless --port), print the address with this run's token, open the
browser (unless --no-browser) and serve until Ctrl-C."""

from __future__ import annotations

import os
import socket
import sys
import threading
import webbrowser
from html import escape
from pathlib import Path

from ..config import load_settings
from ..files import ensure_private_dir
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


def launcher(home: Path, url: str) -> Path:
    """A private (0600) page that sends the browser on to `url`: the browser is opened on this file, so the token
    is not on its command line, where every local user could read it (`ps`)."""
    path = home / "ui-open.html"
    old = os.umask(0o077)
    try:
        path.unlink(missing_ok=True)  # our own file from an earlier run
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    finally:
        os.umask(old)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={escape(url)}">'
                  f'<title>agentmem ui</title><a href="{escape(url)}">open agentmem ui</a>\n')
    return path


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
    url = f"http://{HOST}:{bound}{keys.root}/search?token={keys.token}"
    server = uvicorn.Server(uvicorn.Config(build_app(settings, keys), log_level="warning", access_log=False,
                                           lifespan="on", server_header=False))
    print(f"agentmem ui: {url}", flush=True)
    print("(this address carries this run's token: keep it to yourself; Ctrl-C stops the viewer)", file=sys.stderr,
          flush=True)
    page = None
    if open_browser:
        ensure_private_dir(settings.home)
        page = launcher(settings.home, url)
        threading.Timer(0.3, webbrowser.open, args=(page.as_uri(),)).start()
    try:
        server.run(sockets=[sock])
    finally:
        if page is not None:
            page.unlink(missing_ok=True)
    return 0
