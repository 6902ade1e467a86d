"""This machine's copy of the team's memories of its projects (`team_mirror` in SQLite, with an FTS5 index).
The briefing and prompt recall read it, in the hook process, without reaching the server; `sync.pull` keeps it
up to date. This machine's own shared memories are not copied (the local store has them)."""

from __future__ import annotations

import re
from typing import Any

from ..db.connection import Connection

MIRROR_COLUMNS = ("gid", "project_key", "tier", "type", "title", "content", "source", "confidence", "importance",
                  "explicit", "author", "origin_machine", "version", "content_hash", "created_at", "updated_at")


def apply(conn: Connection, rows: list[dict[str, Any]], machine: str) -> int:
    """Put pulled rows in the copy (a forgotten one is removed); inside the caller's transaction."""
    changed = 0
    for row in rows:
        conn.execute("DELETE FROM team_mirror_fts WHERE gid = ?", (row["gid"],))
        conn.execute("DELETE FROM team_mirror WHERE gid = ?", (row["gid"],))
        if row["origin_machine"] == machine:
            continue
        changed += 1
        if row.get("forgotten_at") is not None:
            continue
        values = [row[c] if c != "explicit" else int(bool(row[c])) for c in MIRROR_COLUMNS]
        conn.execute(f"INSERT INTO team_mirror ({', '.join(MIRROR_COLUMNS)}) VALUES "
                     f"({', '.join('?' * len(MIRROR_COLUMNS))})", values)
        conn.execute("INSERT INTO team_mirror_fts (gid, text) VALUES (?, ?)",
                     (row["gid"], f"{row['title']}\n{row['content']}"))
    return changed


# Row shape of context.py's COLUMNS, so that the briefing and prompt recall format team rows like local ones.
_AS_MEMORY = ("t.gid AS id, ? AS project, t.tier, t.type, t.title, t.content, '[]' AS files, 'team' AS source, "
              "'[]' AS source_ids, NULL AS key, t.importance, t.confidence, 1.0 AS strength, 0 AS access_count, "
              "NULL AS last_accessed_at, t.created_at, t.updated_at, 0 AS pinned, 'P1' AS priority, "
              "NULL AS session_id, NULL AS quarantined, NULL AS anchor_commit, t.author, t.origin_machine, "
              "t.explicit, t.source AS origin_source, t.content_hash, t.version")
_NOT_LOCAL = "NOT EXISTS (SELECT 1 FROM memories m WHERE m.content_hash = t.content_hash AND m.is_latest = 1)"


def for_briefing(conn: Connection, keys: list[str], project: str | None, limit: int = 12) -> list[Any]:
    """The copy's most important memories of these project keys, the ones the local store does not hold."""
    found = []
    for key in keys:  # one key at a time: each reads its rows in index order, the first `limit` only
        found += conn.execute(
            f"SELECT {_AS_MEMORY} FROM team_mirror t WHERE t.project_key = ? AND {_NOT_LOCAL} "
            "ORDER BY t.importance DESC, t.updated_at DESC LIMIT ?", [project, key, limit]).fetchall()
    return sorted(found, key=lambda r: (-r["importance"], -r["updated_at"]))[:limit]


_WORD = re.compile(r"\w{3,}")


def matching(conn: Connection, keys: list[str], project: str | None, text: str, limit: int = 12) -> list[Any]:
    """The copy's memories of these project keys holding any word of `text` (FTS5, best BM25 first)."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))[:32]
    if not keys or not words:
        return []
    query = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
    marks = ",".join("?" * len(keys))
    return conn.execute(
        f"SELECT {_AS_MEMORY} FROM team_mirror_fts f JOIN team_mirror t ON t.gid = f.gid WHERE team_mirror_fts "
        f"MATCH ? AND t.project_key IN ({marks}) AND {_NOT_LOCAL} ORDER BY f.rank LIMIT ?",
        [project, query, *keys, limit]).fetchall()


def count(conn: Connection) -> int:
    return conn.execute("SELECT COUNT(*) FROM team_mirror").fetchone()[0]
