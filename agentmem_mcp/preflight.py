"""What is wrong with agentmem's home, said so that a person can fix it: checked before the CLI or the server
opens the store, and used to turn an OS error met later into one clear line instead of a traceback."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import Settings


def _first_existing(path: Path) -> Path:
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def _writable_dir_problem(path: Path, what: str, *, made_private: bool = False) -> str | None:
    """Why `path` cannot be (made into) a directory agentmem writes in, or None. made_private: agentmem
    makes this directory 0700 itself when the user owns it (`ensure_private_dir`)."""
    if path.exists() and not path.is_dir():
        return (f"{what} {path} is a file, not a directory: point it at a directory (or unset it for the "
                f"default) or move the file away")
    existing = _first_existing(path)
    if not existing.is_dir():
        return f"{what} {path} is inside {existing}, which is a file: point it at a directory"
    owned = existing.stat().st_uid == os.geteuid() if hasattr(os, "geteuid") else False
    if not os.access(existing, os.W_OK | os.X_OK) and not (made_private and owned and existing == path):
        return (f"{what} {existing} is not writable by this user: `chmod -R u+w {existing}` (or `chown` it to "
                f"you), or choose another directory")
    return None


def home_problem(settings: Settings) -> str | None:
    """The first reason agentmem cannot use its home, database or BM25 index directory, or None."""
    checks = [(settings.home, "AGENTMEM_HOME", True), (settings.database.parent, "the database directory", True),
              (settings.fulltext_dir, "the BM25 index directory", False)]
    for path, what, made_private in checks:
        problem = _writable_dir_problem(path, what, made_private=made_private)
        if problem:
            return problem
    database = settings.database
    if database.exists() and not os.access(database, os.R_OK | os.W_OK):
        return f"the database {database} is not readable and writable by this user: `chmod u+rw {database}`"
    index = settings.fulltext_dir
    if index.is_dir():
        for entry in index.iterdir():
            if entry.is_file() and not os.access(entry, os.R_OK | os.W_OK):
                return (f"the BM25 index {index} has files this user cannot write ({entry.name}): "
                        f"`chmod -R u+w {index}`")
    return None


def explain(exc: BaseException, settings: Settings) -> str | None:
    """One line saying what went wrong and what to do, for an error caused by the home's files; None for others."""
    text = str(exc)
    if isinstance(exc, ValueError) and "Lockfile" in text and "PermissionDenied" in text:
        return home_problem(settings) or (f"the BM25 index {settings.fulltext_dir} cannot be locked (permission "
                                          f"denied): `chmod -R u+w {settings.fulltext_dir}`")
    if type(exc).__name__ == "OperationalError" and "readonly" in text:
        return home_problem(settings) or (f"the database {settings.database} is read-only: "
                                          f"`chmod u+rw {settings.database}`")
    if isinstance(exc, OSError):
        problem = home_problem(settings)
        if problem:
            return problem
        name = f" {exc.filename}" if exc.filename else ""
        return f"cannot use{name}: {exc.strerror or text}"
    return None
