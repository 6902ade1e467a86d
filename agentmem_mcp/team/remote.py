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

from ..models import AgentmemError, InvalidInput
from . import proposals, schema, search
from .credentials import TeamCredentials

log = logging.getLogger("agentmem.team")

PROBE_SECONDS = 0.3
CONNECT_TIMEOUT_S = 2  # libpq's smallest
STATEMENT_TIMEOUT_MS = 3000
SEARCH_DEPTH = 40
COLUMNS = search.COLUMNS


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


def _as_list(value: Any) -> list[Any]:
    """A JSON list column as a list (psycopg gives jsonb as Python values, text as a string)."""
    if isinstance(value, str):
        value = json.loads(value or "[]")
    return list(value or [])


def vector_text(vector: Sequence[float] | None) -> str | None:
    """A vector in pgvector's text form (`[0.1,0.2]`), or None."""
    if vector is None:
        return None
    return "[" + ",".join(f"{float(x):.6g}" for x in vector) + "]"


class TeamServer:
    """One team server. pooled=True keeps a connection pool (for `agentmem serve`); otherwise each
    `connection()` opens and closes one."""

    def __init__(self, creds: TeamCredentials, *, pooled: bool = False, application: str = "agentmem",
                 scan: search.VectorScan = search.VectorScan()) -> None:
        self.creds = creds
        self.scan = scan
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
            import psycopg

            try:
                applied = schema.migrate(conn)
            except psycopg.errors.InsufficientPrivilege as exc:
                raise TeamPermissionError(self.creds.mask(
                    f"the team server's tables are older than this agentmem ({exc.diag.message_primary}): the "
                    "team's admin (their owner) upgrades them by connecting once, `agentmem team status`")) from None
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
                   embedding=vector_text(item.get("embedding")), proposal_id=item.get("proposal_id"),
                   reason=item.get("reason"))
        there = conn.execute("SELECT author, db_role = current_user, forgotten_at FROM team_memories WHERE gid = %s",
                             (item["gid"],)).fetchone()
        if there is not None and there[2] is not None:
            return "forgotten"
        if there is not None and (there[0] != item["author"] or not there[1]):
            proposals.propose(conn, item["gid"], "supersede", item["content"], "", item["author"],
                              item["origin_machine"])
            return "proposed"
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
                         "reason, proposal_id, at) VALUES (%(gid)s, %(version)s, 'publish', %(title)s, %(content)s, "
                         "%(author)s, %(origin_machine)s, %(reason)s, %(proposal_id)s, %(updated_at)s) "
                         "ON CONFLICT DO NOTHING", row)
            return "published"
        there = conn.execute("SELECT author, forgotten_at FROM team_memories WHERE gid = %s",
                             (item["gid"],)).fetchone()
        if there[1] is not None:
            return "forgotten"
        if there[0] != item["author"]:  # published by someone else in the meantime
            proposals.propose(conn, item["gid"], "supersede", item["content"], "", item["author"],
                              item["origin_machine"])
            return "proposed"
        if item.get("explicit"):  # this version went out with the knowledge first, then its author shared it
            conn.execute("UPDATE team_memories SET explicit = true, change_seq = nextval('team_change_seq') "
                         "WHERE gid = %s AND author = %s AND NOT explicit", (item["gid"], item["author"]))
        return "exists"

    def _forget_one(self, conn: Any, gid: str, author: str, machine: str, reason: str, at: float,
                    proposal_id: int | None = None) -> bool:
        done = conn.execute("UPDATE team_memories SET forgotten_at = %s, embedding = NULL, "
                            "change_seq = nextval('team_change_seq') WHERE gid = %s AND author = %s "
                            "AND forgotten_at IS NULL RETURNING version", (at, gid, author)).fetchone()
        if done:
            conn.execute("INSERT INTO team_history (gid, version, action, author, origin_machine, reason, "
                         "proposal_id, at) VALUES (%s, %s, 'forget', %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                         (gid, done[0], author, machine, reason, proposal_id, at))
        return done is not None

    def forget(self, gid: str, *, author: str, machine: str, reason: str = "", at: float | None = None) -> str:
        """Forget a shared memory: done when `author` wrote it (`forgotten`), else stored as a proposal
        (`proposed`); `absent` when the server has no such memory; `forgotten` again is a no-op."""
        at = time.time() if at is None else at
        with self.connection() as conn, conn.transaction():
            if self._forget_one(conn, gid, author, machine, reason, at):
                return "forgotten"
            there = conn.execute("SELECT author, forgotten_at FROM team_memories WHERE gid = %s", (gid,)).fetchone()
            if there is None:
                return "absent"
            if there[1] is not None:
                return "forgotten"
            proposals.propose(conn, gid, "forget", "", reason, author, machine)
            return "proposed"

    def propose_supersede(self, gid: str, content: str, *, author: str, machine: str, reason: str = "") -> str:
        """Ask the author of a shared memory to replace it with `content` (secrets redacted first): `proposed`,
        or `absent`."""
        from ..capture.redact import redact

        with self.connection() as conn, conn.transaction():
            if not conn.execute("SELECT 1 FROM team_memories WHERE gid = %s AND forgotten_at IS NULL",
                                (gid,)).fetchone():
                return "absent"
            proposals.propose(conn, gid, "supersede", redact(content), redact(reason), author, machine)
            return "proposed"

    def accept_supersede(self, proposal_id: int, author: str, machine: str, item: dict[str, Any],
                         note: str = "") -> None:
        """Accept a supersede proposal: publish `item` (the memory's next version, with the proposed text) and
        record the decision, in one transaction. Raises InvalidInput / NotFound when it may not be decided."""
        with self.connection() as conn, conn.transaction():
            row = proposals.decidable(conn, proposal_id, author)
            item = dict(item, proposal_id=proposal_id, reason=f"accepted proposal #{proposal_id} by {row['proposer']}")
            outcome = self._publish_one(conn, item)
            if outcome != "published":
                raise InvalidInput(f"proposal #{proposal_id} not accepted: the team server answered {outcome}")
            proposals.decide(conn, proposal_id, "accepted", author, machine, note)

    def accept_forget(self, proposal_id: int, author: str, machine: str, note: str = "") -> None:
        """Accept a forget proposal: forget the memory and record the decision, in one transaction."""
        with self.connection() as conn, conn.transaction():
            row = proposals.decidable(conn, proposal_id, author)
            reason = f"accepted proposal #{proposal_id} by {row['proposer']}" + \
                (f": {row['reason']}" if row["reason"] else "")
            if not self._forget_one(conn, row["gid"], author, machine, reason, time.time(), proposal_id):
                raise InvalidInput(f"proposal #{proposal_id} not accepted: {row['gid']} is not yours to forget")
            proposals.decide(conn, proposal_id, "accepted", author, machine, note)

    # reads ---------------------------------------------------------------------------------------

    def changes(self, project_key: str, after_seq: int, limit: int = 2000) -> list[dict[str, Any]]:
        """The project's memories changed after `after_seq` (forgotten ones too), oldest change first; each
        with its vector in pgvector's text form (`[0.1,0.2,...]`, None when it has none)."""
        with self.connection() as conn:
            cur = conn.execute(f"SELECT {COLUMNS}, embedding::text AS embedding FROM team_memories WHERE "
                               "project_key = %s AND change_seq > %s ORDER BY change_seq LIMIT %s",
                               (project_key, after_seq, limit))
            names = [d.name for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def memory(self, gid: str) -> dict[str, Any] | None:
        """A shared memory's current row (tags and files as lists), or None."""
        with self.connection() as conn:
            cur = conn.execute(f"SELECT {COLUMNS}, tags, files FROM team_memories WHERE gid = %s", (gid,))
            found = cur.fetchone()
            if found is None:
                return None
            row = dict(zip([d.name for d in cur.description], found))
            return {**row, "tags": _as_list(row["tags"]), "files": _as_list(row["files"])}

    def search(self, project_keys: Sequence[str], text: str, vector: Sequence[float] | None,
               limit: int = SEARCH_DEPTH) -> list[dict[str, Any]]:
        """Candidates for a query among the projects' live shared memories (`team.search`): the memories
        holding most of the query's words and the nearest vectors, each with `rank` (its share of the query's
        words) and `cosine` (exact, None without a vector); an HNSW walk uses this server's `scan` settings."""
        with self.connection() as conn:
            return search.candidates(conn, project_keys, text, vector_text(vector), limit, self.scan)

    def proposals(self, author: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """Open proposals, those on `author`'s memories when given, newest first."""
        with self.connection() as conn:
            return proposals.listed(conn, author, limit)

    def history(self, gid: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Every version and forget of a shared memory, oldest first, and every proposal on it (decided ones
        with who decided, when and why)."""
        with self.connection() as conn:
            cur = conn.execute("SELECT version, action, title, content, author, origin_machine, reason, "
                               "proposal_id, at FROM team_history WHERE gid = %s ORDER BY at, version", (gid,))
            names = [d.name for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()], proposals.of_memory(conn, gid)

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
