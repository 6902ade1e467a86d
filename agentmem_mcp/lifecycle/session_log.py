"""What a session's own log teaches, as memories (pure, but for looking up which named files exist).

From the turns of the log (`capture.transcript`): the agent's reports of each turn become episodic turn notes
(found by search and prompt recall), the user's answers to the agent's questions become decisions, and the
"always / never / prefer / don't" sentences the user typed become standing instructions. `left_open` finds
what the agent's last report says is left. Every memory is anchored to the project files it names.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

from ..capture.transcript import Turn, mentioned_paths, relative_to
from ..trust import instruction_reason

NOTE_CONFIDENCE = 0.8  # the agent's own words about what it did
INSTRUCTION_CONFIDENCE = 0.8  # the user's own words (user provenance), picked out as standing by a rule
NOTE_VECTOR_CHARS = 600


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


_OPEN_HEADING = re.compile(r"^\W*(?:remaining(?: tasks| work| items)?|(?:work|tasks) remaining|next steps?|still to do|"
                           r"open (?:items|issues|questions|work)|left to do|todos?|not (?:yet )?done)\W*$", re.I)
_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*\S)")


def left_open(report: str, limit: int = 4) -> list[str]:
    """What the agent's report says is left: the items under a "Remaining" / "Next steps" heading."""
    items: list[str] = []
    under = False
    for line in report.split("\n"):
        if _OPEN_HEADING.match(line.strip()):
            under = True
            continue
        item = _ITEM.match(line)
        if under and item:
            items = distinct([*items, plain(item.group(1))])
            if len(items) >= limit:
                break
        elif under and line.strip():
            under = False
    return items


