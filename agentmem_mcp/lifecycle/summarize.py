"""Summaries: one episodic memory per session, and with an LLM, merged knowledge and reflections.

A session gets its summary when it stops or ends (the hook sets `sessions.needs_summary`) or after it
has been idle for a while. The summary is incremental: the running state (goal, files changed,
commands and their outcomes, errors and whether a later run of the same command passed, memories
saved) is kept in `meta` with the id of the last observation folded in (`sessions.summarized_upto`),
so a later Stop folds in only the new observations. The summary is a memory with the key
`session-summary:<session id>`: each update is a new version of the same memory.

With an LLM the summary also gets a short narrative; `merge_summaries` turns the latest 20 session
summaries of a project (once it has 5) into facts and workflows, and `reflect` draws insights in the
manner of Generative Agents once enough has happened. Without one, the rules' text is complete.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ..capture.transcript import Turn, is_noise, relative_to
from ..capture.turns import read_turns
from ..db import memory_reads, meta, observations, sessions
from ..project import worktree_root
from ..recall.anchors import head_commit
from ..trust.policy import WITHHELD, withhold_instructions
from . import BRANCH, NEXT, OUTCOME, PULL_REQUESTS, STILL_FAILING, UNCOMMITTED, UNRESOLVED, UNTRIED, remember
from .commands import command_segments, is_narrowed, names_file
from .consolidate import (
    PREPARATORY,
    Derived,
    ObsRecord,
    command_label,
    is_test_command,
    parse_observation,
    prepare_saves,
    set_mark,
    upsert_derived,
    write_saves,
)
from .digest import clip, digest, distinct, plain, short_urls
from .reports import CAUSE, CLAIM, COMPLAINT, CONCEDES, SAYS_CHANGE, fit, lead, names, next_steps, sentences
from .session_log import session_reports, summary_files, transcript_path, turn_memories

if TYPE_CHECKING:
    from ..parts import Parts
    from .llm import LLM

# The vector covers the goal and the first lines (files changed, commands): a summary is re-embedded at every
# Stop, and the model's cost grows with the text; BM25 indexes all of it, paths included.
SUMMARY_VECTOR_CHARS = 600
SUMMARY_MAX_CHARS = 4800
IDLE_SECONDS = 1800.0
FOLD_BATCH = 5000
MAX_SOURCES = 60
SUMMARY_CONFIDENCE = 0.8  # a record of what happened, drawn from the observations themselves
STOP_EVENTS = ("stop", "session_end", "pre_compact")
NARRATIVE_SYSTEM = """You write the memory a coding agent keeps of one work session. From the facts given, write
what the session was about and what came of it, in at most 3 factual sentences (no praise, no guesses).
Return {"title": "<at most 12 words>", "narrative": "<at most 400 characters>"}"""


OUTCOME_CHARS = 1600  # a session's outcome: the lead sentences of its latest reports, whole, within this
TURN_LEAD_CHARS = 520  # what one turn's report may add to the outcome
MIN_OUTCOME_CHARS = 300  # the outcome's least room when the summary's other lines fill it
REPORTED = "Reported"  # the summary line of what the agent's reports named (files, issues, figures), for search
REPORTED_CHARS = 1200


_COMMIT = re.compile(r"^\[([\w./+-]+)(?: \(root-commit\))? ([0-9a-f]{7,12})\] (.+)$", re.MULTILINE)
_CHANGED = re.compile(r"\d+ files? changed")
_CREATED = re.compile(r"^\s*(?:create|delete) mode \d+ (\S.*?)\s*$", re.MULTILINE)
# `git push` reports "To <remote>" then one line a ref: "   6eea407..5c1b231  main -> main", " * [new branch]  x -> x"
_PUSHED_TO = re.compile(r"^To (\S+)\s*$", re.MULTILINE)
_PUSHED_REF = re.compile(r"^ ([ +*])\s*(\[new (?:branch|tag)\]|[0-9a-f]{7,40}\.\.\.?[0-9a-f]{7,40})\s+(\S+) -> (\S+)",
                         re.MULTILINE)
_USERINFO = re.compile(r"//[^/@\s]+@")
MAX_PUSHES = 4
# a pull request the session opened (the URL `gh pr create` prints) or merged (`gh pr merge` and its answer)
_PR_URL = re.compile(r"https?://[\w.-]+/[\w.-]+/[\w.-]+/pulls?/(\d+)\b")
_PR_MERGED = re.compile(r"\b(?:Merged|Squashed and merged|Rebased and merged) pull request [\w./-]*#(\d+)", re.I)
_BRANCH_SEEN = re.compile(r"^On branch (\S+)|Switched to (?:a new )?branch '([^']+)'", re.MULTILINE)
MAX_PRS = 6


# errors of the client's own tool protocol, not of the project: nothing to learn from them
_CLIENT_MECHANICS = re.compile(r"File does not exist|String to replace not found|has not been read yet|"
                               r"modified since (?:it was )?read|User rejected|exceeds maximum allowed tokens|"
                               r"response \(\d+ tokens\) exceeds|Found \d+ matches of the string|No such tool|"
                               r"InputValidationError", re.IGNORECASE)


INSPECTIONS = PREPARATORY | {"git show", "git branch", "git remote", "gh pr", "gh issue", "gh run", "gh api"}
MAX_UNTRIED = 6
# files whose change no command can try: prose, notes, data and settings read by people or tools at leisure
_TRACKED_DOCS = (".md", ".json", ".toml", ".yml", ".yaml")
_NOT_CODE = (".md", ".markdown", ".txt", ".rst", ".adoc", ".csv", ".lock", ".log", ".ipynb", ".png", ".jpg", ".svg")


def is_code(path: str) -> bool:
    """Whether an edit to `path` is one a later run or test would try (source, build and test files)."""
    name = path.rsplit("/", 1)[-1].lower()
    return "." in name.strip(".") and not name.endswith(_NOT_CODE)


@dataclass
class SessionState:
    """What a session did so far, folded from its compressed observations in id order."""
    upto: int = 0
    events: int = 0
    prompts: list[str] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)
    commands: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    saved: list[str] = field(default_factory=list)
    sources: list[int] = field(default_factory=list)
    last_at: float = 0.0
    commits: list[dict[str, str]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # failed tool calls other than commands (a refused write)
    untried: list[str] = field(default_factory=list)  # code files edited since the last command that ran something
    pushes: list[dict[str, Any]] = field(default_factory=list)  # {"ref": "main to <remote>", "last": "a..b", "n": 1}
    branch: str = ""  # the branch the commands last showed (a commit, `git status`, a checkout)
    prs: list[dict[str, str]] = field(default_factory=list)  # {"n": "380", "state": "opened" | "merged"}
    since_commit: list[str] = field(default_factory=list)  # files edited after the session's last commit
    committed: bool = False

    @classmethod
    def from_json(cls, text: str | None) -> SessionState:
        try:
            known = {f.name for f in fields(cls)}  # a field an older version kept is dropped
            return cls(**{k: v for k, v in json.loads(text).items() if k in known}) if text else cls()
        except (TypeError, ValueError, AttributeError):
            return cls()

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    def fold(self, record: ObsRecord) -> None:
        self.upto = max(self.upto, record.id)
        self.events += record.count
        self.last_at = max(self.last_at, record.created_at)
        if record.kind == "prompt":
            text = record.facts[0] if record.facts else record.title.removeprefix("Prompt: ")
            if len(text.split()) >= 3 and len(self.prompts) < 3 and not is_noise(text):
                self.prompts.append(clip(text, 200))
        elif record.key:
            if not record.refused:
                self._command(record)
                if not record.key.startswith("git ") and record.key not in INSPECTIONS:
                    self.untried = []
            if record.key == "git commit" and not record.failed and not record.refused:
                self._commits(record.output)
            if not record.failed and not record.refused and "git push" in (record.command or ""):
                self._pushes(record.output)
            if not record.refused:
                self._git_facts(record)
        elif record.failed:
            what = record.title.split(" failed", 1)[0] if " failed" in record.title else record.tool or "a tool"
            failure = clip(f"{what}: {record.reason}" if record.reason else record.title, 200)
            if len(self.failures) < 4 and failure not in self.failures and not _CLIENT_MECHANICS.search(failure):
                self.failures.append(failure)
        if record.is_edit:
            for error in self.errors.values():  # the file its error points at changed since: not known to fail
                changed = next((p for p in record.files if names_file(error["reason"], p)), None)
                if error["fixed"] is False and changed:
                    error["fixed"] = None
                    if error.get("form") in self.commands:
                        self.commands[error["form"]]["changed"] = changed.rsplit("/", 1)[-1]
            for path in record.files:
                self.files[path] = self.files.get(path, 0) + record.count
                if path not in self.since_commit and len(self.since_commit) < 40:
                    self.since_commit.append(path)
                if is_code(path) and path not in self.untried and len(self.untried) < MAX_UNTRIED:
                    self.untried.append(path)
        if record.extra and len(self.saved) < 5:
            said = record.extra.get("title") or record.extra.get("content")
            if isinstance(said, str) and said.strip():
                self.saved.append(clip(said, 80))
        if record.importance >= 0.4 and len(self.sources) < MAX_SOURCES:
            self.sources.append(record.id)

    def _command(self, record: ObsRecord) -> None:
        tokens = next((t for key, t in command_segments(record.command) if key == record.key), [])
        narrowed = bool(tokens) and is_narrowed(tokens)  # a run of part of the project is named as it ran
        failing = clip(" ".join(tokens), 90) if narrowed else record.key
        shown = clip(" ".join(tokens), 90) if tokens else record.key  # a failure is named as it ran
        form = failing if is_test_command(record.key) else record.key  # the tests' runs are counted per form
        entry = self.commands.setdefault(form, {"runs": 0, "fails": 0, "ok": True, "result": "", "last": "",
                                                "base": record.key})
        entry["runs"] += record.count
        entry["shown"] = shown  # named as it last ran
        if record.outcome in ("interrupted", "refused", "invalid"):
            return  # the run says nothing of the project: stopped, declined, or the command itself was wrong
        entry.pop("changed", None)
        entry["ok"] = record.outcome != "failed"
        entry["last"] = record.outcome
        result = next((f.removeprefix("result: ") for f in record.facts if f.startswith("result: ")), "")
        entry["result"] = clip(result or record.reason, 80) if record.outcome != "unknown" else ""
        if record.outcome == "failed":
            entry["fails"] += 1
            self.errors[shown] = {"reason": clip(record.reason or record.title, 110), "fixed": False,
                                  "base": record.key, "form": form}
            return
        fixed = True if record.outcome in ("passed", "running") else None
        for name, error in self.errors.items():  # a later run passed, or its result is unknown: not known to fail
            if name == shown or not narrowed and error.get("base") == record.key:  # the whole passes: its parts do
                error["fixed"] = fixed

    def _pushes(self, output: str) -> None:
        for to in _PUSHED_TO.finditer(output or ""):
            remote = _USERINFO.sub("//", to.group(1))
            end = _PUSHED_TO.search(output, to.end())
            for ref in _PUSHED_REF.finditer(output, to.end(), end.start() if end else len(output)):
                what = ref.group(2).strip("[]") + (", forced" if ref.group(1) == "+" else "")
                source, target = ref.group(3), ref.group(4)
                name = f"{source if source == target else f'{source} -> {target}'} to {remote}"
                known = next((p for p in self.pushes if p["ref"] == name), None)
                if known is not None:
                    known["last"], known["n"] = what, known["n"] + 1
                elif len(self.pushes) < MAX_PUSHES:
                    self.pushes.append({"ref": name, "last": what, "n": 1})

    def _git_facts(self, record: ObsRecord) -> None:
        """The branch a command's output shows, and the pull requests it opened or merged."""
        output = record.output or ""
        for match in _BRANCH_SEEN.finditer(output):
            self.branch = match.group(1) or match.group(2)
        command = record.command or ""
        if record.failed:
            return
        opened = "pr create" in command or "create_pull_request" in (record.tool or "")
        merged = "pr merge" in command or "merge_pull_request" in (record.tool or "")
        numbers = [(m.group(1), "opened") for m in _PR_URL.finditer(output)
                   if opened and "/pull/new/" not in m.group(0)]
        numbers += [(m.group(1), "merged") for m in _PR_MERGED.finditer(output)]
        if merged and not numbers:
            numbers += [(n, "merged") for n in re.findall(r"pr merge\s+(?:[^\s-]\S*/pull/)?#?(\d+)", command)]
        for number, state in numbers:
            known = next((p for p in self.prs if p["n"] == number), None)
            if known is not None:
                known["state"] = "merged" if state == "merged" else known["state"]
            elif len(self.prs) < MAX_PRS:
                self.prs.append({"n": number, "state": state})

    def _commits(self, output: str) -> None:
        if _COMMIT.search(output or ""):
            self.committed = True
            self.since_commit = []
        for match in _COMMIT.finditer(output or ""):
            changed = _CHANGED.search(output, match.end())
            end = _COMMIT.search(output, match.end())
            body = output[match.end():end.start() if end else len(output)]
            self.branch = match.group(1)
            commit = {"hash": match.group(2), "branch": match.group(1), "message": clip(match.group(3), 90),
                      "changed": changed.group(0) if changed else "",
                      "files": [m.group(1) for m in _CREATED.finditer(body)][:20]}
            if all(c["hash"] != commit["hash"] for c in self.commits) and len(self.commits) < 10:
                self.commits.append(commit)

    @property
    def says_something(self) -> bool:
        return bool(self.prompts or self.files or self.commands or self.errors or self.saved)


