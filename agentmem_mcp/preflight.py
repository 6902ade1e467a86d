"""What is wrong with agentmem's home, said so that a person can fix it: checked before the CLI or the server
opens the store, and used to turn an OS error met later into one clear line instead of a traceback."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from .db.connection import read_only_reason
from .files import home_refusal, why_unwritable

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
    why = why_unwritable(existing)
    if why is None and not os.access(existing, os.X_OK):
        why = "cannot be entered by this user"
    if why is None:
        return None
    owned = existing.stat().st_uid == os.geteuid() if hasattr(os, "geteuid") else False
    if made_private and owned and existing == path and "read-only filesystem" not in why:
        return None  # agentmem makes its own home 0700 (`files.ensure_private_dir`)
    return _unwritable(what, existing, why)


def _unwritable(what: str, path: Path, why: str) -> str:
    """The line for a place agentmem must write but cannot, naming the real cause."""
    if "read-only filesystem" in why:
        return (f"{what} {path} {why}: no chmod can fix that; remount it read-write, or choose a folder on a writable "
                "disk (AGENTMEM_HOME)")
    if path.stat().st_uid != os.geteuid():
        return f"{what} {path} {why} (it belongs to another user): choose a folder of yours, or `chown` it to you"
    return f"{what} {path} {why}: `chmod u+w {path}`, or choose another directory"


def home_problem(settings: Settings) -> str | None:
    """The first reason agentmem cannot use its home, database or BM25 index directory, or None.

    A home that is not this user's, is open to others, or holds a planted link is refused (`files.home_refusal`).
    A home whose files exist but cannot be written (a read-only filesystem, permissions) is not a problem here:
    the store is then opened read-only (reads work; a write says why it cannot be done)."""
    refused = home_refusal(settings)
    if refused:
        return refused
    full = _disk_full(settings)
    if full:
        return full
    database = settings.database
    if database.exists():
        if not os.access(database, os.R_OK):
            return f"the database {database} is not readable by this user: `chmod u+r {database}` if it is yours"
        if read_only_reason(database) is not None:
            return None  # opened read-only: reading works, writing says why not
    checks = [(settings.home, "AGENTMEM_HOME", True), (database.parent, "the database directory", True),
              (settings.fulltext_dir, "the BM25 index directory", False)]
    for path, what, made_private in checks:
        problem = _writable_dir_problem(path, what, made_private=made_private)
        if problem:
            return problem
    index = settings.fulltext_dir
    if index.is_dir():
        for entry in index.iterdir():
            if entry.is_file() and not os.access(entry, os.R_OK | os.W_OK):
                why = why_unwritable(entry) or "is not readable by this user"
                return _unwritable(f"the BM25 index {index} has a file that", entry, why)
    return None


def _disk_full(settings: Settings) -> str | None:
    """The line for a home on a disk with no room left at all (SQLite then fails even to read, and would be taken
    for a damaged database), with what the hooks have lost meanwhile."""
    import shutil

    home = _first_existing(settings.home)
    try:
        if shutil.disk_usage(home).free > 0:
            return None
    except OSError:
        return None
    from .capture.hook_notice import last_failure

    failure = last_failure(settings.home) or {}
    lost = f"; hooks have lost {failure['lost']} events so far" if failure.get("lost") else ""
    return (f"the disk holding {home} is full: free some space, then run this again (SQLite may fail even to read "
            f"meanwhile, and nothing is recorded{lost})")


def explain(exc: BaseException, settings: Settings) -> str | None:
    """One line saying what went wrong and what to do, for an error caused by the home's files; None for others."""
    text = str(exc)
    if isinstance(exc, ValueError) and "Lockfile" in text and "PermissionDenied" in text:
        return home_problem(settings) or (f"the BM25 index {settings.fulltext_dir} cannot be locked (permission "
                                          f"denied): `chmod -R u+w {settings.fulltext_dir}`")
    if type(exc).__name__ == "OperationalError" and "readonly" in text:
        return home_problem(settings) or read_only_reason(settings.database) or (
            f"the database {settings.database} is read-only: `chmod u+rw {settings.database}`")
    if isinstance(exc, OSError):
        problem = home_problem(settings)
        if problem:
            return problem
        name = f" {exc.filename}" if exc.filename else ""
        return f"cannot use{name}: {exc.strerror or text}"
    return None
