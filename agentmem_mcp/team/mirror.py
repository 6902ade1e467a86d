"""This machine's copy of the team's memories of its projects (`team_mirror` in SQLite, with an FTS5 index, and
each memory's vector as float32 bytes). The briefing and prompt recall read it, in the hook process, without
reaching the server; search reads it, by words and by meaning, when the server is away; `sync.pull` keeps it up
to date. The memories this machine shared are not copied (the local store has them), nor are memories whose
text reads as instructions to an agent (`trust.instruction_reason`, checked here, when a row is pulled, so that
the hook never runs it); the copy records which version of agentmem checked it (`checked_by`), and a pull with
another version checks it all again. numpy is imported only where vectors are read or written, never by the
briefing."""

from __future__ import annotations

import re
from typing import Any

from ..db import memories
from ..db.connection import Connection

MIRROR_COLUMNS = ("gid", "project_key", "tier", "type", "title", "content", "source", "confidence", "importance",
                  "explicit", "author", "origin_machine", "version", "content_hash", "created_at", "updated_at")


def checked_by() -> str:
    """What checks the rows entering the copy: this agentmem's version (its trust rules)."""
    from ..version import package_version

    return package_version()


def apply(conn: Connection, rows: list[dict[str, Any]], held: set[str]) -> int:
    """Put pulled rows in the copy (a forgotten one is removed, and so is one whose text reads as instructions to
    an agent); the gids in `held`, shared from this machine (its store has them), are left out. Inside the
    caller's transaction."""
    from ..trust.policy import instruction_reason

    changed = 0
    for row in rows:
        conn.execute("DELETE FROM team_mirror_fts WHERE gid = ?", (row["gid"],))
        conn.execute("DELETE FROM team_mirror WHERE gid = ?", (row["gid"],))
        if row["gid"] in held:
            continue
        changed += 1
        if row.get("forgotten_at") is not None or instruction_reason(f"{row['title']}\n{row['content']}"):
            continue
        values = [row[c] if c != "explicit" else int(bool(row[c])) for c in MIRROR_COLUMNS]
        conn.execute(f"INSERT INTO team_mirror ({', '.join(MIRROR_COLUMNS)}, embedding) VALUES "
                     f"({', '.join('?' * len(MIRROR_COLUMNS))}, ?)", [*values, vector_bytes(row.get("embedding"))])
        conn.execute("INSERT INTO team_mirror_fts (gid, text) VALUES (?, ?)",
                     (row["gid"], f"{row['title']}\n{row['content']}"))
    return changed


def vector_bytes(text: str | None) -> bytes | None:
    """A vector in pgvector's text form (`[0.1,0.2]`) as float32 bytes, or None."""
    if not text:
        return None
    import numpy as np

    return np.array(text.strip("[]").split(","), dtype=np.float32).tobytes()


# Row shape of recall/context.py's COLUMNS, so that the briefing and prompt recall format team rows like local ones.
_AS_MEMORY = ("t.gid AS id, ? AS project, t.tier, t.type, t.title, t.content, '[]' AS files, 'team' AS source, "
              "'[]' AS source_ids, NULL AS key, t.importance, t.confidence, 1.0 AS strength, 0 AS access_count, "
              "NULL AS last_accessed_at, t.created_at, t.updated_at, 0 AS pinned, 'P1' AS priority, "
              "NULL AS session_id, NULL AS quarantined, NULL AS anchor_commit, t.author, t.origin_machine, "
              "t.explicit, t.source AS origin_source, t.content_hash, t.version")
_NOT_LOCAL = "NOT " + memories.latest_holds("t.content_hash")


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


def nearest(conn: Connection, keys: list[str], project: str | None, vector: Any, limit: int = 20,
            among: list[str] | None = None) -> list[tuple[Any, float]]:
    """The copy's memories of these project keys nearest to `vector` by cosine, with it, best first (`among`:
    only these gids, each with its cosine). An exact comparison of the project's vectors: the copy holds only
    what was shared in this machine's projects."""
    import numpy as np

    if not keys or vector is None:
        return []
    marks = ",".join("?" * len(keys))
    where = f"t.project_key IN ({marks}) AND t.embedding IS NOT NULL AND {_NOT_LOCAL}"
    params: list[Any] = list(keys)
    if among is not None:
        if not among:
            return []
        where += f" AND t.gid IN ({','.join('?' * len(among))})"
        params += among
    found = conn.execute(f"SELECT t.gid, t.embedding FROM team_mirror t WHERE {where}", params).fetchall()
    if not found:
        return []
    query = np.asarray(vector, dtype=np.float32)
    matrix = np.frombuffer(b"".join(r[1] for r in found), dtype=np.float32).reshape(len(found), -1)
    if matrix.shape[1] != query.shape[0]:
        return []  # vectors of another model: meaning cannot be compared
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
    cosines = matrix @ query / np.where(norms == 0, 1.0, norms)
    best = np.argsort(-cosines)[:limit]
    gids = [found[i][0] for i in best]
    rows = {r["id"]: r for r in conn.execute(
        f"SELECT {_AS_MEMORY} FROM team_mirror t WHERE t.gid IN ({','.join('?' * len(gids))})", [project, *gids])}
    return [(rows[found[i][0]], float(cosines[i])) for i in best if found[i][0] in rows]


def count(conn: Connection) -> int:
    return conn.execute("SELECT COUNT(*) FROM team_mirror").fetchone()[0]
