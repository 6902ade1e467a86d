"""A relay's own server, when the shared process went during its session (runtime/relay.py).

The client keeps its session: this process builds the server it would have run without a relay, gives it the
client's `initialize` and `notifications/initialized` again and the rest of a line the client had begun, and then
reads stdin. Its answer to that second `initialize` is not passed on (the client had the first); the requests the
shared process had not answered get an error saying to call again. Its first tool call waits for the model (from a
shared process started again, or its own), so that searches go on with vectors as they had them.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import anyio

log = logging.getLogger("agentmem.server")

CHUNK = 1 << 16
GONE = -32603  # JSON-RPC's "internal error"
GONE_MESSAGE = ("agentmem's shared process stopped during this request; agentmem now serves this session in its own "
                "process: call again")


def _write_all(data: bytes) -> None:
    while data:
        data = data[os.write(1, data):]


def take_over(handshake: list[bytes], begun: bytes, unanswered: list[Any], *, swallow: str | None) -> int:
    """Serve the rest of the session in this process (see the module's docstring); the exit code.

    handshake: the client's lines to give the server first; begun: the client's bytes after its last whole line;
    unanswered: the ids of the requests to answer with an error; swallow: the id (as JSON) of the `initialize`
    the client already had an answer to, or None."""
    from ..config import load_settings
    from ..index.heap import limit_arenas
    from ..logs import setup_logging
    from ..preflight import home_problem
    from ..server.app import build_server, serve_lines

    for request_id in unanswered:
        error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": GONE, "message": GONE_MESSAGE}}
        _write_all(json.dumps(error).encode() + b"\n")
    limit_arenas()
    settings = load_settings()
    problem = home_problem(settings)
    if problem:
        print(f"agentmem: cannot serve: {problem}", file=sys.stderr)
        return 2
    setup_logging(settings)
    log.warning("the shared process went during this session: serving it in this process (pid %d)", os.getpid())
    server = build_server(settings, model_first=True)  # searched with vectors until now: not on BM25 alone next
    anyio.run(serve_lines, server, _ClientLines(handshake, begun), _ClientOut(swallow))
    return 0


class _ClientLines:
    """The handshake again, then the client's stdin, line by line."""

    def __init__(self, handshake: list[bytes], begun: bytes) -> None:
        self.ready = list(handshake)
        self.buffer = begun
        self.ended = False

    def __aiter__(self) -> _ClientLines:
        return self

    async def __anext__(self) -> str:
        while True:
            if self.ready:
                return self.ready.pop(0).decode("utf-8", "replace")
            cut = self.buffer.find(b"\n") + 1
            if cut or (self.ended and self.buffer):
                line, self.buffer = (self.buffer[:cut], self.buffer[cut:]) if cut else (self.buffer, b"")
                return line.decode("utf-8", "replace")
            if self.ended:
                raise StopAsyncIteration
            data = await anyio.to_thread.run_sync(os.read, 0, CHUNK, abandon_on_cancel=True)
            self.ended = not data
            self.buffer += data


class _ClientOut:
    """The server's messages to stdout, less its answer to the `initialize` given again."""

    def __init__(self, swallow: str | None) -> None:
        self.swallow = swallow

    async def write(self, text: str) -> None:
        if self.swallow is not None:
            message = json.loads(text)
            if "method" not in message and json.dumps(message.get("id")) == self.swallow:
                self.swallow = None
                return
        try:
            await anyio.to_thread.run_sync(_write_all, text.encode("utf-8"))
        except OSError:  # the client went; reading its stdin ends the session
            pass

    async def flush(self) -> None:
        return None
