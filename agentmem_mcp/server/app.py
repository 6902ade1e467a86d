"""`agentmem serve`: the MCP stdio server. Each tool parses its arguments, calls the library, shapes the answer.

The server answers `initialize` before anything heavy loads; the store opens on first use and the
embedding model loads on a background thread afterwards (until then search runs on BM25 + graph).
Whichever server holds the worker lease also runs the background worker.

Walls: the tools read, supersede and forget only the current project's memories and the global ones (an id
of another project is not found, `all_projects` is refused) unless the user set `allow_cross_project`.
Every text the tools return passes through `trust.neutralize`, and saves are `source = agent`: an agent
cannot make a memory P0, pinned or global, nor replace or forget one the user owns (lifecycle/remember.py,
lifecycle/forget.py). No answer or description names a command that would do it (cli/confirm_user.py).
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
import time
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from ..config import Settings, load_settings
from ..models import AgentmemError, InvalidInput
from ..project import project_from_uri, session_project
from ..trust.policy import as_data, neutralize, typed_by_user
from .answer_cap import Cap, cap_answer
from .answers import ContextAnswer, ForgetAnswer, GetAnswer, SaveAnswer, SearchAnswer, StatsAnswer
from .output import compact_json, compact_schema, compact_search, get_answer, output_schema

log = logging.getLogger("agentmem.server")

MODEL_THREAD_JOIN_S = 10.0

INSTRUCTIONS = """agentmem is your long-term memory for this project. It persists across sessions.
- Call memory_search before starting a task, and whenever something looks familiar (an error, a file,
  a convention): past decisions, fixes and preferences may already be known.
- Call memory_save when you learn something worth knowing next time: a decision and its reason, a user
  preference, a project convention, a bug and its fix, a workflow (how to build, test, deploy).
- Saving the same thing again is harmless; a new version of an old fact supersedes it (history is kept).
"""


class AppState:
    """The store, opened lazily on the first tool call, and the project this session works in.

    workdir: the session's directory (default: this process's; the shared process gives each session its relay's);
    embedder: the model to use (default: the shared embedding process's, else one of the store's own);
    model_first: the first tool call waits (up to MODEL_THREAD_JOIN_S) for the model (a session taken over by its
    relay had vectors until then, runtime/relay_takeover.py)."""

    def __init__(self, settings: Settings, *, workdir: str | None = None, embedder: Any = None,
                 model_first: bool = False) -> None:
        self.settings = settings
        self.model_first = model_first
        self._store: Any = None
        self._lock = threading.Lock()
        self.workdir = workdir or os.getcwd()
        self._embedder = embedder
        self.project: str | None = session_project(self.workdir)
        self.project_from_roots = False
        self.limiter = anyio.CapacityLimiter(4)
        self.stopping = threading.Event()
        self._model_thread: threading.Thread | None = None
        self._model_deadline = 0.0

    def store(self) -> Any:
        with self._lock:
            if self._store is None:
                from ..store import Store

                self._store = Store.open(self.settings, project=self.project, load_embedder=False,
                                         index_in_background=True, workdir=self.workdir,
                                         embedder=self._embedder or _embedder(self.settings))
                if not self.stopping.is_set():
                    self._store.embedder.announce_loading()
                    self._model_thread = threading.Thread(target=self._load_model, args=(self._store,),
                                                          name="agentmem-model", daemon=True)
                    self._model_thread.start()
                    self._model_deadline = time.monotonic() + MODEL_THREAD_JOIN_S
            store, thread = self._store, self._model_thread
        if self.model_first and thread is not None and thread.is_alive():
            thread.join(timeout=max(0.0, self._model_deadline - time.monotonic()))
        return store

    def _load_model(self, store: Any) -> None:
        if store.embedder.load() and not self.stopping.is_set():
            try:
                store.prepare_vectors()
                store.search("warm up the retrievers", record_access=False)  # first-search costs, paid now
            except Exception:
                log.exception("could not embed pending memories")

    def close(self) -> None:
        # The process exits right after: an interpreter torn down under a thread that is still inside
        # onnxruntime aborts (SIGABRT, "terminate called without an active exception"), so wait for it.
        self.stopping.set()
        with self._lock:
            model_thread = self._model_thread
        if model_thread is not None:
            model_thread.join(timeout=MODEL_THREAD_JOIN_S)
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None


def _embedder(settings: Settings) -> Any:
    """The shared embedding process's model (runtime/embed_service.py), or None: the store loads its own."""
    if not (settings.shared_embedder and settings.embeddings):
        return None
    from ..runtime.embed_service import SharedEmbedder

    return SharedEmbedder(settings.home, settings.embed_model, settings.embed_model_path,
                          idle_seconds=settings.embed_idle_seconds)


