"""Team memory in what the agent reads: the briefing and prompt recall (from this machine's copy, in the hook
process, no server), and search (the server itself, merged into one ranking with the local hits).

Team memories are framed as data like local ones: their lines carry "shared by <author>" as provenance, text
that reads as instructions to an agent is left out (`trust.instruction_reason`: on the server's search hits here,
on this machine's copy when a row is pulled into it, `mirror.apply`), and they never enter "Always
keep in mind" (another machine's unconfirmed agent save is not a rule here). A memory this machine shared, or
one the local store holds with the same content, is not shown twice.
"""

from __future__ import annotations

import os
import re
import sys
import time
from typing import TYPE_CHECKING, Any

from ..db import memories
from ..recall.ranking import humanize_age
from ..trust.policy import instruction_reason
from . import TEAM_WIDE, enabled, in_use, mirror, outbox, reach
from .identity import project_key

if TYPE_CHECKING:
    from ..config import Settings
    from ..db.connection import Connection
    from ..models import SearchHit, SearchRequest
    from ..parts import Parts as Store  # an operation is given the store's parts

SECTION = "Shared by the team"
BRIEFING_LINES = 6
UNREACHABLE_NOTE = "team memory unreachable"


def _settings() -> Settings | None:
    from ..config import ConfigError, load_settings

    try:
        return load_settings(on_warning=lambda _: None)
    except ConfigError:
        return None


def _keys(project: str | None) -> list[str]:
    key = project_key(project)
    return [k for k in (key, TEAM_WIDE) if k]


def provenance(row: Any) -> str:
    """A team memory's provenance, in words."""
    source = row["origin_source"] if "origin_source" in row.keys() else row["source"]
    how = "they saved it" if source == "user" else "their agent saved it" if source == "agent" \
        else "learned on their machine"
    return f"shared by {row['author']}, {how}"


