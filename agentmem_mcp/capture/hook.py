"""`agentmem hook EVENT`: read the client's JSON on stdin, store an observation, print context.

Runs once per agent event, so it must be quick and must never get in the agent's way: it imports no
MCP SDK, no embedding model and no LLM client, and exits 0 whatever happens (errors go to the log
file under the home directory).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

TYPE_CHECKING = False  # importing typing costs each hook process ~5 ms
if TYPE_CHECKING:
    from typing import IO, Any

MAX_STDIN_BYTES = 64 * 1024 * 1024
HOOK_BUSY_TIMEOUT_MS = 3000  # a hook waits this long for the write lock, then spools (the client allows 10 s)
OVERSIZE_KEEP = 4 * 1024 * 1024  # what an input over MAX_STDIN_BYTES keeps of its start and of its end
CONTEXT_EVENTS = ("session_start", "prompt")


def _read_stdin(stream: IO[bytes]) -> bytes:
    """The hook's input; past MAX_STDIN_BYTES, its first and last OVERSIZE_KEEP bytes spliced (see _splice)."""
    data = stream.read(MAX_STDIN_BYTES + 1)
    if len(data) <= MAX_STDIN_BYTES:
        return data
    head, tail, total = data[:OVERSIZE_KEEP], bytearray(data[-OVERSIZE_KEEP:]), len(data)
    del data
    while chunk := stream.read(1 << 20):  # drain the rest so the client never blocks on a full pipe
        total += len(chunk)
        tail += chunk
        del tail[:-OVERSIZE_KEEP]
    return _splice(head, bytes(tail), total)


_NOT_A_CUT_EDGE = frozenset(b'0123456789abcdefABCDEFu\\"')


def _splice(head: bytes, tail: bytes, total: int) -> bytes:
    """Join the start and the end of an oversized input around a note of what was cut. A huge input is one
    huge string (a tool's output), so both cuts fall inside it: each edge moves off backslashes, quotes and
    hex digits, so that no escape sequence is split. If the cuts are not in one string, the result is not
    JSON and the event is rejected as before."""
    end, start = len(head), 0
    while end > len(head) - 16 and head[end - 1] in _NOT_A_CUT_EDGE:
        end -= 1
    while start < 16 and tail[start] in _NOT_A_CUT_EDGE:
        start += 1
    note = f" … [{total - end - (len(tail) - start):,} bytes cut by agentmem: hook input over "
    note += f"{MAX_STDIN_BYTES >> 20} MB] … "
    return head[:end] + note.encode() + tail[start:]


def _output(client: str, ev_event: str | None, raw_event: str, context: str) -> dict[str, Any] | None:
    """The JSON each client reads back from this hook (None: print nothing). Claude Code, Codex and Gemini CLI read
    the same shape: `hookSpecificOutput.additionalContext` on SessionStart and on the prompt's event."""
    if client == "cursor":
        if ev_event == "session_start":
            return {"additional_context": context} if context else {}
        if ev_event == "prompt":
            return {"continue": True}
        return {}
    if context and ev_event in CONTEXT_EVENTS:
        return {"hookSpecificOutput": {"hookEventName": raw_event, "additionalContext": context}}
    return None


class Connections:
    """Open connections kept for the next events, for a process that takes many hooks (capture/hook_service.py):
    opening one costs a hook ~0.5 ms, and closing the last connection to a WAL database checkpoints it (~8 ms).
    A kept connection is used again only while the database's files are the ones it opened (`FileWatch`);
    one left inside a transaction, or given back after a failure, is closed."""

    KEEP = 4

    def __init__(self) -> None:
        import threading

        self._idle: list[tuple[tuple[Path, int], Any]] = []
        self._keys: dict[int, tuple[Path, int]] = {}
        self._lock = threading.Lock()

    def take(self, database: Path, busy_timeout_ms: int) -> Any:
        """An open connection to `database` (one kept if it is still good, else a new one)."""
        from ..db.connection import FileWatch, connect, watch_files

        key = (database, busy_timeout_ms)
        with self._lock:
            for position in range(len(self._idle) - 1, -1, -1):
                if self._idle[position][0] != key:
                    continue
                _, conn = self._idle.pop(position)
                if conn.watch.problem is None and FileWatch(database).seen == conn.watch.seen:
                    return conn
                self._keys.pop(id(conn), None)
                conn.close()
                break
        conn = connect(database, busy_timeout_ms=busy_timeout_ms, load_vec=False)
        watch_files(conn, FileWatch(database))
        with self._lock:
            self._keys[id(conn)] = key
        return conn

    def give(self, conn: Any, *, healthy: bool = True) -> None:
        """Back from an event: kept for the next one, or closed (`healthy=False`: the event failed)."""
        with self._lock:
            key = self._keys.get(id(conn))
            if healthy and key is not None and not conn.in_transaction and len(self._idle) < self.KEEP:
                self._idle.append((key, conn))
                return
            self._keys.pop(id(conn), None)
        conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle, self._keys = self._idle, [], {}
        for _, conn in idle:
            conn.close()


