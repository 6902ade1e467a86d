"""What a session's own log teaches, as memories (pure, but for looking up which named files exist).

From the turns of the log (`capture.transcript`): the agent's reports of each turn become episodic turn notes
(found by search and prompt recall), the user's answers to the agent's questions become decisions, and the
"always / never / prefer / don't" sentences the user typed become standing instructions (the user's own words:
user provenance, P1, unpinned). Every memory is anchored to the project files it names. How an agent's text is
read (plain text, digests, what is left open) is `digest`'s.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from ..capture.transcript import Turn, mentioned_paths, relative_to
from ..db import observations
from ..trust.policy import instruction_reason
from .digest import clip, plain
from .instructions import admission, decision, standing_sentences

NOTE_CONFIDENCE = 0.8  # the agent's own words about what it did
INSTRUCTION_CONFIDENCE = 0.8  # the user's own words (user provenance), picked out as standing by a rule
NOTE_VECTOR_CHARS = 600


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


def transcript_path(conn: Any, session_id: str) -> str | None:
    """The session log's path, as the client last sent it with a hook (Claude Code does; Cursor may not)."""
    extra = observations.last_extra_naming(conn, session_id, "transcript_path")
    if extra is None:
        return None
    try:
        path = json.loads(extra).get("transcript_path")
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
    """The files a summary is anchored to: the project files the session changed, most edited first, then those it
    names (a file outside the project, such as the user's own settings, is not the project's to go stale)."""
    roots = [r.rstrip("/") + "/" for r in (tree, project) if r and r.startswith("/")]
    inside = [p for p, _ in sorted(changed_files.items(), key=lambda item: -item[1])
              if not p.startswith("/") or any(p.startswith(root) for root in roots)]  # the project's files only
    changed = [relative_to(p, project) for p in inside[:20]]
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
    for index, turn in enumerate(turns):
        chosen = decision(turns[index - 1].final, turn.prompt) if index and not turn.slash_command else None
        answers = list(turn.answers) + ([chosen] if chosen else [])
        for question, answer in answers:
            if instruction_reason(f"{question} {answer}"):
                continue
            said = f"The agent asked: \"{question}\" " if question else "Among the agent's options, "
            verb = "picked" if question and answer in turn.picked else "decided"  # one of the options offered
            out.append({**base, "content": f"{said}The user {verb}: \"{answer}\"",
                        "title": clip(f"Decision: {answer} ({question})", 100), "tier": "semantic",
                        "type": "decision", "importance": 0.75, "key": f"decision:{_digest(question, answer)}",
                        "files": existing_files(f"{question} {answer}", tree, project)})
        if turn.slash_command:
            continue
        for sentence in standing_sentences(turn.prompt):
            if instruction_reason(sentence):
                continue  # a standing instruction never carries what the detector would quarantine
            out.append({**base, "content": f"The user said: \"{sentence}\"",
                        "title": clip(f"User instruction: {sentence}", 100), "tier": "semantic",
                        "type": "preference", "importance": 0.75, "source": "user",
                        "confidence": INSTRUCTION_CONFIDENCE,
                        "key": f"instruction:{_digest(sentence.lower())}",
                        "files": existing_files(sentence, tree, project)})
        admitted = admission(turn.prompt, turn.replies[0]) if turn.replies else []
        if admitted and not instruction_reason(turn.prompt) and not instruction_reason(" ".join(admitted)):
            said = " ".join(turn.prompt.split())
            out.append({**base, "content": f"The user corrected the agent: \"{said}\" The agent agreed: "
                                           f"\"{' '.join(admitted)}\"",
                        "title": clip(f"Correction: {said}", 100), "tier": "semantic", "type": "preference",
                        "importance": 0.75, "confidence": INSTRUCTION_CONFIDENCE,
                        "key": f"correction:{_digest(said.lower())}",
                        "files": existing_files(f"{said} {' '.join(admitted)}", tree, project)})
    return out
