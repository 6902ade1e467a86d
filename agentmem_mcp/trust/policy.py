"""Trust policy, pure: where a memory came from, and whose words a text is.

- `provenance(source)`: user (the CLI, statements the user typed), agent (`memory_save` over MCP),
  derived (the worker, from observations: sources `hook` and `consolidation`), import.
- `typed_by_user(row)`: a memory whose text is the user's own, shown as written.
- The text policy lives in `trust/injection.py` and is imported here too: `instruction_reason(text)` (a prompt
  injection; memories from agents, the worker or an import that match are quarantined), `neutralize(text)`
  (markup defused) and `as_data(text)`, the one step every text passes on its way out to an agent.

The hook path imports this module: the standard library only, patterns compiled on first use.
"""

from __future__ import annotations

from .injection import (  # noqa: F401 (the text policy lives in trust/injection.py; callers import it from here too)
    WITHHELD,
    as_data,
    hidden_text,
    instruction_reason,
    neutralize,
    normalize,
    withhold_instructions,
)

TYPE_CHECKING = False  # importing typing costs each hook process ~5 ms
if TYPE_CHECKING:
    from typing import Any

PROVENANCE = {"user": "user", "agent": "agent", "hook": "derived", "consolidation": "derived", "import": "import"}
UNCONFIRMED = frozenset({"agent", "derived"})  # neither P0, pinned nor global until the user confirms
QUARANTINED_PROVENANCE = frozenset({"agent", "derived", "import"})  # checked by `instruction_reason` on save


def provenance(source: str) -> str:
    """user | agent | derived | import, for a memory's `source` column (an unknown source counts as agent)."""
    return PROVENANCE.get(source, "agent")


def is_unconfirmed(source: str) -> bool:
    """True for memories the user has not confirmed: agent saves and what the worker derived."""
    return provenance(source) in UNCONFIRMED


def typed_by_user(row: Any) -> bool:
    """Whether a memory row's text is the user's own words, shown as written: a memory the user saved
    (`source` user). Not a standing instruction drawn from a session's transcript (`key` "instruction:..."):
    that text came through a transcript, and is shown as data like the rest."""
    keys = row.keys() if hasattr(row, "keys") else ()
    return row["source"] == "user" and not ((row["key"] if "key" in keys else None) or "").startswith("instruction:")