def handle(client: str, event_name: str, raw: bytes, env: dict[str, str] | None = None, *,
           close: bool = True, connections: Connections | None = None,
           reaches_user: bool = True) -> dict[str, Any] | None:
    """Process one hook call; returns what to print. Raises on errors (the caller logs them).

    close=False leaves the connection open for a process that is about to exit: closing the last
    connection to a WAL database checkpoints it, which costs more than the rest of the hook.
    connections: where to take the connection from and give it back to (a process taking many hooks).
    reaches_user=False: nobody reads the answer (a first hook's child, capture/hook_start.py), so a line for the
    user in it does not count as told, and the session's next hook tells it.
    """
    from ..config import load_settings
    from .events import decode_payload, parse_hook_event

    settings = load_settings(env, on_warning=lambda message: _log_failure(client, event_name, Warning(message), env))
    if settings.disabled:  # `disabled = true` in config.toml: the same kill switch as AGENTMEM_DISABLE
        return _idle_answer(client, event_name)
    ev = parse_hook_event(client, event_name, decode_payload(raw))
    from ..db.connection import DatabaseError, connect, read_only_reason
    from ..db.migrations import migrate
    from ..project import session_project, worktree_root
    from .observations import ObservationStore, scrub

    if ev.extra.get("phase") == "before":  # Cursor's before*Execution, PreToolUse, BeforeTool: the after* records it
        return _output(ev.client, ev.event, ev.raw_event, "")
    from ..files import home_refusal

    refused = home_refusal(settings)
    if refused:  # another user's home, a planted link: nothing is written there, the user is told once
        from .hook_notice import note

        told = note(settings.home, _told_key(ev.session_id, reaches_user), f"agentmem is not recording: {refused}",
                    lost=False)
        return _told(_output(ev.client, ev.event, ev.raw_event, ""), ev.client, told)
    if ev.client == "codex" and ev.event == "tool_use" and "exit_code" not in ev.extra:
        from .events_codex_gemini import exit_code_from_log  # Codex sends none; its session log has it

        code = exit_code_from_log(ev.extra.get("transcript_path"), ev.extra.get("tool_use_id"))
        if code is not None:
            ev.extra["exit_code"] = code
    project = session_project(ev.cwd)
    scrubbed = scrub(ev, settings.max_output_chars)
    conn = told = None
    busy_timeout_ms = min(settings.busy_timeout_ms, HOOK_BUSY_TIMEOUT_MS)
    read_only = read_only_reason(settings.database)  # nothing can be kept; the context can still be read
    pool = connections if read_only is None else None
    try:
        if pool is None:
            conn = connect(settings.database, busy_timeout_ms=busy_timeout_ms, load_vec=False, read_only=read_only)
        else:
            conn = pool.take(settings.database, busy_timeout_ms)
        migrate(conn)
        observations = ObservationStore(conn)
        if read_only is None:
            observations.record(scrubbed, project)
        else:
            from .hook_notice import note

            told = note(settings.home, _told_key(ev.session_id, reaches_user),
                        f"agentmem cannot record this session: {read_only}", lost=True)
    except Exception as exc:
        from ..models import AgentmemError  # not at the top: models imports dataclasses (~8 ms)
        from .spool import spool_event

        if conn is not None and pool is not None:
            pool.give(conn, healthy=False)
        elif conn is not None and (close or read_only):
            conn.close()
        if not isinstance(exc, (AgentmemError, DatabaseError, OSError)):
            raise
        # locked past our wait, a full disk, a damaged, missing or unreadable database: keep the event for later
        try:
            where = spool_event(settings.home, scrubbed, project)
        except OSError as spool_error:  # nowhere to keep it (a full disk, a read-only one): the user hears of it
            from .hook_notice import cause, note

            told = note(settings.home, _told_key(ev.session_id, reaches_user), cause(settings.home, spool_error),
                        lost=True)
            _log_failure(client, event_name, RuntimeError(f"{exc}; the event could not be spooled either "
                                                          f"({spool_error}): it is lost"))
            return _told(_output(ev.client, ev.event, ev.raw_event, ""), ev.client, told)
        _log_failure(client, event_name, RuntimeError(f"{exc}; the event waits in {where}"))
        answer = _output(ev.client, ev.event, ev.raw_event, "")
        problem = hook_problem(exc, env, spooled=True)
        if not problem:
            return answer
        return tell_user_once(ev.client, ev.raw_event, ev.session_id, problem, answer, env, reaches_user=reaches_user)
    healthy = False
    try:
        if read_only is None and (settings.home / "spool").is_dir():  # events an earlier hook could not write
            from .spool import drain_spool

            drain_spool(settings.home, observations)
        context = ""
        if ev.event == "session_start":
            from ..recall.briefing import session_context
            from ..recall.git_state import read_tree_state

            resumed = ev.extra.get("source") in ("compact", "resume")
            tree = worktree_root(ev.cwd)
            context, _ = session_context(conn, project, settings.context_budget_tokens,
                                         exclude_session=ev.session_id,
                                         current_session=ev.session_id if resumed else None,
                                         tree=tree, tree_state=read_tree_state(tree))
        elif ev.event == "prompt" and ev.prompt and ev.client != "cursor":  # Cursor's prompt hook cannot add any
            context = _prompt_context(conn, settings, ev.prompt, project, worktree_root(ev.cwd))
        healthy = True
    finally:
        if pool is not None:
            pool.give(conn, healthy=healthy)
        elif close or read_only:
            conn.close()
    return _told(_output(ev.client, ev.event, ev.raw_event, context), ev.client, told)


