"""The team server's schema, created and migrated by agentmem itself: each migration is a named list of
statements, applied in order and recorded by name in `team_schema` (so inserting one later is safe).

- `team_memories`: the latest version of every shared memory, one row per global id (`gid`), with its author,
  origin machine, database role and project identity; `tsv` (PostgreSQL full-text search, GIN) and
  `embedding` (pgvector, 384 dimensions, HNSW on cosine distance) are what search reads. A forgotten memory
  keeps its row with `forgotten_at` set, so that every machine's copy learns of it.
- `team_history`: every version and every forget, with who did it and when (append-only for agentmem).
- `team_proposals`: a supersede or forget asked for by someone who is not the author.
- `change_seq`: a sequence number set on every change, which machines pull from incrementally.
"""

from __future__ import annotations

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
]


def migrate(conn) -> list[str]:
    """Apply the migrations this server lacks (in one transaction each); returns the names applied. A role
    that may not create tables meets a clear error only when something is missing."""
    if is_current(conn):
        return []
    if not _has_schema_table(conn):
        with conn.transaction():
            conn.execute("CREATE TABLE IF NOT EXISTS team_schema (name text PRIMARY KEY, "
                         "applied_at timestamptz NOT NULL DEFAULT now())")
    applied = {row[0] for row in conn.execute("SELECT name FROM team_schema")}
    done = []
    for name, statements in MIGRATIONS:
        if name in applied:
            continue
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('agentmem team schema'))")
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
