"""Schema migrations, applied in order at open and recorded by name in `schema_migrations`.

The vector table is not created here: its dimension depends on the embedding model, so
`index.vectors` creates (and re-creates on a model change) `memory_vectors` itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

import sqlean

from . import ownership
from .connection import Connection, write_transaction


def _run_script(conn: Connection, script: str) -> None:
    """Run DDL statement by statement: executescript() would commit our BEGIN IMMEDIATE early."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlean.complete_statement(pending):
            conn.execute(pending)
            pending = ""
    if pending.strip():
        raise ValueError(f"incomplete SQL statement in migration: {pending[:80]!r}")


def m001_core_tables(conn: Connection) -> None:
    _run_script(
        conn,
        """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            project TEXT,
            client TEXT,
            cwd TEXT,
            started_at REAL NOT NULL,
            last_event_at REAL NOT NULL,
            ended_at REAL,
            status TEXT NOT NULL DEFAULT 'active',
            summary_memory_id TEXT,
            summarized_upto INTEGER NOT NULL DEFAULT 0,
            needs_summary INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX sessions_project ON sessions(project, last_event_at);

        CREATE TABLE observations (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            project TEXT,
            client TEXT,
            event TEXT NOT NULL,
            tool TEXT,
            input TEXT,
            output TEXT,
            prompt TEXT,
            files TEXT NOT NULL DEFAULT '[]',
            extra TEXT NOT NULL DEFAULT '{}',
            fingerprint TEXT NOT NULL,
            count INTEGER NOT NULL DEFAULT 1,
            status TEXT NOT NULL DEFAULT 'pending',
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at REAL,
            claimed_by TEXT,
            claimed_until REAL,
            error TEXT,
            kind TEXT,
            title TEXT,
            facts TEXT,
            importance REAL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            UNIQUE (session_id, fingerprint)
        );
        CREATE INDEX observations_status ON observations(status, next_attempt_at);
        CREATE INDEX observations_session ON observations(session_id, id);
        CREATE INDEX observations_project ON observations(project, created_at);

        CREATE TABLE memories (
            id TEXT PRIMARY KEY,
            project TEXT,
            tier TEXT NOT NULL DEFAULT 'semantic',
            type TEXT NOT NULL DEFAULT 'fact',
            title TEXT NOT NULL,
            content TEXT NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            files TEXT NOT NULL DEFAULT '[]',
            source TEXT NOT NULL DEFAULT 'agent',
            confidence REAL NOT NULL,
            importance REAL NOT NULL DEFAULT 0.5,
            priority TEXT NOT NULL DEFAULT 'P1',
            pinned INTEGER NOT NULL DEFAULT 0,
            strength REAL NOT NULL DEFAULT 1.0,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_accessed_at REAL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            valid_from REAL,
            valid_to REAL,
            forget_after REAL,
            version INTEGER NOT NULL DEFAULT 1,
            parent_id TEXT,
            root_id TEXT NOT NULL,
            is_latest INTEGER NOT NULL DEFAULT 1,
            source_ids TEXT NOT NULL DEFAULT '[]',
            session_id TEXT,
            content_hash TEXT NOT NULL,
            embedding_model TEXT,
            key TEXT
        );
        CREATE INDEX memories_latest ON memories(project, is_latest, created_at);
        CREATE INDEX memories_hash ON memories(content_hash, project);
        CREATE INDEX memories_root ON memories(root_id, version);
        CREATE INDEX memories_session ON memories(session_id);
        CREATE INDEX memories_forget_after ON memories(forget_after) WHERE forget_after IS NOT NULL;
        CREATE INDEX memories_key ON memories(project, key) WHERE key IS NOT NULL;

        CREATE TABLE memory_chunks (
            id INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL,
            chunk_index INTEGER NOT NULL,
            text TEXT NOT NULL,
            embedding BLOB,
            UNIQUE (memory_id, chunk_index)
        );

        CREATE TABLE memory_links (
            src_id TEXT NOT NULL,
            dst_id TEXT NOT NULL,
            relation TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (src_id, dst_id, relation)
        );
        CREATE INDEX memory_links_dst ON memory_links(dst_id);

        CREATE TABLE entities (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            UNIQUE (kind, name)
        );
        CREATE TABLE memory_entities (
            memory_id TEXT NOT NULL,
            entity_id INTEGER NOT NULL,
            PRIMARY KEY (memory_id, entity_id)
        );
        CREATE INDEX memory_entities_entity ON memory_entities(entity_id);

        CREATE TABLE audit (
            seq INTEGER PRIMARY KEY,
            at REAL NOT NULL,
            action TEXT NOT NULL,
            memory_id TEXT,
            project TEXT,
            detail TEXT NOT NULL DEFAULT '{}',
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL
        );
        CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
            BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
        CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
            BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;

        CREATE TABLE index_outbox (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_id TEXT NOT NULL,
            op TEXT NOT NULL CHECK (op IN ('upsert', 'delete')),
            created_at REAL NOT NULL
        );

        CREATE TABLE leases (
            name TEXT PRIMARY KEY,
            holder TEXT NOT NULL,
            expires_at REAL NOT NULL
        );

        CREATE TABLE llm_ledger (
            id INTEGER PRIMARY KEY,
            at REAL NOT NULL,
            day TEXT NOT NULL,
            purpose TEXT NOT NULL,
            model TEXT NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL
        );
        CREATE INDEX llm_ledger_day ON llm_ledger(day);
        """
    )


