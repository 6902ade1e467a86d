"""Whose SQLite file this is.

agentmem stamps every database it makes with its own SQLite `application_id` (`APPLICATION_ID`, written by the
first migration's transaction) besides recording its migrations in `schema_migrations`. It opens, migrates or
deletes a database only when the file is empty (a new one), carries the stamp, or is one an agentmem from before
the stamp made (its `schema_migrations` and `memories` tables, and no table agentmem does not create; such a file
is stamped at its next open, `migrations.migrate`). Anything else is another program's database (`AGENTMEM_DB`
pointed at an application's file): it is refused before a single byte of it changes, journal mode and file mode
included (`connection.connect`).
"""

from __future__ import annotations

from ..files import ForeignDatabaseError

TYPE_CHECKING = False  # importing typing costs each hook process ~5 ms, and hooks import this module
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

APPLICATION_ID = 0x616D656D  # "amem"
_OLDER_AGENTMEM = ("schema_migrations", "memories")  # what an agentmem database made before the stamp has


def application_id(conn: Any) -> int:
    return int(conn.execute("PRAGMA application_id").fetchone()[0])


def tables(conn: Any) -> list[str]:
    """The database's tables, SQLite's own excepted."""
    return [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                           "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")]


def first_look(conn: Any) -> str | None:
    """Why the database open on `conn` is certainly not agentmem's (None: it is, it is empty, or it may be an older
    agentmem's, which `foreign_tables` then decides). One pragma for a stamped database: hooks run this."""
    stamp = application_id(conn)
    if stamp == APPLICATION_ID:
        return None
    if stamp:
        return f"it belongs to another program (SQLite application_id {stamp:#x})"
    names = tables(conn)
    if not names or all(name in names for name in _OLDER_AGENTMEM):
        return None
    return f"it holds tables agentmem does not make ({shown(names)})"


def foreign_tables(conn: Any, known: frozenset[str]) -> list[str]:
    """The tables of an unstamped database that no agentmem makes (`known`: what the migrations create; the vector
    table and sqlite-vec's companions of it start with `memory_vectors`)."""
    return [name for name in tables(conn) if name not in known and not name.startswith("memory_vectors")]


def shown(names: list[str]) -> str:
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def refusal(path: str | Path, why: str) -> ForeignDatabaseError:
    """The error for a database that is not agentmem's, saying what to do."""
    return ForeignDatabaseError(
        f"the database {path} was not made by agentmem: {why}. agentmem neither opens, changes nor deletes another "
        "program's database: point AGENTMEM_DB (or db_path) at a new file, or unset it to use <home>/agentmem.db")


def stamp(conn: Any) -> None:
    """Mark the database as agentmem's (inside the caller's write transaction)."""
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
