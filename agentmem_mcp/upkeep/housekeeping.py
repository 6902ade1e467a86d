"""Listing what is stored, page by page, and removing agentmem's data: one project's, or all of it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..db import memory_reads
from ..db import sessions as session_rows
from ..models import SHOWN_TIERS

if TYPE_CHECKING:
    from ..config import Settings
    from ..parts import Parts

LIST_COLUMNS = "id, title, type, tier, project, priority, pinned, version, is_latest, created_at, confidence"


def list_memories(conn: Any, *, project: str | None, all_projects: bool = False, types: Sequence[str] = (),
                  tiers: Sequence[str] = (), history: bool = False, limit: int = 20,
                  offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """One page of memories, newest first, and how many match in all. By default the latest version of
    each memory of `project` and the global ones, of the tiers search shows (`SHOWN_TIERS`: not the raw captured
    events of the working tier); all_projects widens, history adds superseded versions."""
    from ..db.memories import MemoryFilter

    chosen = MemoryFilter(projects=None if all_projects else (project, None), latest_only=not history,
                          types=tuple(types), tiers=tuple(tiers) or SHOWN_TIERS)
    rows, total = memory_reads.page(conn, chosen, LIST_COLUMNS, limit, offset)
    return [dict(row) for row in rows], total


@dataclass
class PurgePlan:
    """What `agentmem purge` removes: a project's memories and captured sessions, or agentmem's files.

    files: agentmem's own files, one by one, then the folders they leave empty that agentmem made, in the order
    they are removed (`purge_files`); kept: what stays although it was expected, and why."""

    project: str | None = None  # None with files: everything
    memories: int = 0
    sessions: int = 0
    files: list[Path] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if self.project is not None:
            return (f"forget every memory of {self.project} ({self.memories} memories, every version) and the "
                    f"{self.sessions} sessions captured there; global memories and other projects stay")
        folders = [path for path in self.files if path.is_dir()]
        lines = [f"  {path}" for path in self.files if not path.is_dir() and path.parent not in folders]
        for folder in folders:
            inside = sum(1 for path in self.files if path.parent == folder)
            written = f"{inside} file{'s' if inside != 1 else ''}"
            lines.append(f"  {folder}/ (the folder and the {written} agentmem wrote in it)")
        lines += [f"  left as it is: {why}" for why in self.kept]
        return ("remove all of agentmem's data (quit Claude Code / Cursor first, so that no agentmem server "
                "has it open):\n" + "\n".join(lines))


def own_files(settings: Settings) -> tuple[list[Path], list[str]]:
    """agentmem's own files under its home, file by file, and the folders they leave empty, in removal order: the
    database (if it is agentmem's, with its WAL and audit files), the BM25 index's files, the logs, the spooled
    hook events. A folder goes only when agentmem made it and nothing else is in it; a file only when agentmem
    wrote it. config.toml, the home itself and anything else stay. Also returns what stays that a reader might
    expect to go, and why."""
    from ..capture.spool import is_spool_file, spool_dir
    from ..db.migrations import foreign_database
    from ..files import MARKER, is_owned, written_here
    from ..index.fulltext import SCHEMA_MARKER, is_index_file
    from ..logs import is_log_file

    files: list[Path] = []
    folders: list[Path] = []
    kept: list[str] = []
    database = settings.database
    if database.is_symlink() or database.exists():
        why = "it is a symbolic link" if database.is_symlink() else foreign_database(database)
        if why is None:
            names = {f"{database.name}{end}" for end in ("", "-wal", "-shm", "-journal", ".audit-key",
                                                          ".audit-head", ".audit-head.lock")}
            files += written_here(database.parent, names.__contains__)[0]
        else:
            kept.append(f"{database}: not a database agentmem made ({why})")
    index = settings.fulltext_dir
    home_owned = is_owned(settings.home)
    for folder, ours, made in (
            (index, is_index_file, is_owned(index) or (index / SCHEMA_MARKER).is_file()),
            (settings.log_path.parent, is_log_file, is_owned(settings.log_path.parent) or home_owned),
            (spool_dir(settings.home), is_spool_file, is_owned(spool_dir(settings.home)) or home_owned)):
        if folder.is_symlink() or not folder.is_dir():
            continue
        if folder == index and not made:  # a folder agentmem never used as its index: nothing in it is agentmem's
            kept.append(f"{folder}: not created by agentmem")
            continue
        mine, others = written_here(folder, ours)
        files += mine
        if made and not others:
            files += [folder / MARKER] if (folder / MARKER).is_file() else []
            folders.append(folder)
        elif others:
            shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
            kept.append(f"{folder}: {'not created by agentmem; ' if not made else ''}it holds what agentmem did "
                        f"not write ({shown})")
    return files + folders, kept


def plan_purge(store: Parts | None, settings: Settings, project: str | None) -> PurgePlan:
    """The plan for one project (`store` open on it) or, with project None and no store, for everything."""
    if project is None:
        files, kept = own_files(settings)
        return PurgePlan(files=files, kept=kept)
    conn = store.conn
    memories = memory_reads.count_in_project(conn, project)
    return PurgePlan(project=project, memories=memories, sessions=session_rows.count(conn, project))


def purge_project(store: Parts, project: str, reason: str = "purged from the command line") -> tuple[int, int]:
    """Forget every memory of `project` and what was captured in its sessions, through `forget.forget` (so the
    indexes, the vectors and the audit log follow). Returns (memories, sessions) removed."""
    from ..lifecycle.forget import ForgetRequest, forget
    from ..models import NotFound

    conn = store.conn
    sessions = session_rows.ids_of_project(conn, project)
    for session_id in sessions:
        try:
            forget(store, ForgetRequest(session_id=session_id, reason=reason))
        except NotFound:  # a session with nothing left in it
            pass
    removed = 0
    while True:
        roots = memory_reads.roots_in_project(conn, project, 100)
        if not roots:
            break
        removed += forget(store, ForgetRequest(ids=roots, all_projects=True, reason=reason)).count
    return removed, len(sessions)


def purge_files(paths: Sequence[Path]) -> None:
    """Remove what `own_files` listed: each file, then each folder if it is empty by then (never a folder's
    contents wholesale). Raises AgentmemError naming what could not go (someone added to a folder since the plan,
    say), after removing the rest."""
    from ..models import AgentmemError

    left = []
    for path in paths:
        try:
            if path.is_dir() and not path.is_symlink():
                path.rmdir()
            else:
                path.unlink(missing_ok=True)
        except OSError as exc:
            left.append(f"{path} ({exc.strerror or exc})")
    if left:
        raise AgentmemError("the rest was removed, but not: " + "; ".join(left))
