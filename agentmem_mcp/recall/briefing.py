"""The session-start briefing: a handoff a developer would write for the next session, from facts.

In order of value:
1. **Where the last session left off**: its request and what came of it (the lead sentences of the agent's last
   reports, whole), the branch, commits and where they were pushed, pull requests, the tests' last state, the files
   left uncommitted, the request it ended on without an answer, what the agent said is next; then the working tree
   as it is now (read at session start), so the handoff is never stale.
2. **How to build, test and run**: the project's own commands, in the form they ran, with their last result.
3. **Always keep in mind**: pinned and P0 memories; **the user's standing instructions** in the user's own words;
   **decisions** (the user's answers to the agent's questions).
4. **Gotchas**: a command that failed and the changed form that worked.
5. **Earlier sessions**, oldest first, one line each; **files in play**.

Every line is a whole statement: a sentence or a file name that does not fit is left out, never cut. Runs in the
hook process: SQLite only, no embedding model.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import replace
from typing import Any

from ..capture.clients import NAMES as CLIENT_NAMES
from ..capture.transcript import mentioned_paths
from ..db import memories, sessions
from ..db.connection import Connection
from ..db.memories import MemoryFilter
from ..lifecycle import (
    BRANCH,
    MCP_SERVERS,
    NEXT,
    OUTCOME,
    PULL_REQUESTS,
    STILL_FAILING,
    UNCOMMITTED,
    UNRESOLVED,
    UNTRIED,
)
from ..lifecycle.commands import command_label, normalize_command
from ..lifecycle.reports import COMPLAINT, NAMES_CHANGE, fit, names, sentences, versions
from ..lifecycle.retention import retention
from ..trust.policy import typed_by_user
from .anchors import FreshRows, missing_files, relative, stale_note
from .context import (
    COLUMNS,
    EMPTY_PROJECT,
    HEADER,
    SECTION_LIMITS,
    ContextLine,
    _line,
    _pack,
    _tail,
    _team_lines,
    _unsummarised,
)
from .git_state import TreeState
from .ranking import humanize_age

LAST = "Where the last session left off"
COMMANDS = "How to build, test and run"
INSTRUCTIONS = "The user's standing instructions"
DECISIONS = "Decisions"
GOTCHAS = "Gotchas: what failed, and the form that worked"
EARLIER = "Earlier sessions (oldest first)"
FILES = "Files in play"
SAVED = "Saved knowledge"
SAVED_SOURCES = ("user", "agent", "import")  # what someone chose to remember, not what the rules derived
# how much of the last session's outcome and of each earlier session's line the briefing may show, from the most
# to the least detail; it takes the most that leaves every line of more value in
# (the last session's outcome, each earlier session's), in characters
DETAIL_LEVELS = ((1600, 720), (1600, 520), (1600, 360), (1400, 300), (1100, 240), (800, 180), (600, 140), (420, 100),
                 (300, 80))
EARLIER_SESSIONS = 6
SUMMARIES_READ = 12
OUTCOME_SEPARATOR = " · "
_COMMIT_ITEM = re.compile(r"^([0-9a-f]{7,12}) ")


def summary_parts(content: str) -> dict[str, str]:
    """The labelled lines of a session summary (`Label: text`), by label."""
    parts = {}
    for line in content.split("\n"):
        head, _, rest = line.partition(": ")
        if rest:
            parts[head] = rest
    return parts


def outcome_pieces(text: str) -> list[str]:
    """A summary's outcome as whole statements: its " · "-joined pieces, a long piece cut into its sentences."""
    out: list[str] = []
    for piece in text.split(OUTCOME_SEPARATOR):
        out.extend(sentences(piece) if len(piece) > 300 else [piece])
    return [p.strip() for p in out if p.strip()]


def _started(row: Any) -> float:
    return row["valid_from"] or row["created_at"] or 0.0


def _items(text: str, sep: str = "; ") -> list[str]:
    return [item.strip() for item in text.rstrip("…").split(sep) if item.strip() and not item.endswith("…")]


