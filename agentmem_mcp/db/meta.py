"""The `meta` table: the store's small named values, each key declared here with its type and its encoding
(the text stored, unchanged from the releases that wrote these keys). The only module that writes the table.

A key is a `Key`, or made by a function when it names a project or a session; `get` decodes (None: absent
or unreadable), `put` encodes, inside the caller's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .connection import Connection

T = TypeVar("T")


def _float(text: str) -> float:
    return float(text)


@dataclass(frozen=True)
class Key(Generic[T]):
    """A meta key: its name, how its value is written (`encode`) and read back (`decode`)."""

    name: str
    encode: Callable[[T], str]
    decode: Callable[[str], T]


def _text(name: str) -> Key[str]:
    return Key(name, str, str)


LAST_SWEEP: Key[dict[str, Any]] = Key("last_sweep", json.dumps, json.loads)  # the last real sweep's record
LAST_PRUNE: Key[float] = Key("last_prune", repr, _float)  # when the worker last pruned observations
PRUNED_UNERASED: Key[float] = Key("pruned_unerased", repr, _float)  # the first prune since the last erasure
LAST_CONFIDENCE_DECAY: Key[float] = Key("last_confidence_decay", repr, _float)  # the sweep's decay clocks
LAST_STRENGTH_DECAY: Key[float] = Key("last_strength_decay", repr, _float)
EMBEDDING_MODEL = _text("embedding_model")  # "model|dimension|encoding" of the vector table (db/vectors.py)
SUMMARY_STATE_PREFIX = "summary-state:"


def consolidated(project: str | None) -> Key[str]:
    """The consolidation mark of a project: its last compressed observation and summary count."""
    return _text(f"consolidated:{project or ''}")


def merged(project: str | None) -> Key[str]:
    """What the last merge of a project's session summaries covered."""
    return _text(f"merged:{project or ''}")


def reflected(project: str | None) -> Key[int]:
    """The last observation id a reflection on the project covered."""
    return Key(f"reflected:{project or ''}", str, int)


def summary_state(session_id: str) -> Key[str]:
    """The summariser's state of a session (JSON, `summarize.SessionState`)."""
    return _text(f"{SUMMARY_STATE_PREFIX}{session_id}")


def get(conn: Connection, key: Key[T]) -> T | None:
    """The key's value, or None when it is absent or unreadable."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key.name,)).fetchone()
    if row is None:
        return None
    try:
        return key.decode(row[0])
    except (ValueError, TypeError):
        return None


def put(conn: Connection, key: Key[T], value: T) -> None:
    """Set the key, inside the caller's transaction."""
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                 (key.name, key.encode(value)))


def delete(conn: Connection, key: Key[Any]) -> None:
    """Remove the key, inside the caller's transaction."""
    conn.execute("DELETE FROM meta WHERE key = ?", (key.name,))


def delete_summary_states_before(conn: Connection, cutoff: float) -> None:
    """Drop the summariser's state of sessions idle since before `cutoff` with nothing left to summarise."""
    conn.execute(f"DELETE FROM meta WHERE key LIKE '{SUMMARY_STATE_PREFIX}%' AND substr(key, "
                 f"{len(SUMMARY_STATE_PREFIX) + 1}) IN (SELECT id FROM sessions WHERE last_event_at < ? "
                 "AND needs_summary = 0)", (cutoff,))
