"""The last reason hooks could not work, kept for `agentmem doctor`, and which sessions were told of it.

A hook exits 0 whatever happens, so that the agent goes on; when agentmem cannot work at all (config.toml unreadable,
the home unwritable or full, the database damaged, the install broken) capture and recall would stop unnoticed. The
hook edge tells the user once per session (`capture.hook.tell_user_once`); this module remembers what it told, in
`<home>/logs/hook-problem.json` (0600, beside the log), or, when the home cannot be written, in a private folder of
this user in the system's temporary folder (`agentmem-<uid>/`, 0700), one file per home.

Standard library only: a hook imports it, and only after a failure.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FILE_NAME = "hook-problem.json"
KEEP_SESSIONS = 50  # sessions remembered as told (the newest)


def _fallback(home: Path) -> Path | None:
    """This user's private folder in the temporary folder (made 0700; None if it is not ours and private)."""
    import hashlib
    import tempfile

    if not hasattr(os, "getuid"):
        return None
    folder = Path(tempfile.gettempdir()) / f"agentmem-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(folder)
    except OSError:
        return None
    if not folder.is_dir() or folder.is_symlink() or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return folder / f"hook-problem-{hashlib.sha256(str(home).encode()).hexdigest()[:16]}.json"


def places(home: Path) -> list[Path]:
    """Where the record may be: in the home, then in the temporary folder."""
    fallback = _fallback(home)
    return [home / "logs" / FILE_NAME, *([fallback] if fallback else [])]


def _read(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("problem"), str) else None


def last(home: Path) -> dict[str, Any] | None:
    """The newest record of a hook problem for this home: at, client, event, session, problem (or None)."""
    found = [r for r in (_read(p) for p in places(home)) if r is not None]
    return max(found, key=lambda r: float(r.get("at") or 0), default=None)


def _write(path: Path, record: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(record, out, ensure_ascii=False)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def note(home: Path, problem: str, *, client: str, event: str, session: str, telling: bool,
         now: float | None = None) -> bool:
    """Record `problem` as the last hook failure of `home`; returns whether this session is to be told of it: it is
    not yet (`telling`: the hook's answer can carry a message, so the session counts as told from now on). When no
    record can be written at all the answer is True: a message too many beats none."""
    now = time.time() if now is None else now
    targets = [home / "logs" / FILE_NAME] if (home / "logs").is_dir() else []
    fallback = _fallback(home)
    targets += [fallback] if fallback else []
    for path in targets:
        record = _read(path) or {}
        told = record.get("told") if isinstance(record.get("told"), dict) else {}
        first = told.get(session) != problem
        if telling and first:
            told.pop(session, None)
            told[session] = problem
            told = dict(list(told.items())[-KEEP_SESSIONS:])
        try:
            _write(path, {"at": now, "client": client, "event": event, "session": session, "problem": problem,
                          "told": told})
        except OSError:
            continue
        return first
    return True