def distinct(items: list[str]) -> list[str]:
    """List items once each: an item that starts with the same four words as an earlier one is the same item
    ("Issue #397 - Error messages (needs reimplementation)")."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for item in items:
        head = tuple(item.lower().split()[:4])
        if head not in seen:
            seen.add(head)
            out.append(item)
    return out


def plain(text: str) -> str:
    """Markdown decoration dropped, one line: what the agent wrote, as a note. Headings, quotes, bullets,
    emphasis and code ticks go; what names things stays (`#379`, `waiting_summary.ex`, `__init__.py`)."""
    text = re.sub(r"^\s{0,3}(?:#{1,6}|>+)\s+", "", text, flags=re.MULTILINE)
    text = re.sub(r"^\s*[-*•]\s+", "", text, flags=re.MULTILINE)
    text = re.sub(r"\*\*|~~|`|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])", "", text)
    return " ".join(text.split())


_NAMING = re.compile(r"#\d+|\b[0-9a-f]{7,40}\b|[\w@-]+(?:/[\w.@-]+)*\.[A-Za-z][A-Za-z0-9]{0,5}\b|\b[a-z]+_[\w]+|"
                     r"\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]+[A-Z]\w*|\b[A-Z]{2,}(?:_[A-Z0-9]+)+\b|\b\d[\d.,]*\b|"
                     r"\b[\w.-]+/[\w./-]+|\"[^\"]{3,60}\"")
_FILLER = re.compile(r"^\W*(?:perfect|great|excellent|awesome|done|good news|success(?:fully)?|now|let me|i'll|i will|"
                     r"here's|here is|summary|all (?:tasks )?(?:completed|done))\b\W*", re.IGNORECASE)
DIGEST_PIECE_CHARS = 220


_HEADING = re.compile(r"^\s{0,3}(?:#{1,6}\s|\*\*[^*]+\*\*:?\s*$|[^.!?]{0,60}:\s*$)")
_URL = re.compile(r"https?://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/(\d+)[^\s)\]]*|https?://([\w.-]+)/\S*")


def short_urls(text: str) -> str:
    """Links shortened to what they name: a GitHub issue or pull request to `#N`, any other to its host."""
    return _URL.sub(lambda m: f"#{m.group(1)}" if m.group(1) else m.group(2), text)


def _pieces(text: str) -> list[str]:
    """A report cut into its sentences and list items, each one line of plain text; headings left out."""
    out = []
    for line in text.split("\n"):
        if line.lstrip().startswith("|"):  # a table row: its cells, one piece
            line = " — ".join(c.strip() for c in line.strip().strip("|").split("|") if c.strip(" :-—"))
        if _HEADING.match(line):
            continue
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9#`*])", line):
            piece = short_urls(plain(sentence))
            if len(re.findall(r"[^\W\d_]{2,}", piece)) >= 2 or len(piece) > 12 and re.search(r"[^\W\d_]", piece):
                out.append(clip(piece, DIGEST_PIECE_CHARS))
    return out


def _looks_like_code(piece: str) -> bool:
    """A line of code or data quoted in a report (`<% end %>`, `"id": "x",`, `class={f(a, b)}`), not prose."""
    symbols = sum(1 for ch in piece if ch in "{}[]()<>=;$%\\\"'")
    return symbols >= 4 and symbols / len(piece) > 0.06 or piece.lstrip().startswith(("<", "{", "}", "\"", "//"))


def digest(reports: list[tuple[str, float]], limit: int) -> str:
    """The sentences of the agent's reports (text, weight) that say the most in `limit` characters, in the
    order they were written: a sentence counts by the things it names (issue and PR numbers, commit hashes,
    files, identifiers, counts, quoted strings) and by its report's weight; praise and headings count little.
    """
    candidates = []
    for rank, (text, weight) in enumerate(reports):
        for order, piece in enumerate(_pieces(text)):
            names = len(set(_NAMING.findall(piece)))
            words = len(piece.split())
            if words < 3 and not names or piece.endswith(":") and words < 6 or _looks_like_code(piece):
                continue
            value = weight * (1 + 2 * min(names, 5) + min(words, 24) / 12) * (0.4 if _FILLER.match(piece) else 1)
            candidates.append((value / (len(piece) + 20) ** 0.7, rank, order, piece))
    chosen, used = [], 0
    for _, rank, order, piece in sorted(candidates, key=lambda c: -c[0]):
        if used + len(piece) + 2 <= limit and piece not in (c[2] for c in chosen):
            chosen.append((rank, order, piece))
            used += len(piece) + 2
    return " · ".join(piece for _, _, piece in sorted(chosen))


def session_reports(turns: list[Turn]) -> list[tuple[str, float]]:
    """What the agent reported in a session, weighed for `digest`: the last report counts most, each turn's
    final report next, long intermediate replies and sub-agents' reports least."""
    out: list[tuple[str, float]] = []
    for i, turn in enumerate(turns):
        for j, reply in enumerate(turn.replies):
            final = j == len(turn.replies) - 1
            if final and len(reply) >= 40:
                out.append((reply, 2.0 if i == len(turns) - 1 else 1.4))
            elif len(reply) >= TURN_NOTE_MIN_CHARS:
                out.append((reply, 0.5))
    return out


TURN_NOTE_MIN_CHARS = 250  # a reply this long is a report of its own (the last reply of a turn always is)
TURN_NOTES_PER_SESSION = 40
_INSTRUCTION = re.compile(r"\b(?:always|never|prefer|don't|do not|dont|make sure|from now on|must not|should not|"
                          r"instead of|avoid|name it)\b", re.IGNORECASE)


def transcript_path(conn: Any, session_id: str) -> str | None:
    """The session log's path, as the client last sent it with a hook (Claude Code does; Cursor may not)."""
    row = conn.execute("SELECT extra FROM observations WHERE session_id = ? AND extra LIKE '%transcript_path%' "
                       "ORDER BY id DESC LIMIT 1", (session_id,)).fetchone()
    if row is None:
        return None
    try:
        path = json.loads(row[0]).get("transcript_path")
    except (ValueError, AttributeError):
        return None
    return path if isinstance(path, str) else None


