"""The team server: PostgreSQL with pgvector, reached through psycopg 3 (a psycopg_pool pool in a long-running
process, one connection in a short one). Every statement takes its values as parameters.

A dead server must not hold up a session: before libpq connects (its own timeout cannot go under 2 s), a plain
socket connect to the server's address gives up after `PROBE_SECONDS`; statements time out after
`STATEMENT_TIMEOUT_MS`. Errors come out as `TeamUnreachable` or `TeamPermissionError` with the password hidden.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..models import AgentmemError
from . import schema
from .credentials import TeamCredentials

log = logging.getLogger("agentmem.team")

PROBE_SECONDS = 0.3
CONNECT_TIMEOUT_S = 2  # libpq's smallest
STATEMENT_TIMEOUT_MS = 3000
SEARCH_DEPTH = 40
EXACT_SCAN_MAX = 3000  # up to this many shared memories in the searched projects, vectors are compared exactly
COLUMNS = ("gid, project_key, tier, type, title, content, source, confidence, importance, explicit, author, "
           "origin_machine, version, content_hash, created_at, updated_at, forgotten_at, change_seq")


class TeamUnreachable(AgentmemError):
    """The team server did not answer (down, unreachable, refusing the login)."""


class TeamPermissionError(AgentmemError):
    """This member may not do that on the team server (read-only member, or a role without write grants)."""


class _Masking(logging.Filter):
    """Hides the connection's secrets in what psycopg's pool logs."""

    def __init__(self, creds: TeamCredentials) -> None:
        super().__init__()
        self.creds = creds

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = self.creds.mask(record.getMessage()), ()
        return True


def vector_text(vector: Sequence[float] | None) -> str | None:
    """A vector in pgvector's text form (`[0.1,0.2]`), or None."""
    if vector is None:
        return None
    return "[" + ",".join(f"{float(x):.6g}" for x in vector) + "]"