def _last_state(entry: dict[str, Any]) -> str:
    """How a command's last run went, in words."""
    if entry.get("last") == "unknown":
        return "last result not shown (its output went through a filter)"
    state = "passed" if entry["ok"] else "failed"
    changed = entry.get("changed") if not entry["ok"] else None
    since = f", then {changed} was changed and not run since" if changed else ""
    return f"last run {state}" + (f" ({entry['result']})" if entry["result"] else "") + since


def _push_text(push: dict[str, Any]) -> str:
    state = push["last"] if push["n"] == 1 else f"{push['n']} pushes, the last {push['last']}"
    return f"{push['ref']} ({state})"


def render(state: SessionState, cwd: str | None, saved: list[str] = (),
           turns: list[Turn] | None = None) -> tuple[str, str]:
    """(title, content) of a session summary, by rules: what was asked, what came of it (the lead sentences of the
    agent's latest reports, when the transcript is there), the branch, commits, pushes and pull requests, tests with
    counts, what was left uncommitted, the request the session ended on without an answer, what the agent said is
    next, files by how much they changed, decisions, and what is still failing. Each line is a labelled fact the
    briefing reads back (lifecycle/__init__.py names the labels)."""
    def rel(path: str) -> str:
        return path[len(cwd.rstrip("/")) + 1:] if cwd and path.startswith(cwd.rstrip("/") + "/") else path

    turns = turns or []
    typed = [t for t in turns if len(t.prompt.split()) >= 2 or t.prompt.startswith("/")]
    busiest = max(typed, key=lambda t: t.tool_results, default=None)  # the main task, when it is not the first ask
    ordered = ([busiest] if busiest is not None and busiest.tool_results > 2 * (typed[0].tool_results + 1) else []) \
        + [t for t in typed if t is not busiest or t is typed[0]]
    asked = list(dict.fromkeys(short_urls(t.prompt) for t in ordered))[:3] or [short_urls(p) for p in state.prompts]
    committed = {path: 1 for c in state.commits for path in c.get("files", ())
                 if path not in state.files and f"{cwd or ''}/{path}" not in state.files}
    files = sorted({**state.files, **committed}.items(), key=lambda item: -item[1])
    tests = {k: v for k, v in state.commands.items() if is_test_command(v.get("base", k))}
    others = sorted(((k, v) for k, v in state.commands.items() if k not in tests and not k.startswith("git ")),
                    key=lambda item: -item[1]["runs"])
    lines = []
    if asked:
        lines.append("Asked: " + ASKED_SEPARATOR.join(w for w in (whole(a, 240) for a in asked) if w) if any(
            whole(a, 240) for a in asked) else clip("Asked: " + ASKED_SEPARATOR.join(clip(a, 160) for a in asked), 360))
    at = len(lines)  # the outcome goes here, in what room the other lines leave it
    branch = next((t.branch for t in reversed(turns) if t.branch), None) or state.branch
    if branch:
        lines.append(f"{BRANCH}: {branch}")
    if state.commits:
        lines.append(fit([f"{c['hash']} {c['message']}" + (f" ({c['changed']})" if c["changed"] else "")
                          for c in state.commits[::-1]], 300 - len("Commits: "), "; ").join(["Commits: ", ""]))
    if state.pushes:
        lines.append(clip("Pushed: " + "; ".join(_push_text(p) for p in state.pushes), 300))
    if state.prs:
        lines.append(f"{PULL_REQUESTS}: " + "; ".join(f"#{p['n']} {p['state']}" for p in state.prs))
    if tests:
        lines.append("Tests: " + fit([f"`{v.get('shown', k)}` run {v['runs']}x, " + _last_state(v)
                                      for k, v in tests.items() if v.get("last", "x")], 300, "; "))
    left = [rel(p) for p in state.since_commit
            if (is_code(p) or p.endswith(_TRACKED_DOCS)) and not rel(p).startswith("/")]
    if left:
        when = "after the session's last commit" if state.committed else "the session made no commit"
        lines.append(f"{UNCOMMITTED}: " + fit(left, 240, ", ") + f" ({when})")
    if files:
        shown: list[str] = []
        for path, n in files:
            entry = rel(path) + (f" ({n} edits)" if n > 1 else "")
            if sum(len(s) + 2 for s in shown) + len(entry) > 600:
                break
            shown.append(entry)
        more = f", and {len(files) - len(shown)} more" if len(files) > len(shown) else ""
        lines.append("Files changed: " + ", ".join(shown) + more)
    if others:
        lines.append(clip("Commands: " + ", ".join(f"`{k}` x{v['runs']}" for k, v in others[:8]), 180))
    unresolved = _unresolved(turns)
    if unresolved:
        lines.append(f"{UNRESOLVED}: {unresolved}")
    upcoming = distinct([item for t in turns[-2:] for item in next_steps(t.final)])
    if upcoming:
        lines.append(f"{NEXT}: " + fit(upcoming, 420, " · "))
    if state.untried:
        lines.append(clip(f"{UNTRIED}: " + ", ".join(rel(p) for p in state.untried), 240))
    decisions = [(q, a) for t in turns for q, a in t.answers]
    if decisions:
        lines.append(clip("Decisions: " + "; ".join(f"asked \"{clip(q, 120)}\", the user answered \"{a}\""
                                                     for q, a in decisions[:3]), 360))
    still = [f"`{k}` ({e['reason']})" for k, e in state.errors.items() if e["fixed"] is False
             and e.get("base", k) not in INSPECTIONS
             and command_label(e.get("base", k)) not in ("Run", "Start the app")]
    fixed = [f"`{k}`" for k, e in state.errors.items() if e["fixed"] is True]
    if still:
        lines.append(clip(f"{STILL_FAILING}: " + "; ".join(still), 300))
    if fixed:
        lines.append(clip("Failed, then passed later in the session: " + ", ".join(fixed), 160))
    if state.failures:
        lines.append(clip("Other tool errors: " + "; ".join(state.failures), 360))
    named = list(dict.fromkeys([*state.saved, *saved]))
    if named:
        lines.append(clip("Memories saved: " + "; ".join(named), 150))
    room = SUMMARY_MAX_CHARS - sum(len(line) + 1 for line in lines) - len(OUTCOME) - 2
    refused = {path.rsplit("/", 1)[-1] for path in _refused_writes(state)}
    outcome = "" if refused and not state.files else outcome_of(  # its only writes were refused: nothing came
        turns, max(MIN_OUTCOME_CHARS, min(room, OUTCOME_CHARS)),
        keep=lambda s: not (still and CLAIM.search(s)) and not any(f in s for f in refused))
    if outcome:
        lines.insert(at, f"{OUTCOME}: {outcome}")
    room -= len(outcome) + len(REPORTED) + 2
    reported = digest(session_reports(turns), max(0, min(room, REPORTED_CHARS)))
    if reported:  # what the reports named, tables and lists included: found by search, not shown in the briefing
        lines.append(f"{REPORTED}: {reported}")
    report = next((t.final for t in reversed(turns) if len(t.final) >= 40), "")
    if asked:
        title = "Session: " + clip(asked[0], 90)
    elif files:
        title = "Session: edited " + ", ".join(rel(p).rsplit("/", 1)[-1] for p, _ in files[:3])
    elif state.commands:
        title = "Session: ran " + ", ".join(f"`{k}`" for k in list(state.commands)[:3])
    else:
        title = "Session: " + clip(plain(report), 90)
    lines = [_withheld_line(relative_to(line, cwd)) for line in lines]
    return _withheld_line(title), "\n".join(lines)[:SUMMARY_MAX_CHARS]


