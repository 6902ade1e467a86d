"""The team server's schema, created and migrated by agentmem itself: each migration is a named list of
statements, applied in order and recorded by name in `team_schema` (so inserting one later is safe).

- `team_memories`: the latest version of every shared memory, one row per global id (`gid`), with its author,
  origin machine, database role and project identity; `tsv` (PostgreSQL full-text search, GIN) and
  `embedding` (pgvector, 384 dimensions, HNSW on cosine distance) are what search reads. A forgotten memory
  keeps its row with `forgotten_at` set, so that every machine's copy learns of it.
- `team_history`: every version and every forget, with who did it and when (append-only for agentmem).
- `team_proposals`: a supersede or forget asked for by someone who is not the author.
- `change_seq`: a sequence number set on every change, which machines pull from incrementally.

`t002_decisions_and_row_security` records who accepted or rejected a proposal and when (the proposal rows are
kept: they are the proposals' history) and turns on row-level security, so that what a member may do is the
server's decision, not the client's: a role writes rows only in its own name (`db_role = current_user`), updates
only the memories its role wrote, and decides only on proposals about those. Roles get their grants from
`grant` (`agentmem team grant`); the tables' owner (the admin who created them) is not limited.
`t003_search_scope` adds the lexeme `project:<key>` to every memory's `tsv`, so that the full-text index finds a
project's rows by itself (team.search).
`t004_member_authors` binds an author name to a role (`team_members`, filled by `grant(..., author=...)`): a role
with a name bound to it writes memories, history, proposals and decisions only under that name (the row-level
security policies call `team_author_ok(current_user, name)`); a role without one is limited to its own rows as
before.
"""

from __future__ import annotations

from typing import Any

DIMENSIONS = 384