async def _resolve_project(state: AppState, ctx: Context | None) -> None:
    """Prefer the client's MCP roots over the server's cwd (once per session)."""
    if state.project_from_roots or ctx is None:
        return
    state.project_from_roots = True
    try:
        caps = ctx.client_capabilities
        if caps is None or getattr(caps, "roots", None) is None:
            return
        with anyio.fail_after(2):
            result = await ctx.session.list_roots()
        for root in result.roots:
            project = project_from_uri(str(root.uri))
            if project:
                state.project = project
                if state._store is not None:
                    state._store.project = project
                return
    except Exception as exc:  # roots are a hint; the cwd fallback stays
        log.info("could not read MCP roots: %s", exc)


async def _call(state: AppState, ctx: Context | None, fn: Any) -> Any:
    await _resolve_project(state, ctx)
    try:
        return await anyio.to_thread.run_sync(lambda: fn(state.store()), limiter=state.limiter)
    except AgentmemError as exc:
        raise ToolError(str(exc)) from None
    except Exception as exc:  # left to the SDK, the agent would read only "Error executing tool ..."
        if problem := getattr(state._store, "files_problem", None):  # its files changed: said once, in the log
            raise ToolError(f"agentmem cannot use its database: {problem}") from None
        from ..db.connection import DatabaseError

        if isinstance(exc, DatabaseError):  # a damaged or vanished database: one line, no traceback
            from ..upkeep.maintenance import database_error_line

            log.warning("tool call failed: %s", exc)
            raise ToolError(f"agentmem: {database_error_line(exc)}. Carry on without memory for this step.") from None
        log.exception("tool call failed")
        from ..preflight import explain

        problem = explain(exc, state.settings)
        if problem:
            raise ToolError(f"agentmem cannot use its files: {problem}. Carry on without memory for this step.") \
                from None
        raise ToolError(f"{type(exc).__name__}: {str(exc)[:300]}. This is unexpected (probably a bug in agentmem); "
                        f"details are in {state.settings.log_path}. Carry on without memory for this step.") from None


def _within(store: Any) -> list[str | None] | None:
    """The projects a tool may touch: the current one and the global memories, or any with the user's setting."""
    return None if store.settings.allow_cross_project else store.walls()


def _check_cross_project(store: Any, all_projects: bool) -> None:
    if all_projects and not store.settings.allow_cross_project:
        raise InvalidInput("all_projects is refused: MCP tools reach only this project and global memories "
                           "(other projects are opened by a setting only the user changes)")


def _safe_memory(memory: dict[str, Any]) -> dict[str, Any]:
    """A memory as a tool returns it: its texts shown as data (`trust.as_data`)."""
    out = dict(memory)
    for name in ("title", "content"):
        out[name] = as_data(out[name], trusted=typed_by_user(memory))
    for name in ("tags", "files"):
        out[name] = [neutralize(v) for v in out[name]]
    return out


def _safe_search(answer: dict[str, Any]) -> dict[str, Any]:
    for hit in answer["hits"]:
        for name in ("title", "snippet", "why"):
            hit[name] = neutralize(hit[name])
    answer["query"] = neutralize(answer["query"])
    return answer


