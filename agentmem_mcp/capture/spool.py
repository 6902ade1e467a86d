"""A spool for hook events the database could not take: locked past the hook's wait, or out of space.

A hook never makes the agent wait long, and never loses an event either: when the write fails it puts
the event, already scrubbed (no secret, no private block, outputs cut), in `<home>/spool/` as one
0600 JSON file, and the next hook that writes successfully (or the worker) moves spooled events into
the observations table, oldest first, each in its own transaction, deleting the file after commit.
A spooled file that agentmem cannot have written (another owner, writable by group or others) is not recorded:
it is renamed `*.refused` and the log says how to take it in after checking it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

from .events import HookEvent

log = logging.getLogger("agentmem.spool")

DRAIN_LIMIT = 200  # events a single drain moves (the rest wait for the next one)
STALE_CLAIM_SECONDS = 60.0


# the names spool_event and drain_spool give files (a planted file they refused, `*.refused`, is not one of them)
_SPOOL_FILE = re.compile(r"\.?\d{20}-\d+(?:\.json(?:\.draining-\d+)?|\.tmp|\.bad)")


def is_spool_file(name: str) -> bool:
    """Whether a file of this name in the spool is one agentmem wrote there."""
    return _SPOOL_FILE.fullmatch(name) is not None


def spool_dir(home: Path) -> Path:
    return home / "spool"


def spool_event(home: Path, ev: HookEvent, project: str | None, now: float | None = None) -> Path:
    """Write a scrubbed event to the spool atomically (write a temporary file, then rename it)."""
    from ..db.connection import ensure_private_dir

    directory = spool_dir(home)
    ensure_private_dir(home)
    ensure_private_dir(directory)
    now = time.time() if now is None else now
    body = {name: getattr(ev, name) for name in HookEvent._FIELDS} | {"project": project, "at": now}
    name = f"{time.time_ns():020d}-{os.getpid()}"
    temporary, final = directory / f".{name}.tmp", directory / f"{name}.json"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(body, out, ensure_ascii=False, default=str)
        os.replace(temporary, final)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return final


def pending(home: Path) -> list[Path]:
    """Spooled events, oldest first, with claims left by a process that died while draining (older than a
    minute)."""
    directory = spool_dir(home)
    try:
        files = list(directory.glob("*.json"))
        stale = time.time() - STALE_CLAIM_SECONDS
        files += [p for p in directory.glob("*.draining-*") if p.stat().st_mtime < stale]
    except OSError:
        return []
    return sorted(files, key=lambda p: p.name)


def _log_to(home: Path) -> None:
    """Make sure warnings reach the home's log file (a hook process logs nowhere until it needs to)."""
    from ..config import Settings
    from ..logs import setup_logging

    setup_logging(Settings(home=home))


def _not_ours(path: Path) -> str | None:
    """Why a spooled file cannot be one agentmem wrote (None: it can). agentmem writes them 0600 as this user; a
    file owned by someone else, writable by group or others, or not a regular file, was planted."""
    from ..files import foreign_writer

    try:
        st = os.lstat(path)
    except OSError as exc:
        return str(exc)
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    return foreign_writer(st)


def drain_spool(home: Path, observations: Any, limit: int = DRAIN_LIMIT) -> int:
    """Record spooled events through `observations` (an ObservationStore); returns how many moved.

    Each file is claimed by renaming it first, so two processes draining at once never record one event
    twice. A write that fails (the database still busy or full) puts the file back and stops the drain."""
    if not spool_dir(home).is_dir():
        return 0
    moved = 0
    for path in pending(home)[:limit]:
        original = path.with_name(path.name.split(".draining-")[0])
        claimed = path.with_name(f"{original.name}.draining-{os.getpid()}")
        try:
            os.replace(path, claimed)
        except FileNotFoundError:  # another process claimed it
            continue
        problem = _not_ours(claimed)
        if problem:
            refused = original.with_name(original.name + ".refused")
            _log_to(home)
            log.warning("spooled event %s was not written by agentmem (%s); not recorded, kept as %s. If you wrote "
                        "it yourself and trust it: chmod 600 it and rename it back to %s", original.name, problem,
                        refused.name, original.name)
            claimed.replace(refused)
            continue
        try:
            body = json.loads(claimed.read_text(encoding="utf-8"))
            project, at = body.pop("project", None), body.pop("at", None)
            ev = HookEvent(**{k: v for k, v in body.items() if k in HookEvent._FIELDS})
        except (OSError, ValueError, TypeError) as exc:  # unreadable: keep it aside, never loop on it
            _log_to(home)
            log.warning("spooled event %s cannot be read (%s); renamed to .bad", original.name, exc)
            claimed.replace(original.with_suffix(".bad"))
            continue
        try:
            observations.record(ev, project, now=at)
        except BaseException:
            claimed.replace(original)
            raise
        claimed.unlink(missing_ok=True)
        moved += 1
    return moved
