"""A session's turns, wherever its client logged them: a Claude Code transcript file (`transcript.py`) or the
Cursor conversation an imported session names (`cursor_log.py`)."""

from __future__ import annotations

from .cursor_log import read_logged_turns
from .transcript import Turn, read_transcript


def read_turns(path: str | None) -> list[Turn]:
    """The turns of a transcript file, or of the Cursor conversation an imported session names
    ("cursor-composer:..."); [] when there is no readable transcript."""
    if isinstance(path, str) and path.startswith("cursor-composer:"):
        return read_logged_turns(path)
    return read_transcript(path)
