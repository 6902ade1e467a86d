"""What a working tree says now: its branch, its upstream and how far apart they are, the files changed and not
committed. Read with one `git status` at session start, within a time limit, so the briefing's handoff is set
beside the tree as it is rather than as memory last saw it. Read only: no lock is taken (GIT_OPTIONAL_LOCKS=0).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field

GIT_STATUS_TIMEOUT = 0.5  # seconds: a tree too large to read in this time is left out of the briefing


@dataclass
class TreeState:
    """The state of one working tree."""
    branch: str | None = None  # None when HEAD is detached
    upstream: str | None = None
    ahead: int = 0
    behind: int = 0
    changed: list[str] = field(default_factory=list)  # tracked files modified, added, deleted or renamed
    untracked: list[str] = field(default_factory=list)
    commit: str | None = None


def parse_status(output: str) -> TreeState:
    """A TreeState from `git status --porcelain=v2 --branch -z` output (pure)."""
    state = TreeState()
    entries = output.split("\0")
    skip = False
    for entry in entries:
        if skip:  # the original path of a rename
            skip = False
            continue
        if entry.startswith("# branch.head "):
            head = entry.removeprefix("# branch.head ")
            state.branch = None if head == "(detached)" else head
        elif entry.startswith("# branch.oid "):
            oid = entry.removeprefix("# branch.oid ")
            state.commit = None if oid == "(initial)" else oid[:12]
        elif entry.startswith("# branch.upstream "):
            state.upstream = entry.removeprefix("# branch.upstream ")
        elif entry.startswith("# branch.ab "):
            ahead, _, behind = entry.removeprefix("# branch.ab ").partition(" ")
            state.ahead, state.behind = abs(int(ahead or 0)), abs(int(behind or 0))
        elif entry.startswith(("1 ", "u ")):
            state.changed.append(entry.split(" ", 8 if entry[0] == "1" else 10)[-1])
        elif entry.startswith("2 "):
            state.changed.append(entry.split(" ", 9)[-1])
            skip = True
        elif entry.startswith("? "):
            state.untracked.append(entry[2:])
    return state


def read_tree_state(tree: str | None, timeout: float = GIT_STATUS_TIMEOUT) -> TreeState | None:
    """The state of the working tree at `tree`, or None when it is not a git tree, git is missing, or reading it
    takes longer than `timeout` seconds."""
    if not tree or not os.path.isdir(tree):
        return None
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(["git", "-C", tree, "status", "--porcelain=v2", "--branch", "-z",
                               "--untracked-files=normal"], capture_output=True, timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        return parse_status(done.stdout.decode("utf-8", "replace"))
    except ValueError:
        return None
