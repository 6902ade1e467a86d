"""Every request passes here first: the Host header must name this server (no DNS rebinding), the path must start
with this run's own path (`Secrets.root`, random), the per-run token must come as the cookie (or once in the URL,
which sets the cookie and redirects to the same page without it), a state change must be a POST carrying the CSRF
token from the page, and every answer gets a strict Content-Security-Policy and no-store caching. Anything else is
answered 403 and reaches no page.

The cookie is bound to this run: named for its port (`agentmem_ui_<port>`) and sent by the browser only under the
run's path (`Path=/<root>`). Cookies do not keep to a port: with `Path=/` a browser sends it to every server on
127.0.0.1 (a dev server on :3000 would read the token); no other local server is ever asked for a path under this
run's random one, so none receives it."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from .html import ROOT

COOKIE = "agentmem_ui"  # the cookie's name is this, then "_" and the port
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make the browser send "Origin: null"
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]
SAFE_METHODS = ("GET", "HEAD")
MAX_FORM_BYTES = 1_000_000

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass
class Secrets:
    """This run's access token (in the printed URL, then the cookie) and CSRF token (in every form)."""

    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    root: str = field(default_factory=lambda: "/" + secrets.token_urlsafe(12))  # every path of this run starts so
    hosts: tuple[str, ...] = ()  # the Host header values this server answers to (set once the port is known)
    cookie: str = COOKIE

    def allow_port(self, port: int) -> None:
        self.hosts = (f"127.0.0.1:{port}", f"localhost:{port}")
        self.cookie = f"{COOKIE}_{port}"


def same(a: str | None, b: str) -> bool:
    return a is not None and hmac.compare_digest(a.encode(), b.encode())


def cookies(scope: Scope) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in scope.get("headers", ()):
        if name == b"cookie":
            for part in value.decode("latin-1").split(";"):
                key, _, val = part.strip().partition("=")
                found.setdefault(key, val)
    return found


def header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == wanted:
            return value.decode("latin-1")
    return None


class Guard:
    """ASGI middleware applying the rules of this module before the app sees a request."""

    def __init__(self, app: Callable[..., Awaitable[None]], keys: Secrets) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        if header(scope, b"host") not in self.keys.hosts:
            await refuse(with_headers, "this viewer answers only at 127.0.0.1 or localhost on its own port")
            return
        root, path = self.keys.root, scope["path"]
        if path != root and not path.startswith(root + "/"):
            await refuse(with_headers, "open the address `agentmem ui` printed (it carries this run's path and token)")
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if not same(cookies(scope).get(self.keys.cookie), self.keys.token):
            if scope["method"] in SAFE_METHODS and same(query.get("token"), self.keys.token):
                rest = urlencode({k: v for k, v in query.items() if k != "token"})
                await redirect_with_cookie(with_headers, scope["path"] + (f"?{rest}" if rest else ""), self.keys)
                return
            await refuse(with_headers, "open the address `agentmem ui` printed (it carries this run's token)")
            return
        if scope["method"] not in SAFE_METHODS:
            if scope["method"] != "POST":
                await refuse(with_headers, "only GET and POST are answered")
                return
            origin = header(scope, b"origin")
            if origin is not None and origin not in (f"http://{h}" for h in self.keys.hosts):
                await refuse(with_headers, "a request from another site is refused")
                return
            body = await read_body(receive)
            if body is None or not same(dict(parse_qsl(body.decode("utf-8", "replace"))).get("csrf"),
                                        self.keys.csrf):
                await refuse(with_headers, "the form's CSRF token is missing or wrong: reload the page and retry")
                return
            receive = replay(body)
        inner = {**scope, "path": path[len(root):] or "/", "raw_path": (path[len(root):] or "/").encode()}
        mark = ROOT.set(root)
        try:
            await self.app(inner, receive, with_headers)
        finally:
            ROOT.reset(mark)


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None past MAX_FORM_BYTES."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> MutableMapping[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}
    return receive


async def refuse(send: Send, why: str) -> None:
    body = f"403 Forbidden: {why}\n".encode()
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def redirect_with_cookie(send: Send, location: str, keys: Secrets) -> None:
    cookie = f"{keys.cookie}={keys.token}; HttpOnly; SameSite=Strict; Path={keys.root}"
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", location.encode()), (b"set-cookie", cookie.encode()),
                            (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})
