"""The viewer's changes (POST only; `security.Guard` has checked the token and the CSRF field). Each calls the
library path the CLI uses and redirects to a page that shows the result (?done= names a fixed message)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..lifecycle import confirm
from ..lifecycle.forget import ForgetRequest
from ..models import TYPES, InvalidInput, check_choice, check_memory_id
from .html import href
from .state import viewer

if TYPE_CHECKING:
    from ..lifecycle.forget import ForgetResult
    from ..models import SaveResult
    from ..store import Store

MAX_CONTENT_CHARS = 100_000


def _to(path: str, done: str) -> Response:
    return RedirectResponse(href(path, done=done), status_code=303)


def _id(request: Request) -> str:
    return check_memory_id(request.path_params["memory_id"])


async def edit(request: Request) -> Response:
    """A new version of the memory with the edited text (lifecycle/remember.py's supersede path, as the user)."""
    v = viewer(request)
    memory_id = _id(request)
    form = await request.form()
    content = str(form.get("content", ""))[:MAX_CONTENT_CHARS]
    title = str(form.get("title", "")).strip()[:300] or None
    kind = check_choice("type", str(form.get("type", "")), TYPES)

    def save() -> SaveResult:
        from ..lifecycle.remember import SaveRequest

        old = v.store.get(memory_id)
        if not old.is_latest:
            raise InvalidInput("this version is superseded: edit the latest one")
        return v.store.save(SaveRequest(
            content, title=title, type=kind, tier=old.tier, project=old.project, tags=old.tags, files=old.files,
            importance=old.importance, priority=old.priority, pinned=old.pinned, supersedes=old.id, source="user"))
    result = await v.call(save)
    return _to(f"/memory/{result.id}", "unchanged" if result.action == "duplicate" else "edited")


async def pin(request: Request) -> Response:
    memory = await viewer(request).call(confirm.pin, viewer(request).store, _id(request))
    return _to(f"/memory/{memory.id}", "pinned")


async def unpin(request: Request) -> Response:
    memory = await viewer(request).call(confirm.pin, viewer(request).store, _id(request), unpin=True)
    return _to(f"/memory/{memory.id}", "unpinned")


async def priority(request: Request) -> Response:
    form = await request.form()
    memory = await viewer(request).call(confirm.set_priority, viewer(request).store, _id(request),
                                        str(form.get("priority", "")))
    return _to(f"/memory/{memory.id}", "priority")


async def share(request: Request) -> Response:
    """Share the memory with the team (team memory, shown only when it is configured), as `agentmem share`."""
    from ..team import sync

    v = viewer(request)
    memory_id = _id(request)
    await v.call(sync.share, v.store, memory_id)  # refused (read-only, working tier, ...) with a clear error
    await v.call(sync.sync, v.store, pull_changes=False, force=True)  # publish now, or keep it queued
    return _to(f"/memory/{memory_id}", "shared")


def _forget_for_good(store: Store, run: Callable[[], ForgetResult]) -> None:
    """Forget, then leave no copy of the text on disk (maintenance.erase_forgotten), as `agentmem forget` does."""
    from ..upkeep.maintenance import erase_forgotten

    if run().count:
        erase_forgotten(store, memories_deleted=True)


async def forget(request: Request) -> Response:
    v = viewer(request)
    memory_id = _id(request)
    asked = ForgetRequest(ids=[memory_id], reason="forgotten in the viewer")
    await v.call(_forget_for_good, v.store, lambda: v.store.forget(asked))
    return _to("/memories", "forgotten")


async def release(request: Request) -> Response:
    v = viewer(request)
    await v.call(confirm.release, v.store, _id(request))
    return _to("/quarantine", "released")


async def forget_quarantined(request: Request) -> Response:
    v = viewer(request)
    memory_id = _id(request)
    await v.call(_forget_for_good, v.store, lambda: confirm.forget_quarantined(v.store, memory_id))
    return _to("/quarantine", "forgotten")