def handoff_lines(row: Any, tree_state: TreeState | None, tree: str | None, project: str | None, now: float,
                  outcome_chars: int) -> list[str]:
    """The last session's handoff, one statement a line (the summary `row`'s labelled parts, and the tree now)."""
    parts = summary_parts(row["content"])
    asked = _asked(row, parts)
    gone = missing_files(row, tree, project)
    stale = f"; {stale_note(gone, row['anchor_commit'], 3)}" if gone else ""
    branch = f", on branch {parts[BRANCH]}" if BRANCH in parts else ""
    when = f"{_client(row)}{humanize_age(now - _ended(row))}, {row['events'] or 0} events{branch}{stale}"
    out = [f"- Asked: {asked} ({when})" if asked else f"- The last session: {when}"]
    if OUTCOME in parts:
        upcoming = parts.get(NEXT, "")
        outcome = fit([p for p in outcome_pieces(parts[OUTCOME]) if p not in upcoming], outcome_chars, " ")
        if outcome:
            out.append(f"- What came of it (the agent's report): {outcome}")
    commits = _items(parts.get("Commits", ""))
    if commits:
        out.append("- Committed: " + fit(commits, 300, "; "))
    pushed = _items(parts.get("Pushed", ""))
    prs = parts.get(PULL_REQUESTS)
    if pushed or commits:
        where = ("pushed " + fit(pushed, 220, "; ")) if pushed else "not pushed in the session"
        requests = f"pull requests: {prs}" if prs else "no pull request opened in the session"
        out.append(f"- {where[0].upper()}{where[1:]}; {requests}.")
    elif prs:
        out.append(f"- Pull requests: {prs}.")
    still = parts.get(STILL_FAILING, "")
    failing = [t for t in _items(parts.get("Tests", "")) if "last run failed" in t
               and f"{t.split(' run ', 1)[0]} (" not in still  # said once, in "Still failing at the end"
               and (t.split("last run failed", 1)[1].strip(" ()") or "\0") not in still]
    if failing:  # a passing run is in the commands' section already
        out.append("- Tests: " + fit(failing, 300, "; "))
    if UNCOMMITTED in parts:
        out.append(f"- {UNCOMMITTED}: {parts[UNCOMMITTED]}")
    if STILL_FAILING in parts:
        out.append("- Still failing at the end: " + fit(_items(parts[STILL_FAILING]), 260, "; "))
    if UNRESOLVED in parts:
        out.append(f"- Unresolved: {parts[UNRESOLVED]}")
    if NEXT in parts:
        out.append("- Next, in the agent's words: " + fit(parts[NEXT].split(OUTCOME_SEPARATOR), 420, " "))
    elif UNTRIED in parts:
        out.append(f"- Edited last and not run since: {parts[UNTRIED].rstrip('…')}")
    return [line for line in out if not line.endswith(": ")]


ASKED_CHARS = 160


_ACK = re.compile(r"^\W*(?:y|yes|yep|ok|okay|sure|go|go ahead|continue|proceed|thanks?|ja|oui|sí|si)\b\W*"
                  r"(?:lets? (?:begin|go|start)|do it|please)?\W*$|^\W*(?:yes|ok|okay),? (?:lets?|let's) ",
                  re.IGNORECASE)


def _asked(row: Any, parts: dict[str, str], prompts: int = 2) -> str:
    """What the session was asked, in the user's words: its first prompts short enough to show whole, not an
    approval or a "continue" ('' when none is)."""
    said = parts.get("Asked", "")
    separator = " · " if " · " in said else " / "  # summaries written before the separator changed used " / "
    asked = [a for a in said.split(separator) if a and len(a) <= ASKED_CHARS and not a.endswith("…")
             and not _ACK.match(a)]
    if asked:
        return "\"" + "\" / \"".join(asked[:prompts]) + "\""
    title = row["title"].removeprefix("Session: ")
    typed = "Asked" in parts and not title.startswith(("edited ", "ran "))  # not a title the rules made up
    return f"\"{title}\"" if typed and not title.endswith("…") and len(title) <= ASKED_CHARS else ""


_ASKED = re.compile(r'^(?:The agent asked: "(.*)" |Among the agent\'s options, )The user (decided|picked): "(.*)"$',
                    re.DOTALL)