def _told_key(session_id: str, reaches_user: bool) -> str:
    """The session as hook_notice.note counts it told: an answer nobody reads tells nobody."""
    return session_id if reaches_user else f"{session_id} (not told)"


def _told(answer: dict[str, Any] | None, client: str, line: str | None) -> dict[str, Any] | None:
    """The answer with a line for the user (Claude Code's `systemMessage`; Cursor's hooks have no such field)."""
    if line is None or client == "cursor":
        return answer
    return {**(answer or {}), "systemMessage": line}


def _prompt_context(conn: Any, settings: Any, prompt: str, project: str | None, tree: str | None) -> str:
    if not settings.fulltext_dir.exists():
        return ""
    from ..index.fulltext import FulltextIndex
    from ..recall.context import prompt_context
    from .redact import redact

    if conn.read_only is None:
        fulltext = FulltextIndex(settings.fulltext_dir, lock_timeout=1.0)
    else:  # tantivy locks a file in the index folder even to read it
        fulltext = FulltextIndex.private_copy(settings.fulltext_dir)
    try:
        text, ids = prompt_context(conn, fulltext, redact(prompt), project,
                                   budget_tokens=settings.prompt_budget_tokens,
                                   min_score=settings.prompt_min_score, tree=tree)
    finally:
        fulltext.close()
    if ids and conn.read_only is None:  # a read-only home: the hits are not counted as uses
        import time

        from ..db.connection import write_transaction
        from ..lifecycle.access import note_access

        with write_transaction(conn):
            note_access(conn, ids, time.time())
    return text


def respond(client: str, event_name: str, raw: bytes, env: dict[str, str] | None = None, *,
            close: bool = True, connections: Connections | None = None, reaches_user: bool = True) -> str | None:
    """What the hook prints for this event (None: nothing), the event recorded; never raises (failures are logged).

    The same for a hook process and for the shared process that takes hooks over its socket (capture/hook_client.py),
    which keeps its connections in `connections`.
    """
    environ = os.environ if env is None else env
    if environ.get("AGENTMEM_DISABLE", "").strip().lower() in ("1", "true", "yes", "on"):
        return _answer_text(_idle_answer(client, event_name))
    try:
        return _answer_text(handle(client, event_name, raw, env, close=close, connections=connections,
                                   reaches_user=reaches_user))
    except BaseException as exc:  # the agent must never see our failure; the user hears of one that lasts
        _log_failure(client, event_name, exc, env)
        answer = _idle_answer(client, event_name)
        problem = hook_problem(exc, env)
        if problem:
            answer = tell_user_once(client, event_name, _session_of(client, event_name, raw), problem, answer, env,
                                    reaches_user=reaches_user)
        return _answer_text(answer)