class TeamServer:
    """One team server. pooled=True keeps a connection pool (for `agentmem serve`); otherwise each
    `connection()` opens and closes one."""

    def __init__(self, creds: TeamCredentials, *, pooled: bool = False, application: str = "agentmem") -> None:
        self.creds = creds
        self.pooled = pooled
        self.application = application
        self._pool: Any = None
        self._lock = threading.Lock()
        self._schema_checked = False

    # connections ---------------------------------------------------------------------------------

    def probe(self) -> None:
        """Raise TeamUnreachable within PROBE_SECONDS when nothing accepts connections at the server's address."""
        endpoint = self.creds.endpoint()
        if endpoint is None:
            return
        host, port = endpoint
        try:
            if port == "":
                with socket.socket(socket.AF_UNIX) as sock:
                    sock.settimeout(PROBE_SECONDS)
                    sock.connect(host)
            else:
                with socket.create_connection((host, port), timeout=PROBE_SECONDS):
                    pass
        except OSError as exc:
            reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
            raise TeamUnreachable(f"team memory unreachable at {self.creds.shown}: {reason}") from None

    def _conninfo(self) -> str:
        return self.creds.conninfo(connect_timeout=CONNECT_TIMEOUT_S, application_name=self.application,
                                   options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}")

    def _get_pool(self) -> Any:
        with self._lock:
            if self._pool is None:
                from psycopg_pool import ConnectionPool

                logging.getLogger("psycopg.pool").addFilter(_Masking(self.creds))
                self._pool = ConnectionPool(self._conninfo(), min_size=1, max_size=4, open=False,
                                            kwargs={"autocommit": True}, timeout=CONNECT_TIMEOUT_S,
                                            reconnect_timeout=0, name="agentmem-team")
                self._pool.open(wait=False)
            return self._pool

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A connection in autocommit mode (use `conn.transaction()` for several statements)."""
        import psycopg

        self.probe()
        try:
            if self.pooled:
                from psycopg_pool import PoolTimeout

                try:
                    with self._get_pool().connection(timeout=CONNECT_TIMEOUT_S) as conn:
                        self._ensure_schema(conn)
                        yield conn
                except PoolTimeout as exc:
                    raise TeamUnreachable(self.creds.mask(f"team memory unreachable at {self.creds.shown}: "
                                                          f"{exc}")) from None
            else:
                conn = psycopg.connect(self._conninfo(), autocommit=True)
                try:
                    self._ensure_schema(conn)
                    yield conn
                finally:
                    conn.close()
        except psycopg.errors.InsufficientPrivilege as exc:
            raise TeamPermissionError(self.creds.mask(
                f"the team server refused: {exc.diag.message_primary or exc}. This PostgreSQL role may not do "
                "that: ask the team's admin for grants, or set team_read_only = true to only read")) from None
        except psycopg.OperationalError as exc:
            raise TeamUnreachable(self.creds.mask(f"team memory unreachable at {self.creds.shown}: "
                                                  f"{str(exc).strip().splitlines()[0]}")) from None

    def _ensure_schema(self, conn: Any) -> None:
        if not self._schema_checked:
            applied = schema.migrate(conn)
            if applied:
                log.info("team server schema: applied %s", ", ".join(applied))
            self._schema_checked = True

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    # writes --------------------------------------------------------------------------------------

    def publish(self, items: Sequence[dict[str, Any]]) -> list[str]:
        """Publish memories (or new versions of them), in one transaction; returns each one's outcome:
        `published`, `exists` (this version is there already: a replay), `proposed` (the memory has another
        author: stored as a supersede proposal) or `forgotten` (forgotten on the server: not revived)."""
        outcomes = []
        with self.connection() as conn, conn.transaction():
            for item in items:
                outcomes.append(self._publish_one(conn, item))
        return outcomes

    def _publish_one(self, conn: Any, item: dict[str, Any]) -> str:
        row = dict(item, tags=json.dumps(item.get("tags") or []), files=json.dumps(item.get("files") or []),
                   embedding=vector_text(item.get("embedding")))
        done = conn.execute(
            "INSERT INTO team_memories (gid, project_key, tier, type, title, content, tags, files, source, "
            "confidence, importance, explicit, author, origin_machine, version, content_hash, created_at, "
            "updated_at, embedding) VALUES (%(gid)s, %(project_key)s, %(tier)s, %(type)s, %(title)s, %(content)s, "
            "%(tags)s, %(files)s, %(source)s, %(confidence)s, %(importance)s, %(explicit)s, %(author)s, "
            "%(origin_machine)s, %(version)s, %(content_hash)s, %(created_at)s, %(updated_at)s, "
            "%(embedding)s::vector) "
            "ON CONFLICT (gid) DO UPDATE SET project_key = EXCLUDED.project_key, tier = EXCLUDED.tier, "
            "type = EXCLUDED.type, title = EXCLUDED.title, content = EXCLUDED.content, tags = EXCLUDED.tags, "
            "files = EXCLUDED.files, source = EXCLUDED.source, confidence = EXCLUDED.confidence, "
            "importance = EXCLUDED.importance, explicit = team_memories.explicit OR EXCLUDED.explicit, "
            "origin_machine = EXCLUDED.origin_machine, db_role = current_user, version = EXCLUDED.version, "
            "content_hash = EXCLUDED.content_hash, updated_at = EXCLUDED.updated_at, "
            "embedding = EXCLUDED.embedding, change_seq = nextval('team_change_seq') "
            "WHERE team_memories.author = EXCLUDED.author AND team_memories.version < EXCLUDED.version "
            "AND team_memories.forgotten_at IS NULL RETURNING gid", row).fetchone()
        if done:
            conn.execute("INSERT INTO team_history (gid, version, action, title, content, author, origin_machine, "
                         "at) VALUES (%(gid)s, %(version)s, 'publish', %(title)s, %(content)s, %(author)s, "
                         "%(origin_machine)s, %(updated_at)s) ON CONFLICT DO NOTHING", row)
            return "published"
        there = conn.execute("SELECT author, forgotten_at FROM team_memories WHERE gid = %s",
                             (item["gid"],)).fetchone()
        if there[1] is not None:
            return "forgotten"
        if there[0] != item["author"]:
            self._propose(conn, item["gid"], "supersede", item["content"], "", item["author"],
                          item["origin_machine"])
            return "proposed"
        return "exists"

    def forget(self, gid: str, *, author: str, machine: str, reason: str = "", at: float | None = None) -> str:
        """Forget a shared memory: done when `author` wrote it (`forgotten`), else stored as a proposal
        (`proposed`); `absent` when the server has no such memory; `forgotten` again is a no-op."""
        at = time.time() if at is None else at
        with self.connection() as conn, conn.transaction():
            done = conn.execute("UPDATE team_memories SET forgotten_at = %s, embedding = NULL, "
                                "change_seq = nextval('team_change_seq') WHERE gid = %s AND author = %s "
                                "AND forgotten_at IS NULL RETURNING version", (at, gid, author)).fetchone()
            if done:
                conn.execute("INSERT INTO team_history (gid, version, action, author, origin_machine, reason, at) "
                             "VALUES (%s, %s, 'forget', %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                             (gid, done[0], author, machine, reason, at))
                return "forgotten"
            there = conn.execute("SELECT author, forgotten_at FROM team_memories WHERE gid = %s", (gid,)).fetchone()
            if there is None:
                return "absent"
            if there[1] is not None:
                return "forgotten"
            self._propose(conn, gid, "forget", "", reason, author, machine)
            return "proposed"

    def propose_supersede(self, gid: str, content: str, *, author: str, machine: str, reason: str = "") -> str:
        """Ask the author of a shared memory to replace it with `content`: `proposed`, or `absent`."""
        with self.connection() as conn, conn.transaction():
            if not conn.execute("SELECT 1 FROM team_memories WHERE gid = %s AND forgotten_at IS NULL",
                                (gid,)).fetchone():
                return "absent"
            self._propose(conn, gid, "supersede", content, reason, author, machine)
            return "proposed"

    @staticmethod
    def _propose(conn: Any, gid: str, action: str, content: str, reason: str, proposer: str, machine: str) -> None:
        conn.execute("INSERT INTO team_proposals (gid, action, content, reason, proposer, origin_machine, "
                     "created_at) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                     (gid, action, content, reason, proposer, machine, time.time()))

    # reads ---------------------------------------------------------------------------------------

    def changes(self, project_key: str, after_seq: int, limit: int = 2000) -> list[dict[str, Any]]:
        """The project's memories changed after `after_seq` (forgotten ones too), oldest change first."""
        with self.connection() as conn:
            cur = conn.execute(f"SELECT {COLUMNS} FROM team_memories WHERE project_key = %s AND change_seq > %s "
                               "ORDER BY change_seq LIMIT %s", (project_key, after_seq, limit))
            names = [d.name for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def search(self, project_keys: Sequence[str], text: str, vector: Sequence[float] | None,
               limit: int = SEARCH_DEPTH) -> list[dict[str, Any]]:
        """Candidates for a query among the projects' live shared memories: the nearest vectors and the
        full-text matches of any of the query's words; each with `rank` (ts_rank_cd, 0 when it did not match the
        words) and `cosine` (exact, None without a vector). The nearest vectors come from an exact comparison
        when the projects hold at most EXACT_SCAN_MAX memories, else from the HNSW index (with pgvector's
        iterative scan, so that the project filter does not leave it short)."""
        qvec = vector_text(vector)
        words = ("SELECT string_agg(quote_literal(lexeme), ' | ') FROM unnest(to_tsvector('english', %(text)s))")
        live = "project_key = ANY(%(keys)s) AND forgotten_at IS NULL AND embedding IS NOT NULL"
        # Few rows in these projects: compare them all (exact, a few ms); many: the HNSW index, whose walk
        # through the other projects' rows is what costs when the filter keeps a small share of them.
        nearest = (f"SELECT gid FROM (SELECT gid, embedding FROM team_memories WHERE {live} "
                   f"ORDER BY change_seq LIMIT {EXACT_SCAN_MAX + 1} OFFSET 0) p "
                   "ORDER BY embedding <=> %(vec)s::vector LIMIT %(k)s")
        hnsw = (f"SELECT gid FROM team_memories WHERE {live} ORDER BY embedding <=> %(vec)s::vector LIMIT %(k)s")
        cosine = "1 - (m.embedding <=> %(vec)s::vector)" if qvec else "NULL::float8"
        sql = (f"WITH q AS (SELECT ({words})::tsquery AS q), "
               f"f AS (SELECT m.gid, ts_rank_cd(m.tsv, q.q) AS rank FROM team_memories m, q WHERE m.tsv @@ q.q "
               f"AND m.project_key = ANY(%(keys)s) AND m.forgotten_at IS NULL ORDER BY rank DESC LIMIT %(k)s)"
               + (f", v AS ({nearest})" if qvec else "")
               + f" SELECT {', '.join('m.' + c for c in COLUMNS.split(', '))}, COALESCE(f.rank, 0) AS rank, "
               f"{cosine} AS cosine FROM team_memories m LEFT JOIN f ON f.gid = m.gid WHERE m.gid IN "
               f"(SELECT gid FROM f{' UNION SELECT gid FROM v' if qvec else ''})")
        params = {"text": text, "keys": list(project_keys), "vec": qvec, "k": limit}
        with self.connection() as conn, conn.transaction():
            if qvec and conn.execute(f"SELECT count(*) > {EXACT_SCAN_MAX} FROM (SELECT 1 FROM team_memories "
                                     f"WHERE project_key = ANY(%(keys)s) LIMIT {EXACT_SCAN_MAX + 1}) c",
                                     params).fetchone()[0]:
                sql = sql.replace(nearest, hnsw)
                conn.execute("SET LOCAL hnsw.iterative_scan = 'relaxed_order'")
                conn.execute("SET LOCAL hnsw.ef_search = 64")
            cur = conn.execute(sql, params)
            names = [d.name for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def proposals(self, author: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """Open proposals, those on `author`'s memories when given, newest first."""
        with self.connection() as conn:
            cur = conn.execute(
                "SELECT p.id, p.gid, p.action, p.content, p.reason, p.proposer, p.created_at, m.title, m.author "
                "FROM team_proposals p JOIN team_memories m ON m.gid = p.gid WHERE p.status = 'open' "
                "AND (%(author)s::text IS NULL OR m.author = %(author)s) ORDER BY p.id DESC LIMIT %(limit)s",
                {"author": author, "limit": limit})
            names = [d.name for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def history(self, gid: str) -> list[dict[str, Any]]:
        """Every version and forget of a shared memory, oldest first."""
        with self.connection() as conn:
            cur = conn.execute("SELECT version, action, title, content, author, origin_machine, reason, at "
                               "FROM team_history WHERE gid = %s ORDER BY at, version", (gid,))
            names = [d.name for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def counts(self) -> dict[str, Any]:
        """How much the server holds, and who this connection is."""
        with self.connection() as conn:
            live, forgotten = conn.execute("SELECT count(*) FILTER (WHERE forgotten_at IS NULL), "
                                           "count(*) FILTER (WHERE forgotten_at IS NOT NULL) "
                                           "FROM team_memories").fetchone()
            proposals = conn.execute("SELECT count(*) FROM team_proposals WHERE status = 'open'").fetchone()[0]
            role, can_write = conn.execute(
                "SELECT current_user, has_table_privilege('team_memories', 'INSERT')").fetchone()
            return {"live": live, "forgotten": forgotten, "open_proposals": proposals, "role": role,
                    "can_write": can_write}
