"""Searches of the `agentmem search` command, taken by the user's shared process (the other side of search_client.py).

The shared process (runtime/embed_service.py) holds the embedding model while agent sessions run, and listens on
`<home>/search.sock` as well (0600; it refuses peers of another user where the system says who they are). Each
connection is one search: the command's variables, its directory and its arguments. The process loads the settings
from those variables, as the command would, and answers with `Store.search`'s answer, or with the error the command
would print. It answers nothing (the command then searches itself) when the settings want another model than its
own or none, or when anything unexpected happens. A store per project and directory stays open for the next search
(at most MAX_STORES), and is opened anew when its files were replaced (a purge, a restore).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .search_client import MAGIC, SOCKET_NAME
from .socket_listener import PrivateListener

log = logging.getLogger("agentmem.search_service")

MAX_REQUEST = 1024 * 1024
READ_TIMEOUT_S = 10.0
MAX_STORES = 4
SEARCH_ARGUMENTS = frozenset({"query", "all_projects", "types", "tiers", "limit", "budget_tokens", "include_history",
                              "min_confidence"})


class SearchListener(PrivateListener):
    """Accepts searches on `<home>/search.sock` on a thread, one thread per search, until `stop`.

    embedder_for(settings): this process's model for those settings, or None (EmbedService.shared_embedder_for)."""

    NAME = "search"
    BACKLOG = 16

    def __init__(self, home: Path, embedder_for: Callable[[Any], Any]) -> None:
        super().__init__(home / SOCKET_NAME)
        self.home = home
        self.embedder_for = embedder_for
        self._stores: OrderedDict[tuple, tuple[Any, threading.Lock]] = OrderedDict()
        self._lock = threading.Lock()
        self.answered = 0

    def prepare(self) -> None:
        try:  # what a search needs, imported before the first one comes
            from .. import store  # noqa: F401
            from ..recall import retrieval  # noqa: F401
        except Exception:
            log.exception("search socket: cannot import the search's modules")

    def take(self, conn: socket.socket) -> None:
        threading.Thread(target=self._serve, args=(conn,), name="agentmem-search", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(READ_TIMEOUT_S)
                chunks, size = [], 0
                while chunk := conn.recv(1 << 16):
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > MAX_REQUEST:
                        return
                data = b"".join(chunks)
                if not data.startswith(MAGIC):
                    return
                request = json.loads(data[len(MAGIC):])
                answer = self.answer(request)
            except (OSError, ValueError, TypeError, AttributeError):
                return
            if answer is None:
                return
            self.answered += 1
            try:
                conn.sendall(json.dumps(answer, ensure_ascii=False, default=str).encode())
            except OSError:
                pass

    def answer(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to one request, or None: the command searches itself."""
        from ..config import ConfigError, load_settings
        from ..models import AgentmemError, SearchRequest

        env, search = request["env"], request["search"]
        if Path(env.get("AGENTMEM_HOME", "")) != self.home or not set(search) <= SEARCH_ARGUMENTS:
            return None
        try:
            settings = load_settings(env, on_warning=lambda _: None)
        except ConfigError:
            return None  # the command says what is wrong with the config in its own way
        model = self.embedder_for(settings)
        if model is None:
            return None
        cwd = request["cwd"]
        if request["global"]:
            project = None
        elif request["project"]:
            project = request["project"]
        else:
            from ..project import project_for

            project = project_for(cwd)
        try:
            store, lock = self._store(settings, env, project, cwd, model)
            with lock:
                return {"ok": True, "result": store.search(SearchRequest(**search)).to_dict()}
        except AgentmemError as exc:
            return {"ok": False, "error": str(exc)}
        except Exception:
            log.exception("search socket: a search failed; the command searches itself")
            return None

    def _store(self, settings: Any, env: dict[str, str], project: str | None, cwd: str, model: Any
               ) -> tuple[Any, threading.Lock]:
        from ..store import Store

        key = (tuple(sorted(env.items())), project, cwd)
        with self._lock:
            found = self._stores.get(key)
            if found is not None and found[0].files_problem is None:
                self._stores.move_to_end(key)
                return found
            opened = (Store.open(settings, project=project, load_embedder=False, embedder=model, workdir=cwd),
                      threading.Lock())
            self._stores[key] = opened
            stale = [found] if found is not None else []
            while len(self._stores) > MAX_STORES:
                stale.append(self._stores.popitem(last=False)[1])
        for old, old_lock in stale:
            with old_lock:
                old.close()
        return opened

    def stop(self) -> None:
        """Stop accepting, remove the socket if it is still ours, and close the stores."""
        super().stop()
        with self._lock:
            stores, self._stores = list(self._stores.values()), OrderedDict()
        for store, lock in stores:
            with lock:
                store.close()