def hook_problem(exc: BaseException, env: dict[str, str] | None = None, *, spooled: bool = False) -> str | None:
    """What a user must be told of a hook's failure, in one line that says what to do; None for a failure that
    passes (a lock held past the hook's wait: the event waits in the spool) or is no fault of agentmem's setup (an
    input that is not a hook event). spooled: the event was kept in the spool, to be recorded once this is fixed."""
    import errno

    from ..db.connection import OperationalError, is_damage
    from ..files import ConfigError
    from ..models import StoreBusy, StoreDamaged, StoreFull

    kept = " (this session's events wait in the spool until then)" if spooled else ""
    text = str(exc)
    if isinstance(exc, ConfigError):
        return f"agentmem is not recording: {exc}"
    if isinstance(exc, StoreBusy) or "database is locked" in text:
        return None
    if isinstance(exc, StoreFull) or getattr(exc, "errno", None) == errno.ENOSPC or "disk is full" in text:
        return f"agentmem is not recording: the disk holding its home is full. Free some space{kept}"
    if isinstance(exc, StoreDamaged) or is_damage(exc):
        return f"agentmem is not recording: its database cannot be used ({exc}). Run `agentmem doctor`{kept}"
    if isinstance(exc, OSError) or (isinstance(exc, OperationalError) and ("readonly" in text
                                                                          or "unable to open" in text)):
        return f"agentmem is not recording: {_home_advice(exc, env)}{kept}"
    if isinstance(exc, ImportError):
        return f"agentmem is not recording: its installation is broken ({exc}). Install agentmem again"
    return None


def _home_advice(exc: BaseException, env: dict[str, str] | None) -> str:
    """One line on the home's files (preflight.explain), or the error itself."""
    try:
        from ..config import load_settings
        from ..preflight import explain

        return explain(exc, load_settings(env, on_warning=lambda _: None)) or str(exc)
    except Exception:
        return f"its home cannot be written ({exc})"


def tell_user_once(client: str, raw_event: str, session_id: str | None, problem: str,
                   answer: dict[str, Any] | None, env: dict[str, str] | None = None, *,
                   reaches_user: bool = True) -> dict[str, Any] | None:
    """`answer` (what this hook prints) with `problem` told to the user, if this session was not told it yet; the
    problem is noted for `agentmem doctor` either way (capture/hook_notice.py).

    For failures that stop agentmem from working (`hook_problem`). The user hears it in the client's own channel:
    Claude Code, Codex and Gemini CLI show a hook's `systemMessage`. Cursor shows a hook's `user_message` only at
    preCompact (at beforeSubmitPrompt only when the prompt is blocked, which agentmem never does), so at sessionStart,
    a conversation's first event, the notice goes into its context (`additional_context`) for the agent to pass on."""
    from ..config import default_home
    from .hook_notice import note

    if not reaches_user:
        channel = None
    elif client == "cursor":
        channel = {"sessionStart": "additional_context", "preCompact": "user_message"}.get(raw_event)
    else:
        channel = None if raw_event == "SessionEnd" else "systemMessage"
    session = session_id or "?"
    try:  # an event that cannot carry the line is noted without counting as told
        home = (os.environ if env is None else env).get("AGENTMEM_HOME")
        line = note(Path(os.path.expanduser(home)).absolute() if home else default_home(),
                    session if channel else f"{session} (not told)", problem, lost=False)
    except Exception:
        line = problem
    if line is None or channel is None:
        return answer
    told = dict(answer or {})
    if channel == "additional_context":
        note_text = f"A note from agentmem, the memory tool, for the user: {line}"
        told[channel] = "\n\n".join(p for p in (told.get(channel), note_text) if p)
    else:
        told[channel] = line
    return told


def _session_of(client: str, event_name: str, raw: bytes) -> str | None:
    """The session id of a hook's input, or None when it cannot be read."""
    try:
        from .events import decode_payload, parse_hook_event

        return parse_hook_event(client, event_name, decode_payload(raw)).session_id
    except Exception:
        return None


