"""The CLI's side of the commands only the user may run (confirm_user.py): whose memory a save is, whether an
unsigned import keeps what it claims, and whether a forget touches the user's own memories."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse


def save_source(args: argparse.Namespace) -> tuple[str, list[str]]:
    """Whose memory a CLI save is: the user's, once the user is recognised (confirm_user.py) for a global, pinned
    or P0 save; the agent's when a coding agent's own shell runs a plain save."""
    from .common import require_user
    from .confirm_user import agent_shell

    source = args.source or "user"
    if source != "user":
        return source, []
    wants = [w for w, on in (("global", args.global_), ("pinned", args.pin), ("P0", args.priority == "P0")) if on]
    shell = agent_shell()
    if wants or (shell and args.source == "user"):
        require_user(args, "save this as your own memory" + (f" ({', '.join(wants)})" if wants else ""))
    elif shell and not args.i_am_the_user:
        return "agent", [f"saved as the agent's memory, not the user's: this is {shell[1]}'s shell ({shell[0]} is "
                         "set)"]
    return source, []


def keep_claims(claims: str) -> bool:
    """Asked by `import_` for a file this home did not sign: keep what its records claim only if the user says so
    on a terminal (never from a piped stdin)."""
    from .confirm_user import ask_on_terminal, may_ask

    if not may_ask():
        return False
    answer = ask_on_terminal(f"agentmem: this file is not signed by this home and {claims}. Keep what they "
                             "claim? Type 'keep' to keep it, anything else to import them as imported memories of "
                             "this project: ")
    return answer is not None and answer.strip().lower() == "keep"


def removals(entries: Sequence[Any]) -> list[str]:
    """The ids a sweep's entries remove (deleted, expired or forgotten for low confidence)."""
    from .views import REMOVALS

    return [e.id for e in entries if e.decision in REMOVALS]


def confirm_forget(args: argparse.Namespace, store: Any, memory_ids: Sequence[str]) -> None:
    """Forgetting the user's own, pinned or P0 memories is the user's to do (confirm_user.py): raise NotTheUser
    unless the user is recognised; forgetting only the agent's and derived memories needs nothing."""
    from ..db.memory_reads import protected_among
    from .common import require_user

    mine = protected_among(store.conn, memory_ids)
    if mine:
        shown = ", ".join(mine[:5]) + (f" and {len(mine) - 5} more" if len(mine) > 5 else "")
        require_user(args, f"forget {len(mine)} memories that are yours (your own, pinned or P0): {shown}")