def build_server(settings: Settings | None = None, *, workdir: str | None = None, embedder: Any = None,
                 model_first: bool = False) -> MCPServer:
    """The MCP server of one session (see `AppState` for `workdir`, `embedder` and `model_first`)."""
    state = AppState(settings or load_settings(), workdir=workdir, embedder=embedder, model_first=model_first)

    @asynccontextmanager
    async def lifespan(_server: MCPServer):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_background, state)
            try:
                yield state
            finally:
                state.stopping.set()
                tasks.cancel_scope.cancel()
        await anyio.to_thread.run_sync(state.close)

    tools: list[Tool] = []
    tool = functools.partial(_tool, cap=Cap(items=state.settings.tool_answer_items,
                                            chars=state.settings.tool_answer_chars, keep_end=("history",)))

    @tool(tools, read_only=False, idempotent=True)
    async def memory_save(
        content: Annotated[str, Field(description="Self-contained, with the why")],
        type: Literal["decision", "preference", "pattern", "architecture", "bug", "workflow", "fact",
                      "context"] = "fact",
        title: str | None = None,
        tags: list[str] | None = None,
        files: list[str] | None = None,
        importance: Annotated[float, Field(ge=0, le=1)] = 0.5,
        priority: Annotated[Literal["P0", "P1", "P2"], Field(description="P0 never decays")] = "P1",
        scope: Annotated[Literal["project", "global"],
                         Field(description="global: every project")] = "project",
        ttl_days: Annotated[float | None, Field(gt=0)] = None,
        supersedes: Annotated[str | None, Field(description="Id it replaces")] = None,
        share: Annotated[bool, Field(description="Also share with the team (team memory)")] = False,
        ctx: Context | None = None,
    ) -> SaveAnswer:
        """Save what a later session should know, when you learn it, in 1-2 sentences: a decision and why, a
        preference, a convention, a bug and its fix, how to build/test/deploy. A newer version of a fact
        supersedes the old. P1 in this project until the user pins it."""
        def run(store: Any) -> dict[str, Any]:
            from ..lifecycle.remember import SaveRequest

            if supersedes is not None:
                try:
                    store.get(supersedes, within=_within(store))
                except AgentmemError as exc:
                    raise InvalidInput(f"refused to supersede {str(supersedes)[:40]}: {exc}") from None
            result = store.save(SaveRequest(
                content, title=title, type=type, tags=tags, files=files, importance=importance, priority=priority,
                project=None if scope == "global" else store.project, ttl_days=ttl_days, supersedes=supersedes,
                source="agent"))
            answer = result.to_dict()
            if share:
                from ..team.tools import share_saved

                answer["notes"].append(share_saved(store, answer["id"]))
            answer["reason"] = neutralize(answer["reason"])
            answer["notes"] = [neutralize(note) for note in answer["notes"]]
            return answer
        return await _call(state, ctx, run)

    @tool(tools, read_only=True, idempotent=True, shape=compact_search, capped=False)  # limit and budget_tokens cap it
    async def memory_search(
        query: str,
        limit: Annotated[int, Field(ge=1, le=50)] = 8,
        type: Annotated[str | None, Field(description="e.g. decision, bug")] = None,
        tier: Annotated[Literal["working", "episodic", "semantic", "procedural"] | None,
                        Field(description="episodic: session summaries")] = None,
        all_projects: bool = False,
        include_history: Annotated[bool, Field(description="Also superseded versions")] = False,
        min_confidence: Annotated[float | None, Field(ge=0, le=1)] = None,
        since_days: Annotated[float | None, Field(gt=0, description="Last N days only")] = None,
        budget_tokens: Annotated[int | None, Field(ge=50, le=20000)] = None,
        ctx: Context | None = None,
    ) -> SearchAnswer:
        """Search long-term memory. Call it before starting a task, when something looks familiar (an error,
        a file, a tool) or when the user refers to earlier work."""
        def run(store: Any) -> dict[str, Any]:
            from ..models import SearchRequest

            _check_cross_project(store, all_projects)
            since = store.now() - since_days * 86400 if since_days else None
            return _safe_search(store.search(SearchRequest(
                query, limit=limit, types=type, tiers=tier, all_projects=all_projects, include_history=include_history,
                min_confidence=min_confidence, since=since, budget_tokens=budget_tokens)).to_dict())
        return await _call(state, ctx, run)

    @tool(tools, read_only=True, idempotent=True,
          more="the newest versions and the start of each long text are shown: `agentmem get <id> --history` in a "
               "terminal prints them whole")
    async def memory_get(
        id: str,
        history: bool = False,
        ctx: Context | None = None,
    ) -> GetAnswer:
        """A whole memory (from a search hit's id); history=true: every version, oldest first."""
        def run(store: Any) -> dict[str, Any]:
            memory = _safe_memory(store.get(id, within=_within(store)).to_dict())
            versions = ([_safe_memory(m.to_dict()) for m in store.history(id, within=_within(store))]
                        if history else None)
            return get_answer(memory, versions, store.now())
        return await _call(state, ctx, run)

    @tool(tools, read_only=False, destructive=True, idempotent=True, more=_forget_more)
    async def memory_forget(
        ids: list[str] | None = None,
        session_id: str | None = None,
        type: str | None = None,
        older_than_days: Annotated[float | None, Field(gt=0)] = None,
        dry_run: Annotated[bool | None, Field(description="Default: true for a filter")] = None,
        reason: Annotated[str, Field(description="For the audit log")] = "",
        ctx: Context | None = None,
    ) -> ForgetAnswer:
        """Forget wrong or obsolete memories (every version) by ids, session_id, or a filter (type,
        older_than_days) that only previews unless dry_run=false."""
        if sum([ids is not None, session_id is not None, type is not None or older_than_days is not None]) != 1:
            raise ToolError("say what to forget: ids, a session_id, or a filter (type and/or older_than_days), "
                            "exactly one of these")

        def run(store: Any) -> dict[str, Any]:
            from ..lifecycle.forget import ForgetRequest, forget_session

            by_filter = ids is None and session_id is None
            preview = dry_run if dry_run is not None else by_filter
            why = reason or "forgotten by the agent"
            derived: list[str] = []
            if session_id is not None and not preview:
                result, derived = forget_session(store, session_id, why, within=_within(store), keep_protected=True)
            else:
                result = store.forget(ForgetRequest(
                    ids=ids, session_id=session_id, type=type, older_than_days=older_than_days, dry_run=preview,
                    reason=why, within=_within(store), keep_protected=True))
            if not result.dry_run and (result.count or result.observations):  # the CLI's erasure, in the background
                store.erase_soon(memories_deleted=bool(result.count or derived))
            answer = result.to_dict()
            if derived:
                answer["derived"] = derived
            if result.left:
                answer["note"] = (f"left {len(result.left)} memories the user saved, pinned or made P0: only the user "
                                  f"can forget them")
            for memory in answer["memories"]:
                memory["title"] = as_data(memory["title"])
            return answer
        return await _call(state, ctx, run)

    @tool(tools, read_only=True, idempotent=True, capped=False)  # budget_tokens caps it
    async def memory_context(
        budget_tokens: Annotated[int | None, Field(ge=100, le=20000)] = None,
        ctx: Context | None = None,
    ) -> ContextAnswer:
        """The session-start briefing: pinned memories, project knowledge, last sessions. Call it if you did
        not get it (no hooks) or after compaction."""
        def run(store: Any) -> dict[str, Any]:
            from ..recall.briefing import session_context
            from ..recall.git_state import read_tree_state

            text, used = session_context(store.conn, store.project,
                                         budget_tokens or store.settings.context_budget_tokens,
                                         tree_state=read_tree_state(store.project))
            return {"project": store.project, "context": neutralize(text) or "(no memories for this project yet)",
                    "memory_ids": used}
        return await _call(state, ctx, run)

    @tool(tools, read_only=True, idempotent=True, more="the soonest to expire are listed: `agentmem stats` in a "
                                                      "terminal counts them all")
    async def memory_stats(
        all_projects: bool = False,
        ctx: Context | None = None,
    ) -> StatsAnswer:
        """Counts by tier, type and source, what expires soon, the last sweep, backlogs, today's LLM spend."""
        def run(store: Any) -> dict[str, Any]:
            _check_cross_project(store, all_projects)
            return store.stats(all_projects=all_projects)
        return await _call(state, ctx, run)

    from ..team.tools import register_team_tools  # team memory (docs/team.md): the share tool, or no `share`

    register_team_tools(tools, state, tool, _call)
    from ..version import package_version

    return MCPServer(name="agentmem", instructions=INSTRUCTIONS, lifespan=lifespan, log_level="WARNING",
                     version=package_version(), tools=tools)


