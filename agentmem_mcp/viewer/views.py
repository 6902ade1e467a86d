"""Pure renderers: data in, escaped HTML (`html.Markup`) out. They never read the store; `pages` fetches
what they show. Shared pieces (links, times, filters, pagers) and the memory page's parts live here."""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Iterable, Sequence
from typing import Any

from ..lifecycle.retention import retention
from ..models import PRIORITIES, TIERS, TYPES
from ..recall.ranking import humanize_age
from ..trust.policy import as_data, provenance, typed_by_user
from .html import Markup, definition_list, esc, hidden, href, join, post_form, table, tag


def when(at: float | None, now: float | None = None) -> Markup:
    """A time as '2026-12-01 11:02 UTC (3 hours ago)' in a <time> element."""
    if not at:
        return Markup("never")
    now = time.time() if now is None else now
    stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime(at))
    return tag("time", f"{stamp} UTC ({humanize_age(now - at)})", datetime=time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                          time.gmtime(at)))


def ago(at: float | None, now: float) -> Markup:
    """A time as '3 hours ago', the exact UTC time in its tooltip."""
    if not at:
        return Markup("never")
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))
    return tag("time", humanize_age(now - at), datetime=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)),
               title=stamp)


def short_project(project: str | None) -> Markup:
    """A project by its folder's name, the whole path in its tooltip."""
    if project is None:
        return Markup("global")
    return tag("span", project.rstrip("/").rsplit("/", 1)[-1] or project, title=project)


def shown(text: str | None, row: Any = None) -> str:
    """Captured or derived text as the viewer shows it: as the agent would be shown it (`trust.as_data`;
    `row`: the memory it belongs to, whose own words a user's memory are)."""
    return as_data(text or "", trusted=row is not None and typed_by_user(row))


def memory_link(memory_id: str, title: str | None = None) -> Markup:
    return tag("a", shown(title) if title else memory_id, href=href(f"/memory/{memory_id}"))


def session_link(session_id: str, text: str | None = None) -> Markup:
    return tag("a", text or session_id, href=href(f"/session/{session_id}"))


def project_name(project: str | None) -> str:
    return "global" if project is None else project


def badges(row: dict[str, Any]) -> Markup:
    marks = []
    if row.get("pinned"):
        marks.append(tag("span", "pinned", class_="badge pin"))
    if row.get("priority") == "P0":
        marks.append(tag("span", "P0", class_="badge p0"))
    if row.get("is_latest") is not None and not row["is_latest"]:
        marks.append(tag("span", f"superseded v{row['version']}", class_="badge old"))
    if row.get("quarantined"):
        marks.append(tag("span", "quarantined", class_="badge warn"))
    return join(marks, " ")


def select(name: str, choices: Iterable[tuple[str, str]], chosen: str | None) -> Markup:
    return tag("select", *(tag("option", label, value=value, selected=value == (chosen or ""))
                           for value, label in choices), name=name, id=f"f-{name}")


def labelled(text: str, control: Markup) -> Markup:
    return tag("label", text, " ", control)


def project_choices(projects: Sequence[str], everywhere: str = "all projects") -> list[tuple[str, str]]:
    return [("", everywhere), *((p, p) for p in projects)]


def type_choices() -> list[tuple[str, str]]:
    return [("", "any type"), *((t, t) for t in TYPES)]


def tier_choices(default: str = "any tier") -> list[tuple[str, str]]:
    return [("", default), *((t, t) for t in TIERS)]


