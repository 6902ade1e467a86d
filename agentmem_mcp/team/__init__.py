"""Team memory: a PostgreSQL + pgvector server shared by a team, beside each machine's own SQLite store.

Off unless `team_url` (AGENTMEM_TEAM_URL) is set; then nothing else changes either until something is shared.
The local store stays the working copy: publishing goes through an outbox (`outbox`), this machine keeps a copy
of the team's memories of its projects (`mirror`) that the briefing and prompt recall read, and search asks the
server and merges its hits with the local ones (`recall`). This module imports nothing heavy: psycopg is
imported only when the server is reached (`remote`), never by a hook. Rules: docs/team.md.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..config import Settings
    from .remote import TeamServer

SHARED_TIERS = ("semantic", "procedural")  # published without being asked (team_share_knowledge)
NEVER_SHARED_TIERS = ("working",)  # raw captured events: not even when asked
TEAM_WIDE = "*"  # the project key of a global memory shared on purpose: every project's members see it

_servers: dict[tuple[str, str], TeamServer] = {}


def in_use(conn) -> bool:
    """A cheap test, for the hook, before anything of team memory is imported: AGENTMEM_TEAM_URL is set, or this
    machine has synced with a team server before (team_url may be in config.toml only)."""
    import os

    return bool(os.environ.get("AGENTMEM_TEAM_URL")) or \
        conn.execute("SELECT 1 FROM team_state LIMIT 1").fetchone() is not None


def enabled(settings: Settings) -> bool:
    """Whether team memory is configured."""
    return bool(getattr(settings, "team_url", ""))


def author(settings: Settings) -> str:
    """The name this member's shared memories carry."""
    from .identity import default_author

    return settings.team_author.strip() or default_author()


NO_DRIVER = ("team_url is set, but this agentmem was installed without team memory's PostgreSQL driver: "
             "pip install 'agentmem-mcp[team]' (pipx: pipx install --force 'agentmem-mcp[team]'), or unset team_url")


def require_driver() -> None:
    """Raise TeamConfigError (NO_DRIVER) when psycopg or psycopg_pool, the `[team]` extra, is not installed."""
    from .credentials import TeamConfigError

    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise TeamConfigError(NO_DRIVER) from None


def server(settings: Settings, *, pooled: bool = False) -> TeamServer:
    """The team server of these settings (one per URL and process; pooled for long-running processes). Raises
    TeamConfigError when the `[team]` extra is not installed."""
    require_driver()
    from .credentials import TeamCredentials
    from .remote import TeamServer
    from .search import VectorScan

    scan = VectorScan.of(settings)
    key = (settings.team_url, str(settings.team_password_file or ""))
    found = _servers.get(key)
    if found is None or (pooled and not found.pooled) or found.scan != scan:
        if found is not None:
            found.close()
        found = _servers[key] = TeamServer(TeamCredentials(settings.team_url, settings.team_password_file),
                                           pooled=pooled or (found is not None and found.pooled), scan=scan)
    return found


def close_servers() -> None:
    """Close every pool this process opened."""
    for found in _servers.values():
        found.close()
    _servers.clear()
