"""What the `agentmem` commands share: the project a command is about, opening the store, JSON output and
progress bars on stderr. Imports nothing heavy at module level (`agentmem hook` imports the CLI)."""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False  # importing typing would cost the hook ~5 ms
if TYPE_CHECKING:
    import argparse
    from typing import Any


def _project(args: argparse.Namespace) -> str | None:
    if getattr(args, "global_", False):
        return None
    if getattr(args, "project", None):
        return args.project
    from .project import project_for

    return project_for(os.getcwd())


def _open(args: argparse.Namespace, *, load_embedder: bool = True):
    from .config import load_settings
    from .models import AgentmemError
    from .preflight import home_problem
    from .store import Store

    settings = load_settings()
    problem = home_problem(settings)
    if problem:
        raise AgentmemError(problem)
    return Store.open(settings, project=_project(args), load_embedder=load_embedder)


def command_line(args: argparse.Namespace, limit: int = 120) -> str:
    """The command as the user typed it (`agentmem pin m_...`), shortened to `limit` characters, for messages."""
    import shlex

    from .confirm_user import USER_FLAG

    line = " ".join(["agentmem", *(shlex.quote(a) for a in getattr(args, "argv", []) if a != USER_FLAG)])
    return line if len(line) <= limit else line[:limit - 1] + "…"


def require_user(args: argparse.Namespace, what: str, **options: Any) -> str:
    """`confirm_user.require_user` for this command (its --i-am-the-user flag, its command line)."""
    from .confirm_user import require_user as gate

    return gate(command_line(args), what, flag=getattr(args, "i_am_the_user", False), **options)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


class _ProgressBars:
    """One progress bar per stage on stderr, each ended by a newline: when it is full, when the next stage
    starts, or at `close` (a stage may stop short of its total)."""

    def __init__(self) -> None:
        self.open_stage: str | None = None
        self.started: dict[str, float] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        import time

        if self.open_stage not in (None, stage):
            sys.stderr.write("\n")
        now = time.monotonic()
        elapsed = now - self.started.setdefault(stage, now)
        rate = f", {done / elapsed:,.0f}/s" if elapsed > 0.5 and done else ""
        left = f", {(total - done) * elapsed / done:,.0f} s left" if rate and total > done else ""
        width = 30
        filled = int(width * done / total) if total else width
        speed = f"{rate}{left}".ljust(30) if rate else ""  # padded: a shorter line must cover a longer one
        sys.stderr.write(f"\r{stage:8} [{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,}{speed}")
        self.open_stage = stage
        if done >= total:
            sys.stderr.write("\n")
            self.open_stage = None
        sys.stderr.flush()

    def close(self) -> None:
        if self.open_stage is not None:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.open_stage = None