TOO_LONG = "this answer was shortened to fit its size cap: ask for less (a narrower filter) to see the rest"


def _forget_more(answer: dict[str, Any]) -> str:
    if answer.get("dry_run"):
        return (f"{answer.get('count')} would be forgotten; only the first are listed: narrow the filter (type, "
                "older_than_days) to list the others")
    return f"all {answer.get('count')} were forgotten; only the first are listed"


def _tool(registry: list[Tool], *, read_only: bool, destructive: bool = False, idempotent: bool = False,
          shape: Any = None, cap: Cap | None = None, capped: bool = True, more: Any = TOO_LONG) -> Any:
    """Register an agentmem tool in `registry`: its docstring as one paragraph (without the source's
    indentation and line breaks) as the description, its annotations, a compact input schema, the output schema
    of its return type (answers.py), and an answer whose text is compact JSON (of `shape(answer)` when given)
    with the whole answer in structuredContent. Unless capped=False (a tool whose arguments bound its answer), the
    answer is first held within `cap` (answer_cap.py), `more` (a text, or a function of the answer) saying how to
    see what was left out."""
    cap = cap or Cap(items=10, chars=8000)

    def register(fn: Any) -> Any:
        @functools.wraps(fn)
        async def answered(*args: Any, **kwargs: Any) -> CallToolResult:
            data = await fn(*args, **kwargs)
            if capped:
                data = cap_answer(data, cap, more(data) if callable(more) else more)
            text = compact_json(shape(data) if shape else data)
            return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)

        signature = inspect.signature(fn, eval_str=True)
        answered.__signature__ = signature.replace(  # type: ignore[attr-defined]
            return_annotation=Annotated[CallToolResult, signature.return_annotation])
        hints = ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent)
        description = " ".join(inspect.cleandoc(fn.__doc__ or "").split())
        tool = Tool.from_function(answered, name=fn.__name__, description=description, annotations=hints,
                                  structured_output=True)
        schemas = {"parameters": compact_schema(tool.parameters)}
        tool.fn_metadata.output_schema = output_schema(tool.fn_metadata.output_schema)
        registry.append(tool.model_copy(update=schemas))
        return fn
    return register


