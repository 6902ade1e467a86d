"""The viewer's pages (GET): each reads what it shows (plain rows through `reads` on the aiosqlite connection,
library results on a worker thread) and hands it to the renderers of `views`."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from ..anchors import missing_files
from ..models import TIERS, TYPES, InvalidInput, NotFound, check_choice, check_memory_id
from ..ranking import estimate_tokens
from . import reads, views
from .app import viewer
from .html import Markup, hidden, join, post_form, table, tag

PER_PAGE = 50


def _text(request: Request, name: str, limit: int = 2000) -> str:
    return request.query_params.get(name, "").strip()[:limit]


def _number(request: Request, name: str, low: float, high: float) -> float | None:
    raw = _text(request, name, 40)
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a number from {low:g} to {high:g}, not {raw[:20]!r}") from None
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be from {low:g} to {high:g}")
    return value


def _page_number(request: Request) -> int:
    return int(_number(request, "page", 1, 10 ** 6) or 1)


def _choice(request: Request, name: str, choices: tuple[str, ...]) -> str | None:
    value = _text(request, name, 40)
    return check_choice(name, value, choices) if value else None


async def home(request: Request) -> Response:
    return RedirectResponse("/search", status_code=303)


async def search(request: Request) -> Response:
    """The same search as `memory_search` (retrieval.search), with its filters, each hit's why and score."""
    v = viewer(request)
    projects = await reads.projects(v.db)
    query, project = _text(request, "q"), _text(request, "project") or None
    kind, tier = _choice(request, "type", TYPES), _choice(request, "tier", TIERS)
    since_days, min_conf = _number(request, "since_days", 0, 100000), _number(request, "min_confidence", 0, 1)
    history, held = bool(_text(request, "history")), bool(_text(request, "quarantined"))
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
    if query:
        store = v.store
        since = time.time() - since_days * 86400 if since_days else None
        scope: dict[str, Any] = {"project": project} if project else {"all_projects": True}
        result = await v.call(store.search, query, **scope, types=kind, tiers=tier, since=since,
                              min_confidence=min_conf, include_history=history, include_quarantined=held, limit=25,
                              budget_tokens=50000, record_access=False)
        answer = result.to_dict()
        body.append(tag("p", f"{len(answer['hits'])} hits ({answer['mode']}); stale files are marked in why. "
                             "Searching here does not count as a use of the memories found.", class_="muted",
                        id="search-summary"))
        body.extend(tag("p", note, class_="muted") for note in answer["notes"] if "vector search" not in note)
        body.append(views.search_hits(answer["hits"]) if answer["hits"] else tag("p", "No matching memories.",
                                                                                 id="no-hits"))
    return await v.page(request, page="/search", title="Search", body=join(body))


async def memories(request: Request) -> Response:
    """Every memory, newest first, a page at a time; new ones appear at the top while the page is open."""
    v = viewer(request)
    projects = await reads.projects(v.db)
    project, kind, tier = _text(request, "project") or None, _choice(request, "type", TYPES), \
        _choice(request, "tier", TIERS)
    history, page = bool(_text(request, "history")), _page_number(request)
    rows, total = await reads.memory_page(v.db, project=project, everywhere=project is None,
                                          types=[kind] if kind else [], tiers=[tier] if tier else [],
                                          history=history, quarantined=False, limit=PER_PAGE,
                                          offset=(page - 1) * PER_PAGE)
    filters = tag("form", views.labelled("project", views.select("project", views.project_choices(projects),
                                                                 project)),
                  views.labelled("type", views.select("type", views.type_choices(), kind)),
                  views.labelled("tier", views.select("tier", views.tier_choices(), tier)),
                  tag("label", tag("input", type="checkbox", name="history", value="1", checked=history),
                      " superseded versions too"),
                  tag("button", "Show", type="submit"), method="get", action="/memories", class_="filters")
    params = {"project": project, "type": kind, "tier": tier, "history": "1" if history else None}
    body = join([filters, tag("p", "live", id="live-status", class_="live-note"),
                 views.memory_rows(rows, time.time()), views.pager("/memories", page, total, PER_PAGE, **params)])
    return await v.page(request, page="/memories", title="Memories", body=body, live="memories")


async def _memory_or_404(request: Request) -> dict[str, Any]:
    memory_id = check_memory_id(request.path_params["memory_id"])
    found = await reads.memory(viewer(request).db, memory_id)
    if found is None:
        raise NotFound(f"no memory {memory_id}: it may have been forgotten")
    return found