def _spawn_sync(settings: Settings) -> None:
    """Refresh this machine's copy in a process of its own (the hook must not wait for the server)."""
    import subprocess

    try:
        subprocess.Popen([sys.executable, "-m", "agentmem_mcp", "team", "sync", "--quiet"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, env={**os.environ, "AGENTMEM_HOME": str(settings.home)})
    except OSError as exc:
        import logging  # not at the top: the hook imports this module, and logging costs it milliseconds

        logging.getLogger("agentmem.team").info("could not start a team sync: %s", exc)


def briefing_lines(conn: Connection, project: str | None, now: float, settings: Settings | None = None,
                   refresh: bool = True) -> list[tuple[str, str]]:
    """The briefing's team section as (section, text) lines (none when team memory is off): the most important team
    memories of this project from this machine's copy, and a note when the server was unreachable. When the copy
    is older than team_refresh_seconds, a background `agentmem team sync` refreshes it for the next session."""
    if settings is None and not in_use(conn):
        return []  # team memory never used here (set in config.toml only: the first sync is the worker's)
    settings = settings or _settings()
    if settings is None or not enabled(settings):
        return []
    from ..lifecycle.digest import clip

    lines: list[tuple[str, str]] = []
    pulled = float(outbox.state(conn, "pulled_at", "0") or 0)
    down = reach.unreachable(settings.home)
    if down is not None:
        copy = f"this machine's copy from {humanize_age(now - pulled)}" if pulled else "no copy yet"
        lines.append((SECTION, f"- ({UNREACHABLE_NOTE} since {humanize_age(now - down[0])}: "
                               f"{clip(down[1], 120)}; {copy})"))
    if refresh and now - pulled > settings.team_refresh_seconds and not reach.recently_unreachable(settings.home):
        _spawn_sync(settings)
    for row in mirror.for_briefing(conn, _keys(project), project, limit=BRIEFING_LINES):
        body = clip(" ".join(row["content"].split()), 200)
        lines.append((SECTION, f"- {body} ({provenance(row)}, {humanize_age(now - row['updated_at'])})"))
        if len(lines) >= BRIEFING_LINES:
            break
    return lines


def prompt_rows(conn: Connection, prompt: str, project: str | None) -> list[Any]:
    """Team memories from this machine's copy that share words with the prompt, shaped like the local rows
    prompt recall scores (their `source` is 'team'); none when team memory is off."""
    if not conn.execute("SELECT 1 FROM team_mirror LIMIT 1").fetchone():
        return []  # no copy (team memory off, or nothing shared yet): no settings to read
    settings = _settings()
    if settings is None or not enabled(settings):
        return []
    return mirror.matching(conn, _keys(project), project, prompt)


def merge_hits(store: Store, request: SearchRequest, hits: list[SearchHit],
               results: dict[str, list[tuple[str, float]]], query_vector: Any, notes: list[str]) -> list[SearchHit]:
    """Local hits and the team server's, in one ranking (at most `request.limit`), for a validated `request`
    (`retrieval.SearchRequest.validated`: its project, types, tiers and min_confidence filter). A team candidate
    is scored like a local one: the share of the query's words it holds, and its cosine divided by the best
    cosine of all candidates (local or team), weighted as the local retrievers are, times its state factor. A
    memory this machine shared, or whose content a local hit has, is left out. When the server is away the
    candidates come from this machine's copy, scored the same way (by its vectors too), and a note says so."""
    settings = store.settings
    if not enabled(settings):
        return hits
    query, project, types, tiers = request.query, request.project, request.types, request.tiers
    min_confidence = request.min_confidence
    from ..models import SearchHit
    from ..recall.ranking import state_factor
    from ..recall.snippets import snippet
    from .remote import TeamPermissionError, TeamUnreachable

    vector = list(query_vector) if query_vector is not None else None
    down = reach.recently_unreachable(settings.home)
    try:
        if down:
            raise TeamUnreachable(down)
        rows = _server(settings).search(_keys(project), query, vector)
    except (TeamUnreachable, TeamPermissionError) as exc:
        if not down:
            reach.mark_unreachable(settings.home, str(exc))
        rows = _from_copy(store, project, query, vector)
        if not any(r["cosine"] is not None for r in rows):
            vector = None  # no vectors in the copy: keywords only, weighted as such
        notes.append(f"{UNREACHABLE_NOTE} ({exc}): team results come from this machine's copy, by keywords"
                     + (" and meaning" if vector is not None else ""))
    mine = {r[0] for r in store.conn.execute("SELECT gid FROM team_shared")}
    local_hashes = memories.hashes_of(store.conn, [h.id for h in hits])
    rows = [r for r in rows if r["gid"] not in mine and r["content_hash"] not in local_hashes
            and not instruction_reason(f"{r['title']}\n{r['content']}")
            and (not types or r["type"] in types) and (not tiers or r["tier"] in tiers)
            and (min_confidence is None or r["confidence"] >= min_confidence)]
    if not rows:
        return hits
    asked = _query_words(query)
    best_cos = max([c for _, c in results.get("vector", ())] + [r["cosine"] or 0.0 for r in rows]) or 1.0
    w_text, w_vec = settings.weight_bm25, settings.weight_vector if vector is not None else 0.0
    now, terms = time.time(), query.lower().split()
    team_hits = []
    for r in rows:
        covered = _coverage(asked, f"{r['title']} {r['content']}")
        fused = (w_text * covered + w_vec * max(r["cosine"] or 0.0, 0.0) / best_cos) / ((w_text + w_vec) or 1.0)
        score = fused * state_factor(r["confidence"], r["importance"], "P1", 1.0)
        if score < settings.search_min_score:
            continue
        why = [f"team memory shared by {r['author']} ({r['origin_machine']})"]
        if covered:
            why.append(f"keywords {covered:.0%}")
        if r["cosine"] is not None:
            why.append(f"meaning (cosine {r['cosine']:.2f})")
        why.append(f"confidence {r['confidence']:.2f}")
        team_hits.append(SearchHit(
            id=r["gid"], title=r["title"], type=r["type"], tier=r["tier"], project=project,
            snippet=snippet(r["content"], terms), score=round(score, 4), age=humanize_age(now - r["updated_at"]),
            why="; ".join(why), confidence=round(r["confidence"], 3), version=r["version"]))
    merged = sorted([*hits, *team_hits], key=lambda h: -h.score)
    return merged[:request.limit]


_SUFFIX = re.compile(r"(?:ing|es|ed|s)$")


def _query_words(query: str) -> list[str]:
    """The query's words that can match (no stop words), cut to the stem their other forms share."""
    from ..index.tokenize import STOPWORDS

    found = re.findall(r"\w{3,}", query.lower())
    return list(dict.fromkeys(_SUFFIX.sub("", w) if len(w) > 6 else w for w in found if w not in STOPWORDS))


def _coverage(asked: list[str], text: str) -> float:
    """The share of the query's words a team memory's text holds: its keyword score, on the same 0..1 scale
    whatever the other candidates (a team's best weak match must not count as a perfect one)."""
    if not asked:
        return 0.0
    lowered = text.lower()
    return sum(1 for w in asked if w in lowered) / len(asked)


def _from_copy(store: Store, project: str | None, query: str, vector: list[float] | None) -> list[dict[str, Any]]:
    """Search candidates from this machine's copy, shaped like the server's, for when it is away: the memories
    holding the query's words (FTS5) and the nearest vectors, each with its cosine (None without vectors)."""
    keys, conn = _keys(project), store.conn
    found = {r["id"]: r for r in mirror.matching(conn, keys, project, query, limit=20)}
    cosines = dict((row["id"], cos) for row, cos in mirror.nearest(conn, keys, project, vector, len(found),
                                                                   among=list(found)))
    for row, cos in mirror.nearest(conn, keys, project, vector, 20):
        found.setdefault(row["id"], row)
        cosines[row["id"]] = cos
    return [{"gid": r["id"], "title": r["title"], "content": r["content"], "type": r["type"], "tier": r["tier"],
             "confidence": r["confidence"], "importance": r["importance"], "author": r["author"],
             "origin_machine": r["origin_machine"], "content_hash": r["content_hash"], "version": r["version"],
             "updated_at": r["updated_at"], "rank": 1.0 / (1 + i), "cosine": cosines.get(r["id"])}
            for i, r in enumerate(found.values())]


_POOLED = {"on": False}


def use_pool() -> None:
    """This process lives long (`agentmem serve`): search keeps a pool of connections to the team server."""
    _POOLED["on"] = True


def _server(settings: Settings):
    from . import server

    return server(settings, pooled=_POOLED["on"])
