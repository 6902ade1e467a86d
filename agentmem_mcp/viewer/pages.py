"""The viewer's pages (GET): each reads what it shows (plain rows through `db/browse.py` on the aiosqlite
connection, library results on a worker thread) and hands it to the renderers of `views`."""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from ..db import browse
from ..lifecycle.forget import ForgetRequest
from ..models import SHOWN_TIERS, TIERS, TYPES, InvalidInput, NotFound, SearchRequest, check_memory_id
from ..recall.anchors import missing_files
from ..recall.ranking import estimate_tokens
from . import params as arg
from . import views
from .html import Markup, href, join, table, tag
from .state import viewer


async def home(request: Request) -> Response:
    return RedirectResponse(href("/search"), status_code=303)


async def search(request: Request) -> Response:
    """The same search as `memory_search` (retrieval.search), with its filters, each hit's why and score."""
    v = viewer(request)
    projects = await browse.projects(v.db)
    query, project = arg.text(request, "q"), arg.text(request, "project") or None
    kind, tier = arg.choice(request, "type", TYPES), arg.choice(request, "tier", TIERS)
    since_days = arg.number(request, "since_days", 0, 100000)
    min_conf = arg.number(request, "min_confidence", 0, 1)
    history, held = bool(arg.text(request, "history")), bool(arg.text(request, "quarantined"))
    filters = tag("form", tag("label", "query", tag("input", type="search", name="q", value=query, class_="wide",
                                                      autofocus=True, id="q")),
                  views.labelled("project", views.select("project", views.project_choices(projects), project)),
                  views.labelled("type", views.select("type", views.type_choices(), kind)),
                  views.labelled("tier", views.select("tier", views.tier_choices("all but working"), tier)),
                  views.labelled("last days", tag("input", type="number", name="since_days", min="0", step="any",
                                                  value=since_days if since_days is not None else "")),
                  views.labelled("min confidence", tag("input", type="number", name="min_confidence", min="0",
                                                       max="1", step="0.05", value=min_conf if min_conf is not None
                                                       else "")),
                  tag("label", tag("input", type="checkbox", name="history", value="1", checked=history),
                      " superseded too"),
                  tag("label", tag("input", type="checkbox", name="quarantined", value="1", checked=held),
                      " quarantined too"),
                  tag("button", "Search", type="submit"), method="get", action="/search", class_="filters")
    body = [filters]
    if not query:
        body.append(await _search_start(v))
    if query:
        store = v.store
        since = time.time() - since_days * 86400 if since_days else None
        scope: dict[str, Any] = {"project": project} if project else {"all_projects": True}
        asked = SearchRequest(query, **scope, types=kind, tiers=tier, since=since, min_confidence=min_conf,
                              include_history=history, include_quarantined=held, limit=25, budget_tokens=50000,
                              record_access=False)
        result = await v.call(store.search, asked)
        answer = result.to_dict()
        body.append(tag("p", f"{len(answer['hits'])} hits ({answer['mode']}); stale files are marked in why. "
                             "Searching here does not count as a use of the memories found.", class_="muted",
                        id="search-summary"))
        body.extend(tag("p", note, class_="muted") for note in answer["notes"] if "vector search" not in note)
        body.append(views.search_hits(answer["hits"]) if answer["hits"] else tag("p", "No matching memories.",
                                                                                 id="no-hits"))
    return await v.page(request, page="/search", title="Search", body=join(body))


EXAMPLES = ("how are the tests run", "why did the build fail", "what did we decide about dependencies")