async def memory(request: Request) -> Response:
    """One memory: content, state, provenance, access, version chain with a diff, links, entities, audit."""
    v = viewer(request)
    m = await _memory_or_404(request)
    now = time.time()
    chain = await reads.versions(v.db, m["root_id"])
    compare = _text(request, "compare", 40) or None
    stale = missing_files({"files": json.dumps(m["files"])}, None, m["project"]) if m["project"] else []
    link_rows = [(row["relation"], row["direction"], views.memory_link(row["other"], row["title"])
                  if row["title"] else f"{row['other']} (gone)") for row in await reads.links(v.db, m["id"])]
    found = await reads.entities(v.db, m["id"])
    history, _ = await reads.audit_rows(v.db, memory_ids=[x["id"] for x in chain], limit=100)
    body = [views.badges(m), views.memory_actions(m, v.keys.csrf),
            tag("div", m["content"], class_="content", id="content"),
            tag("h2", f"Version chain ({len(chain)})"), views.version_chain(chain, m["id"], compare, now),
            tag("h2", "State and provenance"), views.memory_facts(m, now, stale),
            tag("h2", "Linked memories"), table(("relation", "direction", "memory"), link_rows, class_="list")
            if link_rows else tag("p", "none", class_="muted"),
            tag("h2", "Entities"), join((tag("code", f"{e['kind']}:{e['name']}") for e in found), " ")
            if found else tag("p", "none", class_="muted"),
            tag("h2", "Audit trail"), views.audit_table(history, now)]
    return await v.page(request, page="/memories", title=m["title"], body=join(body))


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
    preview = (await v.call(v.store.forget, ids=[m["id"]], dry_run=True)).to_dict()
    return await v.page(request, page="/memories", title=f"Forget: {m['title']}",
                        body=views.forget_preview(m, preview, v.keys.csrf))


async def sessions(request: Request) -> Response:
    v = viewer(request)
    projects = await reads.projects(v.db)
    project, page = _text(request, "project") or None, _page_number(request)
    rows, total = await reads.session_page(v.db, project=project, everywhere=project is None, limit=PER_PAGE,
                                           offset=(page - 1) * PER_PAGE)
    now = time.time()
    table_rows = [(views.session_link(r["id"], r["id"][:18]), views.project_name(r["project"]), r["client"],
                   views.when(r["started_at"], now), r["status"], f"{r['prompts']} prompts, {r['events']} events",
                   views.memory_link(r["summary_memory_id"], r["summary_title"] or "summary")
                   if r["summary_memory_id"] else tag("span", "not summarised yet", class_="muted"))
                  for r in rows]
    filters = tag("form", views.labelled("project", views.select("project", views.project_choices(projects),
                                                                 project)),
                  tag("button", "Show", type="submit"), method="get", action="/sessions", class_="filters")
    body = join([filters, table(("session", "project", "client", "started", "status", "captured", "summary"),
                                table_rows, class_="list", id="sessions"),
                 views.pager("/sessions", page, total, PER_PAGE, project=project)])
    return await v.page(request, page="/sessions", title="Sessions", body=body)


def _event(o: dict[str, Any]) -> Markup:
    text = o["prompt"] or o["title"] or (o["input"] or "")[:300] or f"({o['status']})"
    extra = f" ×{o['count']}" if o["count"] > 1 else ""
    try:
        found = json.loads(o["facts"] or "[]")
    except ValueError:
        found = [o["facts"]]
    found = [str(f) for f in (found if isinstance(found, list) else [found]) if f and str(f) != text]
    facts = tag("div", "; ".join(found)[:400], class_="muted") if found else ""
    return tag("li", tag("span", f"{o['event']}{' ' + o['tool'] if o['tool'] else ''}{extra}", class_="kind"),
               text, facts, class_=f"event {o['event']}", data_id=o["id"])


