"""Whether the team server answered lately, kept in a small file of the home (`team-unreachable`, 0600), so that
every process (a hook's briefing too, which never talks to the server) can say "team memory unreachable" and
none waits for a dead server again within `RETRY_AFTER_S`."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

RETRY_AFTER_S = 30.0
MARKER = "team-unreachable"


def mark_unreachable(home: Path, reason: str) -> None:
    """Record the failure (the reason must already have its secrets masked)."""
    path = home / MARKER
    tmp = path.with_name(f"{MARKER}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"at": time.time(), "reason": reason[:300]}, out)
        os.replace(tmp, path)
    except OSError:
        pass


def mark_reachable(home: Path) -> None:
    try:
        os.unlink(home / MARKER)
    except OSError:
        pass


def unreachable(home: Path) -> tuple[float, str] | None:
    """(when, why) of the last failure since the last success, or None."""
    try:
        data = json.loads((home / MARKER).read_text(encoding="utf-8"))
        return float(data["at"]), str(data["reason"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def recently_unreachable(home: Path) -> str | None:
    """The last failure's reason when it is under RETRY_AFTER_S old (callers then do not try again)."""
    found = unreachable(home)
    if found and time.time() - found[0] < RETRY_AFTER_S:
        return found[1]
    return None