async def _search_start(v: Any) -> Markup:
    """What the search page shows before a query: example searches and the memories stored last."""
    examples = tag("p", "Ask in words or by an identifier (a file, a function, a command), e.g. ",
                   join((tag("a", example, href=href("/search", q=example)) for example in EXAMPLES), " · "),
                   class_="muted", id="examples")
    rows, total = await browse.memory_page(v.db, browse.MemoryListing(None, everywhere=True, tiers=list(SHOWN_TIERS)),
                                           limit=8, offset=0)
    if not rows:
        return join([examples, tag("p", "No memories yet: they come from your agent's sessions (its hooks and "
                                        "memory_save) and from `agentmem save`.", class_="muted", id="recent")])
    recent = tag("section", tag("h2", "Stored last"), views.memory_rows(rows, time.time()),
                 tag("p", tag("a", f"all {total} memories", href="/memories"), class_="muted"), id="recent")
    return join([examples, recent])


async def memories(request: Request) -> Response:
    """Every memory, newest first, a page at a time; new ones appear at the top while the page is open."""
    v = viewer(request)
    projects = await browse.projects(v.db)
    project, kind, tier = arg.text(request, "project") or None, arg.choice(request, "type", TYPES), \
        arg.choice(request, "tier", TIERS)
    history, page = bool(arg.text(request, "history")), arg.page_number(request)
    tiers = [tier] if tier else list(SHOWN_TIERS)  # by default what search shows: not the raw captured events
    scope = browse.MemoryListing(project, everywhere=project is None, types=[kind] if kind else [], history=history)
    rows, total = await browse.memory_page(v.db, replace(scope, tiers=tiers), limit=arg.PER_PAGE,
                                           offset=(page - 1) * arg.PER_PAGE)
    raw = 0 if tier else (await browse.memory_page(v.db, replace(scope, tiers=["working"]), limit=0, offset=0))[1]
    filters = tag("form", views.labelled("project", views.select("project", views.project_choices(projects),
                                                                 project)),
                  views.labelled("type", views.select("type", views.type_choices(), kind)),
                  views.labelled("tier", views.select("tier", views.tier_choices("all but working"), tier)),
                  tag("label", tag("input", type="checkbox", name="history", value="1", checked=history),
                      " superseded versions too"),
                  tag("button", "Show", type="submit"), method="get", action="/memories", class_="filters")
    params = {"project": project, "type": kind, "tier": tier, "history": "1" if history else None}
    hidden = tag("p", f"{raw} raw captured events (prompts, tool calls) of the working tier are not listed: choose "
                      "the tier \"working\" to see them.", class_="muted", id="raw-note") if raw else ""
    body = join([filters, hidden, tag("p", "live", id="live-status", class_="live-note"),
                 views.memory_rows(rows, time.time(), tiers=tiers, kind=kind, project=project),
                 views.pager("/memories", page, total, arg.PER_PAGE, **params)])
    return await v.page(request, page="/memories", title="Memories", body=body, live="memories")


async def _memory_or_404(request: Request) -> dict[str, Any]:
    memory_id = check_memory_id(request.path_params["memory_id"])
    found = await browse.memory(viewer(request).db, memory_id)
    if found is None:
        raise NotFound(f"no memory {memory_id}: it may have been forgotten")
    return found


async def memory(request: Request) -> Response:
    """One memory: content, state, provenance, access, version chain with a diff, links, entities, audit."""
    v = viewer(request)
    m = await _memory_or_404(request)
    now = time.time()
    chain = await browse.versions(v.db, m["root_id"])
    compare = arg.text(request, "compare", 40) or None
    stale = missing_files({"files": json.dumps(m["files"])}, None, m["project"]) if m["project"] else []
    link_rows = [(row["relation"], row["direction"], views.memory_link(row["other"], row["title"])
                  if row["title"] else f"{row['other']} (gone)") for row in await browse.links(v.db, m["id"])]
    found = await browse.entities(v.db, m["id"])
    history, _ = await browse.audit_rows(v.db, memory_ids=[x["id"] for x in chain], limit=100)
    body = [views.badges(m), views.memory_actions(m, v.keys.csrf, team=bool(v.settings.team_url)),
            tag("div", views.shown(m["content"], m), class_="content", id="content"),
            tag("h2", f"Version chain ({len(chain)})"), views.version_chain(chain, m["id"], compare, now),
            tag("h2", "State and provenance"), views.memory_facts(m, now, stale),
            tag("h2", "Linked memories"), table(("relation", "direction", "memory"), link_rows, class_="list")
            if link_rows else tag("p", "none", class_="muted"),
            tag("h2", "Entities"), join((tag("code", f"{e['kind']}:{e['name']}") for e in found), " ")
            if found else tag("p", "none", class_="muted"),
            tag("h2", "Audit trail"), views.audit_table(history, now)]
    return await v.page(request, page="/memories", title=views.shown(m["title"], m), body=join(body))