OUTCOME_SEPARATOR = " · "
ASKED_SEPARATOR = " · "  # between the prompts of the Asked line (a prompt may hold " / " itself)


def whole(text: str, limit: int) -> str:
    """`text` on one line when it fits in `limit` characters, else its first sentence when that fits, else ''."""
    flat = " ".join(plain(text).split())
    if len(flat) <= limit:
        return flat
    first = re.split(r"(?<=[.!?])\s+", flat, maxsplit=1)[0]
    return first if len(first) <= limit else ""


def outcome_of(turns: list[Turn], limit: int, keep: Any = None) -> str:
    """What came of a session: the lead sentences of its turns' reports (each turn's final reply, and the longest
    structured reports it gave on the way), taken from the last turn back (the latest state first) while they fit
    whole in `limit`, shown in the order they were written. One state per fact: an earlier statement that names
    nothing a later chosen one does not is left out (the first fix, replaced by the next). `keep`: which
    statements may be shown at all."""
    chosen: list[tuple[int, int, list[str]]] = []
    covered: set[str] = set()
    used = 0
    for index in range(len(turns) - 1, -1, -1):
        reports = _turn_reports(turns[index])
        disputed = index + 1 < len(turns) and disputes(turns[index + 1], turns[index])
        for order, report in enumerate(reports):
            # a result the next turn disputes, or that the turn's own final reply takes back, keeps only the
            # statements that name something and claim no success
            doubted = disputed or order > 0 and bool(CONCEDES.match(reports[0]))
            sentences = []
            for sentence in lead(report, TURN_LEAD_CHARS):
                named = {n for n in names(sentence) if not n.isdigit()}
                if keep is not None and not keep(sentence) or any(sentence in group for _, _, group in chosen):
                    continue
                if doubted and (CLAIM.search(sentence) or not named or SAYS_CHANGE.match(sentence)):
                    continue  # what it found may still stand; what it changed, and how well that went, do not
                if named and named <= covered:
                    continue  # a later statement already says where these things stand
                sentences.append(sentence)
            cost = sum(len(s) + len(OUTCOME_SEPARATOR) for s in sentences)
            if sentences and used + cost <= limit:
                chosen.append((index, -order, sentences))
                covered |= {n for s in sentences for n in names(s) if not n.isdigit()}
                used += cost
    return OUTCOME_SEPARATOR.join(s for _, _, group in sorted(chosen) for s in group)


