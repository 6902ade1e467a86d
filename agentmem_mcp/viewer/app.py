"""The viewer's Starlette app: the routes (page handlers in `pages` and `upkeep`, reading, and `actions`,
changing) and the error page; what every request shares is `state.Viewer`.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..config import Settings
from ..models import AgentmemError, NotFound
from . import actions, pages, upkeep
from .html import href, tag
from .security import Guard, Secrets
from .state import HERE, Viewer, viewer


async def refused(request: Request, exc: Exception) -> Response:
    """A request the library refused (bad input, a forgotten memory): its one-line reason on the page."""
    status = 404 if isinstance(exc, NotFound) else 400
    return await viewer(request).page(request, page="", title="Not found" if status == 404 else "Refused",
                                      body=tag("p", tag("a", "Back to search", href=href("/search"))),
                                      status=status, error=str(exc))


def build_app(settings: Settings, keys: Secrets) -> Guard:
    """The ASGI app: the routes behind the `security.Guard` middleware."""
    state = Viewer(settings, keys)

    @asynccontextmanager
    async def lifespan(_app: Starlette):
        await state.open()
        try:
            yield
        finally:
            await state.close()

    routes = [
        Route("/", pages.home),
        Route("/search", pages.search),
        Route("/memories", pages.memories),
        Route("/memory/{memory_id}", pages.memory),
        Route("/memory/{memory_id}/edit", pages.edit),
        Route("/memory/{memory_id}/edit", actions.edit, methods=["POST"]),
        Route("/memory/{memory_id}/forget", pages.forget),
        Route("/memory/{memory_id}/forget", actions.forget, methods=["POST"]),
        Route("/memory/{memory_id}/pin", actions.pin, methods=["POST"]),
        Route("/memory/{memory_id}/unpin", actions.unpin, methods=["POST"]),
        Route("/memory/{memory_id}/priority", actions.priority, methods=["POST"]),
        Route("/memory/{memory_id}/share", actions.share, methods=["POST"]),
        Route("/sessions", pages.sessions),
        Route("/session/{session_id}", pages.session),
        Route("/knowledge", pages.knowledge),
        Route("/lifecycle", upkeep.lifecycle),
        Route("/quarantine", upkeep.quarantine),
        Route("/quarantine/{memory_id}/release", actions.release, methods=["POST"]),
        Route("/quarantine/{memory_id}/forget", actions.forget_quarantined, methods=["POST"]),
        Route("/audit", upkeep.audit),
        Route("/health", upkeep.health),
        Route("/api/changes", pages.changes),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={AgentmemError: refused})
    app.state.viewer = state
    return Guard(app, keys)
