"""Listing what is stored, page by page, and removing agentmem's data: one project's, or all of it."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .db import memory_reads
from .db import sessions as session_rows
from .models import SHOWN_TIERS

if TYPE_CHECKING:
    from .config import Settings
    from .parts import Parts

LIST_COLUMNS = "id, title, type, tier, project, priority, pinned, version, is_latest, created_at, confidence"


def list_memories(conn: Any, *, project: str | None, all_projects: bool = False, types: Sequence[str] = (),
                  tiers: Sequence[str] = (), history: bool = False, limit: int = 20,
                  offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """One page of memories, newest first, and how many match in all. By default the latest version of
    each memory of `project` and the global ones, of the tiers search shows (`SHOWN_TIERS`: not the raw captured
    events of the working tier); all_projects widens, history adds superseded versions."""
    from .db.memories import MemoryFilter

    chosen = MemoryFilter(projects=None if all_projects else (project, None), latest_only=not history,
                          types=tuple(types), tiers=tuple(tiers) or SHOWN_TIERS)
    rows, total = memory_reads.page(conn, chosen, LIST_COLUMNS, limit, offset)
    return [dict(row) for row in rows], total


@dataclass
class PurgePlan:
    """What `agentmem purge` removes: a project's memories and captured sessions, or agentmem's files."""

    project: str | None = None  # None with files: everything
    memories: int = 0
    sessions: int = 0
    files: list[Path] = field(default_factory=list)

    def describe(self) -> str:
        if self.files:
            return ("remove all of agentmem's data (quit Claude Code / Cursor first, so that no agentmem server "
                    "has it open):\n" + "\n".join(f"  {path}" for path in self.files))
        return (f"forget every memory of {self.project} ({self.memories} memories, every version) and the "
                f"{self.sessions} sessions captured there; global memories and other projects stay")


def own_files(settings: Settings) -> list[Path]:
    """agentmem's own files and folders under its home, those that exist: the database and its WAL files,
    the BM25 index, the logs, the hook spool. config.toml and anything else in the home stay."""
    database = settings.database
    candidates = [database, Path(f"{database}-wal"), Path(f"{database}-shm"), settings.fulltext_dir,
                  settings.log_path.parent, settings.home / "spool"]
    return [path for path in candidates if path.exists()]


def plan_purge(store: Parts | None, settings: Settings, project: str | None) -> PurgePlan:
    """The plan for one project (`store` open on it) or, with project None and no store, for everything."""
    if project is None:
        return PurgePlan(files=own_files(settings))
    conn = store.conn
    memories = memory_reads.count_in_project(conn, project)
    return PurgePlan(project=project, memories=memories, sessions=session_rows.count(conn, project))


def purge_project(store: Parts, project: str, reason: str = "purged from the command line") -> tuple[int, int]:
    """Forget every memory of `project` and what was captured in its sessions, through `forget.forget` (so the
    indexes, the vectors and the audit log follow). Returns (memories, sessions) removed."""
    from .lifecycle.forget import forget
    from .models import NotFound

    conn = store.conn
    sessions = session_rows.ids_of_project(conn, project)
    for session_id in sessions:
        try:
            forget(store, session_id=session_id, reason=reason)
        except NotFound:  # a session with nothing left in it
            pass
    removed = 0
    while True:
        roots = memory_reads.roots_in_project(conn, project, 100)
        if not roots:
            break
        removed += forget(store, ids=roots, all_projects=True, reason=reason).count
    return removed, len(sessions)


def purge_files(paths: Sequence[Path]) -> None:
    """Remove the files and folders `own_files` listed."""
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