def _idle_answer(client: str, event_name: str) -> dict[str, Any] | None:
    """What a client reads when agentmem does nothing: Cursor expects JSON, and lets a prompt through."""
    if client != "cursor":
        return None
    return {"continue": True} if event_name == "beforeSubmitPrompt" else {}


def _answer_text(answer: dict[str, Any] | None) -> str | None:
    return None if answer is None else json.dumps(answer, ensure_ascii=False)


def run_hook(client: str, event_name: str, stdin: IO[bytes] | None = None, stdout: IO[str] | None = None) -> int:
    """Handle a hook call end to end in a process that exits right after; always returns 0."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout
    try:
        text = respond(client, event_name, _read_stdin(stdin), close=False)
    except BaseException as exc:  # reading stdin failed
        _log_failure(client, event_name, exc)
        text = _answer_text(_idle_answer(client, event_name))
    if text is not None:
        try:
            stdout.write(text)
            stdout.flush()
        except Exception as exc:
            _log_failure(client, event_name, exc)
    return 0


def record_detached(client: str, event_name: str, raw: bytes, turn: int) -> None:
    """In the child a first hook forked once it had answered (capture/hook_client.py `detach`): record the event as
    the hook would have (redacted before anything is written; spooled when the database is locked past the hook's
    wait), let the next hook have its turn (`turn`, the order lock's descriptor), then start the shared process.
    A failure the user must hear of is told by the session's next hook: this answer reaches nobody."""
    try:
        respond(client, event_name, raw, close=False, reaches_user=False)
    finally:
        os.close(turn)
    _start_shared_process(client, event_name)


def _start_shared_process(client: str, event_name: str) -> None:
    try:
        from .hook_start import start_shared_process

        start_shared_process()
    except Exception as exc:  # the next hooks run alone, as this one did
        _log_failure(client, event_name, RuntimeError(f"the shared process could not be started: {exc}"))


def _log_failure(client: str, event_name: str, exc: BaseException, env: dict[str, str] | None = None) -> None:
    try:
        import logging

        from ..config import ConfigError, Settings, default_home, load_settings, user_path
        from ..logs import setup_logging

        try:
            settings = load_settings(env, on_warning=lambda _: None)
        except ConfigError:  # the failure may be the config itself: log it in the home's log all the same
            home = (os.environ if env is None else env).get("AGENTMEM_HOME")
            settings = Settings(home=user_path(home) if home else default_home())
        setup_logging(settings)
        if isinstance(exc, Warning):  # e.g. an unknown key in config.toml: the hook went on
            logging.getLogger("agentmem.hook").warning("hook %s %s: %s", client, event_name, str(exc)[:500])
        else:
            logging.getLogger("agentmem.hook").warning("hook %s %s failed: %s: %s", client, event_name,
                                                       type(exc).__name__, str(exc)[:500])
    except BaseException:
        pass


HOOK_USAGE = """usage: agentmem hook [--client claude-code|cursor|codex|gemini] EVENT

Handle one client hook event: read the client's JSON on stdin, store an observation, print the context the
client reads back. The client calls it (`agentmem install` writes the hooks); you do not run it by hand.
EVENT is the client's event name (SessionStart, UserPromptSubmit, PostToolUse, Stop, SessionEnd, ...; Gemini CLI:
BeforeAgent, AfterTool, AfterAgent, ...).
"""


def main(client: str, event: str | None, wants_help: bool = False, stdin: IO[bytes] | None = None, *,
         start_process: bool = False) -> int:
    """`agentmem hook [--client C] EVENT` in this process, its arguments as capture/hook_client.py
    read them (it first tries to hand the event to the running shared process, then comes here).
    start_process: no shared process was running; once the event is answered, start one for the next hooks."""
    if wants_help:
        sys.stdout.write(HOOK_USAGE)
        return 0
    if event is None:
        _log_failure(client, "?", ValueError("agentmem hook needs an EVENT argument"))
        return 0
    run_hook(client, event, stdin)
    sys.stdout.flush()
    if start_process:
        _start_shared_process(client, event)
    # Every write is committed: skip interpreter teardown, and with it the WAL checkpoint that closing
    # the last database connection would run (the server or a later writer checkpoints instead).
    sys.stdout.flush()
    os._exit(0)
