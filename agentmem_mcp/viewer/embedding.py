"""The model the viewer's search uses: the shared per-user embedding process's (runtime/embed_service.py), never a
copy of its own. With it, the viewer's search is memory_search's hybrid search (BM25 + vectors + entity graph);
without it (embeddings off, the shared process turned off or unable to start, a home others can enter), search
runs on BM25 + the entity graph and every page says why.

The viewer reaches the process that `agentmem serve` already uses, or starts it (it exits by itself once no
server and no viewer is connected): the model is then loaded once per user whichever of them came first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ..config import Settings
from ..db import vectors as vector_rows
from ..runtime.embed_service import RETRY_AFTER_S, ServiceClient, ServiceUnavailable, SharedEmbedder, connect_or_start


class BorrowedEmbedder(SharedEmbedder):
    """A `SharedEmbedder` that never loads a model in this process: when the shared process cannot be used, it
    has no vectors (search says so), and it tries the shared process again, in the background, now and then.
    `on_ready` runs once, when vectors first come."""

    on_ready: Callable[[], None] | None = None
    _announced_ready = False

    def load(self) -> bool:
        """Reach (or start) the shared process; no model of our own when that fails."""
        with self._lock:
            if self._loaded.is_set():
                return self.ready
            try:
                if self.enabled:
                    self._connect()
            finally:
                self._loaded.set()
        return self.ready

    @property
    def ready(self) -> bool:
        if not self._usable and self.enabled and self._loaded.is_set():
            self._shared_client()  # after a failure: tries again in the background, every RETRY_AFTER_S at most
        return self._usable

    @property
    def status(self) -> str:
        """"ready", "loading" (the shared process is being reached or started) or "unavailable: why"."""
        if self._usable:
            return "ready"
        if self._error:
            return f"unavailable: {self._error}"
        return "loading"

    def _connect(self) -> None:
        try:
            self._set_client(connect_or_start(self.home, self.model_name, self.model_path, self.idle_seconds,
                                              self.start_timeout))
        except ServiceUnavailable as exc:
            self._error = str(exc)
            self._retry_at = time.monotonic() + RETRY_AFTER_S

    def _reconnect(self) -> None:
        self._connect()

    def _set_client(self, client: ServiceClient) -> None:
        super()._set_client(client)
        self._usable = True
        if self.on_ready is not None and not self._announced_ready:
            self._announced_ready = True
            self.on_ready()

    def _drop_client(self, client: ServiceClient) -> None:
        super()._drop_client(client)
        self._usable = self._client is not None
        if not self._usable:
            self._error = "the shared embedding process went away (it is being started again)"

    def _load_local(self) -> None:
        return None  # never a second copy of the model in the viewer


def borrowed_model(settings: Settings) -> tuple[BorrowedEmbedder | None, str | None]:
    """The embedder for the viewer's store and, when there is none, why (for the page)."""
    if not settings.embeddings:
        return None, "embeddings are turned off (AGENTMEM_EMBEDDINGS=0)"
    if not settings.shared_embedder:
        return None, ("the shared embedding process is turned off (AGENTMEM_SHARED_EMBEDDER=0), and the viewer "
                      "loads no model of its own")
    return BorrowedEmbedder(settings.home, settings.embed_model, settings.embed_model_path,
                            idle_seconds=settings.embed_idle_seconds), None


def start(embedder: BorrowedEmbedder, store: Any) -> threading.Thread:
    """Reach the shared process on a daemon thread (a cold start loads the model there: seconds); once it answers,
    `store` has a vector table for the edits the viewer saves (made when missing: a home whose memories were all
    stored without a model has none; one of another model is left to the server, which re-embeds)."""
    def vector_table() -> None:
        with store.transaction() as conn:
            if not vector_rows.table_exists(conn):
                store.ensure_vector_table(conn)
    embedder.on_ready = vector_table
    thread = threading.Thread(target=embedder.load, name="agentmem-viewer-model", daemon=True)
    thread.start()
    return thread


def in_users_words(mode: str) -> str:
    """What every page says about search, for its user: nothing while search works fully; else what it cannot do
    now (the Health page gives the technical detail, `search_mode`)."""
    if mode == "loading":
        return ("Search matches memories by their words for a few seconds, until the model that also matches them by "
                "meaning has started.")
    if mode == "bm25":
        return ("Search here matches memories by their words only: a memory that matches by meaning alone is not "
                "found (Health says why).")
    return ""


def search_mode(embedder: Any, why_not: str | None) -> tuple[str, str]:
    """What the Health page says about search: ("hybrid" | "loading" | "bm25", the sentence)."""
    if embedder is None:
        return "bm25", f"Search here runs on BM25 + the entity graph: {why_not}."
    status = embedder.status
    if status == "ready":
        pid = embedder.service_pid
        return "hybrid", ("Search here is memory_search's: BM25 + vectors + the entity graph, with the model of the "
                          f"shared embedding process{f' (pid {pid})' if pid else ''}, which `agentmem serve` uses "
                          "too: no second copy of the model.")
    if status == "loading":
        return "loading", ("Search here runs on BM25 + the entity graph while the shared embedding model is "
                           "reached (a cold start loads it in a few seconds); vectors join in then.")
    return "bm25", (f"Search here runs on BM25 + the entity graph: {status.removeprefix('unavailable: ')}; a "
                    "memory that matches by meaning alone is not found here.")