def pager(path: str, page: int, total: int, per_page: int, **params: Any) -> Markup:
    pages = max(1, -(-total // per_page))
    first = (page - 1) * per_page
    shown = f"{min(first + 1, total)}-{min(first + per_page, total)} of {total}"
    prev = tag("a", "‹ newer", href=href(path, page=page - 1, **params), rel="prev") if page > 1 else ""
    nxt = tag("a", "older ›", href=href(path, page=page + 1, **params), rel="next") if page < pages else ""
    return tag("p", prev, " ", tag("span", f"{shown} (page {page} of {pages})"), " ", nxt, class_="pager")


def memory_rows(rows: Sequence[dict[str, Any]], now: float, *, tiers: Sequence[str] = (), kind: str | None = None,
                project: str | None = None) -> Markup:
    """The memory list table (also the one the live feed prepends to: only memories of `tiers`, of type `kind` and
    of `project` when given, as the page's filters chose)."""
    body = [(memory_link(r["id"], r["title"]), Markup(esc(r["type"]) + " · " + esc(r["tier"])),
             short_project(r["project"]), r["source"], f"{r['confidence']:.2f}", r["priority"],
             badges(r), ago(r["created_at"], now)) for r in rows]
    return table(("title", "type · tier", "project", "source", "confidence", "priority", "", "created"), body,
                 class_="list memories", id="memory-list", data_tiers=" ".join(tiers) or None, data_type=kind,
                 data_project=project)


def session_rows(rows: Sequence[dict[str, Any]], now: float, *, project: str | None) -> Markup:
    """The sessions table; each row names its session (`data-session`) and its counts are elements of their own,
    for the live feed to add to (`data-project` on the table: the project the list is filtered to, if any)."""
    head = tag("thead", tag("tr", *(tag("th", h) for h in ("session", "project", "client", "started", "status",
                                                             "captured", "summary"))))
    body = []
    for r in rows:
        captured = join([tag("span", r["prompts"], class_="prompts"), " prompts, ",
                         tag("span", r["events"], class_="events"), " events"])
        summary = memory_link(r["summary_memory_id"], r["summary_title"] or "summary") if r["summary_memory_id"] \
            else tag("span", "not summarised yet", class_="muted")
        cells = (session_link(r["id"], r["id"][:18]), short_project(r["project"]), r["client"],
                 ago(r["started_at"], now), r["status"], captured, summary)
        body.append(tag("tr", *(tag("td", cell, class_="text" if cell is summary else None) for cell in cells),
                        data_session=r["id"]))
    return tag("table", head, tag("tbody", *body), class_="list", id="sessions",
               data_project=project if project is not None else "")


def search_hits(hits: Sequence[dict[str, Any]]) -> Markup:
    items = []
    for hit in hits:
        head = tag("div", memory_link(hit["id"], hit["title"]), " ",
                   tag("span", f"[{hit['type']}/{hit['tier']}]", class_="muted"), " ",
                   badges({"is_latest": hit["is_latest"], "version": hit["version"]}),
                   tag("span", f"score {hit['score']:.3f}", class_="score"), class_="hit-head")
        items.append(tag("li", head, tag("p", hit["snippet"], class_="snippet"),
                         tag("p", "why: ", hit["why"], class_="why"),
                         tag("p", f"{project_name(hit['project'])} · {hit['age']} · confidence "
                                  f"{hit['confidence']:.2f}", class_="muted"), class_="hit"))
    return tag("ol", *items, class_="hits", id="hits")


def word_diff(old: str, new: str) -> Markup:
    """`old` -> `new` word by word: removed words in <del>, added ones in <ins>."""
    a, b = old.split(" "), new.split(" ")
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(esc(" ".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(tag("del", " ".join(a[i1:i2])))
        if j2 > j1:
            out.append(tag("ins", " ".join(b[j1:j2])))
    return tag("div", join(out, " "), class_="diff")


def memory_facts(m: dict[str, Any], now: float, stale: Sequence[str]) -> Markup:
    kept = retention((now - (m["last_accessed_at"] or m["created_at"])) / 86400, m["strength"])
    files = join((tag("span", f, class_="stale" if f in stale else None, title="no longer exists" if f in stale
                      else None) for f in m["files"]), ", ") if m["files"] else "none"
    facts = [
        ("type / tier", f"{m['type']} / {m['tier']}"),
        ("project", project_name(m["project"])),
        ("source", f"{m['source']} ({provenance(m['source'])})"),
        ("session", session_link(m["session_id"]) if m["session_id"] else "none"),
        ("confidence", f"{m['confidence']:.2f}"),
        ("importance", f"{m['importance']:.2f}"),
        ("priority", f"{m['priority']}" + (" · pinned" if m["pinned"] else "")),
        ("retention", f"{kept:.2f} now (strength {m['strength']:.1f} days)"),
        ("accessed", join([f"{m['access_count']} times, last ", when(m["last_accessed_at"], now)])
         if m["access_count"] else "never by a search or an injection"),
        ("created", when(m["created_at"], now)),
        ("updated", when(m["updated_at"], now)),
        ("true", join(["from ", when(m["valid_from"], now), " to ", when(m["valid_to"], now)]) if m["valid_to"]
         else join(["since ", when(m["valid_from"], now)]) if m["valid_from"] else "no time recorded"),
        ("forget after", when(m["forget_after"], now) if m["forget_after"] else "no TTL"),
        ("tags", ", ".join(m["tags"]) or "none"),
        ("files", files),
        ("made from", join((memory_link(s) if s.startswith("m_") else tag("code", s) for s in m["source_ids"]),
                           ", ") if m["source_ids"] else "nothing recorded"),
        ("version", f"{m['version']}" + ("" if m["is_latest"] else " (superseded)")),
    ]
    if m.get("quarantined"):
        facts.append(("quarantined", m["quarantined"]))
    if stale:
        facts.append(("stale", f"{', '.join(stale)} no longer exist" + ("s" if len(stale) == 1 else "")))
    return definition_list(facts)


def version_chain(chain: Sequence[dict[str, Any]], current: str, compare: str | None, now: float) -> Markup:
    rows = []
    for v in chain:
        name = f"v{v['version']}" + (" (latest)" if v["is_latest"] else "")
        title = Markup(tag("strong", name)) if v["id"] == current else memory_link(v["id"], name)
        diff_link = tag("a", "diff with this", href=href(f"/memory/{current}", compare=v["id"])) \
            if v["id"] != current else ""
        rows.append((title, shown(v["title"], v), v["source"], when(v["created_at"], now), diff_link))
    chosen = next((v for v in chain if v["id"] == compare), None)
    me = next(v for v in chain if v["id"] == current)
    if chosen is None:
        before = [v for v in chain if v["version"] < me["version"]]
        chosen = before[-1] if before else None
    parts = [table(("version", "title", "source", "created", ""), rows, class_="list", id="versions")]
    if chosen is not None:
        old, new = (chosen, me) if chosen["version"] < me["version"] else (me, chosen)
        parts.append(tag("h3", f"Changes from v{old['version']} to v{new['version']}"))
        if old["title"] != new["title"]:
            parts.append(tag("h4", "title", class_="muted"))
            parts.append(word_diff(shown(old["title"], old), shown(new["title"], new)))
            parts.append(tag("h4", "content", class_="muted"))
        parts.append(word_diff(shown(old["content"], old), shown(new["content"], new)))
    return join(parts)


def memory_actions(m: dict[str, Any], csrf: str, team: bool = False) -> Markup:
    """The memory's buttons; `team`: team memory is configured, so it can be shared."""
    if not m["is_latest"]:
        return tag("p", "This version is superseded: act on the latest one.", class_="muted")
    base = f"/memory/{m['id']}"
    pin = post_form(f"{base}/unpin" if m["pinned"] else f"{base}/pin", csrf,
                    button="Unpin" if m["pinned"] else "Pin", id="pin-form")
    priority = post_form(f"{base}/priority", csrf, labelled("priority", select(
        "priority", [(p, p) for p in PRIORITIES], m["priority"])), button="Set priority", id="priority-form")
    share = post_form(f"{base}/share", csrf, button="Share with the team", id="share-form") \
        if team and m["tier"] != "working" else ""
    return tag("div", tag("a", "Edit", href=href(f"{base}/edit"), class_="button", id="edit-link"), pin, priority,
               share, tag("a", "Forget…", href=href(f"{base}/forget"), class_="button danger", id="forget-link"),
               class_="actions")


def edit_form(m: dict[str, Any], csrf: str) -> Markup:
    return tag("form", hidden("csrf", csrf),
               tag("label", "title", tag("input", type="text", name="title", value=m["title"], maxlength="300")),
               tag("label", "type", select("type", [(t, t) for t in TYPES], m["type"])),
               tag("label", "content", tag("textarea", m["content"], name="content", rows="12")),
               tag("button", "Save as a new version", type="submit"),
               method="post", action=f"/memory/{m['id']}/edit", class_="stack", id="edit-form")


def forget_preview(m: dict[str, Any], preview: dict[str, Any], csrf: str) -> Markup:
    rows = [(memory_link(x["id"], f"v{x['version']}"), x["type"], shown(x["title"])) for x in preview["memories"]]
    gone = f"{preview['count']} memor{'y' if preview['count'] == 1 else 'ies'} (every version of this one)"
    return join([
        tag("p", f"Forgetting removes {gone}: the rows, their vectors and their keyword-index entries. The audit "
                 "log keeps that it happened (what, when, why), not the text."),
        table(("version", "type", "title"), rows, class_="list"),
        post_form(f"/memory/{m['id']}/forget", csrf, button="Forget for good", danger=True, id="forget-form"),
        tag("p", tag("a", "Keep it", href=href(f"/memory/{m['id']}"))),
    ])


def audit_table(rows: Sequence[dict[str, Any]], now: float) -> Markup:
    body = []
    for r in rows:
        detail = json.loads(r["detail"] or "{}")
        text = "; ".join(f"{k}: {v}" for k, v in detail.items()) if isinstance(detail, dict) else str(detail)
        body.append((r["seq"], when(r["at"], now), r["action"],
                     memory_link(r["memory_id"]) if r["memory_id"] else "", project_name(r["project"])
                     if r["memory_id"] else "", text[:300], r["scheme"]))
    return table(("#", "at", "action", "memory", "project", "detail", "scheme"), body, class_="list", id="audit")