def m002_session_order(conn: Connection) -> None:
    """Memories of a session in time order: BM25's neighbouring-turn context looks up the ones before."""
    conn.execute("CREATE INDEX IF NOT EXISTS memories_session_time ON memories(session_id, created_at)")
    conn.execute("DROP INDEX IF EXISTS memories_session")


def m003_sentence_pieces(conn: Connection) -> None:
    """memories.pieces: how many sentence-piece vectors a memory has (index/vectors.py); NULL until the
    background worker has looked at it, which the partial index finds without a scan."""
    conn.execute("ALTER TABLE memories ADD COLUMN pieces INTEGER")
    conn.execute("CREATE INDEX memories_pieces_todo ON memories(embedding_model) WHERE pieces IS NULL")


def m004_word_vectors(conn: Connection) -> None:
    """word_vectors: each word of the store embedded on its own, with how many memories have it
    (index/words.py); memories.words: the memory's words, space-separated (search reads them instead of
    tokenizing every candidate), NULL until the background worker has embedded them."""
    conn.execute("CREATE TABLE word_vectors (word TEXT PRIMARY KEY, uses INTEGER NOT NULL, vector BLOB NOT NULL) "
                 "WITHOUT ROWID")
    conn.execute("ALTER TABLE memories ADD COLUMN words TEXT")
    conn.execute("CREATE INDEX memories_words_todo ON memories(embedding_model) WHERE words IS NULL")


def m005_answer_chunks(conn: Connection) -> None:
    """Answer chunks (index/neighbours.py) are embedded with the sentence pieces: the memories that can have
    one (events of a session) are looked at again by the background worker."""
    conn.execute("UPDATE memories SET pieces = NULL WHERE tier = 'episodic' AND session_id IS NOT NULL "
                 "AND embedding_model IS NOT NULL AND embedding_model != ''")


def m006_keyed_audit(conn: Connection) -> None:
    """The audit chain becomes keyed (db/audit.py): each row says which scheme hashed it (rows before this are
    `sha256`, unkeyed) and binds the content hash of the memory it is about."""
    conn.execute("ALTER TABLE audit ADD COLUMN content_hash TEXT")
    conn.execute("ALTER TABLE audit ADD COLUMN scheme TEXT NOT NULL DEFAULT 'sha256'")


def m007_quarantine(conn: Connection) -> None:
    """memories.quarantined: why a memory from an agent, the worker or an import reads as instructions to an AI
    agent (trust.instruction_reason); NULL for the rest. A quarantined memory is kept, counted by stats and
    listed by `agentmem quarantine`, but never searched (unless asked for) or injected until a user releases it."""
    conn.execute("ALTER TABLE memories ADD COLUMN quarantined TEXT")
    conn.execute("CREATE INDEX memories_quarantined ON memories(project) WHERE quarantined IS NOT NULL")


def m008_anchor_commit(conn: Connection) -> None:
    """memories.anchor_commit: the commit checked out where a memory naming project files was written (its full
    hash), so that a memory about code that is gone says since when (`git show <commit>:<path>`); NULL when the
    memory names no file or the commit is not known."""
    conn.execute("ALTER TABLE memories ADD COLUMN anchor_commit TEXT")


def m009_briefing_indexes(conn: Connection) -> None:
    """The session-start briefing's reads (briefing.briefing_lines) without a scan of the project: its learned
    knowledge and its session summaries are found in `memories_briefing`, whose columns hold every filter and
    order of theirs (the knowledge query reads only the rows it keeps), and its pinned / P0 memories in a partial
    index of those alone."""
    conn.execute("CREATE INDEX memories_briefing ON memories(project, is_latest, tier, type, confidence, importance, "
                 "access_count, updated_at, quarantined, forget_after)")
    conn.execute("CREATE INDEX memories_pinned ON memories(project, is_latest) WHERE pinned = 1 OR priority = 'P0'")


def m010_audit_by_memory(conn: Connection) -> None:
    """A memory's audit trail (the viewer's memory page) without a scan of the whole log."""
    conn.execute("CREATE INDEX audit_memory ON audit(memory_id, seq) WHERE memory_id IS NOT NULL")


