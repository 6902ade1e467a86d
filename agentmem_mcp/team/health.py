"""Team memory in `agentmem doctor` and the viewer: whether the server answers, with what role, what waits in
the outbox; the URL always with its password hidden."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import outbox, reach
from . import server as team_server

if TYPE_CHECKING:
    from ..parts import Parts as Store  # an operation is given the store's parts


def team_check(store: Store) -> tuple[str, bool, str, str]:
    """(name, ok, detail, fix) for doctor's list of checks."""
    from .credentials import TeamConfigError
    from .remote import TeamPermissionError, TeamUnreachable

    try:
        server = team_server(store.settings)
    except TeamConfigError as exc:
        return "team memory", False, str(exc), "fix team_url / team_password_file (docs/team.md)"
    waiting = outbox.pending(store.conn)["waiting"]
    try:
        counts = server.counts()
    except (TeamUnreachable, TeamPermissionError) as exc:
        reach.mark_unreachable(store.settings.home, str(exc))
        return ("team memory", False, f"{exc}; {waiting} waiting in the outbox (kept until it answers)",
                "check that the server runs and the URL, role and TLS options (docs/team.md)")
    reach.mark_reachable(store.settings.home)
    role = counts["role"] + ("" if counts["can_write"] else " (read-only role)")
    return ("team memory", True, f"{server.creds.shown} as {role}: {counts['live']} shared memories; {waiting} "
            "waiting in the outbox", "")
