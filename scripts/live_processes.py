"""The live processes of agentmem homes, read from /proc (Linux): the processes started with a home, its `agentmem
serve` processes, the user's shared processes and the home each serves; stopping one by its pid.

It imports nothing of agentmem nor any other package, so that the scripts (through processes.py) and the tests
(`from scripts.live_processes import ...`, and tests/conftest.py's check for shared processes left running) share it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SHARED_PROCESS_MODULE = b"agentmem_mcp.runtime.shared_process"


def _pids() -> Iterator[int]:
    """Every live process but this one (none where there is no /proc)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    me = os.getpid()
    for name in entries:
        if name.isdigit() and int(name) != me:
            yield int(name)


def command_line(pid: int) -> list[bytes] | None:
    """The process's argv, or None once it has gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().split(b"\0")
    except OSError:
        return None


def alive(pid: int) -> bool:
    """Whether the process runs: it exists and is not a zombie waiting for its parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"


def processes_of(home: Path) -> list[int]:
    """Pids of the live processes started with AGENTMEM_HOME=home (hooks, servers, workers)."""
    wanted = f"AGENTMEM_HOME={home}".encode()
    found = []
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                if wanted in handle.read().split(b"\0"):
                    found.append(pid)
        except OSError:
            continue
    return found


def serve_pids(home: Path) -> list[int]:
    """Pids of the running `agentmem serve` processes of `home` (AGENTMEM_HOME=home in their environment)."""
    found = []
    for pid in processes_of(home):
        argv = command_line(pid)
        if argv and b"serve" in argv and not any(a.endswith(b"run-hook.sh") for a in argv) and alive(pid):
            found.append(pid)
    return found


@dataclass(frozen=True)
class SharedProcess:
    """One running shared process (agentmem_mcp/runtime/shared_process.py): its pid, the home it serves (its
    `--home`, made absolute) and whether a hook started it (`--for-hooks`: it stays until idle, not until its last
    session has gone)."""

    pid: int
    home: Path
    for_hooks: bool


def shared_processes() -> list[SharedProcess]:
    """Every running shared process, whoever started it (`python -m agentmem_mcp.runtime.shared_process`, or the
    `-c` entry hooks and relays start it with), whatever home it serves."""
    found = []
    for pid in _pids():
        argv = command_line(pid)
        if not argv or not any(SHARED_PROCESS_MODULE in a for a in argv) or b"--home" not in argv:
            continue
        at = argv.index(b"--home") + 1
        if at < len(argv) and alive(pid):
            home = Path(os.path.abspath(os.fsdecode(argv[at])))
            found.append(SharedProcess(pid, home, b"--for-hooks" in argv))
    return found


def shared_pids(home: Path, wait_s: float = 0.0) -> list[int]:
    """Pids of the running shared processes that serve `home`; with `wait_s`, waits up to that long for one to show
    (a process just spawned shows no command line until its exec is done)."""
    home = Path(os.path.abspath(home))
    deadline = time.monotonic() + wait_s
    while True:
        found = [p.pid for p in shared_processes() if p.home == home]
        if found or time.monotonic() >= deadline:
            return found
        time.sleep(0.02)


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait until the process has exited (a zombie counts as gone); whether it did within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def stop(pid: int, timeout: float = 10.0) -> None:
    """Stop a process by its pid: SIGTERM (a shared process closes its sockets and leaves), SIGKILL when it is still
    there `timeout` seconds later; returns once it has gone."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        if wait_gone(pid, timeout):
            return


def kill9(pid: int) -> None:
    """SIGKILL, then wait (up to 10 s) until the process has gone."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    wait_gone(pid, 10.0)


def stop_shared_processes(under: Path, grace_s: float = 8.0) -> list[SharedProcess]:
    """Stop the shared processes whose home is `under` or below it, and return them. One a server started leaves by
    itself 5 s after its last session: such processes get `grace_s` seconds to do so first, and are neither stopped
    nor returned when they have. Processes of any other home are left alone."""
    under = Path(os.path.realpath(under))

    def ours() -> list[SharedProcess]:
        return [p for p in shared_processes() if Path(os.path.realpath(p.home)).is_relative_to(under)]

    deadline = time.monotonic() + grace_s
    while any(not p.for_hooks for p in ours()) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = ours()
    for process in left:
        stop(process.pid)
    return left
