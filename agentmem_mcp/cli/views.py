"""What the CLI prints for a person: a forgetting sweep limited to one project, and a page of memories."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..upkeep.ages import age

if TYPE_CHECKING:
    from ..lifecycle.sweep_report import SweepEntry, SweepReport

REMOVALS = ("expire", "forget", "delete")


def scoped_entries(report: SweepReport, projects: dict[str, str | None], project: str | None) -> list[SweepEntry]:
    """The report's entries about memories of `project` (None: the global memories)."""
    return [e for e in report.entries() if projects.get(e.id, project) == project]


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def sweep_table(entries: Sequence[SweepEntry], *, dry_run: bool, show_keeps: bool, scope: str | None) -> str:
    """The memories a sweep removes (would remove), then, with show_keeps, those it keeps; with a scope (a
    project, or the global memories), a last line saying how many of that scope's memories go."""
    removed = [e for e in entries if e.decision in REMOVALS]
    kept = [e for e in entries if e.decision not in REMOVALS]
    shown = removed + (kept if show_keeps else [])
    lines = []
    if shown:
        header = f"{'id':18}  {'score':>5}  {'decision':8}  {'reason':60}  title"
        lines += [header, "-" * len(header)]
        lines += [f"{e.id:18}  {e.score:5.3f}  {e.decision:8}  {_cut(e.reason, 60):60}  {_cut(e.title, 50)}"
                  for e in shown]
    if kept and not show_keeps:
        lines.append(f"{len(kept)} memories kept (--show-keeps lists them)")
    if scope is not None:
        verb = "dry run: would remove" if dry_run else "removed"
        lines.append(f"{verb} {len(removed)} of {len(entries)} memories in {scope}")
    return "\n".join(lines)


def memory_line(row: dict[str, Any], now: float | None = None) -> str:
    """One memory as a line of `agentmem list`: id, type/tier, title, project and age."""
    now = time.time() if now is None else now
    flags = (" pinned" if row.get("pinned") else "") + (" " + row["priority"] if row.get("priority") == "P0" else "")
    return (f"{row['id']}  [{row['type']}/{row['tier']}]{flags} {_cut(row.get('title') or '', 70)}  "
            f"({row.get('project') or 'global'}, {age(max(now - float(row['created_at']), 0.0))})")
