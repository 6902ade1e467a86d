"""What every request of the viewer shares (`Viewer`: settings, the secrets, the store, opened once, and the
read-only aiosqlite connection) and the page frame it renders; `viewer(request)` finds it. The routes that use
it (`pages`, `upkeep`, `actions`) import this module, and `app` imports them: nothing imports back.

The store is opened without a model of its own: its search borrows the shared per-user embedding process's
(`embedding.py`), the one `agentmem serve` uses, so a second copy never sits beside it; until (or unless) that
process answers, search runs on BM25 + the entity graph, and every page says which.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from string import Template
from typing import Any, TypeVar

import aiosqlite
import anyio
import sqlean
from starlette.requests import Request
from starlette.responses import HTMLResponse

from ..config import Settings
from ..db import browse
from ..lifecycle.retention import retention
from ..version import package_version
from . import embedding
from .html import ROOT, Markup, join, render, tag
from .security import Secrets

HERE = Path(__file__).parent
NAV = (("/search", "Search"), ("/memories", "Memories"), ("/sessions", "Sessions"), ("/knowledge", "Project knowledge"),
       ("/lifecycle", "Lifecycle"), ("/quarantine", "Quarantine"), ("/audit", "Audit"), ("/health", "Health"))
DONE = {  # ?done= codes: the messages are fixed here, so a crafted link cannot put words on the page
    "edited": "Saved as a new version; the old one is kept in the version chain.",
    "unchanged": "Nothing changed: the text is the same as the current version.",
    "pinned": "Pinned: it is always in the session-start briefing and never decays.",
    "unpinned": "Unpinned.",
    "priority": "Priority changed.",
    "forgotten": "Forgotten: every version is gone from the database, the vectors and the keyword index.",
    "released": "Released from quarantine: it is searched and injected again.",
    "shared": "Shared with the team (team memory): published, or queued until the team server answers.",
}
T = TypeVar("T")


class Viewer:
    """What every request shares: settings, the secrets, the store and the read-only connection."""

    def __init__(self, settings: Settings, keys: Secrets) -> None:
        self.settings = settings
        self.keys = keys
        self.store: Any = None
        self.db: Any = None
        self.embedder, self.no_model = embedding.borrowed_model(settings)
        self.limiter = anyio.CapacityLimiter(2)
        self.frame = Template((HERE / "templates" / "page.html").read_text(encoding="utf-8"))
        self.version = package_version()

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a library call (sync, SQLite + tantivy) on a worker thread."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), limiter=self.limiter)

    async def open(self) -> None:
        from ..store import Store

        self.store = await self.call(Store.open, self.settings, project=None, load_embedder=False,
                                     index_in_background=True, embedder=self.embedder)
        if self.embedder is not None:
            embedding.start(self.embedder, self.store)
        self.db = await open_reader(self.store.db_path, self.settings.busy_timeout_ms)

    async def close(self) -> None:
        if self.db is not None:
            await self.db.close()
        if self.store is not None:
            await anyio.to_thread.run_sync(self.store.close)
        if self.embedder is not None:
            self.embedder.close()  # the shared process exits once no server or viewer is connected

    def search_mode(self) -> tuple[str, str]:
        """("hybrid" | "loading" | "bm25", what the pages say about search)."""
        return embedding.search_mode(self.embedder, self.no_model)

    async def page(self, request: Request, *, page: str, title: str, body: Any, heading: Any = None,
                   live: str = "", status: int = 200, error: str | None = None, assets: Markup | str = "",
                   ) -> HTMLResponse:
        """A whole page: the frame around `body`, the nav with `page` marked, a flash from ?done= or `error`;
        `assets`: the page's own <link> and <script> elements (served from the package)."""
        nav = join(tag("a", label, href=path, class_="current" if path == page else None) for path, label in NAV)
        done = DONE.get(request.query_params.get("done", ""))
        flash: Markup | str = ""
        if error:
            flash = tag("p", error, class_="flash error", role="alert", id="flash")
        elif done:
            flash = tag("p", done, class_="flash", role="status", id="flash")
        marks = await browse.latest_ids(self.db) if live else {"observation": 0, "memory": 0}
        search, mode = self.search_mode()
        if page != "/health":  # the technical sentence (the shared process, its pid) is for the Health page
            mode = embedding.in_users_words(search)
        text = render(self.frame, title=title, heading=heading if heading is not None else title, body=body,
                      nav=nav, flash=flash, mode=mode, search=search, page=page, live=live,
                      observation=marks["observation"],
                      memory=marks["memory"], version=self.version, home=str(self.settings.home),
                      assets=assets, root=ROOT.get())
        return HTMLResponse(text, status_code=status)


async def open_reader(database: Path, busy_timeout_ms: int) -> aiosqlite.Connection:
    """A read-only connection (mode=ro: this process cannot write through it) run on aiosqlite's thread, with the
    SQL function `retention(days, strength)` the lifecycle charts count by (`db.browse.lifecycle_sample`)."""
    def connector() -> Any:
        conn = sqlean.connect(f"file:{database}?mode=ro", uri=True, timeout=busy_timeout_ms / 1000,
                              isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlean.Row
        conn.create_function("retention", 2, retention, deterministic=True)
        return conn
    return await aiosqlite.core.Connection(connector, iter_chunk_size=256)


def viewer(request: Request) -> Viewer:
    return request.app.state.viewer
