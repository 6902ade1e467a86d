"""Context injected into the agent: at session start (what matters in this project) and for a prompt
(the few memories relevant to it). Both are packed under a hard token budget, each line saying why
it is there. Both run in the hook process: SQLite and BM25 only, no embedding model.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any

from .db.connection import Connection
from .index.tokenize import terms
from .lifecycle.retention import retention
from .ranking import estimate_tokens, humanize_age

HEADER = "# agentmem: what you know about this project"
SNIPPET_CHARS = 240
RECENT_SESSIONS = 3


@dataclass
class ContextLine:
    section: str
    text: str
    memory_id: str | None = None


def _scope_sql(project: str | None) -> tuple[str, list[Any]]:
    return "(project IS ? OR project IS NULL)", [project]


def _line(row: Any, why: str) -> str:
    content = " ".join(row["content"].split())
    title = row["title"].rstrip("…")
    body = content if content.startswith(title) else f"{row['title']}: {content}"
    if len(body) > SNIPPET_CHARS:
        body = body[: SNIPPET_CHARS - 1] + "…"
    return f"- [{row['type']}] {body} ({why}; {row['id']})"


def _usefulness(row: Any, now: float) -> float:
    last_used = row["last_accessed_at"] or row["created_at"]
    kept = retention((now - last_used) / 86400, row["strength"])
    return (0.35 * row["importance"] + 0.3 * row["confidence"] + 0.2 * kept
            + 0.15 * min(1.0, math.log1p(row["access_count"]) / 3))


def _why_useful(row: Any, now: float) -> str:
    parts = []
    if row["access_count"]:
        parts.append(f"used {row['access_count']}x")
    if row["importance"] >= 0.7:
        parts.append("important")
    if row["source"] == "consolidation":
        parts.append(f"learned from past sessions, confidence {row['confidence']:.2f}")
    parts.append(f"saved {humanize_age(now - row['created_at'])}")
    return ", ".join(parts)


def session_lines(conn: Connection, project: str | None, now: float | None = None,
                  exclude_session: str | None = None) -> list[ContextLine]:
    """Candidate lines for the session-start context, most important first."""
    now = time.time() if now is None else now
    scope, args = _scope_sql(project)
    live = f"is_latest = 1 AND {scope} AND (forget_after IS NULL OR forget_after > ?)"
    lines: list[ContextLine] = []
    seen: set[str] = set()
    for row in conn.execute(
        f"SELECT * FROM memories WHERE {live} AND (pinned = 1 OR priority = 'P0') "
        f"ORDER BY pinned DESC, importance DESC, created_at DESC LIMIT 30", [*args, now]):
        seen.add(row["id"])
        lines.append(ContextLine("Always keep in mind", _line(row, "pinned" if row["pinned"] else "P0"),
                                 row["id"]))
    for row in conn.execute(
        f"SELECT * FROM memories WHERE {live} AND tier = 'episodic' AND type = 'summary' "
        f"ORDER BY created_at DESC LIMIT ?", [*args, now, RECENT_SESSIONS]):
        seen.add(row["id"])
        why = f"session summary, {humanize_age(now - row['updated_at'])}"
        lines.append(ContextLine("Recent sessions", _line(row, why), row["id"]))
    lines.extend(_unsummarised_sessions(conn, project, exclude_session, now))
    candidates = conn.execute(
        f"SELECT * FROM memories WHERE {live} AND tier IN ('semantic', 'procedural') AND confidence >= 0.3 "
        f"ORDER BY importance DESC, access_count DESC, created_at DESC LIMIT 200", [*args, now]).fetchall()
    ranked = sorted((r for r in candidates if r["id"] not in seen), key=lambda r: -_usefulness(r, now))
    for row in ranked[:40]:
        lines.append(ContextLine("Project knowledge", _line(row, _why_useful(row, now)), row["id"]))
    return lines


def _unsummarised_sessions(conn: Connection, project: str | None, exclude_session: str | None,
                           now: float) -> list[ContextLine]:
    """Recent sessions the worker has not summarised yet: files and commands straight from observations."""
    rows = conn.execute(
        "SELECT id, last_event_at FROM sessions WHERE project IS ? AND summary_memory_id IS NULL AND id IS NOT ? "
        "ORDER BY last_event_at DESC LIMIT ?", (project, exclude_session, RECENT_SESSIONS)).fetchall()
    out = []
    for session in rows:
        files: dict[str, None] = {}
        commands: dict[str, None] = {}
        prompts: list[str] = []
        for obs in conn.execute(
            "SELECT event, tool, input, prompt, files FROM observations WHERE session_id = ? ORDER BY id LIMIT 2000",
            (session["id"],)):
            if obs["event"] in ("tool_use", "file_edit") and obs["tool"] in ("Edit", "MultiEdit", "Write",
                                                                           "NotebookEdit", None):
                for path in json.loads(obs["files"] or "[]"):
                    files.setdefault(path, None)
            if obs["tool"] in ("Bash", "Shell", "run_terminal_cmd") and obs["input"]:
                try:
                    command = json.loads(obs["input"]).get("command")
                except (ValueError, AttributeError):
                    command = None
                if isinstance(command, str) and command.strip():
                    commands.setdefault(" ".join(command.split())[:120], None)
            if obs["event"] == "prompt" and obs["prompt"] and len(prompts) < 2:
                prompts.append(" ".join(obs["prompt"].split())[:160])
        if not (files or commands or prompts):
            continue
        parts = []
        if prompts:
            parts.append("asked: " + " / ".join(prompts))
        if files:
            parts.append("edited " + ", ".join(list(files)[:12]))
        if commands:
            parts.append("ran " + "; ".join(f"`{c}`" for c in list(commands)[:8]))
        age = humanize_age(now - session["last_event_at"])
        out.append(ContextLine("Recent sessions", f"- Session {age} (not yet summarised): " + "; ".join(parts)))
    return out


def pack(lines: list[ContextLine], budget_tokens: int, header: str = HEADER) -> tuple[str, list[str]]:
    """Render lines grouped by section under a hard budget; returns the text and the memory ids used."""
    used = estimate_tokens(header) + 1
    sections: dict[str, list[str]] = {}
    ids: list[str] = []
    for line in lines:
        cost = estimate_tokens(line.text) + 1 + (0 if line.section in sections else estimate_tokens(line.section) + 4)
        if used + cost > budget_tokens:
            continue
        used += cost
        sections.setdefault(line.section, []).append(line.text)
        if line.memory_id:
            ids.append(line.memory_id)
    if not sections:
        return "", []
    parts = [header]
    for section, texts in sections.items():
        parts.append(f"## {section}")
        parts.extend(texts)
    return "\n".join(parts), ids


def session_context(conn: Connection, project: str | None, budget_tokens: int, *,
                    exclude_session: str | None = None, now: float | None = None) -> tuple[str, list[str]]:
    return pack(session_lines(conn, project, now, exclude_session), budget_tokens)


def prompt_context(conn: Connection, fulltext: Any, prompt: str, project: str | None, *, budget_tokens: int,
                   min_score: float, max_hits: int = 3) -> tuple[str, list[str]]:
    """Up to `max_hits` memories whose text covers enough of the prompt's terms; '' when none is relevant.

    Relevance = the share of the prompt's (stemmed, stop-word free) terms that the memory contains,
    each term weighted by its rarity (IDF), so common words count little and unknown words count fully.
    """
    query_terms = fulltext.query_terms(prompt)
    if len(query_terms) < 1:
        return "", []
    hits = fulltext.search(prompt, projects=[project, None] if project else [None], limit=10)
    if not hits:
        return "", []
    ids = [memory_id for memory_id, _ in hits]
    marks = ",".join("?" * len(ids))
    now = time.time()
    rows = {row["id"]: row for row in conn.execute(
        f"SELECT * FROM memories WHERE id IN ({marks}) AND is_latest = 1 "
        "AND (forget_after IS NULL OR forget_after > ?)", [*ids, now])}
    weights = fulltext.term_weights(query_terms)
    total_weight = sum(weights.values()) or 1.0
    lines = []
    for memory_id, _ in hits:
        row = rows.get(memory_id)
        if row is None or row["tier"] == "working":
            continue
        doc_terms = set(fulltext.analyzer.analyze(" ".join(terms(f"{row['title']} {row['content']}"))))
        coverage = sum(w for t, w in weights.items() if t in doc_terms) / total_weight
        if coverage < min_score:
            continue
        lines.append(ContextLine("Relevant memories", _line(row, f"matches {coverage:.0%} of your prompt"), row["id"]))
        if len(lines) >= max_hits:
            break
    return pack(lines, budget_tokens, header="# agentmem: memories related to this prompt")
