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
    from ..project import project_for

    return project_for(os.getcwd())


def _open(args: argparse.Namespace, *, load_embedder: bool = True):
    from ..config import load_settings
    from ..models import AgentmemError
    from ..preflight import home_problem
    from ..store import Store

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


# The library's parameter names (the MCP tools' too) that name one of the commands' flags.
CLI_FLAGS = {"session_id": "--session", "older_than_days": "--older-than-days", "budget_tokens": "--budget",
             "min_confidence": "--min-confidence", "ttl_days": "--ttl-days", "max_deletions": "--max-deletions",
             "all_projects": "--all-projects", "limit": "--limit", "importance": "--importance",
             "threshold": "--threshold"}


def in_cli_words(message: str) -> str:
    """An error of the library as the command line says it: a parameter name is the flag that sets it
    ("older_than_days must be a positive number" -> "--older-than-days must be ..."). A name with an underscore
    is replaced wherever it stands; a plain word (limit, importance) only where the message opens with it."""
    import re

    joined = [name for name in CLI_FLAGS if "_" in name]
    message = re.sub(r"(?<![\w-])(" + "|".join(joined) + r")\b", lambda m: CLI_FLAGS[m.group(1)], message)
    first = message.split(" ", 1)[0]
    if first in CLI_FLAGS and message.startswith(f"{first} must "):
        message = CLI_FLAGS[first] + message[len(first):]
    return message


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


class _ProgressBars:
    """One progress bar per stage on stderr, each ended by a newline: when it is full, when the next stage
    starts, or at `close` (a stage may stop short of its total). When stderr is not a terminal (a log file, a
    pipe), plain lines instead of redrawn bars: one when a stage ends, and one every PLAIN_EVERY_S meanwhile."""

    PLAIN_EVERY_S = 10.0

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.plain = not self.stream.isatty()
        self.open_stage: str | None = None
        self.started: dict[str, float] = {}
        self.last: tuple[str, int, int] | None = None
        self.said_at = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.plain:
            self._line(stage, done, total)
        else:
            self._bar(stage, done, total)

    def _line(self, stage: str, done: int, total: int) -> None:
        import time

        now = time.monotonic()
        if self.last is not None and self.last[0] != stage and self.last[1] < self.last[2]:
            self._say(*self.last)  # where the previous stage stopped short
        self.started.setdefault(stage, now)
        self.last = (stage, done, total)
        if done >= total or now - max(self.said_at, self.started[stage]) >= self.PLAIN_EVERY_S:
            self._say(stage, done, total)
            self.last = None if done >= total else self.last

    def _say(self, stage: str, done: int, total: int) -> None:
        import time

        self.said_at = time.monotonic()
        self.stream.write(f"{stage}: {done:,}/{total:,}\n")
        self.stream.flush()

    def _bar(self, stage: str, done: int, total: int) -> None:
        import time

        out = self.stream
        if self.open_stage not in (None, stage):
            out.write("\n")
        now = time.monotonic()
        elapsed = now - self.started.setdefault(stage, now)
        rate = f", {done / elapsed:,.0f}/s" if elapsed > 0.5 and done else ""
        left = f", {(total - done) * elapsed / done:,.0f} s left" if rate and total > done else ""
        width = 30
        filled = int(width * done / total) if total else width
        speed = f"{rate}{left}".ljust(30) if rate else ""  # padded: a shorter line must cover a longer one
        out.write(f"\r{stage:8} [{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,}{speed}")
        self.open_stage = stage
        if done >= total:
            out.write("\n")
            self.open_stage = None
        out.flush()

    def close(self) -> None:
        if self.plain and self.last is not None:
            self._say(*self.last)
            self.last = None
        if self.open_stage is not None:
            self.stream.write("\n")
            self.stream.flush()
            self.open_stage = None