def existing_files(text: str, tree: str | None, project: str | None, limit: int = 12) -> list[str]:
    """The files a text names that exist in the working tree `tree` now: what the memory is anchored to, so
    that it reads as stale once they are deleted or renamed. Relative to the project's root when they are in
    it; absolute when they are in another worktree."""
    if not tree or not tree.startswith("/"):
        return []
    root = tree.rstrip("/")
    found = [f"{root}/{p}" for p in mentioned_paths(text) if os.path.isfile(f"{root}/{p}")][:limit]
    return [relative_to(path, project) for path in found]


def summary_files(changed_files: dict[str, int], content: str, tree: str | None, project: str | None) -> list[str]:
    """The files a summary is anchored to: those the session changed, most edited first, then those it names."""
    changed = [relative_to(p, project) for p, _ in sorted(changed_files.items(), key=lambda item: -item[1])[:20]]
    return list(dict.fromkeys(changed + existing_files(content, tree, project)))


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


def turn_memories(turns: list[Turn], session: Any, last_at: float | None,
                  tree: str | None = None) -> list[dict[str, Any]]:
    """Memories drawn from the session log (pure): the agent's reports of each turn (episodic notes, found by
    search and prompt recall), the user's answers to the agent's questions (decisions) and the standing
    instructions the user typed ("always / never / prefer / don't ...")."""
    project, session_id = session["project"], session["id"]
    tree = tree or project
    base = {"project": project, "session_id": session_id, "source": "consolidation",
            "created_at": last_at or None}
    notes: list[dict[str, Any]] = []
    for i, turn in enumerate(turns):
        asked = clip(turn.prompt, 160)
        for j, reply in enumerate(turn.replies):
            if j != len(turn.replies) - 1 and len(reply) < TURN_NOTE_MIN_CHARS or len(reply) < 40:
                continue
            notes.append({**base, "content": reply, "files": existing_files(f"{turn.prompt}\n{reply}", tree, project),
                          "title": clip(f"{clip(asked, 50)} — {plain(reply)}", 100), "tier": "episodic",
                          "type": "context",
                          "confidence": NOTE_CONFIDENCE, "importance": 0.45,
                          "key": f"turn:{session_id}:{i}:{j}",
                          "vector_text": f"{asked}\n{reply}"[:NOTE_VECTOR_CHARS]})
    if len(notes) > TURN_NOTES_PER_SESSION:  # keep the longest reports, in order
        keep = set(sorted(range(len(notes)), key=lambda k: -len(notes[k]["content"]))[:TURN_NOTES_PER_SESSION])
        notes = [n for k, n in enumerate(notes) if k in keep]
    out = notes
    for turn in turns:
        for question, answer in turn.answers:
            if instruction_reason(f"{question} {answer}"):
                continue
            out.append({**base, "content": f"The agent asked: \"{question}\" The user decided: \"{answer}\"",
                        "title": clip(f"Decision: {answer} ({question})", 100), "tier": "semantic",
                        "type": "decision", "importance": 0.75, "key": f"decision:{_digest(question, answer)}",
                        "files": existing_files(f"{question} {answer}", tree, project)})
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", turn.prompt):
            sentence = sentence.strip()
            if (4 <= len(sentence.split()) <= 60 and _INSTRUCTION.search(sentence) and not turn.slash_command
                    and not sentence.endswith("?") and not instruction_reason(sentence)):
                out.append({**base, "content": f"The user said: \"{clip(sentence, 300)}\"",
                            "title": clip(f"User instruction: {sentence}", 100), "tier": "semantic",
                            "type": "preference", "importance": 0.75, "source": "user",
                            "confidence": INSTRUCTION_CONFIDENCE,
                            "key": f"instruction:{_digest(sentence.lower())}",
                            "files": existing_files(sentence, tree, project)})
    return out