def m011_team(conn: Connection) -> None:
    """Team memory (agentmem_mcp/team/): `team_outbox`, what waits to be published (retried with backoff);
    `team_shared`, this machine's memories on the team server (local root id -> global id, the version sent);
    `team_mirror` (+ FTS5 `team_mirror_fts`), this machine's copy of the team's memories of its projects, which
    the briefing and prompt recall read (the hooks never talk to the server); `team_state`, pull positions and
    this machine's id. Empty and unused unless team_url is set."""
    _run_script(
        conn,
        """
        CREATE TABLE team_outbox (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_id TEXT NOT NULL,
            op TEXT NOT NULL CHECK (op IN ('publish', 'forget')),
            explicit INTEGER NOT NULL DEFAULT 0,
            reason TEXT NOT NULL DEFAULT '',
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at REAL NOT NULL DEFAULT 0,
            last_error TEXT,
            created_at REAL NOT NULL
        );
        CREATE INDEX team_outbox_due ON team_outbox(next_attempt_at);
        CREATE TABLE team_shared (
            root_id TEXT PRIMARY KEY,
            gid TEXT NOT NULL UNIQUE,
            memory_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            explicit INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL DEFAULT 'queued',
            shared_at REAL NOT NULL
        );
        CREATE TABLE team_mirror (
            gid TEXT PRIMARY KEY,
            project_key TEXT,
            tier TEXT NOT NULL,
            type TEXT NOT NULL,
            title TEXT NOT NULL,
            content TEXT NOT NULL,
            source TEXT NOT NULL,
            confidence REAL NOT NULL,
            importance REAL NOT NULL,
            explicit INTEGER NOT NULL,
            author TEXT NOT NULL,
            origin_machine TEXT NOT NULL,
            version INTEGER NOT NULL,
            content_hash TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX team_mirror_project ON team_mirror(project_key, importance, updated_at);
        CREATE VIRTUAL TABLE team_mirror_fts USING fts5(gid UNINDEXED, text, tokenize = 'porter');
        CREATE TABLE team_state (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        """
    )


def m012_team_mirror_vectors(conn: Connection) -> None:
    """This machine's copy of team memory keeps each memory's vector (float32, the server's), so that search
    ranks it by meaning too when the server is away. The copy is pulled again from the start to get them."""
    conn.execute("ALTER TABLE team_mirror ADD COLUMN embedding BLOB")
    conn.execute("DELETE FROM team_state WHERE key LIKE 'pulled:%'")


def m013_vector_changes(conn: Connection) -> None:
    """`vector_changes`: the chunk ids each write to the KNN table touched, in commit order, so that a process
    holding a copy of the binary codes (index/codes.py) applies what others wrote (db/vectors.py writes it)."""
    conn.execute("CREATE TABLE vector_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, chunk_id INTEGER NOT NULL)")


def m014_unembedded_index(conn: Connection) -> None:
    """The memories still without vectors (the backfill's queue, counted at every open) without a scan of the
    table: at a million memories that scan read the whole table, seconds from a cold disk."""
    conn.execute("CREATE INDEX memories_unembedded ON memories(embedding_model) WHERE embedding_model IS NULL")


def m015_briefing_indexes_without_confidence(conn: Connection) -> None:
    """The briefing's two reads each get an index in its own order, and neither holds confidence or strength, so
    the sweep's decay (which rewrites those two columns of many rows at each sweep) updates the table alone:
    `memories_knowledge` (project, tier, then importance, use and last update: the knowledge query's order) and
    `memories_recent` (project, tier, type, last update: the session summaries'), each read one project and tier
    at a time up to its limit (memories.best_known, memories.session_summaries). They replace
    `memories_briefing`, whose confidence column made every decayed row move in it. `memories_pinned` gets the
    pinned memories' order too (memories.pinned)."""
    conn.execute("DROP INDEX IF EXISTS memories_briefing")
    conn.execute("CREATE INDEX memories_knowledge ON memories(project, is_latest, tier, importance, access_count, "
                 "updated_at)")
    conn.execute("CREATE INDEX memories_recent ON memories(project, is_latest, tier, type, updated_at)")
    conn.execute("DROP INDEX IF EXISTS memories_pinned")
    conn.execute("CREATE INDEX memories_pinned ON memories(project, is_latest, pinned, importance, created_at) "
                 "WHERE pinned = 1 OR priority = 'P0'")


