"""`agentmem import-history codex` and `import-history gemini`: a user's past Codex and Gemini CLI sessions, read
from the logs those clients keep (`capture/codex_log.py`, `capture/gemini_log.py`), replayed through the capture
path their hooks use (parsed, redacted and scrubbed like a live event, stored with the time it happened), then
handed to the background worker for the summaries and learned knowledge. The agent's replies reach the summary
as for a live session: the session's `transcript_path` names its log, which the summariser reads.

A session already in the store (captured live by the client's hooks, whose session id is the same, or imported
before) is skipped: a second import adds nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..capture import codex_log, gemini_log
from .claude_code import ImportSummary, Progress, import_sessions

_ROLLOUT_ID = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$")


def codex_root() -> Path:
    """Where Codex keeps its files: `$CODEX_HOME`, else `~/.codex`."""
    return Path(os.environ["CODEX_HOME"]).expanduser() if os.environ.get("CODEX_HOME") else Path.home() / ".codex"


def gemini_root() -> Path:
    """Where Gemini CLI keeps its files: `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`."""
    base = os.environ.get("GEMINI_CLI_HOME")
    return (Path(base).expanduser() if base else Path.home()) / ".gemini"


def _inside(folder: str, project: str | None) -> bool:
    if project is None:
        return True
    wanted = Path(project).resolve()
    return bool(folder) and (Path(folder) == wanted or wanted in Path(folder).parents)


def find_codex_logs(root: Path, *, project: str | None = None, since: float | None = None) -> list[Path]:
    """The rollout files under `root` (`sessions/` and `archived_sessions/`), oldest first: only those whose
    directory is inside `project` when given, only those written since `since` (unix time) when given."""
    found = []
    for folder in ("sessions", "archived_sessions"):
        for path in (root / folder).rglob("rollout-*.jsonl"):
            try:
                modified = path.stat().st_mtime
            except OSError:
                continue
            if since is not None and modified < since:
                continue
            if project is not None and not _inside(_codex_cwd(path), project):
                continue
            found.append((modified, path))
    return [path for _, path in sorted(found)]


def _codex_cwd(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle):
                if number > 50:
                    break
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                payload = record.get("payload") if isinstance(record, dict) else None
                if isinstance(payload, dict) and isinstance(payload.get("cwd"), str):
                    return payload["cwd"]
    except OSError:
        pass
    return ""


def import_codex(settings: Any, paths: list[Path], progress: Progress | None = None) -> ImportSummary:
    """Replay each Codex rollout's hook events through the capture path into the store of `settings`."""
    def session_of(path: Path) -> str:
        found = _ROLLOUT_ID.search(path.name)
        return found.group(1) if found else ""

    return import_sessions(settings, "codex", paths, lambda path: codex_log.codex_events(codex_log.read_session(path)),
                           progress=progress, session_of=session_of)


@dataclass
class GeminiLog:
    """A Gemini CLI session log and the project folder it belongs to."""

    path: Path
    folder: str

    @property
    def name(self) -> str:
        return self.path.name


@dataclass
class GeminiHistory:
    """The Gemini CLI session logs found, and what was left out and why."""

    logs: list[GeminiLog] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)


def find_gemini_logs(root: Path, *, project: str | None = None, since: float | None = None) -> GeminiHistory:
    """The session logs under `root/tmp/*/chats/`, oldest first, each with its project folder (from the folder's
    `.project_root`, or `projects.json` and the log's project hash). A log whose folder cannot be told is left out
    (it would otherwise become memory of every project) and counted."""
    history = GeminiHistory()
    by_hash = _known_roots(root)
    found = []
    for path in [*(root / "tmp").glob("*/chats/session-*.json"), *(root / "tmp").glob("*/chats/session-*.jsonl")]:
        try:
            modified = path.stat().st_mtime
        except OSError:
            continue
        if since is not None and modified < since:
            continue
        folder = gemini_log.project_root(path) or by_hash.get(path.parent.parent.name) or _root_by_hash(path, by_hash)
        if not folder:
            history.left_out["sessions with no project folder"] = history.left_out.get(
                "sessions with no project folder", 0) + 1
            continue
        if not _inside(folder, project):
            continue
        found.append((modified, path, folder))
    history.logs = [GeminiLog(path, folder) for _, path, folder in sorted(found)]
    return history


def _known_roots(root: Path) -> dict[str, str]:
    """SHA-256 of each project folder Gemini CLI knows (`projects.json`) -> the folder."""
    try:
        projects = json.loads((root / "projects.json").read_text(encoding="utf-8")).get("projects")
    except (OSError, ValueError, AttributeError):
        return {}
    if not isinstance(projects, dict):
        return {}
    return {hashlib.sha256(folder.encode()).hexdigest(): folder for folder in projects if isinstance(folder, str)}


def _root_by_hash(path: Path, by_hash: dict[str, str]) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            head = handle.read(4096)
    except OSError:
        return None
    found = re.search(r'"projectHash"\s*:\s*"([0-9a-f]{64})"', head)
    return by_hash.get(found.group(1)) if found else None


def import_gemini(settings: Any, history: GeminiHistory, progress: Progress | None = None) -> ImportSummary:
    """Replay each Gemini CLI session's hook events through the capture path into the store of `settings`."""
    def events_of(log: GeminiLog) -> list[tuple[str, dict, float | None]]:
        session = gemini_log.read_session(log.path)
        session.cwd = log.folder
        return gemini_log.gemini_events(session)

    summary = ImportSummary(left_out=dict(history.left_out))
    return import_sessions(settings, "gemini", history.logs, events_of, progress=progress, summary=summary)