async def session(request: Request) -> Response:
    """A session's captured events (prompts, tool calls as compressed) beside what was made of them."""
    v = viewer(request)
    session_id = request.path_params["session_id"][:200]
    found = await reads.session(v.db, session_id)
    if found is None:
        raise NotFound(f"no session {session_id}: it may have been forgotten")
    events = await reads.observations(v.db, session_id)
    made = await reads.session_memories(v.db, session_id)
    summary = next((m for m in made if m["id"] == found["summary_memory_id"]), None)
    others = [m for m in made if summary is None or m["id"] != summary["id"]]
    now = time.time()
    left = tag("section", tag("h2", f"Captured ({len(events)} events)"),
               tag("p", "live", id="live-status", class_="live-note"),
               tag("ol", *(_event(o) for o in events), id="events"))
    right = tag("section", tag("h2", "Summary"),
                join([views.memory_link(summary["id"], summary["title"]),
                      tag("div", summary["content"], class_="content", id="summary")]) if summary
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
    would pull in (context.session_context and context.prompt_context, as the hook calls them)."""
    from ..capture.redact import redact
    from ..context import prompt_context, session_context

    v = viewer(request)
    projects = await reads.projects(v.db)
    project = _text(request, "project") or (projects[0] if projects else None)
    prompt = _text(request, "prompt")
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


def _on_demand(path: str, label: str, flag: str, **params: Any) -> Markup:
    """A GET form that asks a page for its costly part (a sweep's dry run, a chain verification, doctor)."""
    return tag("form", *(hidden(k, v) for k, v in params.items() if v), hidden(flag, "1"),
               tag("button", label, type="submit"), method="get", action=path, class_="inline", id=f"{flag}-form")


async def lifecycle(request: Request) -> Response:
    """Charts of confidence, retention and memories by tier over time; on request, the next sweep's dry run
    (what it would forget and why), which scores every memory."""
    from ..lifecycle.sweep import sweep
    from .charts import histogram, lines

    v = viewer(request)
    strategy = _choice(request, "strategy", ("composite", "importance", "age", "capacity")) or "composite"
    figures = await reads.lifecycle_figures(v.db)
    charts = tag("div", tag("div", tag("h3", "Confidence of the latest memories"),
                            histogram(figures["confidence"], label="confidence histogram")),
                 tag("div", tag("h3", "Retention now"), histogram(figures["retention"], label="retention histogram")),
                 tag("div", tag("h3", "Memories by tier, by creation week (those stored now)"),
                     lines(figures["weeks"], figures["by_tier"], label="memories by tier over time")),
                 class_="cards")
    form = tag("form", views.labelled("strategy", views.select("strategy", [(s, s) for s in (
        "composite", "importance", "age", "capacity")], strategy)), hidden("dry_run", "1"),
        tag("button", "Show what the next sweep would do", type="submit"), method="get", action="/lifecycle",
        class_="filters", id="dry_run-form")
    body = [tag("h2", "What the next sweep would do (dry run: nothing changes)"), form]
    if _text(request, "dry_run"):
        started = time.perf_counter()
        report = await v.call(sweep, v.store, strategy=strategy, dry_run=True)
        removals = [e for e in report.entries() if e.decision in ("expire", "forget", "delete", "over cap")]
        rows = [(views.memory_link(e.id, e.title or e.id), e.decision, f"{e.score:.3f}", e.reason)
                for e in removals[:200]]
        body += [tag("p", report.summary(), id="sweep-summary"),
                 table(("memory", "decision", "score", "why"), rows, class_="list", id="sweep") if rows
                 else tag("p", "The sweep would forget nothing now.", class_="muted", id="sweep"),
                 tag("p", f"(scored in {time.perf_counter() - started:.2f} s"
                          + (f"; the first 200 of {len(removals)} shown" if len(removals) > 200 else "") + ")",
                     class_="muted")]
    else:
        body.append(tag("p", "The dry run scores every memory, so it runs when asked.", class_="muted"))
    body += [tag("h2", "Distributions"), charts]
    return await v.page(request, page="/lifecycle", title="Lifecycle", body=join(body))


async def quarantine(request: Request) -> Response:
    from ..lifecycle.confirm import quarantined

    v = viewer(request)
    held = await v.call(quarantined, v.store, all_projects=True)
    items = [tag("li", views.memory_link(m.id, m.title), " ", tag("span", f"[{m.type}] from {m.source}",
                                                                  class_="muted"),
                 tag("p", "why held: ", m.quarantined, class_="why"),
                 tag("div", m.content[:1200], class_="content"),
                 tag("div", post_form(f"/quarantine/{m.id}/release", v.keys.csrf, button="Release"),
                     post_form(f"/quarantine/{m.id}/forget", v.keys.csrf, button="Forget", danger=True),
                     class_="actions"), class_="hit") for m in held]
    body = join([tag("p", "Memories whose text reads as instructions to an AI agent are kept but never searched or "
                          "injected until you release them.", class_="muted"),
                 tag("ol", *items, class_="hits", id="quarantined") if items
                 else tag("p", "Nothing is quarantined.", id="quarantined")])
    return await v.page(request, page="/quarantine", title=f"Quarantine ({len(held)})", body=body)


async def audit(request: Request) -> Response:
    """The audit log, newest first; on request, the result of verifying its hash chain and triggers
    (db/audit.py, as `agentmem audit --verify`), which reads every row."""
    from ..db.audit import check_triggers, verify

    v = viewer(request)
    page = _page_number(request)
    rows, total = await reads.audit_rows(v.db, limit=PER_PAGE, offset=(page - 1) * PER_PAGE)
    if _text(request, "verify"):
        started = time.perf_counter()
        verdict, triggers = await v.call(lambda: (verify(v.store.conn), check_triggers(v.store.conn)))
        good = verdict.ok and not triggers
        state = tag("p", tag("span", "chain ok" if good else "chain BROKEN", class_="ok" if good else "bad"), ": ",
                    verdict.describe(), *(tag("span", "; ", t) for t in triggers),
                    tag("span", f" (checked in {time.perf_counter() - started:.2f} s)", class_="muted"),
                    id="audit-verdict")
    else:
        state = tag("p", _on_demand("/audit", "Verify the chain", "verify", page=page if page > 1 else None),
                    " reads every row and checks every hash, as `agentmem audit --verify`.", class_="muted",
                    id="audit-verdict")
    body = join([state, views.audit_table(rows, time.time()), views.pager("/audit", page, total, PER_PAGE)])
    return await v.page(request, page="/audit", title="Audit log", body=body)


SECRET_WORDS = ("key", "token", "secret", "password")


async def health(request: Request) -> Response:
    """The backlogs, the settings in effect (secret-looking values masked) and, on request, doctor's checks."""
    from ..config import SETTINGS
    from ..maintenance import doctor

    v = viewer(request)
    checks = await v.call(doctor, v.store) if _text(request, "checks") else None
    data = await v.call(v.store.stats, all_projects=True)
    rows = []
    for c in checks or ():
        if c.name == "embedding model" and not c.ok:
            rows.append((tag("span", "n/a", class_="muted"), c.name, "not loaded by the viewer (`agentmem doctor` "
                         "checks it)", ""))
            continue
        rows.append((tag("span", "ok" if c.ok else "FAIL", class_="ok" if c.ok else "bad"), c.name, c.detail, c.fix))
    backlog = data["vector_backlog"]
    queues = views.definition_list([
        ("keyword index", f"{data['index_backlog']} changes queued"),
        ("vectors", f"{backlog['memories']} memories, {backlog['sentence_pieces']} sentence pieces, "
                    f"{backlog['words']} word lists to embed (by the server's worker)"),
        ("observations", ", ".join(f"{k}: {n}" for k, n in sorted(data["observations"].items())) or "none"),
        ("memories", f"{data['memories']} latest, {data['superseded_versions']} superseded versions, "
                     f"{data['quarantined']} quarantined"),
        ("last sweep", json.dumps(data["last_sweep"]) if data["last_sweep"] else "never"),
        ("LLM today", f"{data['llm_today']['tokens']} tokens in {data['llm_today']['calls']} calls "
                      f"({data['llm_today']['provider']}, budget {data['llm_today']['budget']})"),
    ])
    settings = [(s.name, s.env, _masked(s.name, getattr(v.settings, s.name))) for s in SETTINGS]
    settings.append(("(Anthropic key)", "ANTHROPIC_API_KEY", "set (hidden)" if os.environ.get("ANTHROPIC_API_KEY")
                     else "not set"))
    doctor_part = table(("", "check", "detail", "fix"), rows, class_="list", id="checks") if checks is not None \
        else tag("p", _on_demand("/health", "Run the checks", "checks"), " as `agentmem doctor` (it reads every "
                 "memory, the keyword index and the audit chain).", class_="muted", id="checks")
    body = join([doctor_part,
                 tag("h2", "Backlogs"), queues, tag("h2", "Settings in effect"),
                 table(("setting", "environment variable", "value"), settings, class_="list", id="settings")])
    return await v.page(request, page="/health", title="Health", body=body)


def _masked(name: str, value: Any) -> str:
    if any(word in name.lower() for word in SECRET_WORDS) and value:
        return "(set, hidden)"
    return str(value)


async def changes(request: Request) -> Response:
    """JSON for the live feed: observations and memories newer than the page's marks."""
    v = viewer(request)
    after_observation = int(_number(request, "observation", 0, 2 ** 62) or 0)
    after_memory = _number(request, "memory", 0, 2 ** 40) or 0.0
    session_id = _text(request, "session", 200) or None
    return JSONResponse(await reads.changes(v.db, after_observation=after_observation, after_memory=after_memory,
                                            session_id=session_id))

