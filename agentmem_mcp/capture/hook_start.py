"""The first hook with no shared process running starts one, so that the next hooks hand their events over.

`capture/hook_client.py` finds no process on `<home>/hooks.sock` (the first hook of the day, or hooks without a
server); the hook then records its event itself (`capture/hook.py`), or has a child it forked record it
(`capture.hook.record_detached`, for an event whose answer it already knows), and, once it has answered, starts
`python -m agentmem_mcp.runtime.shared_process --for-hooks` in the background: a process that takes hooks at once
and loads the embedding model only when a server asks for it (runtime/embed_service.py).
"""

from __future__ import annotations

import os
import sys

SHARED_PROCESS_ENTRY = ("import sys; del sys.path[0]; from agentmem_mcp.runtime.shared_process import main; "
                        "raise SystemExit(main())")  # sys.path[0] is the agent's project: its modules must not load
START_MARK = "hooks.start"
START_EVERY_S = 60.0


def start_shared_process(env: dict[str, str] | None = None) -> bool:
    """Start the user's shared process in the background (`shared_process --for-hooks`: it takes hooks at once and
    loads the model only when a server asks for it), so that the next hooks hand their events over instead of
    starting Python's libraries themselves. Only where hooks may be handed off (`hook_handoff`,
    `hook_starts_process`), in a private home, and at most once a minute per home (`<home>/hooks.start`): a process
    that cannot start is not started again by every hook. Detached: its own session, stdio on /dev/null, none of
    this process's files. Returns whether one was started; raises what the spawn raised (the caller logs it)."""
    from ..config import load_settings

    settings = load_settings(env, on_warning=lambda _: None)
    if (settings.disabled or not settings.hook_handoff or not settings.hook_starts_process
            or not hasattr(os, "posix_spawn")):
        return False
    home = settings.home
    try:
        st = os.stat(home)
    except FileNotFoundError:  # the hook wrote nothing (a refused or read-only home): nothing to serve
        return False
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        return False
    mark = home / START_MARK
    import time

    try:
        if time.time() - os.lstat(mark).st_mtime < START_EVERY_S:
            return False
    except FileNotFoundError:
        pass
    fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.utime(fd)
    finally:
        os.close(fd)
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited_fds()]
    os.posix_spawn(sys.executable, [sys.executable, "-c", SHARED_PROCESS_ENTRY, "--home", str(home),
                                    "--for-hooks"],
                   dict(os.environ if env is None else env), file_actions=actions, setsid=True)
    return True


def _inherited_fds() -> list[int]:
    """This process's open descriptors above stderr that a new program would inherit (where the system lists them)."""
    try:
        found = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return []
    inherited = []
    for fd in found:
        try:
            if fd > 2 and os.get_inheritable(fd):
                inherited.append(fd)
        except OSError:  # the listing's own descriptor, closed since
            pass
    return inherited
