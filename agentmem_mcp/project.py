"""Which project a directory belongs to: its git repository's root (a worktree maps to its main repo); for a
session outside any repository, the directory itself (`session_project`): nothing a session does is global.

Pure file reads, no `git` subprocess: the hooks call this on every event.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def _main_repo_from_gitfile(gitfile: Path) -> Path | None:
    """A worktree's `.git` is a file `gitdir: <main>/.git/worktrees/<name>`; map it to <main>."""
    try:
        text = gitfile.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text.split(":", 1)[1].strip())
    if not gitdir.is_absolute():
        gitdir = (gitfile.parent / gitdir).resolve()
    commondir = gitdir / "commondir"
    if commondir.is_file():
        common = Path(commondir.read_text(encoding="utf-8", errors="replace").strip())
        common = common if common.is_absolute() else (gitdir / common).resolve()
        return common.parent if common.name == ".git" else common
    return gitfile.parent


def _git_markers(path: str | os.PathLike[str]) -> Iterator[tuple[Path, Path]]:
    """(directory, its `.git`) for `path` and each of its parents that has one, nearest first."""
    current = Path(path).expanduser().resolve()
    for directory in (current, *current.parents):
        marker = directory / ".git"
        if marker.exists():
            yield directory, marker


def project_for(path: str | os.PathLike[str] | None) -> str | None:
    """The project id for a working directory: the main git root as an absolute path, or None (global)."""
    if not path:
        return None
    try:
        for directory, marker in _git_markers(path):
            if marker.is_dir():
                return str(directory)
            if marker.is_file():
                main = _main_repo_from_gitfile(marker)
                return str(main or directory)
    except (OSError, RuntimeError, ValueError):  # a NUL byte, a name too long, a loop of links: no project
        return None
    return None


def session_project(path: str | os.PathLike[str] | None) -> str | None:
    """The project of a session working in `path`: its git project (`project_for`), else the directory itself
    (absolute, links resolved), so that what a session outside any repository captures, saves or derives stays
    with that directory and never becomes global (only the user makes something global). None only without a
    path (an event that names no directory)."""
    project = project_for(path)
    if project is not None or not path:
        return project
    try:
        return str(Path(path).expanduser().resolve())
    except (OSError, RuntimeError, ValueError):
        return None


def worktree_root(path: str | os.PathLike[str] | None) -> str | None:
    """The root of the working tree holding `path` (a worktree's own root, not its main repository)."""
    if not path:
        return None
    try:
        return next((str(directory) for directory, _ in _git_markers(path)), None)
    except (OSError, RuntimeError, ValueError):
        return None


def project_from_uri(uri: str) -> str | None:
    """An MCP root (`file:///path`) -> project id."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return project_for(unquote(parsed.path)) or unquote(parsed.path) or None