def m016_audit_state(conn: Connection) -> None:
    """Audit rows bind the trust state of the memory they are about (db/audit_state.py): `audit.state`. The state
    of every memory already stored is sealed once, a `seal` row each (db/audit.py `seal_all`), so that an existing
    home verifies from then on without false alarms. The name is `audit.SEALING_MIGRATION`."""
    conn.execute("ALTER TABLE audit ADD COLUMN state TEXT")
    if conn.execute("SELECT 1 FROM memories LIMIT 1").fetchone() is not None:  # a new database (a hook's) has none
        from . import audit

        audit.seal_all(conn, "upgrade: the audit chain binds each memory's trust state from now on")


MIGRATIONS: list[Callable[[Connection], None]] = [m001_core_tables, m002_session_order, m003_sentence_pieces,
                                                  m004_word_vectors, m005_answer_chunks, m006_keyed_audit,
                                                  m007_quarantine, m008_anchor_commit, m009_briefing_indexes,
                                                  m010_audit_by_memory, m011_team, m012_team_mirror_vectors,
                                                  m013_vector_changes, m014_unembedded_index,
                                                  m015_briefing_indexes_without_confidence, m016_audit_state]


def migrate(conn: Connection) -> int:
    """Apply the migrations this database has not recorded, in list order, each in its own transaction;
    return the schema version (how many migrations there are). A migration is known by its name (a row
    without one counts by its position, which names the same function), so one inserted into the list later
    is applied where it is missing; `version` is the order they were applied in.

    The database is first claimed as agentmem's (`claim`): another program's database raises ForeignDatabaseError
    and nothing in it changes."""
    if getattr(conn, "read_only", None) is not None:
        return _check_read_only(conn)
    if ownership.application_id(conn) != ownership.APPLICATION_ID:
        claim(conn)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at REAL)"
    )
    applied = _applied(conn)
    for migration in MIGRATIONS:
        if migration.__name__ in applied:
            continue
        with write_transaction(conn):
            if migration.__name__ in _applied(conn):
                continue  # another process applied it while we waited for the lock
            migration(conn)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) "
                "SELECT COALESCE(MAX(version), 0) + 1, ?, ? FROM schema_migrations",
                (migration.__name__, time.time()),
            )
    return len(MIGRATIONS)


def _check_read_only(conn: Connection) -> int:
    """`migrate` for a connection that cannot write: the database must be agentmem's and up to date already."""
    why = _not_ours(conn)
    if why is not None:
        raise ownership.refusal(_path_of(conn), why)
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_migrations'").fetchone()
    missing = [m.__name__ for m in MIGRATIONS if m.__name__ not in (_applied(conn) if exists else set())]
    if missing:
        from ..models import StoreReadOnly

        raise StoreReadOnly(f"the database needs an update to this agentmem's schema ({len(missing)} steps), which "
                            f"cannot be written: {conn.read_only}")
    return len(MIGRATIONS)


def _applied(conn: Connection) -> set[str]:
    names = {migration.__name__ for migration in MIGRATIONS}
    found = set()
    for version, name in conn.execute("SELECT version, name FROM schema_migrations"):
        if name not in names and isinstance(version, int) and 1 <= version <= len(MIGRATIONS):
            name = MIGRATIONS[version - 1].__name__
        found.add(name)
    return found


def claim(conn: Connection) -> None:
    """Stamp the database open on `conn` as agentmem's (`ownership`): an empty one (a new database), or one an
    agentmem from before the stamp made (its tables are all agentmem's). Anything else raises ForeignDatabaseError,
    untouched."""
    with write_transaction(conn):
        why = _not_ours(conn)
        if why is not None:
            raise ownership.refusal(_path_of(conn), why)
        if ownership.application_id(conn) != ownership.APPLICATION_ID:
            ownership.stamp(conn)


def foreign_database(path: Path) -> str | None:
    """Why the database file at `path` is not agentmem's (None: it is), read without changing it."""
    from .connection import DatabaseError

    try:
        conn = sqlean.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, isolation_level=None)
    except DatabaseError as exc:
        return f"it cannot be read ({exc})"
    try:
        return _not_ours(conn)
    except DatabaseError as exc:
        return f"it cannot be read ({exc})"
    finally:
        conn.close()


def _not_ours(conn: Connection) -> str | None:
    why = ownership.first_look(conn)
    if why is not None or ownership.application_id(conn) == ownership.APPLICATION_ID:
        return why
    foreign = ownership.foreign_tables(conn, known_tables())
    return f"it holds tables agentmem does not make ({ownership.shown(foreign)})" if foreign else None


@cache
def known_tables() -> frozenset[str]:
    """Every table the migrations create (read from an in-memory database they are run on)."""
    conn = sqlean.connect(":memory:", isolation_level=None)
    try:
        for migration in MIGRATIONS:
            migration(conn)
        return frozenset([*ownership.tables(conn), "schema_migrations"])
    finally:
        conn.close()


def _path_of(conn: Connection) -> str:
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main":
            return row[2] or "(in memory)"
    return "(unknown)"
