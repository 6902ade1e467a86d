"""Search on the team server: a query's candidates among the live shared memories of some projects, from two
retrievers in one statement, each bounded by the number of candidates it returns rather than by how many rows
the projects hold.

- **Words.** The query's lexemes (PostgreSQL's english configuration, at most `MAX_WORDS`, in query order) are
  matched in levels: first the memories holding all of them, then those holding all but one (any such
  combination), and so on down to one; each level leaves out the rows of the levels above, so `UNION ALL` in
  that order with `LIMIT` stops as soon as it has enough, and a common word matching thousands of memories
  costs no more than the candidates taken from it. The level is the candidate's share of the query's words, the
  keyword score the caller uses anyway (team.recall), so no match needs to be read to be ranked (`ts_rank_cd`
  over an OR of the words would read and score every memory holding any of them). The index finds the project's
  rows by itself: every memory's `tsv` holds the lexeme `project:<key>` (migration t003), which each level's
  query requires.
- **Meaning.** The nearest vectors: compared exactly when the projects hold at most `VectorScan.exact_max`
  memories (setting `team_exact_scan_max`), else through the HNSW index, with pgvector's scan settings
  (`VectorScan`: `hnsw.ef_search`, `hnsw.iterative_scan`, `hnsw.max_scan_tuples`, from the `team_*` settings)
  set for the search's transaction only, so that the project filter does not leave the walk short.

Every candidate comes back with its exact cosine to the query (None without a vector) and `rank`, its share of
the query's words (0 when it matched none). Values only travel as parameters; the tsquery texts are built here
from the server's own lexemes, each quoted.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

MAX_WORDS = 6  # the query's first lexemes matched (levels of up to C(6, 3) = 20 combinations each)
COLUMNS = ("gid, project_key, tier, type, title, content, source, confidence, importance, explicit, author, "
           "origin_machine, version, content_hash, created_at, updated_at, forgotten_at, change_seq")



class VectorScan(NamedTuple):
    """How a search finds the nearest vectors (settings `team_ef_search`, `team_iterative_scan`,
    `team_max_scan_tuples`, `team_exact_scan_max`): pgvector's HNSW scan settings, and up to how many memories in
    the searched projects their vectors are compared exactly instead."""

    ef_search: int = 400
    iterative_scan: str = "relaxed_order"
    max_scan_tuples: int = 20000
    exact_max: int = 3000

    @classmethod
    def of(cls, settings: Any) -> VectorScan:
        return cls(settings.team_ef_search, settings.team_iterative_scan, settings.team_max_scan_tuples,
                   settings.team_exact_scan_max)

    def apply(self, conn: Any) -> None:
        """Set them for the current transaction only (`set_config(..., true)`, i.e. SET LOCAL)."""
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', %s, true), "
                     "set_config('hnsw.max_scan_tuples', %s, true)",
                     (str(self.ef_search), self.iterative_scan, str(self.max_scan_tuples)))


_LIVE = "m.project_key = ANY(%(keys)s) AND m.forgotten_at IS NULL"


def quoted(lexeme: str) -> str:
    """A lexeme as a tsquery operand, taken as it is (quotes and backslashes escaped)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def level_query(lexemes: Sequence[str], holding: int) -> str:
    """The tsquery text of the memories holding at least `holding` of the lexemes (any combination)."""
    return " | ".join("(" + " & ".join(quoted(w) for w in combo) + ")"
                      for combo in itertools.combinations(lexemes, holding))


def scope_query(project_keys: Sequence[str]) -> str:
    """The tsquery text that finds the memories of these projects through their `project:<key>` lexeme."""
    return " | ".join(quoted(f"project:{key}") for key in project_keys)


def words_part(lexemes: Sequence[str], params: dict[str, Any]) -> str:
    """The SQL of the word candidates (gid, words), most words first, at most %(k)s; adds its parameters."""
    n = len(lexemes)
    if not n:
        return "SELECT NULL::text AS gid, 0 AS words WHERE false"
    levels = []
    for holding in range(n, 0, -1):
        params[f"q{holding}"] = level_query(lexemes, holding)
        above = f" AND NOT m.tsv @@ %(q{holding + 1})s::tsquery" if holding < n else ""
        levels.append(f"(SELECT m.gid, {holding} AS words FROM team_memories m WHERE m.tsv @@ "
                      f"(%(scope)s::tsquery && %(q{holding})s::tsquery){above} AND {_LIVE} LIMIT %(k)s)")
    return "SELECT gid, words FROM (" + " UNION ALL ".join(levels) + ") l LIMIT %(k)s"


def vectors_part(exact: bool, exact_max: int = VectorScan().exact_max) -> str:
    """The SQL of the nearest vectors' gids, at most %(k)s (exact: among the projects' first exact_max + 1)."""
    live = f"{_LIVE} AND m.embedding IS NOT NULL"
    if exact:  # the project's rows through its (project_key, change_seq) index, not a walk of the HNSW graph
        return (f"SELECT gid FROM (SELECT m.gid, m.embedding FROM team_memories m WHERE {live} "
                f"ORDER BY m.change_seq LIMIT {int(exact_max) + 1} OFFSET 0) p "
                "ORDER BY embedding <=> %(vec)s::vector LIMIT %(k)s")
    return f"SELECT m.gid FROM team_memories m WHERE {live} ORDER BY m.embedding <=> %(vec)s::vector LIMIT %(k)s"


def candidates(conn: Any, project_keys: Sequence[str], text: str, vector: str | None, limit: int,
               scan: VectorScan = VectorScan()) -> list[dict[str, Any]]:
    """Run the search on `conn` (pgvector's text form of the query vector, or None) in one transaction, the HNSW
    walk (if any) with `scan`'s settings."""
    params: dict[str, Any] = {"text": text, "keys": list(project_keys), "vec": vector, "k": limit,
                              "scope": scope_query(project_keys)}
    with conn.transaction():
        lexemes, many = conn.execute(
            "SELECT ARRAY(SELECT lexeme FROM unnest(to_tsvector('english', %(text)s)) ORDER BY positions[1]), "
            f"(SELECT count(*) > {int(scan.exact_max)} FROM (SELECT 1 FROM team_memories WHERE project_key = "
            f"ANY(%(keys)s) LIMIT {int(scan.exact_max) + 1}) c)", params).fetchone()
        lexemes = list(lexemes)[:MAX_WORDS]
        params["n"] = max(len(lexemes), 1)
        cosine = "1 - (m.embedding <=> %(vec)s::vector)" if vector else "NULL::float8"
        sql = (f"WITH f AS MATERIALIZED ({words_part(lexemes, params)})"
               + (f", v AS MATERIALIZED ({vectors_part(not many, scan.exact_max)})" if vector else "")
               + f" SELECT {', '.join('m.' + c for c in COLUMNS.split(', '))}, "
               f"COALESCE(f.words, 0)::float8 / %(n)s AS rank, {cosine} AS cosine FROM team_memories m "
               f"LEFT JOIN f ON f.gid = m.gid WHERE m.gid IN (SELECT gid FROM f"
               + (" UNION SELECT gid FROM v" if vector else "") + ")")
        if vector and many:
            scan.apply(conn)
        cur = conn.execute(sql, params)
        names = [d.name for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]