def disputes(turn: Turn, previous: Turn) -> bool:
    """Whether `turn` says the `previous` turn's result did not hold: its prompt reports that the thing still does
    not work, the agent's first reply of it concedes ("You're right, ..."), or it edits again a file the previous
    turn edited (the state that turn reported was not the last)."""
    own = [r for r in turn.replies if r not in turn.delegated]
    again = bool(set(turn.edited) & set(previous.edited))
    return bool(again or COMPLAINT.search(turn.prompt) or own and CONCEDES.match(plain(own[0])))


def _refused_writes(state: SessionState) -> list[str]:
    """The files whose write or edit failed in the session and that no later edit changed."""
    out = []
    for failure in state.failures:
        found = re.match(r"(?:Write|Edit|MultiEdit) of (\S+?):", failure)
        if found and not any(path.endswith("/" + found.group(1)) or path == found.group(1) for path in state.files):
            out.append(found.group(1))
    return out


REPORT_MIN_CHARS = 800  # a reply this long, with headings or a list, is a report of its own within a turn


def _turn_reports(turn: Turn) -> list[str]:
    """A turn's reports, latest first: its final reply, then its two longest structured replies of the turn's second
    half (an exploration at its start says what was found, not what came of the work); then, when none of these
    says what caused the problem, where the agent said it last in the turn (`_cause`)."""
    own = [r for r in turn.replies if r not in turn.delegated]  # a sub-agent's report is not the agent's
    final = own[-1] if own else ""
    late = own[len(own) // 2:-1]  # a report late in the turn says what came of it
    structured = [r for r in late if len(r) >= REPORT_MIN_CHARS
                  and (re.search(r"^\s*#{1,6} |^\s*\*\*[^*]+\*\*\s*$", r, re.MULTILINE)
                       or len(re.findall(r"^\s*(?:[-*]|\d+\.)\s", r, re.MULTILINE)) >= 3)]
    longest = sorted(structured, key=len, reverse=True)[:2]
    # where the agent found what caused the problem, when its reports do not say it
    cause = ""
    if not any(CAUSE.search(r) for r in (final, *longest)):
        cause = next((found for r in reversed(own[:-1]) if (found := _cause(r))), "")
    return [r for r in (final, *longest, cause) if r]


CAUSE_CHARS = 360


def _cause(reply: str) -> str:
    """The last place in a reply where the agent says what caused a problem: that sentence and the two after it
    (after "I see the issue!" comes the issue), within CAUSE_CHARS; '' when it says none."""
    said = [s for block in plain(reply).split("\n") for s in sentences(block)]
    at = next((i for i in range(len(said) - 1, -1, -1) if CAUSE.search(said[i])), None)
    return fit(said[at:at + 3], CAUSE_CHARS) if at is not None else ""


_GO_ON = re.compile(r"^\W*(?:continue|go on|go ahead|proceed|keep going|retry|try again|again|y|yes|yes go|ok|okay|"
                    r"weiter|mach weiter|ja|oui|continuer|sí|si|continúa)\W*$", re.IGNORECASE)
_RETRY = re.compile(r"^\W*(?:continue|go on|proceed|keep going|retry|try again|again|weiter|mach weiter|continuer|"
                    r"continúa)\W*$", re.IGNORECASE)
_ENDINGS = {"interrupted": "interrupted by the user", "rejected": "the user rejected the agent's tool call",
            "api-error": "the client's API call failed"}


def _unresolved(turns: list[Turn]) -> str:
    """The request the session ended on without a result: its last turn was interrupted, failed with an API error,
    had its tool call rejected, or got no reply at all. "continue" after such a failure is the same request."""
    if not turns:
        return ""
    last = turns[-1]
    if last.ended not in _ENDINGS and (last.replies or last.tool_results):
        return ""  # it was answered, or its tool calls came back (the reply may be what the log missed)
    index = len(turns) - 1
    while index > 0 and turns[index - 1].ended and _RETRY.match(turns[index].prompt):
        index -= 1  # "continue" after a failed turn asks for the same thing again
    request = turns[index].prompt
    if _GO_ON.match(request) and index > 0:  # "yes go": what it agreed to is the previous turn's proposal
        proposal = lead(turns[index - 1].final, 200)
        request = f"{request}\" after \"{proposal[0]}" if proposal else request
    request = " ".join(plain(short_urls(request)).split())
    if len(request) > 200:
        first = re.split(r"(?<=[.!?])\s+", request)[0]
        request = first if len(first) <= 200 else ""
    what = _ENDINGS.get(last.ended, "no reply was recorded")
    if last.ended == "api-error":
        detail = next((m for t in turns[index:] if t.error and (m := _error_message(t.error))), "")
        what = f"{what} ({detail})" if detail else what
    attempts = len(turns) - index
    again = f", {attempts} attempts" if attempts > 1 else ""
    return f"\"{request}\": {what}{again}" if request else f"the last request: {what}{again}"


def _error_message(text: str) -> str:
    """The message of a client's API error line (`API Error: 400 {"error": {"message": "..."}}`), whole."""
    found = re.search(r'"message"\s*:\s*"((?:[^"\\]|\\.){3,240})"', text)
    message = found.group(1).replace('\\"', '"') if found else re.sub(r"\{.*", "", text).strip()
    return message if len(message) <= 240 else ""


def _withheld_line(line: str) -> str:
    """A summary line that reads as instructions to an AI agent (a payload in stderr, a commit message, a pasted
    text) keeps its label only."""
    label, sep, _ = line.partition(": ")
    return line if withhold_instructions(line) == line else f"{label}{sep or ': '}{WITHHELD}"


def _unchanged_dropped(conn: Any, project: str | None, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items whose key has no latest memory with the same content yet (nothing to re-embed otherwise)."""
    out = []
    for item in items:
        row = memory_reads.latest_by_key(conn, item["key"], project, "content_hash")
        if row is None or row[0] != remember.content_hash(remember.check_content(item["content"])):
            out.append(item)
    return out


def due_sessions(conn: Any, now: float, limit: int = 20) -> list[Any]:
    """Sessions to summarise: asked for (stop / end / compaction) or idle with observations not yet folded in."""
    return sessions.due(conn, now - IDLE_SECONDS, limit)


def summarize_session(store: Parts, session: Any, *, llm: LLM | None = None) -> bool:
    """Fold a session's new observations into its summary; returns whether a summary was written.

    The summary, the session's new `summarized_upto` and the running state commit in one transaction,
    guarded by the old `summarized_upto`, so a concurrent or repeated run never folds anything twice.
    """
    conn = store.conn
    session_id = session["id"]
    expected = session["summarized_upto"]
    state = SessionState.from_json(meta.get(conn, meta.summary_state(session_id)))
    if state.upto != expected:  # the state was lost: fold again from the start
        state = SessionState()
    before = state.upto
    for row in observations.of_session_after(conn, session_id, state.upto, FOLD_BATCH):
        if row["status"] == "pending":
            break  # keep the order: wait until it is compressed
        if row["status"] == "compressed":
            state.fold(parse_observation(row))
        state.upto = max(state.upto, row["id"])
    if state.upto == before and not session["needs_summary"]:
        return False
    saved = memory_reads.knowledge_titles(conn, session_id, 5)
    prepared = []
    turns = read_turns(transcript_path(conn, session_id)) if state.upto != before else []
    tree = worktree_root(session["cwd"]) or session["project"]
    commit = head_commit(tree)  # what is checked out where the session's files are looked up
    if (state.says_something or turns) and state.upto != before:
        title, content = render(state, tree, saved, turns)
        if llm is not None:
            title, content = _narrate(llm, title, content)
        prepared = prepare_saves(store, [{
            "content": content, "title": title, "tier": "episodic", "type": "summary", "project": session["project"],
            "session_id": session_id, "source": "consolidation", "confidence": SUMMARY_CONFIDENCE, "importance": 0.6,
            "key": f"session-summary:{session_id}", "source_ids": [f"obs:{i}" for i in state.sources],
            "vector_text": content[:SUMMARY_VECTOR_CHARS],
            "files": summary_files(state.files, content, tree, session["project"]), "commit": commit,
            "created_at": state.last_at or store.now(), "valid_from": session["started_at"]}])
        notes = [{**item, "commit": commit} for item in turn_memories(turns, session, state.last_at, tree)]
        prepared += prepare_saves(store, _unchanged_dropped(conn, session["project"], notes))
    with store.transaction() as tx:
        if sessions.summarized_upto(tx, session_id) != expected:
            return False
        results = write_saves(tx, store, prepared)
        memory_id = results[0].id if results and results[0] else None
        again = observations.stop_after(tx, session_id, state.upto, STOP_EVENTS)
        sessions.mark_summarized(tx, session_id, state.upto, needs_summary=again, summary_memory_id=memory_id)
        meta.put(tx, meta.summary_state(session_id), state.to_json())
    store.indexer.drain()
    return bool(results) and results[0] is not None and results[0].action != "duplicate"


def summarize_due(store: Parts, *, llm: LLM | None = None, now: float | None = None) -> int:
    """Summarise every session that is due; returns how many summaries were written."""
    now = store.now() if now is None else now
    return sum(summarize_session(store, session, llm=llm) for session in due_sessions(store.conn, now))


def _narrate(llm: LLM, title: str, content: str) -> tuple[str, str]:
    from .llm import need, need_text

    def validate(answer: Any) -> tuple[str, str]:
        answer = need(answer, dict, "the answer")
        return need_text(answer.get("title"), "title", 100, 3), need_text(answer.get("narrative"), "narrative", 450, 10)

    told = llm.ask_json("summary", NARRATIVE_SYSTEM, content, validate, max_tokens=300)
    if told is None:
        return title, content
    return "Session: " + told[0], f"{told[1]}\n{content}"[:SUMMARY_MAX_CHARS]


# -- with an LLM: merging summaries, reflection -----------------------------------------------------

MERGE_MIN_SUMMARIES = 5
MERGE_LATEST = 20
REFLECT_THRESHOLD = 20.0  # summed importance (0..1 each) of the observations since the last reflection
FACT_TYPES = ("fact", "pattern", "decision", "architecture", "preference")
MERGE_SYSTEM = """You consolidate a coding agent's long-term memory of one software project. From the session
summaries given, extract durable knowledge that will help in later sessions: facts, conventions, architecture,
decisions, preferences, and workflows (how things are done here, as steps). Keep only what the summaries
support; cite the summary ids each item comes from. To update an existing item, reuse its exact title.
Return {"facts": [{"title": "...", "content": "...", "type": "fact|pattern|decision|architecture|preference",
"sources": ["m_..."]}], "workflows": [{"title": "...", "steps": "...", "sources": ["m_..."]}]}"""
QUESTIONS_SYSTEM = """You help a coding agent reflect on its recent work in one project. Given its recent memories,
what are the 3 most salient high-level questions that can be answered from them (about how the project works,
recurring problems, the user's preferences)? Return {"questions": ["...", "...", "..."]}"""
INSIGHTS_SYSTEM = """You help a coding agent reflect. For each question, statements from its memory are given with
their ids. Write up to 5 high-level insights these statements support, each citing the ids it rests on.
Return {"insights": [{"content": "...", "sources": ["m_..."]}]}"""


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "item"


def merge_summaries(store: Parts, project: str | None, llm: LLM) -> int:
    """Semantic merge of the latest 20 session summaries (once there are 5+) into facts and workflows."""
    from .llm import need, need_ids, need_text

    rows = memory_reads.latest_summaries(store.conn, project, MERGE_LATEST)
    mark_name = meta.merged(project)
    mark = hashlib.sha256(" ".join(r["id"] for r in rows).encode()).hexdigest()
    if len(rows) < MERGE_MIN_SUMMARIES or meta.get(store.conn, mark_name) == mark:
        return 0
    ids = [r["id"] for r in rows]
    existing = memory_reads.merged_titles(store.conn, project)
    prompt = "Session summaries:\n" + "\n\n".join(f"[{r['id']}] {r['content'][:900]}" for r in rows)
    if existing:
        prompt += "\n\nExisting items (reuse a title to update it):\n" + "\n".join(f"- {t}" for t in existing[:40])

    def validate(answer: Any) -> list[Derived]:
        answer = need(answer, dict, "the answer")
        items = []
        for fact in need(answer.get("facts", []), list, "facts")[:12]:
            fact = need(fact, dict, "a fact")
            kind = fact.get("type") if fact.get("type") in FACT_TYPES else "fact"
            title = need_text(fact.get("title"), "title", 120, 3)
            items.append(Derived(f"merge:{slug(title)}", "semantic", kind, title,
                                 need_text(fact.get("content"), "content", 800, 10), [], [],
                                 memory_sources=need_ids(fact.get("sources"), ids, "sources")))
        for flow in need(answer.get("workflows", []), list, "workflows")[:6]:
            flow = need(flow, dict, "a workflow")
            title = need_text(flow.get("title"), "title", 120, 3)
            items.append(Derived(f"workflow:llm:{slug(title)}", "procedural", "workflow", title,
                                 need_text(flow.get("steps"), "steps", 1200, 10), [], [], importance=0.6,
                                 memory_sources=need_ids(flow.get("sources"), ids, "sources")))
        return items

    calls = llm.calls
    items = llm.ask_json("merge", MERGE_SYSTEM, prompt, validate, max_tokens=2000)
    if llm.calls > calls:  # asked (answered or not): not again until the summaries change
        set_mark(store, mark_name, mark)
    return upsert_derived(store, project, items) if items else 0


def reflect(store: Parts, project: str | None, llm: LLM) -> int:
    """When enough has happened since the last reflection, ask high-level questions about the recent
    memories, answer them from retrieved memories, and store the insights with their sources."""
    from ..models import SearchRequest
    from ..recall.retrieval import search
    from .llm import need, need_ids, need_text

    conn = store.conn
    mark_name = meta.reflected(project)
    since = meta.get(conn, mark_name) or 0
    total, last = observations.compressed_since(conn, project, since)
    if last is None or total < REFLECT_THRESHOLD:
        return 0
    recent = memory_reads.recent_known(conn, project, 30)
    if not recent:
        return 0
    calls = llm.calls
    questions = llm.ask_json(
        "reflect", QUESTIONS_SYSTEM, "Recent memories:\n" + "\n".join(f"- {r['content'][:400]}" for r in recent),
        lambda a: [need_text(q, "question", 300, 5) for q in need(need(a, dict, "answer").get("questions"),
                                                                   list, "questions")[:3]], max_tokens=400)
    evidence: dict[str, str] = {}
    for question in questions or []:
        for hit in search(store, SearchRequest(question, project=project, limit=6, record_access=False)).hits:
            evidence.setdefault(hit.id, f"{hit.title}: {hit.snippet}")
    insights = None
    if evidence:
        prompt = "Questions:\n" + "\n".join(f"- {q}" for q in questions or []) + "\n\nStatements:\n" + "\n".join(
            f"[{i}] {text[:400]}" for i, text in evidence.items())

        def validate(answer: Any) -> list[Derived]:
            found = []
            for insight in need(need(answer, dict, "answer").get("insights"), list, "insights")[:5]:
                insight = need(insight, dict, "an insight")
                content = need_text(insight.get("content"), "content", 600, 10)
                found.append(Derived(f"insight:{slug(content)}", "semantic", "pattern",
                                     remember.derive_title(content), content, [], [], importance=0.6,
                                     memory_sources=need_ids(insight.get("sources"), evidence, "sources")))
            return found

        insights = llm.ask_json("reflect", INSIGHTS_SYSTEM, prompt, validate, max_tokens=1200)
    if llm.calls > calls:
        set_mark(store, mark_name, last)
    return upsert_derived(store, project, insights) if insights else 0