async def edit(request: Request) -> Response:
    v = viewer(request)
    m = await _memory_or_404(request)
    if not m["is_latest"]:
        raise InvalidInput("this version is superseded: edit the latest one")
    body = join([tag("p", "Saving makes a new version; this one stays in the chain.", class_="muted"),
                 views.edit_form(m, v.keys.csrf)])
    return await v.page(request, page="/memories", title=f"Edit: {m['title']}", body=body)


async def forget(request: Request) -> Response:
    """What forgetting this memory removes (the library's dry run), and the button that does it."""
    v = viewer(request)
    m = await _memory_or_404(request)
    preview = (await v.call(v.store.forget, ForgetRequest(ids=[m["id"]], dry_run=True))).to_dict()
    return await v.page(request, page="/memories", title=f"Forget: {views.shown(m['title'], m)}",
                        body=views.forget_preview(m, preview, v.keys.csrf))


async def sessions(request: Request) -> Response:
    """Sessions, latest activity first; on the first page, a session that starts meanwhile appears at the top and
    the counts of those shown grow as they capture."""
    v = viewer(request)
    projects = await browse.projects(v.db)
    project, page = arg.text(request, "project") or None, arg.page_number(request)
    rows, total = await browse.session_page(v.db, project=project, everywhere=project is None, limit=arg.PER_PAGE,
                                           offset=(page - 1) * arg.PER_PAGE)
    now = time.time()
    filters = tag("form", views.labelled("project", views.select("project", views.project_choices(projects),
                                                                 project)),
                  tag("button", "Show", type="submit"), method="get", action="/sessions", class_="filters")
    live = page == 1
    body = join([filters, tag("p", "live", id="live-status", class_="live-note") if live else "",
                 views.session_rows(rows, now, project=project),
                 views.pager("/sessions", page, total, arg.PER_PAGE, project=project)])
    return await v.page(request, page="/sessions", title="Sessions", body=body, live="sessions" if live else "")


def _event(o: dict[str, Any]) -> Markup:
    text = o["prompt"] or o["title"] or (o["input"] or "")[:300] or f"({o['status']})"
    extra = f" ×{o['count']}" if o["count"] > 1 else ""
    try:
        found = json.loads(o["facts"] or "[]")
    except ValueError:
        found = [o["facts"]]
    found = [str(f) for f in (found if isinstance(found, list) else [found]) if f and str(f) != text]
    facts = tag("div", views.shown("; ".join(found)[:400]), class_="muted") if found else ""
    return tag("li", tag("span", f"{o['event']}{' ' + o['tool'] if o['tool'] else ''}{extra}", class_="kind"),
               views.shown(text), facts, class_=f"event {o['event']}", data_id=o["id"])


