"""The agent is not the user: the one gate of the commands only the user may run.

A coding agent runs commands in the user's own shell (Claude Code's Bash tool, Cursor's agent terminal, Codex,
Gemini CLI, ...), with the user's files and the user's `agentmem`. The commands that change what every later
session trusts (pin, unpin, quarantine release, a global / pinned / P0 save, forgetting the user's memories,
import, purge, team grant) call `require_user` first. It lets the command run when:

- the user passed `--i-am-the-user` (documented for people in the README, never in an MCP answer), or
- no agent's marker is in the environment and stdin is a terminal (the user typing at a prompt), or
- the user confirms on a terminal: the question is written to, and the answer read from, stdin when it is a
  terminal, else the controlling terminal (/dev/tty); never from a stdin that a program could pipe.

Otherwise it raises `NotTheUser`, one line saying that nothing changed and what the user does instead. In an
agent's own shell whose stdin is not a terminal nothing is asked: a question there would land in the agent's
window, not in front of the user.

The markers: Claude Code sets CLAUDECODE=1 (and CLAUDE_CODE_ENTRYPOINT) for its tools; Cursor sets CURSOR_AGENT=1
in its agent's terminals and its CLI agent; Codex CLI sets CODEX_SANDBOX, CODEX_THREAD_ID or CODEX_CI; Gemini CLI
GEMINI_CLI=1; OpenCode OPENCODE=1; VS Code's Copilot agent COPILOT_AGENT=1; AI_AGENT is a convention any agent may
follow. CURSOR_TRACE_ID is set in every process Cursor starts, the user's own terminals included: it asks for a
confirmation but does not make a plain save the agent's (see `agent_shell`).
"""

from __future__ import annotations

import os
import select
from collections.abc import Mapping

from ..models import AgentmemError

USER_FLAG = "--i-am-the-user"
CONFIRM_TIMEOUT_S = 300.0  # an unanswered question refuses, rather than hang an agent's command for ever

AGENT_SHELLS: tuple[tuple[str, str], ...] = (
    ("CLAUDECODE", "Claude Code"), ("CLAUDE_CODE_ENTRYPOINT", "Claude Code"), ("CURSOR_AGENT", "Cursor's agent"),
    ("CODEX_SANDBOX", "Codex"), ("CODEX_THREAD_ID", "Codex"), ("CODEX_CI", "Codex"), ("GEMINI_CLI", "Gemini CLI"),
    ("OPENCODE", "OpenCode"), ("COPILOT_AGENT", "Copilot's agent"), ("AI_AGENT", "a coding agent"))
AGENT_APPS: tuple[tuple[str, str], ...] = (("CURSOR_TRACE_ID", "Cursor"),)


class NotTheUser(AgentmemError):
    """A command only the user may run, run where the user did not confirm it."""


def _marked(environ: Mapping[str, str], markers: tuple[tuple[str, str], ...]) -> tuple[str, str] | None:
    for name, client in markers:
        if environ.get(name, "").strip().lower() not in ("", "0", "false", "no"):
            return name, client
    return None


def agent_shell(environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(variable, client) when this process runs in a coding agent's own shell, else None."""
    return _marked(os.environ if environ is None else environ, AGENT_SHELLS)


def agent_marker(environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(variable, client) of any agent's marker: its own shell, or an app whose processes all carry one."""
    environ = os.environ if environ is None else environ
    return _marked(environ, AGENT_SHELLS) or _marked(environ, AGENT_APPS)


def require_user(command: str, what: str, *, flag: bool, ask: bool = False, word: str = "yes",
                 environ: Mapping[str, str] | None = None) -> str:
    """Let `command` (as the user would type it: "agentmem pin m_...") run only if the user wants it; `what` says
    what it does, for the question. flag: `--i-am-the-user` was given. ask: ask even the user at a terminal (purge
    without --yes); the answer must be `word`. Returns how the user was recognised: flag, terminal or asked.
    Raises NotTheUser (nothing was done) otherwise."""
    if flag:
        return "flag"
    shell = agent_shell(environ)
    if agent_marker(environ) is None and _isatty(0) and not ask:
        return "terminal"
    if may_ask(environ):
        answer = ask_on_terminal(f"agentmem: {what}. Type '{word}' to confirm: ")
        if answer is not None:
            if answer.strip().lower() == word:
                return "asked"
            raise NotTheUser(f"`{command}` was not confirmed: nothing was changed")
    where = (f"this is {shell[1]}'s shell ({shell[0]} is set)" if shell is not None
             else "there is no terminal to confirm it in (stdin is not a terminal)")
    raise NotTheUser(f"refused: `{command}` is for the user to run, and {where}: nothing was changed. The user "
                     "confirms it by running the same command in their own terminal")


def may_ask(environ: Mapping[str, str] | None = None) -> bool:
    """Whether a question may be put on a terminal: not in an agent's own shell whose stdin is not a terminal (the
    question would land in the agent's window, whose keys are the agent's client's)."""
    return _isatty(0) or agent_shell(environ) is None


def ask_on_terminal(question: str, timeout: float = CONFIRM_TIMEOUT_S) -> str | None:
    """The user's answer to `question`, read from the terminal: stdin if it is one, else /dev/tty. None when there
    is no terminal to ask on. An answer not given within `timeout` seconds, or end of input, is ''."""
    try:
        path = os.ttyname(0) if _isatty(0) else "/dev/tty"
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None
    try:
        os.write(fd, question.encode("utf-8"))
        answer = b""
        while not answer.endswith(b"\n"):
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                os.write(fd, b"\n")
                return ""
            chunk = os.read(fd, 256)
            if not chunk:
                break
            answer += chunk
        return answer.decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False
