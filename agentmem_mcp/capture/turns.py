"""A session's turns, wherever its client logged them: a Claude Code transcript file (`transcript.py`), a Codex
rollout (`codex_log.py`), a Gemini CLI session log (`gemini_log.py`), or the Cursor conversation an imported session
names (`cursor_log.py`)."""

from __future__ import annotations

from .cursor_log import read_logged_turns
from .transcript import MAX_TRANSCRIPT_BYTES, Turn, read_transcript


def read_turns(path: str | None) -> list[Turn]:
    """The turns of the session log `path` names (the format told by its first line), or of the Cursor
    conversation an imported session names ("cursor-composer:..."); [] when there is no readable log."""
    if isinstance(path, str) and path.startswith("cursor-composer:"):
        return read_logged_turns(path)
    first = _first_line(path)
    if first is not None:
        from . import codex_log, gemini_log

        if codex_log.is_rollout(first):
            return codex_log.read_turns(path)
        if gemini_log.is_gemini_log(first) or path.endswith(".json"):  # older Gemini CLI: one JSON object
            return gemini_log.read_turns(path)
    return read_transcript(path)


def _first_line(path: str | None) -> str | None:
    """The first line of a session log file of a sane size (a .json log: its start), or None."""
    import os

    if not isinstance(path, str) or not path.endswith((".jsonl", ".json")):
        return None
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_TRANSCRIPT_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.readline(1 << 20)
    except OSError:
        return None
