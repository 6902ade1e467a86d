"""Consolidation by rules, across a project's sessions: semantic and procedural memories from observations.

A command run in 3+ sessions becomes a workflow (procedural); an error seen more than once, fixed by
editing files before the same command passed, becomes a bug; the files edited in several sessions and
the tools and packages in use become facts. (With an LLM, `summarize` adds merged facts and reflections.)

Every derived memory has a stable key, links to its sources (one observation per session, plus the
session summaries, linked `derived_from`) and starts at confidence 0.5. Re-running updates it: the
same text with other sources updates its sources in place; a changed text becomes a new version of
the same memory; nothing new writes nothing. A derived memory only ever replaces the memory with the
same key, never a user's memory that happens to be similar.

Also here, shared by the worker and the summariser: how an observation row reads once compressed
(`parse_observation`, `normalize_command`) and saving memories inside the caller's transaction
(`prepare_saves`, `write_saves`), so that results and "done" marks commit together.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..capture.transcript import mentioned_paths
from ..db import audit, links, memories, memory_reads, meta, observations, sessions
from ..models import InvalidInput, SaveResult
from ..project import worktree_root
from ..trust.policy import withhold_instructions
from . import MCP_SERVERS, remember
from .commands import (  # noqa: F401  (normalize_command and is_test_command are part of this module's API)
    INTERPRETERS,
    NOT_KNOWLEDGE,
    PREPARATORY,
    UTILITIES,
    command_label,
    command_segments,
    invocation_error,
    is_help,
    is_narrowed,
    is_test_command,
    kept_running,
    masked,
    names_file,
    normalize_command,
    working_form,
)

if TYPE_CHECKING:
    from ..db.connection import Connection
    from ..parts import Parts

WORKFLOW_MIN_RUNS = 2  # an uncategorised command is knowledge once it worked this often
BUG_MIN_FAILURES = 2
HOT_FILE_MIN_SESSIONS = 2
HOT_FILES = 8
MAX_OBS_SOURCES = 30
MAX_SUMMARY_SOURCES = 20
COMMAND_TOOLS = frozenset({"bash", "shell", "run_terminal_cmd", "terminal", "run_shell_command"})
COMMAND_IMPORTANCE = {"Run the tests": 0.8, "Build": 0.75, "Check the code": 0.7, "Start the app": 0.7,
                      "Format the code": 0.6, "Install dependencies": 0.6}
_REFUSED = re.compile(r"doesn't want to proceed|user (?:rejected|declined|denied)|tool use was rejected", re.I)
_FACT_PREFIXES = ("command:", "purpose:", "exit code:", "status:", "result:")
_EXCEPTION = re.compile(r"^[\w.]*(?:Error|Exception|Exit|Interrupt)\b")


# -- observations as the miners see them -------------------------------------------------------------

@dataclass
class ObsRecord:
    """A compressed observation, parsed for the miners and the session summariser."""
    id: int
    session_id: str
    project: str | None
    kind: str
    tool: str | None
    title: str
    facts: list[str]
    files: list[str]
    importance: float
    created_at: float
    count: int = 1
    command: str | None = None
    key: str | None = None
    failed: bool = False
    reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    output: str = ""
    refused: bool = False  # the user declined the tool call: not a failure of the command
    outcome: str = ""  # a command's: passed | failed | unknown (its status hidden by a filter) | running | invalid

    @property
    def is_edit(self) -> bool:
        return self.kind in ("file_edit", "file_write") and bool(self.files)


def parse_observation(row: Any) -> ObsRecord:
    """An ObsRecord from an `observations` row (status compressed)."""
    facts = _json(row["facts"], [])
    record = ObsRecord(
        id=row["id"], session_id=row["session_id"], project=row["project"], kind=row["kind"] or "other",
        tool=row["tool"], title=row["title"] or "", facts=[f for f in facts if isinstance(f, str)],
        files=[f for f in _json(row["files"], []) if isinstance(f, str)], importance=row["importance"] or 0.0,
        created_at=row["created_at"], count=row["count"] or 1, output=row["output"] or "")
    if (row["tool"] or "").lower() in COMMAND_TOOLS:
        tool_input = _json(row["input"], {})
        command = tool_input.get("command") if isinstance(tool_input, dict) else None
        record.command = command if isinstance(command, str) else None
        record.key = normalize_command(record.command)
        record.failed = record.kind == "error" or "status: failed" in record.facts
        record.refused = record.failed and _REFUSED.search(record.output or " ".join(record.facts)) is not None
        record.failed = record.failed and not record.refused
        record.outcome = _outcome(record)
        if record.outcome in ("running", "invalid", "interrupted"):
            record.failed = record.outcome == "invalid"
        if record.failed:
            record.reason = _failure_reason(record)
    elif record.kind == "error":
        record.failed = True
        record.reason = _failure_reason(record)
    if row["tool"] and "memory_save" in row["tool"]:
        tool_input = _json(row["input"], {})
        record.extra = tool_input if isinstance(tool_input, dict) else {}
    return record


_ERROR_COUNT = re.compile(r"(?i:\b[1-9]\d* (?:errors?|failed|failures?)\b|\btotal errors: [1-9])|\bFAIL(?:ED)?\b")
_SUCCESS = re.compile(r"\b0 (?:errors?|failures?|failed|issues?)\b|\b\d+ passed\b|\bok\b|\bPASS\b|\bsuccess",
                      re.IGNORECASE)
INTERRUPTED = "[Request interrupted"
_PORT_TAKEN = re.compile(r"address already in use|port \d+ (?:is )?(?:already )?in use|EADDRINUSE|is port \d+ in use",
                         re.IGNORECASE)


def _outcome(record: ObsRecord) -> str:
    """What a shell command's run says of it: passed, failed (whatever its exit status, when its output reports
    errors), unknown (its status is a filter's and its output shows no result), running (a server still up when
    the client stopped waiting), invalid (the command itself was wrong: not found, unknown flag, bad usage), or
    interrupted by the user."""
    output = record.output or ""
    if output.lstrip().startswith(INTERRUPTED) or "[Request interrupted" in output[:200]:
        return "interrupted"
    if record.refused:
        return "refused"
    label = command_label(record.key or "")
    if label == "Start the app" and kept_running(output):
        return "running"
    if label == "Start the app" and _PORT_TAKEN.search(output):
        return "invalid"  # the port was taken by an earlier run: the machine's state, not the project's
    if record.failed:
        if invocation_error(output) and not _ERROR_COUNT.search(output[:1500]):
            return "invalid"
        steps = [key for key, _ in command_segments(record.command)]
        if len(steps) > 1 and steps[-1] != record.key:
            return "unknown"  # a chain failed, and which of its steps failed the output alone does not say
        return "failed"
    result = next((f for f in record.facts if f.startswith("result: ")), "")
    if _ERROR_COUNT.search(result) or _ERROR_COUNT.search(output[-1500:]) and not _SUCCESS.search(result):
        return "failed"
    if masked(record.command) and not (result and _SUCCESS.search(result)):
        return "unknown"
    return "passed"


def _json(text: Any, default: Any) -> Any:
    try:
        return json.loads(text) if text else default
    except (TypeError, ValueError):
        return default


def _failure_reason(record: ObsRecord) -> str:
    """The error that made the command fail: a traceback's exception (`ModuleNotFoundError: No module named
    'torch'`) before the warnings printed above it, else the first error line, else what the title says."""
    lines = [f for f in record.facts if not f.lower().startswith(_FACT_PREFIXES)
             and not re.match(r"(error:\s*)?exit code:?\s*-?\d+$", f.lower())]
    after_traceback = [line for before, line in zip(lines, lines[1:]) if before.startswith("Traceback")
                       and _EXCEPTION.match(line)]
    if after_traceback:
        return _tidy(after_traceback[-1])
    if lines:
        return _tidy(lines[0])
    match = re.search(r"\((?:exit -?\d+: )?([^)]*)\)$|failed: (.*)$", record.title)
    return _tidy(match.group(1) or match.group(2) or record.title) if match else _tidy(record.title)


def _tidy(message: str) -> str:
    """One line of an error message: no 'error:' prefix, escaped newlines flattened; withheld when it reads as
    instructions to an AI agent (tool output is data, never a standing order)."""
    message = re.sub(r"^(?:error:\s*)+", "", message.replace("\\n", " "), flags=re.IGNORECASE)
    return withhold_instructions(" ".join(message.split())[:200])


def error_signature(reason: str) -> str:
    """An error message with its variable parts (numbers, hex ids, line numbers) blanked."""
    text = re.sub(r"0x[0-9a-f]+|\b[0-9a-f]{8,}\b", "H", reason.lower())
    text = re.sub(r"\d+", "N", text)
    return " ".join(text.split())[:160]


# -- saving derived memories inside the caller's transaction ---------------------------------------

def prepare_saves(store: Parts, items: list[dict[str, Any]]) -> list[remember.PreparedSave | None]:
    """Validate and embed derived memories in one batch; an invalid item gives None. Derived memories
    never supersede by similarity, only the memory with their own key."""
    return remember.prepare_saves(store, items, supersede_check=False, skip_invalid=True)


def write_saves(conn: Connection, store: Parts,
                prepared: list[remember.PreparedSave | None]) -> list[SaveResult | None]:
    """Write prepared memories inside the caller's write transaction (the caller indexes after it commits)."""
    return remember.write_prepared(conn, store, prepared)


# -- mining -------------------------------------------------------------------------------------------

@dataclass
class Derived:
    """A memory consolidation wants to exist, identified by its key."""
    key: str
    tier: str
    type: str
    title: str
    content: str
    sessions: list[str]
    obs_ids: list[int]
    files: list[str] = field(default_factory=list)
    importance: float = 0.5
    memory_sources: list[str] = field(default_factory=list)


def mine(records: list[ObsRecord], project: str | None, roots: tuple[str, ...] = ()) -> list[Derived]:
    """Workflows, bugs, hot files and the toolchain, from a project's compressed observations (pure)."""
    by_session: dict[str, list[ObsRecord]] = {}
    for record in sorted(records, key=lambda r: r.id):
        by_session.setdefault(record.session_id, []).append(record)
    bugs = _bugs(by_session)
    trees = tuple(r for r in (project, *roots) if r)
    derived = (_commands(by_session, trees) + bugs + _fixes(by_session, {b.key for b in bugs})
               + _hot_files(by_session, project, roots))
    toolchain = _toolchain(by_session)
    return derived + ([toolchain] if toolchain else [])


def _first_per_session(by_session: dict[str, list[ObsRecord]], match: Any) -> dict[str, int]:
    found = {}
    for session, records in by_session.items():
        first = next((r.id for r in records if match(r)), None)
        if first is not None:
            found[session] = first
    return dict(sorted(found.items(), key=lambda item: item[1]))


def _commands(by_session: dict[str, list[ObsRecord]], roots: tuple[str, ...] = ()) -> list[Derived]:
    """How this project is built, tested, checked and run: each command in the form it ran, with its last result
    and how often (procedural memories keyed `workflow:<identity>`). A form is learned when it runs as printed and
    is the project's own: not a help or version run, not a narrowed run (some tests, some checks), not a general
    utility, not a command run in a folder outside the project; statistics are kept per form, never pooled."""
    stats: dict[str, dict[str, Any]] = {}
    edits: list[tuple[int, list[str]]] = []
    for session, records in by_session.items():
        for record in records:
            if record.is_edit:
                edits.append((record.id, record.files))
            usable = _usable(record, roots)
            if usable is None:
                continue
            form, where = usable
            entry = stats.setdefault(form, {"key": record.key, "where": where, "runs": 0, "outcomes": Counter(),
                                            "sessions": {}, "last": "", "result": "", "reason": "", "at": 0.0})
            entry["runs"] += record.count
            entry["outcomes"][record.outcome] += record.count
            entry["sessions"].setdefault(session, record.id)
            entry["last"], entry["at"], entry["id"] = record.outcome, record.created_at, record.id
            result = next((f.removeprefix("result: ") for f in record.facts if f.startswith("result: ")), "")
            entry["result"] = result[:100] if record.outcome in ("passed", "failed") else ""
            entry["reason"] = record.reason[:100] if record.outcome == "failed" else ""
    for entry in stats.values():  # a failure that points at a file changed since: the run is out of date
        if entry["last"] == "failed":
            why = entry["result"] or entry["reason"]
            entry["changed"] = next((path for at, paths in edits if at > entry["id"] for path in paths
                                     if names_file(why, path)), "")
    chosen = _project_commands(stats, roots)
    out = []
    for form, entry in chosen:
        label = command_label(entry["key"])
        shown = f"cd {entry['where']} && {form}" if entry["where"] else form
        sessions = len(entry["sessions"])
        out.append(Derived(
            key=f"workflow:{shown}"[:120], tier="procedural", type="workflow", title=f"{label}: `{shown}`",
            content=f"{label}: `{shown}` — {_last_result(entry)}; {_runs(entry['runs'])} in {sessions} "
                    f"session{'s' if sessions != 1 else ''}.",
            sessions=list(entry["sessions"]), obs_ids=list(entry["sessions"].values()),
            importance=COMMAND_IMPORTANCE.get(label, 0.45)))
    return out


def _usable(record: ObsRecord, roots: tuple[str, ...]) -> tuple[str, str] | None:
    """(form, folder it ran from) of a run that can teach the project's commands, else None."""
    if not record.key or record.refused or record.outcome in ("interrupted", "refused", ""):
        return None
    program = record.key.split()[0]
    if program in NOT_KNOWLEDGE or program in UTILITIES:
        return None
    segments = command_segments(record.command)
    tokens = next((t for key, t in segments if key == record.key), None)
    if not tokens or is_help(tokens):
        return None
    if command_label(record.key) in NARROWABLE and is_narrowed(tokens):
        return None  # some of the tests or checks: not the project's command
    form = working_form(tokens)
    if record.key in INTERPRETERS and (len(form.split()) < 2 or " -c" in f" {form}" or " -e" in f" {form}"):
        return None  # `python -c "..."`, `node --version`: no command to learn
    if tokens[0].startswith(("/", "~")) or any(t.startswith("~/") for t in tokens[1:3]):
        return None  # a program or script outside the project
    where = _ran_in(record.command or "", roots)
    return (form, where) if where is not None else None


NARROWABLE = frozenset({"Run the tests", "Check the code", "Format the code"})
_CD = re.compile(r"(?:^|&&|;|\n)\s*cd\s+(\"[^\"]+\"|'[^']+'|[^\s;&|]+)")


def _ran_in(command: str, roots: tuple[str, ...]) -> str | None:
    """The project folder a command ran in when it changes folder ('' for the root or no `cd`), None when it
    changes to a folder outside the project."""
    where = ""
    for found in _CD.finditer(command):
        folder = found.group(1).strip("\"'").rstrip("/")
        if folder.startswith(("~", "$", "..")):
            return None
        if folder.startswith("/"):
            root = next((r for r in sorted(roots, key=len, reverse=True)
                         if folder == r or folder.startswith(r + "/")), None)
            if root is None:
                return None
            folder = folder[len(root):].lstrip("/")
        where = "" if folder in (".", "") else folder
    return where


def _runs(n: int) -> str:
    return f"{n} run{'s' if n != 1 else ''}"


def _last_result(entry: dict[str, Any]) -> str:
    last, result = entry["last"], entry["result"]
    if last == "passed":
        return f"last run passed ({result})" if result else "last run passed"
    if last == "running":
        return "it starts and keeps running"
    if last == "failed":
        why = result or entry["reason"]
        if entry.get("changed"):
            return f"last run failed ({why}), then {entry['changed'].rsplit('/', 1)[-1]} was changed and not run since"
        return f"last run failed ({why})" if why else "last run failed"
    return "its last result was not shown (the output went through a filter)"


MAX_FORMS_PER_PURPOSE = 2
_RUNNERS = frozenset("make just task npm pnpm yarn bun mix cargo nix rake gradle gradlew mvn composer tox nox "
                     "poetry uv hatch pdm rye deno go dotnet swift flutter dart".split())


def _project_commands(stats: dict[str, dict[str, Any]], roots: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    """The forms to show: per purpose, those that ran (not only invalid), best first — one that passed, run in
    more sessions and more often, through the project's own runner — at most two per purpose; an uncategorised
    command only when it runs one of the project's own scripts and passed more than once."""
    by_label: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for form, entry in stats.items():
        ran = sum(n for o, n in entry["outcomes"].items() if o != "invalid")
        if not ran or entry["last"] == "invalid":
            continue
        label = command_label(entry["key"])
        if label == "Run" and not (_runs_project_script(form) and entry["outcomes"]["passed"] >= 2):
            continue
        by_label.setdefault(label, []).append((form, entry))
    out = []
    for forms in by_label.values():
        forms.sort(key=lambda item: (-(item[1]["outcomes"]["passed"] + item[1]["outcomes"]["running"] > 0),
                                     -len(item[1]["sessions"]), -(item[0].split()[0] in _RUNNERS),
                                     -item[1]["runs"], len(item[0]), -item[1]["at"]))
        if any(_scripted(form) for form, _ in forms):  # the project's own entry point wraps the tool
            forms = [(form, entry) for form, entry in forms if _scripted(form)]
        passed_at = max((e["at"] for _, e in forms if e["last"] in ("passed", "running")), default=0.0)
        keys: set[str] = set()
        for form, entry in forms:  # one form per command, the best
            if entry["last"] == "failed" and entry["at"] < passed_at:
                continue  # another way of doing the same passed after it
            if entry["key"] not in keys and len(keys) < MAX_FORMS_PER_PURPOSE:
                keys.add(entry["key"])
                out.append((form, entry))
    return out


_SCRIPTED = re.compile(r"^(?:(?:npm|pnpm|bun) (?:run|test|start|t)\b|yarn(?: run)?|make|just|task|rake|"
                       r"composer run|tox|nox|\./)\S*")
# an environment wrapper: what it runs decides whether the form is the project's own
_WRAPPED = re.compile(r"^(?:nix develop(?: \S+)? (?:-c|--command)|nix-shell --run|poetry run|uv run|hatch run|pdm run|"
                      r"pipenv run|bundle exec)\s+(?P<inner>.+)$")


def _scripted(form: str) -> bool:
    """A form that runs one of the project's own scripts or targets (`npm run lint`, `make test`, `./check.sh`,
    `nix develop -c lint`); a tool run inside the project's environment with its own arguments
    (`nix develop -c golangci-lint run --fix`) is not."""
    wrapped = _WRAPPED.match(form)
    if wrapped:
        inner = wrapped.group("inner").strip("\"' ")
        return _scripted(inner) or len(inner.split()) == 1 or _runs_project_script(inner)
    return bool(_SCRIPTED.match(form))


def _runs_project_script(form: str) -> bool:
    """`./scripts/check.sh`, `python train.py`, `bun run server.ts`: a script of the project's own."""
    tokens = form.split()
    script = tokens[0] if tokens[0].startswith("./") else next(
        (t for t in tokens[1:3] if re.search(r"\.\w{1,5}$", t) and not t.startswith("-")), None)
    return bool(script) and not script.startswith(("/", "~"))


def _bugs(by_session: dict[str, list[ObsRecord]]) -> list[Derived]:
    failures: Counter[str] = Counter()
    fixes: dict[str, dict[str, Any]] = {}
    for session, records in by_session.items():
        open_failures: dict[str, tuple[str, str, int, list[str]]] = {}
        for record in records:
            if record.key and record.failed:
                signature = error_signature(record.reason or record.title)
                failures[signature] += record.count
                open_failures[record.key] = (signature, record.reason, record.id, [])
            elif record.is_edit:
                for failure in open_failures.values():
                    failure[3].extend(record.files)
            elif record.key and record.key in open_failures:
                signature, reason, obs_id, files = open_failures.pop(record.key)
                if files:
                    fix = fixes.setdefault(signature, {"reason": reason, "command": record.key, "files": set(),
                                                       "sessions": {}})
                    fix["files"].update(files)
                    fix["sessions"].setdefault(session, obs_id)
    out = []
    for signature, fix in sorted(fixes.items()):
        if failures[signature] < BUG_MIN_FAILURES:
            continue
        files = sorted(fix["files"])[:10]
        shown = ", ".join(f.rsplit("/", 1)[-1] for f in files)
        out.append(Derived(
            key=f"bug:{hashlib.sha256(signature.encode()).hexdigest()[:16]}", tier="semantic", type="bug",
            title=f"Bug: {fix['reason'][:90]}",
            content=f"`{fix['command']}` failed with: {fix['reason'].rstrip(' .:')}. This error recurs. What fixed it: "
                    f"editing {shown}, after which `{fix['command']}` passed.",
            sessions=list(fix["sessions"]), obs_ids=list(fix["sessions"].values()), files=files, importance=0.6))
    return out


FIXING_LABELS = frozenset({"Install dependencies", "Build", "Format the code"})
READ_ONLY = frozenset({"git diff", "git log", "git status", "git show", "git branch", "git remote", "git fetch",
                       "git blame", "gh pr", "gh issue"})
RETRY_WINDOW = 3  # after a plain retry passes, a failure stays open this many runs of its command


def _fixes(by_session: dict[str, list[ObsRecord]], known: set[str]) -> list[Derived]:
    """A command that failed and then worked in the same session: what made it pass. Either its own form
    changed (`git add` refused an ignored file; `git add -f` worked), files were edited in between, or a
    command that installs, builds or formats ran in between (`pip install -r requirements.txt` before
    `python train.py` ran again). A plain retry that passes keeps the failure open for a few more runs of the
    command, in case a changed form is what finally worked. Built from the command's fields and the error's
    first line; one memory per error signature."""
    found: dict[str, dict[str, Any]] = {}
    for session, records in by_session.items():
        open_failures: dict[str, dict[str, Any]] = {}
        for record in records:
            if record.key in READ_ONLY:
                continue  # a look at the repository fails and passes for reasons that teach nothing
            if record.key and record.failed and record.outcome == "failed" and not (
                    command_label(record.key) in NARROWABLE
                    and is_narrowed(next((t for k, t in command_segments(record.command) if k == record.key), []))):
                signature = error_signature(record.reason or record.title)
                earlier = open_failures.get(record.key)
                if earlier and earlier["signature"] != signature and earlier["between"] and earlier["reason"] \
                        and _form_of(record) == earlier["form"] and not invocation_error(record.output or ""):
                    # the error changed after a step ran: that step fixed the earlier one (a FORMAT failure
                    # gone after `mix format`, the commit now stopped by another check). Only the same form run
                    # again can tell: with other options, or refused as a bad invocation, the first error may stand
                    key = f"bug:{hashlib.sha256(earlier['signature'].encode()).hexdigest()[:16]}"
                    if key not in known and key not in found:
                        found[key] = {**earlier, "worked": "", "command": record.key, "session": session}
                open_failures[record.key] = {"signature": signature,
                                             "reason": record.reason, "form": _form_of(record), "files": [],
                                             "between": [], "retries": 0, "id": record.id,
                                             "text": record.command}
            elif record.is_edit:
                for failure in open_failures.values():
                    failure["files"].extend(record.files)
            elif record.key and record.key in open_failures and not record.refused:
                if record.outcome not in ("passed", "running"):
                    continue  # its status is unknown, or it failed again: nothing worked yet
                failure = open_failures[record.key]
                form = _form_of(record)
                if form != failure["form"] and not _same_target(failure["text"], record.command):
                    del open_failures[record.key]  # another run of the tool on something else: not a fix
                    continue
                if form == failure["form"] and not failure["files"] and not failure["between"]:
                    # the same command simply passed on a later try; with other arguments, a changed form
                    # may still be what finally worked
                    failure["retries"] += 1
                    if record.command == failure["text"] or failure["retries"] >= RETRY_WINDOW:
                        del open_failures[record.key]
                    continue
                del open_failures[record.key]
                key = f"bug:{hashlib.sha256(failure['signature'].encode()).hexdigest()[:16]}"
                if key in known or key in found or not failure["reason"]:
                    continue
                found[key] = {**failure, "worked": form, "command": record.key, "session": session}
            elif record.key and not record.refused and command_label(record.key) in FIXING_LABELS \
                    and record.key.split()[0] not in NOT_KNOWLEDGE:
                step = _form_of(record)
                for failure in open_failures.values():
                    if step not in failure["between"] and len(failure["between"]) < 2:
                        failure["between"].append(step)
    out = []
    for key, fix in sorted(found.items()):
        files = sorted(dict.fromkeys(fix["files"]))[:6]
        after = f" after editing {', '.join(f.rsplit('/', 1)[-1] for f in files)}" if files else ""
        again = " again" if fix["worked"] == fix["form"] else ""
        steps = ", ".join(f"`{step}`" for step in fix["between"])
        if not fix["worked"]:  # the next run failed on something else: the steps in between fixed this error
            worked = f"{steps} (the next `{fix['command']}` no longer failed with it)"
        else:
            worked = f"{steps}, then `{fix['worked']}`{again}" if fix["between"] else f"`{fix['worked']}`"
        out.append(Derived(
            key=key, tier="semantic", type="bug", title=f"Fix: `{fix['form']}` failed ({fix['reason'][:70]})",
            content=f"`{fix['form']}` failed: {fix['reason'][:160].rstrip(' .:')}. What worked: {worked}{after}.",
            sessions=[fix["session"]], obs_ids=[fix["id"]], files=files, importance=0.55))
    return out


def _same_target(failed: str | None, worked: str | None) -> bool:
    """Whether a later command ran on what the failed one did, with its options changed (`git add X` then
    `git add -f X`): the same targets or some of them, with other options; a command run on something narrower
    than what failed (`go build ./pkg` after `go build` failed) skips the problem rather than fixing it."""
    def positionals(command: str | None) -> list[str]:
        segments = command_segments(command)
        return [t for t in (segments[-1][1][1:] if segments else []) if not t.startswith("-")]

    before, after = positionals(failed), positionals(worked)
    if not before:
        return not after  # only its options changed; a run on some of its targets is not its fix
    return bool(after) and set(after) <= set(before)


def _form_of(record: ObsRecord) -> str:
    """The working form of every step of the command (`git add -f && git commit`)."""
    forms = [working_form(tokens) for _, tokens in command_segments(record.command)]
    return " && ".join(dict.fromkeys(f for f in forms if f)) or record.key or ""


def _hot_files(by_session: dict[str, list[ObsRecord]], project: str | None,
               roots: tuple[str, ...] = ()) -> list[Derived]:
    sessions_of: dict[str, set[str]] = {}
    edits: Counter[str] = Counter()
    for session, records in by_session.items():
        for record in records:
            if record.is_edit:
                for path in record.files:
                    sessions_of.setdefault(path, set()).add(session)
                    edits[path] += record.count
    hot = [p for p in sessions_of if len(sessions_of[p]) >= HOT_FILE_MIN_SESSIONS]
    hot = sorted(sorted(hot, key=lambda p: (-len(sessions_of[p]), -edits[p], p))[:HOT_FILES])
    if not hot:
        return []
    shown = [_relative(path, project, roots) for path in hot]
    sessions = sorted({s for p in hot for s in sessions_of[p]})
    firsts = _first_per_session({s: by_session[s] for s in sessions}, lambda r: r.is_edit and set(r.files) & set(hot))
    return [Derived(
        key="hot-files", tier="semantic", type="fact", title="Files changed most often in this project",
        content="Files changed most often in this project (edited in several sessions): " + ", ".join(shown) + ".",
        sessions=list(firsts), obs_ids=list(firsts.values()), files=hot, importance=0.5)]


def _toolchain(by_session: dict[str, list[ObsRecord]]) -> Derived | None:
    """The programs and MCP servers the project's sessions use, those used in two sessions or more."""
    uses: dict[str, set[str]] = {}
    subcommands: dict[str, set[str]] = {}
    servers: dict[str, set[str]] = {}
    server_tools: dict[str, Counter[str]] = {}
    for session, records in by_session.items():
        for record in records:
            mcp = _MCP_TOOL.match(record.tool or "")
            if mcp:
                servers.setdefault(mcp.group(1), set()).add(session)
                server_tools.setdefault(mcp.group(1), Counter())[mcp.group(2)] += 1
                continue
            if not record.key or record.key.split()[0] in NOT_KNOWLEDGE | UTILITIES or record.outcome == "invalid":
                continue
            program, *rest = record.key.split()
            uses.setdefault(program, set()).add(session)
            if rest and program not in INTERPRETERS:
                subcommands.setdefault(program, set()).add(rest[0])
    tools = sorted(p for p, sessions in uses.items() if len(sessions) >= 2)
    used = sorted((s for s, sessions in servers.items() if len(sessions) >= 2), key=lambda s: -len(servers[s]))
    if not tools and not used:
        return None
    described = [f"{t} ({', '.join(sorted(subcommands[t])[:6])})" if subcommands.get(t) else t for t in tools]
    content = ("Tools in use in this project: " + "; ".join(described) + ".") if tools else ""
    if used:
        content += (" " if content else "") + MCP_SERVERS + ": " + "; ".join(
            f"{s} ({', '.join(t for t, _ in server_tools[s].most_common(4))}; {len(servers[s])} sessions)"
            for s in used[:4]) + "."
    sessions = sorted({s for t in tools for s in uses[t]} | {s for name in used for s in servers[name]})
    firsts = _first_per_session({s: by_session[s] for s in sessions}, lambda r: bool(r.key))
    return Derived(key="toolchain", tier="semantic", type="fact", title="Tools in use",
                   content=content, sessions=list(firsts), obs_ids=list(firsts.values()), importance=0.45)


_MCP_TOOL = re.compile(r"^mcp__(.+?)__(.+)$")  # Claude Code's name of an MCP server's tool


def _located(path: str, project: str | None, roots: tuple[str, ...]) -> str | None:
    """Where a relative path a command names is a file now: the project's root first, then its other working
    trees (as an absolute path, the way files of other worktrees are kept); None when it is nowhere."""
    if path.startswith("/"):
        return None
    for root in dict.fromkeys(r for r in (project, *sorted(roots)) if r):
        if os.path.isfile(os.path.join(root, path)):
            return os.path.join(root, path)
    return None


def _relative(path: str, project: str | None, roots: tuple[str, ...] = ()) -> str:
    """A path relative to the working tree it lies in (the project's root or one of its worktrees)."""
    for root in sorted({r.rstrip("/") for r in (*roots, project or "") if r}, key=len, reverse=True):
        if path.startswith(root + "/"):
            return path[len(root) + 1:]
    return path


# -- writing ------------------------------------------------------------------------------------------

def upsert_derived(store: Parts, project: str | None, items: list[Derived], *,
                   summaries: dict[str, str] | None = None, roots: tuple[str, ...] = ()) -> int:
    """Create, update or leave alone each derived memory; returns how many were written.

    `summaries` maps session ids to their summary memory ids (sources, linked derived_from); `roots` are the
    working trees the project's sessions ran in (files are stored relative to them).
    """
    summaries = summaries or {}
    conn = store.conn
    saves: list[dict[str, Any]] = []
    touches: list[tuple[str, list[str], float | None]] = []
    now = store.now()
    # a derived memory is as old as what it was learned from (an imported session's, not the import's time)
    happened = observations.times_of(conn, [i for item in items for i in item.obs_ids[-MAX_OBS_SOURCES:]])
    for item in items:
        sessions = item.sessions[-MAX_OBS_SOURCES:]
        obs_ids = item.obs_ids[-MAX_OBS_SOURCES:]
        seen = min(max((happened[i] for i in obs_ids if i in happened), default=now), now)
        summary_ids = [summaries[s] for s in sessions if s in summaries][-MAX_SUMMARY_SOURCES:]
        sources = [f"obs:{i}" for i in obs_ids] + list(dict.fromkeys(summary_ids + item.memory_sources))
        old = memory_reads.latest_by_key(conn, item.key, project)
        try:
            content = remember.check_content(item.content)
        except InvalidInput:
            continue
        if old is not None and old["content_hash"] == remember.content_hash(content) and old["title"] == item.title:
            if set(json.loads(old["source_ids"])) != set(sources):
                touches.append((old["id"], sources, max(seen, old["updated_at"] or old["created_at"])))
            continue
        saves.append({"content": content, "title": item.title, "tier": item.tier, "type": item.type,
                      "project": project, "files": [_relative(f, project) for f in item.files],
                      "source": "consolidation",
                      "importance": item.importance, "key": item.key, "source_ids": sources,
                      "confidence": old["confidence"] if old is not None else None, "created_at": seen})
    if not saves and not touches:
        return 0
    prepared = prepare_saves(store, saves)
    with store.transaction() as tx:
        written = sum(1 for r in write_saves(tx, store, prepared) if r and r.action != "duplicate")
        for memory_id, sources, updated_at in touches:
            set_sources(tx, memory_id, project, sources, now, updated_at=updated_at)
    store.indexer.drain()
    return written + len(touches)


def set_sources(conn: Connection, memory_id: str, project: str | None, sources: list[str], now: float, *,
                updated_at: float | None = None) -> None:
    """Replace a memory's sources in place (inside a transaction), keeping its derived_from links in step; its
    updated_at becomes `updated_at` (default: now)."""
    memories.set_sources(conn, [(memory_id, sources)], updated_at=now if updated_at is None else updated_at)
    linked = [s for s in sources if s.startswith("m_")]
    links.keep_derived_from(conn, memory_id, linked)
    for source in linked:
        links.add_link(conn, memory_id, source, "derived_from", now)
    audit.append(conn, "update_sources", memory_id, project, {"sources": len(sources)}, at=now)


def consolidate_project(store: Parts, project: str | None) -> int:
    """Mine one project's observations by rules and write what changed; returns how many were written."""
    conn = store.conn
    rows = observations.compressed_of_project(conn, project, ("command", "error", "file_edit", "file_write", "mcp"))
    records = [parse_observation(row) for row in rows]
    summaries = sessions.summaries_of_project(conn, project)
    roots = tuple(r for r in {worktree_root(cwd) for cwd in sessions.cwds_of_project(conn, project)} if r)
    derived = mine(records, project, roots)
    for item in derived:
        if item.key.startswith(("workflow:", "bug:")):  # a command's own files anchor it too
            named = [found for p in mentioned_paths(item.content) if (found := _located(p, project, roots))]
            item.files = list(dict.fromkeys([*item.files, *named]))
    written = upsert_derived(store, project, derived, summaries=summaries, roots=roots)
    return written + retire(store, project, {item.key for item in derived}, MINED_PREFIXES)


MINED_PREFIXES = ("workflow:", "bug:", "hot-files", "toolchain")


def retire(store: Parts, project: str | None, wanted: set[str], prefixes: tuple[str, ...]) -> int:
    """Forget the rules' own memories (keyed by these prefixes) that the rules no longer produce: a command
    that stopped counting as knowledge goes, instead of staying in every briefing. Only consolidation's
    memories are touched (never a user's or an agent's), and only by their key."""
    from .forget import delete_memories

    rows = [row for row in memory_reads.consolidation_keyed(store.conn, project)
            if row["key"].startswith(prefixes) and not row["key"].startswith("workflow:llm:")
            and row["key"] not in wanted]
    if rows:
        delete_memories(store, rows, "no longer produced by consolidation", store.now(), action="retire")
    return len({row["key"] for row in rows})


def dirty_projects(conn: Connection) -> list[tuple[str | None, str]]:
    """Projects with compressed observations or summaries newer than their last consolidation, with
    the mark to record once they are consolidated."""
    out = []
    for project, last_obs, summaries in observations.last_compressed_by_project(conn):
        mark = f"{last_obs}:{summaries}"
        if meta.get(conn, meta.consolidated(project)) != mark:
            out.append((project, mark))
    return out


T = TypeVar("T")


def set_mark(store: Parts, key: meta.Key[T], value: T) -> None:
    """Record a mark (what a pass over a project covered) in its own transaction."""
    with store.transaction() as tx:
        meta.put(tx, key, value)