DECISION_CHARS = 320
# a question about how the session goes on (whether to go ahead, in what order), not about what the project is: an
# option of the agent's picked in answer steered that session and is no decision for the next ones (the user's own
# words in answer may be: "main was clean; fix the issues")
_STEERING = re.compile(
    r"\b(?:how (?:should|shall|do|would you like|want) (?:we|i|me to) (?:proceed|continue|go on|start)|"
    r"(?:should|shall) (?:i|we)\b|(?:do|would) you (?:want|like) me to|want me to|"
    r"wie (?:sollen|wollen|möchtest du|soll ich) (?:wir |ich )?(?:vorgehen|weitermachen|fortfahren)|"
    r"soll(?:en)? (?:ich|wir)\b|möchtest du,? dass ich|"
    r"comment (?:veux-tu|voulez-vous|dois-je|devons-nous) (?:procéder|continuer)|dois-je|devons-nous|"
    r"(?:veux-tu|voulez-vous) que je|cómo (?:quieres|debo|debemos) (?:proceder|seguir)|¿?debo\b|quieres que)",
    re.IGNORECASE)
_PICKING = re.compile(r"^\W*(?:which|what|welche[rs]?|was|quel(?:le)?s?|qué|cuál(?:es)?)\b", re.IGNORECASE)


def _steering(question: str) -> bool:
    """Whether a question asks whether or how to go on (not which thing to pick)."""
    return any(_STEERING.search(part) and not _PICKING.match(part)
               for part in re.split(r"(?<=[.!?])\s+", question))


def _decision(row: Any) -> str | None:
    """A decision in one whole line: the user's answer, then the question it answered (its last sentence when the
    whole is too long); None when the answer itself does not fit whole, or is one of the agent's options picked
    in answer to whether or how the session should go on. Other decisions are shown as written."""
    found = _ASKED.match(row["content"])
    if not found:
        text = " ".join(row["content"].split())
        return text if len(text) <= DECISION_CHARS and not text.endswith("…") else None
    question, verb, answer = (" ".join((g or "").split()) for g in found.groups())
    if any(part.rstrip().endswith("?") for part in re.split(r"(?<=[.!?:])\s+", answer.rstrip("…"))):
        return None  # the user asked back: no choice was made
    if _steering(question) and verb == "picked":
        return None  # how that session went on, picked among the agent's own options
    if answer.endswith("…") or len(answer) > DECISION_CHARS - 40:
        answer = re.split(r"(?<=[.!?])\s+", answer, maxsplit=1)[0]
        if answer.endswith("…") or len(answer) > DECISION_CHARS - 40:
            return None
    if question in ("", "which option"):  # a choice among options the agent listed
        return f"The user chose \"{answer}\""
    for asked in (question, re.split(r"(?<=[.!?])\s+", question)[-1]):
        line = f"The user decided \"{answer}\" when asked \"{asked}\""
        if len(line) <= DECISION_CHARS and not asked.endswith("…"):
            return line
    return f"The user decided \"{answer}\""


def _client(row: Any) -> str:
    """"Codex, ": the client a session ran in, when known."""
    client = row["client"] if "client" in row.keys() else None
    return f"{CLIENT_NAMES.get(client, client)}, " if client else ""


def _ended(row: Any) -> float:
    return row["created_at"] or row["updated_at"] or 0.0


def tree_line(state: TreeState | None, tree: str | None, project: str | None) -> str | None:
    """The working tree as it is now, in one line."""
    if state is None:
        return None
    where = f"branch `{state.branch}`" if state.branch else f"a detached HEAD at {state.commit or '?'}"
    bits = [where]
    if state.upstream:
        apart = [f"{state.ahead} commit{'s' if state.ahead != 1 else ''} not pushed" if state.ahead else "",
                 f"{state.behind} behind" if state.behind else ""]
        apart = [a for a in apart if a]
        bits.append(f"{', '.join(apart)} ({state.upstream})" if apart else f"in step with {state.upstream}")
    elif state.branch:
        bits.append("no upstream branch")
    for label, files in (("changed and not committed", state.changed), ("untracked", state.untracked)):
        if files:
            shown = fit(files, 160, ", ")
            more = len(files) - (shown.count(", ") + 1 if shown else 0)
            bits.append(f"{len(files)} {label}" + (f" ({shown}{', and more' if more else ''})" if shown else ""))
    if not state.changed and not state.untracked:
        bits.append("nothing uncommitted")
    return "- The working tree now: " + "; ".join(bits) + "."


