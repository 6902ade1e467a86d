"""Team memory in the MCP server: the `memory_share` tool (registered only when team memory is configured)
and `memory_save(share=true)`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from ..server.answers import ShareAnswer

if TYPE_CHECKING:
    from ..store import Store


def share_saved(store: Store, memory_id: str) -> str:
    """`sync.share_now`, for `memory_save(share=true)` and `memory_share`."""
    from .sync import share_now

    return share_now(store, memory_id)


def register_team_tools(tools: list[Any], state: Any, tool: Any, call: Any) -> None:
    """With team memory configured: add `memory_share` to the MCP server's tools and keep a connection pool for
    team search. Without it: leave `memory_save`'s `share` argument out of the schema the agent reads (the tool
    list stays as it was; a `share` sent anyway answers that team memory is not configured)."""
    if not state.settings.team_url:
        for at, found in enumerate(tools):
            if found.name == "memory_save":
                schema = dict(found.parameters)
                schema["properties"] = {k: v for k, v in schema["properties"].items() if k != "share"}
                tools[at] = found.model_copy(update={"parameters": schema})
        return
    import atexit

    from . import close_servers
    from .recall import use_pool

    use_pool()
    atexit.register(close_servers)  # the pool's connections end with the server

    @tool(tools, read_only=False, idempotent=True)
    async def memory_share(
        id: Annotated[str, Field(description="Memory id to share")],
        ctx: Context | None = None,
    ) -> ShareAnswer:
        """Share a memory of this project with the team (team memory): its author is this user. Only when the
        user asks for it; working memories never leave this machine."""
        def run(store: Any) -> dict[str, Any]:
            store.get(id, within=store.walls())  # this project's and the global memories only
            return {"id": id, "note": share_saved(store, id)}
        return await call(state, ctx, run)


