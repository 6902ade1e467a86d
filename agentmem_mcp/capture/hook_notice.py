"""Telling the user, once per session, that hooks cannot do their work, and keeping a note for `agentmem doctor`.

A hook never shows its failures to the agent, but a failure the user never hears of is worse: when an event cannot
be kept at all (the database and the spool both refuse it: a full disk, a read-only filesystem, files this user
may not write) or agentmem will not use its home (`files.home_refusal`), the hook's answer carries one line for the
user through the client's own channel (Claude Code's `systemMessage`; Cursor has none a hook may use, so there it
is only noted), once per session and cause. Each such failure is also counted where `agentmem doctor` reads it:
outside the home, which may be what is full or read-only, in `<runtime dir>/agentmem-<uid>/<home key>/`
(`$XDG_RUNTIME_DIR`, else the system's temporary folder), a folder of this user's that nobody else may enter.

Standard library only, imported only when a hook fails.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import tempfile
import time
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

STATE_NAME = "hook-failures.json"
KEEP_SESSIONS = 50  # sessions remembered as told (a new session is told again)


def state_dir(home: Path) -> Path | None:
    """This home's private note folder (made 0700 if missing); None when no private one can be had (then every
    failing hook tells the user, and doctor has no note)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime and _private_dir(Path(runtime)) else Path(tempfile.gettempdir())
    uid = os.geteuid() if hasattr(os, "geteuid") else 0
    key = hashlib.sha256(str(home).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    folder = base / f"agentmem-{uid}"
    for path in (folder, folder / key):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
        if not _private_dir(path):  # someone else's, or a link planted in a shared temporary folder
            return None
    return folder / key


def _private_dir(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if os.name == "nt":
        return stat.S_ISDIR(st.st_mode)
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


def cause(home: Path, exc: BaseException) -> str:
    """What stopped the hook from keeping an event under `home`, said so that the user can act on it."""
    code = getattr(exc, "errno", None)
    if code in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)) or "full" in str(exc):
        return (f"agentmem is losing this session's events: the disk holding {home} is full. Free some space; "
                "`agentmem doctor` says how many were lost")
    if code == errno.EROFS or _read_only(home):
        return (f"agentmem cannot record this session: its home {home} is on a read-only filesystem. Remount it "
                "read-write, or set AGENTMEM_HOME to a writable folder; stored memories are still searched")
    if code in (errno.EACCES, errno.EPERM):
        return (f"agentmem cannot record this session: this user may not write in {home}. `chmod -R u+w {home}` "
                "(or `chown` it to you), or set AGENTMEM_HOME to a folder of yours")
    return f"agentmem cannot record this session's events in {home} ({type(exc).__name__}: {str(exc)[:200]})"


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


def note(home: Path, session_id: str, text: str, *, lost: bool) -> str | None:
    """Count a failure (`lost`: an event was dropped) and return the line to show the user, or None when this
    session was told this already."""
    folder = state_dir(home)
    if folder is None:
        return text
    path = folder / STATE_NAME
    state = read_state(path)
    now = time.time()
    state.update(message=text, last_at=now, lost=int(state.get("lost", 0)) + bool(lost))
    state.setdefault("first_at", now)
    told = [entry for entry in state.get("told", []) if isinstance(entry, str)]
    key = hashlib.sha256(f"{session_id}\0{text}".encode("utf-8", "surrogateescape")).hexdigest()[:16]
    first = key not in told
    state["told"] = (told + [key])[-KEEP_SESSIONS:] if first else told
    _write(path, state)
    return text if first else None


def read_state(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def last_failure(home: Path) -> dict[str, Any] | None:
    """What the hooks of `home` last failed to do: message, first_at, last_at, lost (events dropped); None."""
    folder = state_dir(home)
    state = read_state(folder / STATE_NAME) if folder is not None else {}
    return state or None


def _write(path: Path, state: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(state, out)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