MIGRATIONS: list[tuple[str, list[str]]] = [
    ("t001_memories", [
        "CREATE EXTENSION IF NOT EXISTS vector",
        "CREATE SEQUENCE IF NOT EXISTS team_change_seq",
        f"""CREATE TABLE team_memories (
            gid text PRIMARY KEY,
            project_key text,
            tier text NOT NULL,
            type text NOT NULL,
            title text NOT NULL,
            content text NOT NULL,
            tags jsonb NOT NULL DEFAULT '[]',
            files jsonb NOT NULL DEFAULT '[]',
            source text NOT NULL,
            confidence real NOT NULL,
            importance real NOT NULL,
            explicit boolean NOT NULL DEFAULT false,
            author text NOT NULL,
            origin_machine text NOT NULL,
            db_role text NOT NULL DEFAULT current_user,
            version integer NOT NULL DEFAULT 1,
            content_hash text NOT NULL,
            created_at double precision NOT NULL,
            updated_at double precision NOT NULL,
            forgotten_at double precision,
            change_seq bigint NOT NULL DEFAULT nextval('team_change_seq'),
            embedding vector({DIMENSIONS}),
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', title || ' ' || content)) STORED
        )""",
        "CREATE INDEX team_memories_changes ON team_memories (project_key, change_seq)",
        "CREATE INDEX team_memories_tsv ON team_memories USING gin (tsv)",
        "CREATE INDEX team_memories_embedding ON team_memories USING hnsw (embedding vector_cosine_ops)",
        """CREATE TABLE team_history (
            gid text NOT NULL,
            version integer NOT NULL,
            action text NOT NULL CHECK (action IN ('publish', 'forget', 'accept')),
            title text,
            content text,
            author text NOT NULL,
            origin_machine text NOT NULL,
            db_role text NOT NULL DEFAULT current_user,
            reason text,
            at double precision NOT NULL,
            PRIMARY KEY (gid, version, action)
        )""",
        """CREATE TABLE team_proposals (
            id bigserial PRIMARY KEY,
            gid text NOT NULL,
            action text NOT NULL CHECK (action IN ('forget', 'supersede')),
            content text NOT NULL DEFAULT '',
            reason text NOT NULL DEFAULT '',
            proposer text NOT NULL,
            origin_machine text NOT NULL,
            db_role text NOT NULL DEFAULT current_user,
            created_at double precision NOT NULL,
            status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'accepted', 'declined')),
            UNIQUE (gid, action, proposer, content)
        )""",
    ]),
    ("t002_decisions_and_row_security", [
        "ALTER TABLE team_proposals DROP CONSTRAINT team_proposals_status_check",
        "ALTER TABLE team_proposals ADD CONSTRAINT team_proposals_status_check "
        "CHECK (status IN ('open', 'accepted', 'rejected'))",
        "ALTER TABLE team_proposals ADD COLUMN decided_by text, ADD COLUMN decided_machine text, "
        "ADD COLUMN decided_role text, ADD COLUMN decided_at double precision, ADD COLUMN decision_note text",
        "ALTER TABLE team_proposals DROP CONSTRAINT team_proposals_gid_action_proposer_content_key",
        "CREATE UNIQUE INDEX team_proposals_open ON team_proposals (gid, action, proposer, content) "
        "WHERE status = 'open'",  # the same proposal again after a decision is a new one
        "ALTER TABLE team_history ADD COLUMN proposal_id bigint",
        "ALTER TABLE team_memories ENABLE ROW LEVEL SECURITY",
        "CREATE POLICY team_memories_read ON team_memories FOR SELECT USING (true)",
        "CREATE POLICY team_memories_insert ON team_memories FOR INSERT WITH CHECK (db_role = current_user)",
        "CREATE POLICY team_memories_update ON team_memories FOR UPDATE USING (db_role = current_user) "
        "WITH CHECK (db_role = current_user)",
        "ALTER TABLE team_history ENABLE ROW LEVEL SECURITY",
        "CREATE POLICY team_history_read ON team_history FOR SELECT USING (true)",
        "CREATE POLICY team_history_insert ON team_history FOR INSERT WITH CHECK (db_role = current_user AND "
        "EXISTS (SELECT 1 FROM team_memories m WHERE m.gid = team_history.gid AND m.db_role = current_user))",
        "ALTER TABLE team_proposals ENABLE ROW LEVEL SECURITY",
        "CREATE POLICY team_proposals_read ON team_proposals FOR SELECT USING (true)",
        "CREATE POLICY team_proposals_insert ON team_proposals FOR INSERT WITH CHECK (db_role = current_user "
        "AND status = 'open' AND decided_by IS NULL AND decided_role IS NULL)",
        "CREATE POLICY team_proposals_decide ON team_proposals FOR UPDATE USING (EXISTS (SELECT 1 FROM "
        "team_memories m WHERE m.gid = team_proposals.gid AND m.db_role = current_user)) "
        "WITH CHECK (decided_role = current_user)",
    ]),
    ("t003_search_scope", [  # a project's rows found by the full-text index itself (team.search)
        "ALTER TABLE team_memories DROP COLUMN tsv",
        "ALTER TABLE team_memories ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', title || "
        "' ' || content) || array_to_tsvector(ARRAY['project:' || coalesce(project_key, '')])) STORED",
        "CREATE INDEX team_memories_tsv ON team_memories USING gin (tsv)",
    ]),
    ("t004_member_authors", [  # an author name bound to a member's role, checked by row-level security
        "CREATE TABLE team_members (role text PRIMARY KEY, author text NOT NULL)",
        # SECURITY DEFINER: a member granted before t004 has no right on team_members, and needs none
        "CREATE FUNCTION team_author_ok(member text, name text) RETURNS boolean LANGUAGE sql STABLE "
        "SECURITY DEFINER SET search_path FROM CURRENT AS $$ SELECT NOT EXISTS (SELECT 1 FROM team_members "
        "WHERE role = member) OR EXISTS (SELECT 1 FROM team_members WHERE role = member AND author = name) $$",
        "ALTER POLICY team_memories_insert ON team_memories WITH CHECK (db_role = current_user AND "
        "team_author_ok(current_user, author))",
        "ALTER POLICY team_memories_update ON team_memories USING (db_role = current_user) "
        "WITH CHECK (db_role = current_user AND team_author_ok(current_user, author))",
        "ALTER POLICY team_history_insert ON team_history WITH CHECK (db_role = current_user AND "
        "team_author_ok(current_user, author) AND EXISTS (SELECT 1 FROM team_memories m "
        "WHERE m.gid = team_history.gid AND m.db_role = current_user))",
        "ALTER POLICY team_proposals_insert ON team_proposals WITH CHECK (db_role = current_user AND "
        "team_author_ok(current_user, proposer) AND status = 'open' AND decided_by IS NULL "
        "AND decided_role IS NULL)",
        "ALTER POLICY team_proposals_decide ON team_proposals USING (EXISTS (SELECT 1 FROM team_memories m "
        "WHERE m.gid = team_proposals.gid AND m.db_role = current_user)) "
        "WITH CHECK (decided_role = current_user AND team_author_ok(current_user, decided_by))",
    ]),
]