async def session(request: Request) -> Response:
    """A session's captured events (prompts, tool calls as compressed) beside what was made of them."""
    v = viewer(request)
    session_id = request.path_params["session_id"][:200]
    found = await browse.session(v.db, session_id)
    if found is None:
        raise NotFound(f"no session {session_id}: it may have been forgotten")
    events = await browse.observations(v.db, session_id)
    made = await browse.session_memories(v.db, session_id)
    summary = next((m for m in made if m["id"] == found["summary_memory_id"]), None)
    others = [m for m in made if summary is None or m["id"] != summary["id"]]
    now = time.time()
    left = tag("section", tag("h2", f"Captured ({len(events)} events)"),
               tag("p", "live", id="live-status", class_="live-note"),
               tag("ol", *(_event(o) for o in events), id="events"))
    right = tag("section", tag("h2", "Summary"),
                join([views.memory_link(summary["id"], summary["title"]),
                      tag("div", views.shown(summary["content"], summary), class_="content", id="summary")]) if summary
                else tag("p", "Not summarised yet: the worker summarises a session after it stops.", class_="muted"),
                tag("h2", f"Memories made from it ({len(others)})"),
                tag("ul", *(tag("li", views.memory_link(m["id"], m["title"]), " ",
                                tag("span", f"[{m['type']}/{m['tier']}]", class_="muted")) for m in others[:100])),
                class_="summary")
    facts = views.definition_list([("project", views.project_name(found["project"])), ("client", found["client"]),
                                   ("started", views.when(found["started_at"], now)),
                                   ("last event", views.when(found["last_event_at"], now)),
                                   ("status", found["status"])])
    body = join([facts, tag("div", left, right, class_="timeline")])
    return await v.page(request, page="/sessions", title=f"Session {session_id}", body=body,
                        live=f"session:{session_id}")


async def knowledge(request: Request) -> Response:
    """What the next SessionStart would inject for a project (exact text, token count), and what a prompt
    would pull in (briefing.session_context and context.prompt_context, as the hook calls them)."""
    from ..capture.redact import redact
    from ..recall.briefing import session_context
    from ..recall.context import prompt_context

    v = viewer(request)
    projects = await browse.projects(v.db)
    project = arg.text(request, "project") or (projects[0] if projects else None)
    prompt = arg.text(request, "prompt")
    settings, store = v.settings, v.store
    tree = project if project and os.path.isdir(project) else None
    text, ids = await v.call(lambda: session_context(store.conn, project, settings.context_budget_tokens, tree=tree))
    form = tag("form", views.labelled("project", views.select("project", views.project_choices(projects, "global"),
                                                              project)),
               tag("label", "try a prompt", tag("input", type="search", name="prompt", value=prompt, class_="wide",
                                                id="prompt")),
               tag("button", "Show", type="submit"), method="get", action="/knowledge", class_="filters")
    body = [form, tag("h2", "The next session-start briefing"),
            tag("p", f"{estimate_tokens(text)} tokens (budget {settings.context_budget_tokens}), "
                     f"{len(ids)} memories", class_="muted", id="briefing-tokens"),
            tag("pre", text, id="briefing")]
    if prompt:
        recalled, used = await v.call(lambda: prompt_context(
            store.conn, store.fulltext, redact(prompt), project, budget_tokens=settings.prompt_budget_tokens,
            min_score=settings.prompt_min_score, tree=tree))
        body += [tag("h2", "What this prompt would pull in"),
                 tag("p", f"{estimate_tokens(recalled)} tokens (budget {settings.prompt_budget_tokens}), "
                          f"{len(used)} memories, threshold {settings.prompt_min_score:g}", class_="muted"),
                 tag("pre", recalled, id="recall") if recalled else
                 tag("p", "Nothing: no memory covers enough of this prompt (or it is about nothing in particular).",
                     id="recall")]
    return await v.page(request, page="/knowledge", title="Project knowledge", body=join(body),
                        heading=f"Project knowledge: {views.project_name(project)}")


async def changes(request: Request) -> Response:
    """JSON for the live feed: observations and memories newer than the page's marks."""
    v = viewer(request)
    after_observation = int(arg.number(request, "observation", 0, 2 ** 62) or 0)
    after_memory = int(arg.number(request, "memory", 0, 2 ** 62) or 0)
    session_id = arg.text(request, "session", 200) or None
    found = await browse.changes(v.db, after_observation=after_observation, after_memory=after_memory,
                                 session_id=session_id)
    for row in found["observations"]:
        row["prompt"], row["title"] = views.shown(row["prompt"]) or None, views.shown(row["title"]) or None
    for row in found["memories"]:
        row["title"] = views.shown(row["title"], row)
    return JSONResponse(found)