async def serve_lines(server: MCPServer, lines_in: Any, lines_out: Any) -> None:
    """Serve one session over other streams than this process's stdio (a session of the shared process, on its
    socket; a relay's own server after the shared process went): `lines_in` yields the client's JSON-RPC lines
    (`async for`), `lines_out` has async `write(text)` and `flush()`. The SDK's stdio transport with explicit
    streams, run as `MCPServer.run_stdio_async` runs it."""
    from mcp.server.stdio import stdio_server

    async with stdio_server(stdin=lines_in, stdout=lines_out) as (read, write):
        lowlevel = server._lowlevel_server
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


async def _background(state: AppState) -> None:
    """Open the store soon after start-up, then run the worker while holding its lease."""
    await anyio.sleep(0.2)
    try:
        await anyio.to_thread.run_sync(state.store)
    except Exception:
        log.exception("could not open the store")
        return
    try:
        from ..runtime.serve_worker import serve_worker_loop
    except ImportError:
        return
    await serve_worker_loop(state)


def run() -> None:
    """Entry point of `agentmem serve`. A home agentmem cannot use stops it before the MCP handshake, with one
    line on stderr (the client shows it as a failed connection and keeps the line in its MCP log)."""
    import sys

    from ..index.heap import limit_arenas
    from ..models import AgentmemError
    from ..preflight import home_problem

    limit_arenas()
    settings = load_settings()
    problem = home_problem(settings)
    if problem:
        raise AgentmemError(f"cannot serve: {problem}")
    from ..logs import setup_logging

    setup_logging(settings)
    if sys.stdin.isatty():
        print("agentmem: MCP server waiting for an MCP client on stdin (a client such as Claude Code starts "
              "it; Ctrl-C to stop)", file=sys.stderr)
    build_server(settings).run()