TABLES = ("team_schema", "team_memories", "team_history", "team_proposals", "team_members")
SEQUENCES = ("team_change_seq", "team_proposals_id_seq")


def grant(conn: Any, role: str, *, write: bool, author: str | None = None) -> None:
    """Give a member's PostgreSQL role its rights, in one transaction (run by the tables' owner): reading only
    (SELECT on the tables; every other right on them revoked), or reading and writing (INSERT and UPDATE where
    agentmem writes, the sequences; never DELETE nor TRUNCATE). Row-level security (t002) then limits a writer
    to its own rows; `author` binds that name to the role (t004: it writes only under it; None leaves the binding
    as it is, "" removes it). Raises psycopg's errors (an unknown role: UndefinedObject)."""
    from psycopg import sql

    who = sql.Identifier(role)
    tables = sql.SQL(", ").join(sql.Identifier(t) for t in TABLES)
    sequences = sql.SQL(", ").join(sql.Identifier(s) for s in SEQUENCES)
    with conn.transaction():
        where = conn.execute("SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                             "WHERE c.oid = 'team_memories'::regclass").fetchone()[0]
        statements = [sql.SQL("REVOKE ALL ON {} FROM {}").format(tables, who),
                      sql.SQL("REVOKE ALL ON SEQUENCE {} FROM {}").format(sequences, who),
                      sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(where), who),
                      sql.SQL("GRANT SELECT ON {} TO {}").format(tables, who)]
        if write:
            statements += [sql.SQL("GRANT INSERT, UPDATE ON team_memories, team_proposals TO {}").format(who),
                           sql.SQL("GRANT INSERT ON team_history TO {}").format(who),
                           sql.SQL("GRANT USAGE ON SEQUENCE {} TO {}").format(sequences, who)]
        for statement in statements:
            conn.execute(statement)
        if author == "":
            conn.execute("DELETE FROM team_members WHERE role = %s", (role,))
        elif author is not None:
            conn.execute("INSERT INTO team_members (role, author) VALUES (%s, %s) ON CONFLICT (role) DO UPDATE "
                         "SET author = EXCLUDED.author", (role, author))


_LOCK = "SELECT pg_advisory_xact_lock(hashtext('agentmem team schema'))"


def migrate(conn) -> list[str]:
    """Apply the migrations this server lacks (in one transaction each); returns the names applied. A role
    that may not create tables meets a clear error only when something is missing."""
    if is_current(conn):
        return []
    if not _has_schema_table(conn):
        with conn.transaction():
            # CREATE TABLE IF NOT EXISTS is not safe against itself: two machines (or a server and its worker)
            # creating it at once fail on pg_type's unique index; the lock makes the second one wait and see it.
            conn.execute(_LOCK)
            conn.execute("CREATE TABLE IF NOT EXISTS team_schema (name text PRIMARY KEY, "
                         "applied_at timestamptz NOT NULL DEFAULT now())")
    applied = {row[0] for row in conn.execute("SELECT name FROM team_schema")}
    done = []
    for name, statements in MIGRATIONS:
        if name in applied:
            continue
        with conn.transaction():
            conn.execute(_LOCK)
            conn.execute("SET LOCAL statement_timeout = 0")  # a migration may rewrite a big table
            if conn.execute("SELECT 1 FROM team_schema WHERE name = %s", (name,)).fetchone():
                continue  # another machine applied it while we waited
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO team_schema (name) VALUES (%s)", (name,))
        done.append(name)
    return done


def _has_schema_table(conn) -> bool:
    return conn.execute("SELECT to_regclass('team_schema') IS NOT NULL").fetchone()[0]


def is_current(conn) -> bool:
    """Whether every migration is recorded (so a read-only role can use the server)."""
    if not _has_schema_table(conn):
        return False
    applied = {row[0] for row in conn.execute("SELECT name FROM team_schema")}
    return all(name in applied for name, _ in MIGRATIONS)
