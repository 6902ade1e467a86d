"""The upkeep pages (GET): lifecycle (charts, the next sweep's dry run), quarantine, the audit log and health.
What reads every memory (the dry run, the chain verification, doctor's checks) runs only when asked for, so
each page answers at once at 100,000 memories (scripts/bench_ui.py)."""

from __future__ import annotations

import os
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..db import browse
from . import params as arg
from . import views
from .html import Markup, hidden, join, post_form, table, tag
from .state import viewer

WEEK = 7 * 86400
# memory rows the lifecycle charts read at most (every k-th rowid beyond): enough for each of their 10 bins to be
# within about a point of the whole store's share, while each row read is a memory's whole record (text, words)
HISTOGRAM_SAMPLE = 2000


def _on_demand(path: str, label: str, flag: str, **params: Any) -> Markup:
    """A GET form that asks a page for its costly part (a sweep's dry run, a chain verification, doctor)."""
    return tag("form", *(hidden(k, v) for k, v in params.items() if v), hidden(flag, "1"),
               tag("button", label, type="submit"), method="get", action=path, class_="inline", id=f"{flag}-form")


async def lifecycle_figures(db: Any, now: float | None = None, sample: int = HISTOGRAM_SAMPLE) -> dict[str, Any]:
    """The latest memories' confidence and retention histograms (10 bins over 0..1) and, per tier, how many of the
    memories stored now had been created by the end of each week, from `browse.lifecycle_sample` on the viewer's
    connection. Over `sample` rows the tier counts are scaled by the sample's step: `sampled_from` then says of how
    many latest memories."""
    now = time.time() if now is None else now
    rows, step, sampled = await browse.lifecycle_sample(db, now, sample, WEEK)
    confidence = [0] * 10
    kept = [0] * 10
    weekly: dict[tuple[str, int], int] = {}
    for conf, ret, tier, week, count in rows:
        confidence[max(conf, 0)] += count
        kept[max(ret, 0)] += count
        weekly[tier, week] = weekly.get((tier, week), 0) + count * step
    weeks = sorted({week for _, week in weekly})
    column = {week: i for i, week in enumerate(weeks)}
    by_tier: dict[str, list[int]] = {}
    for (tier, week), count in weekly.items():
        by_tier.setdefault(tier, [0] * len(weeks))[column[week]] += count
    for counts in by_tier.values():
        for i in range(1, len(counts)):
            counts[i] += counts[i - 1]
    return {"confidence": confidence, "retention": kept, "sampled_from": sampled, "step": step,
            "weeks": [w * WEEK for w in weeks], "by_tier": by_tier}


async def lifecycle(request: Request) -> Response:
    """Charts of confidence, retention and memories by tier over time; on request, the next sweep's dry run
    (what it would forget and why), which scores every memory."""
    from ..lifecycle.sweep import SweepRequest, sweep
    from .charts import assets, histogram, lines

    v = viewer(request)
    strategy = arg.choice(request, "strategy", ("composite", "importance", "age", "capacity")) or "composite"
    figures = await lifecycle_figures(v.db)
    charts = tag("div", tag("div", tag("h3", "Confidence of the latest memories"),
                            histogram(figures["confidence"], label="confidence histogram", id_="chart-confidence",
                                      axis="confidence")),
                 tag("div", tag("h3", "Retention now"), histogram(figures["retention"], label="retention histogram",
                                                            id_="chart-retention", axis="retention now")),
                 tag("div", tag("h3", "Memories by tier, by creation week (those stored now)"),
                     lines(figures["weeks"], figures["by_tier"], label="memories by tier over time",
                           id_="chart-tiers")),
                 class_="cards")
    form = tag("form", views.labelled("strategy", views.select("strategy", [(s, s) for s in (
        "composite", "importance", "age", "capacity")], strategy)), hidden("dry_run", "1"),
        tag("button", "Show what the next sweep would do", type="submit"), method="get", action="/lifecycle",
        class_="filters", id="dry_run-form")
    asked = bool(arg.text(request, "dry_run"))
    body = [tag("h2", "What the next sweep would do (dry run: nothing changes)"), form]
    if asked:
        started = time.perf_counter()
        report = await v.call(sweep, v.store, SweepRequest(strategy=strategy, dry_run=True))
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
    sampled = figures["sampled_from"]
    distributions = [tag("h2", "Distributions"), charts,
                     tag("p", f"Drawn from one memory row in {figures['step']} ({sampled:,} latest memories in all): "
                              "the tier counts are estimates." if sampled else "", class_="muted")]
    body = [*body, *distributions] if asked else [*distributions, *body]  # what was asked for comes first
    return await v.page(request, page="/lifecycle", title="Lifecycle", body=join(body), assets=assets())


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
    page = arg.page_number(request)
    rows, total = await browse.audit_rows(v.db, limit=arg.PER_PAGE, offset=(page - 1) * arg.PER_PAGE)
    if arg.text(request, "verify"):
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
    body = join([state, views.audit_table(rows, time.time()), views.pager("/audit", page, total, arg.PER_PAGE)])
    return await v.page(request, page="/audit", title="Audit log", body=body)


SECRET_WORDS = ("key", "token", "secret", "password")


async def health(request: Request) -> Response:
    """The settings in effect (secret-looking values masked) and, on request, doctor's checks and the backlogs
    (`store.stats`), which read every memory."""
    from ..config import SETTINGS

    v = viewer(request)
    settings = [(s.name, s.env, _masked(s.name, getattr(v.settings, s.name))) for s in SETTINGS]
    settings.append(("(Anthropic key)", "ANTHROPIC_API_KEY", "set (hidden)" if os.environ.get("ANTHROPIC_API_KEY")
                     else "not set"))
    if arg.text(request, "checks"):
        checks = await _checks(v)
    else:
        checks = tag("p", _on_demand("/health", "Run the checks", "checks"), " as `agentmem doctor`, with the index "
                     "and vector backlogs (they read every memory, the keyword index and the audit chain).",
                     class_="muted", id="checks")
    body = join([checks, tag("h2", "Settings in effect"),
                 table(("setting", "environment variable", "value"), settings, class_="list", id="settings")])
    return await v.page(request, page="/health", title="Health", body=body)


async def _checks(v: Any) -> Markup:
    from ..upkeep.maintenance import doctor
    from ..upkeep.stats import format_sweep

    started = time.perf_counter()
    found = await v.call(doctor, v.store)
    data = await v.call(v.store.stats, all_projects=True)
    rows = []
    for c in found:
        if c.name == "embedding model" and not c.ok:
            rows.append((tag("span", "n/a", class_="muted"), c.name, f"the viewer loads no model of its own and "
                         f"the shared embedding process is not in use ({c.detail}); `agentmem doctor` checks the "
                         "model itself", ""))
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
        ("last sweep", format_sweep(data["last_sweep"])),
        ("LLM today", f"{data['llm_today']['tokens']} tokens in {data['llm_today']['calls']} calls "
                      f"({data['llm_today']['provider']}, budget {data['llm_today']['budget']})"),
    ])
    return join([table(("", "check", "detail", "fix"), rows, class_="list", id="checks"), tag("h2", "Backlogs"),
                 queues, tag("p", f"(checked in {time.perf_counter() - started:.2f} s)", class_="muted")])


def _masked(name: str, value: Any) -> str:
    if name == "team_url" and value:  # the team server's URL without its password
        from ..team.credentials import mask_url

        return mask_url(str(value))
    if any(word in name.lower() for word in SECRET_WORDS) and value:
        return "(set, hidden)"
    return str(value)