def _session_line(row: Any, now: float, chars: int, last: bool, pieces: list[str] | None = None) -> str:
    """One earlier session: when, what was asked, its commits, the lead of what came of it (`pieces`: its outcome's
    statements that later sessions did not supersede)."""
    parts = summary_parts(row["content"])
    asked = _asked(row, parts, prompts=1)
    head = f"- ({_client(row)}{humanize_age(now - _ended(row))})" + (f" asked {asked}" if asked else "") \
        + (" (the last session)" if last else "")
    pieces = outcome_pieces(parts.get(OUTCOME, "")) if pieces is None else pieces
    chosen = fit(pieces[::-1], chars, "\n").split("\n") if pieces else []  # the latest statements are kept first
    outcome = " ".join(p for p in pieces if p in chosen)  # shown in the order they were written
    commits = [c for c in _items(parts.get("Commits", "")) if _COMMIT_ITEM.match(c)]
    kept = [c for c in commits if c in fit(commits, max(80, chars // 3), "\n").split("\n")]
    if commits and not kept and len(commits[0]) <= max(120, chars // 2):
        kept = commits[:1]  # the newest commit whole
    others = ", ".join(c.split()[0] for c in commits if c not in kept)  # the rest by their hashes
    fitted = "; ".join(kept) + ("; and " if kept and others else "") + others
    committed = f" Committed {fitted}." if fitted else ""
    changed = _files_changed(parts, chars // 3) if chars >= 300 else ""
    unresolved = parts.get(UNRESOLVED, "")
    request, said, how = unresolved.rpartition('": ')
    if not COMPLAINT.search(request):
        unresolved = ""  # a later session may have taken the request up; a problem the user reported stays said
    elif len(unresolved) > chars // 2 or request.lstrip('"') in asked:
        unresolved = how  # the request is in the head already: how it ended is what is left to say
    ended = f" It ended without a result: {unresolved}." if unresolved and len(unresolved) <= chars // 2 else ""
    tests = "" if outcome or committed else fit(_items(parts.get("Tests", "")), chars // 3, "; ")
    ran = f" Tests: {tests}." if tests else ""  # with no report, what its test runs showed
    return head + (" —" if outcome or committed or ended or ran else "") + committed \
        + (f" {outcome}" if outcome else "") + ran + ended + (f" Files changed: {changed}." if changed else "")


def superseded(rows: list[Any]) -> dict[str, list[str]]:
    """Each session's outcome statements that no later session superseded, by memory id (`rows` newest first): a
    statement whose names a later session's statements all name again speaks of a state that has moved on, and so
    does a change made to a file a later session changed again."""
    covered: set[str] = set()
    versioned: dict[str, str] = {}
    changed_later: set[str] = set()
    out: dict[str, list[str]] = {}
    for row in rows:
        parts = summary_parts(row["content"])
        pieces = outcome_pieces(parts.get(OUTCOME, ""))
        kept = []
        for piece in pieces:
            named = {n for n in names(piece) if not n.isdigit()}
            moved = any(versioned.get(name, number) != number for name, number in versions(piece).items())
            redone = NAMES_CHANGE.search(piece) and any(_file_name(n) in changed_later for n in named)
            if not (named and named <= covered) and not moved and not redone:
                kept.append(piece)
        out[row["id"]] = kept
        covered |= {n for piece in pieces for n in names(piece) if not n.isdigit()}
        changed_later |= {_file_name(f) for f in _changed_files(parts)} - {""}
        for piece in pieces:
            for name, number in versions(piece).items():
                versioned.setdefault(name, number)
    return out


# "X instead of Y", "statt Y", "replaced Y": what follows the marker is what was given up
_INSTEAD = re.compile(r"\b(?:instead of|rather than|in place of|replac(?:ed|ing|es)|no longer(?: uses?)?|"
                      r"switched (?:away )?from|moved (?:away )?from|(?:an)?statt|anstelle von|nicht mehr|weg von|"
                      r"au lieu de|à la place de|en lugar de|en vez de)\s+(?P<given_up>(?:[^\s.,;:!?()]+[ \t]*){1,6})",
                      re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no|\w+n't|nicht|nie|kein\w*|ne|pas|jamais|nunca)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-zÀ-ÿ][\w.-]{3,}")


def _words(text: str) -> set[str]:
    return {w.lower().strip(".-") for part in _WORD.findall(text) for w in re.split(r"[-.]", part) if len(w) >= 4}


def _replacements(summaries: list[Any]) -> list[tuple[float, set[str]]]:
    """(when, words) of what each session summary's outcome says was given up ("ElevenLabs API instead of the
    voice server": {voice, server})."""
    out = []
    for row in summaries:
        for found in _INSTEAD.finditer(summary_parts(row["content"]).get(OUTCOME, "")):
            out.append((_started(row), _words(found.group("given_up"))))
    return out


def _since(row: Any, replaced: list[tuple[float, set[str]]]) -> list[set[str]]:
    """What sessions that started after the memory `row` was made say they gave up."""
    made = row["updated_at"] or row["created_at"] or 0.0
    return [words for when, words in replaced if when > made]


def reversed_later(content: str, given_up: list[set[str]]) -> bool:
    """Whether a correction or decision chose what a later session gave up: two or more of the words it uses without
    a negation before them are among what a later outcome says was replaced ("use the voice server" against "the
    ElevenLabs API instead of the voice server")."""
    if not given_up:
        return False
    stance = re.split(r"The agent agreed: |The user (?:decided|picked): ", content, maxsplit=1)[-1]  # what it chose
    chosen: set[str] = set()
    tokens = stance.split()
    for index, token in enumerate(tokens):
        if not _NEGATION.search(" ".join(tokens[max(0, index - 4):index])):
            chosen |= _words(token)
    return any(len(chosen & words) >= 2 for words in given_up)


def _changed_files(parts: dict[str, str]) -> list[str]:
    """The files a session summary says it changed, without their edit counts."""
    return [re.sub(r" \(\d+ edits?\)$", "", f) for f in parts.get("Files changed", "").split(", ")
            if f and not f.startswith("and ") and not f.endswith("…")]


def _file_name(path: str) -> str:
    """A path's file name, when it names a file (`src/panel/panel.html` -> `panel.html`), else ''."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return name if re.search(r"\w\.[A-Za-z0-9]{1,8}$", name) else ""


def _files_changed(parts: dict[str, str], chars: int) -> str:
    """The project files a session changed, most edited first, whole names within `chars`."""
    files = [f for f in parts.get("Files changed", "").split(", ") if f and not f.startswith("/")
             and not f.startswith("and ") and not f.endswith("…")]
    return fit(files, chars, ", ")


_PORT_TAKEN = re.compile(r"address already in use|port \d+ (?:is )?(?:already )?in use|EADDRINUSE|is port \d+ in use",
                         re.IGNORECASE)
_SHELL_TOOLS = ("`git ", "`gh ", "`curl ", "`wget ", "`ssh ", "`scp ")


def _gotcha(row: Any) -> bool:
    """A learned fix worth carrying: the command's own form changed (a flag, a variable, where it runs from), or a
    step run in between made it work; not a code change (that is the session's story), a plain retry, a server
    whose port was taken, or a git or network command whose fix names no file of the project."""
    content = row["content"]
    if not (row["key"] or "").startswith("bug:") or "What worked:" not in content or "after editing" in content \
            or " again." in content or _PORT_TAKEN.search(content):
        return False
    failed = content[1:].split("`", 1)[0] if content.startswith("`") else ""
    if command_label(normalize_command(failed) or "") == "Start the app":
        return False
    if content.startswith(_SHELL_TOOLS):
        return bool(mentioned_paths(content.split("What worked:", 1)[1]))
    return True


def briefing_lines(conn: Connection, project: str | None, now: float | None = None,
                   exclude_session: str | None = None, current_session: str | None = None,
                   tree: str | None = None, tree_state: TreeState | None = None) -> list[ContextLine]:
    """Candidate lines of the briefing, in order of value, each with its levels of detail (`ContextLine.variants`,
    most first). `tree`: the working tree the agent works in (default: the project's root); `tree_state`: what it
    says now."""
    now = time.time() if now is None else now
    tree = tree or project
    live = MemoryFilter(projects=[project, None], latest_only=True, with_quarantined=False, live_at=now)
    lines: list[ContextLine] = []
    seen: set[str] = set()
    if current_session:
        lines.extend(_unsummarised(conn, project, [current_session], now, "This session so far"))

    def add(section: str, row: Any, text: str) -> None:
        seen.add(row["id"])
        lines.append(ContextLine(section, text, row["id"], trusted=typed_by_user(row)))

    summaries = memories.session_summaries(conn, replace(live, tiers=("episodic",), types=("summary",)), COLUMNS,
                                           current_session, SUMMARIES_READ)
    summaries = sorted(summaries, key=_started, reverse=True)
    if summaries and not current_session:
        last = summaries[0]
        seen.add(last["id"])
        forms = [handoff_lines(last, tree_state, tree, project, now, outcome) for outcome, _ in DETAIL_LEVELS]
        for index, text in enumerate(forms[0]):
            variants = tuple(form[index] if index < len(form) else text for form in forms)
            lines.append(ContextLine(LAST, text, last["id"] if index == 0 else None, variants))
    state_line = tree_line(tree_state, tree, project)
    if state_line and summaries:
        lines.append(ContextLine(LAST, state_line))
    unsummarised = sessions.unsummarised(conn, project, leaving_out=(exclude_session, current_session))
    lines.extend(_unsummarised(conn, project, unsummarised, now, LAST))

    knowledge = memories.best_known(conn, replace(live, tiers=("semantic", "procedural"), min_confidence=0.3),
                                    COLUMNS, 200)
    fresh = FreshRows(knowledge, tree, project)
    for row in fresh.where(lambda r: r["tier"] == "procedural" and (r["key"] or "").startswith("workflow:"),
                           SECTION_LIMITS[COMMANDS]):
        age = humanize_age(now - (row["updated_at"] or row["created_at"]))
        add(COMMANDS, row, f"- {row['content']} (learned, {age})")
    for row in knowledge:
        if row["key"] == "toolchain" and f"{MCP_SERVERS}: " in row["content"]:
            add(COMMANDS, row, f"- {MCP_SERVERS}: " + row["content"].split(f"{MCP_SERVERS}: ", 1)[1])
    for row in memories.pinned(conn, live, COLUMNS, 30):
        if row["id"] not in seen and not missing_files(row, tree, project):
            add("Always keep in mind", row, _line(row, _tail(row, now), 400))
    replaced = _replacements(summaries)
    for row in fresh.where(lambda r: r["type"] == "preference" and r["id"] not in seen
                           and not reversed_later(r["content"], _since(r, replaced)),
                           SECTION_LIMITS[INSTRUCTIONS], order=lambda r: -(r["updated_at"] or r["created_at"])):
        add(INSTRUCTIONS, row, _line(row, _tail(row, now), 400))
    for row in fresh.where(lambda r: r["type"] == "decision" and r["id"] not in seen and _decision(r) is not None
                           and not reversed_later(r["content"], _since(r, replaced)),
                           SECTION_LIMITS[DECISIONS], order=lambda r: -(r["updated_at"] or r["created_at"])):
        add(DECISIONS, row, f"- {_decision(row)} {_tail(row, now)}")
    for row in fresh.where(lambda r: r["source"] in SAVED_SOURCES and r["id"] not in seen
                           and r["type"] not in ("preference", "decision"), SECTION_LIMITS[SAVED],
                           order=lambda r: -usefulness(r, now)):
        add(SAVED, row, _line(row, _tail(row, now), 300))
    for row in fresh.where(lambda r: _gotcha(r) and r["id"] not in seen, SECTION_LIMITS[GOTCHAS]):
        add(GOTCHAS, row, _line(row, _tail(row, now), 300))
    earlier = sorted(summaries[1:EARLIER_SESSIONS + 1], key=_started)
    current = superseded(summaries[:EARLIER_SESSIONS + 1])
    for row in earlier:
        seen.add(row["id"])
        variants = tuple(_session_line(row, now, chars, last=False, pieces=current[row["id"]])
                         for _, chars in DETAIL_LEVELS)
        if " —" not in variants[0] and "Files changed: " not in variants[0]:
            continue  # a request with nothing known to have come of it
        lines.append(ContextLine(EARLIER, variants[0], row["id"], variants))
    named = " ".join(line.text for line in lines)  # a file a line names already is not said again
    files = [f for f in _files_in_play(knowledge, summaries[:2], tree, project) if f not in named]
    if files:
        lines.append(ContextLine(FILES, "- " + ", ".join(files)))
    return lines


def _files_in_play(knowledge: list[Any], sessions_shown: list[Any], tree: str | None,
                   project: str | None) -> list[str]:
    """The project files changed most: those edited in several sessions, then those the last sessions changed."""
    counts: dict[str, float] = {}
    edited = [json.loads(r["files"] or "[]")[:12] for r in knowledge if r["key"] == "hot-files"]
    for row in sessions_shown:  # what the sessions changed, not every file their reports name
        edited.append(_changed_files(summary_parts(row["content"])))
    for weight, paths in zip([2.0] * (len(edited) - len(sessions_shown)) + [1.0] * len(sessions_shown), edited):
        for path in paths:
            shown = relative(path, tree, project)
            if shown.startswith("/") or missing_files({"files": json.dumps([path])}, tree, project):
                continue
            counts[shown] = counts.get(shown, 0) + weight
    return sorted(counts, key=lambda p: -counts[p])[:10]


def session_context(conn: Connection, project: str | None, budget_tokens: int, *,
                    exclude_session: str | None = None, current_session: str | None = None,
                    now: float | None = None, tree: str | None = None,
                    tree_state: TreeState | None = None) -> tuple[str, list[str]]:
    """The session-start briefing; one line saying so when nothing is known about the project yet.
    current_session (after a compaction or a resume): that session's own state so far comes first."""
    lines = briefing_lines(conn, project, now, exclude_session, current_session, tree, tree_state)
    lines += _team_lines(conn, project, time.time() if now is None else now)
    text, ids, _ = _pack(fill(lines, budget_tokens), budget_tokens, HEADER, None)
    return (text or EMPTY_PROJECT), ids


def fill(lines: list[ContextLine], budget_tokens: int) -> list[ContextLine]:
    """The lines with the detail each shows: every line at its least detail first, so that as many lines of value as
    possible fit; then, in order of value (the last session's handoff, then the newest sessions first), each line
    takes more detail while the whole still fits and leaves no line out."""
    chosen = [replace(line, text=line.variants[-1]) if line.variants else line for line in lines]
    _, _, dropped = _pack(chosen, budget_tokens, HEADER, None)
    order = [i for i, line in enumerate(lines) if line.variants and line.section == LAST]
    order += sorted((i for i, line in enumerate(lines) if line.variants and line.section != LAST), reverse=True)
    for index in order:
        for variant in lines[index].variants[-2::-1]:  # from a little more detail to the most
            trial = chosen[:index] + [replace(chosen[index], text=variant)] + chosen[index + 1:]
            _, _, now_dropped = _pack(trial, budget_tokens, HEADER, None)
            if now_dropped > dropped:
                break
            chosen = trial
    return chosen


def usefulness(row: Any, now: float) -> float:
    """How much a saved memory is worth showing: importance, confidence, retention and use."""
    last_used = row["last_accessed_at"] or row["created_at"]
    kept = retention((now - last_used) / 86400, row["strength"])
    return (0.35 * row["importance"] + 0.3 * row["confidence"] + 0.2 * kept
            + 0.15 * min(1.0, math.log1p(row["access_count"]) / 3))
