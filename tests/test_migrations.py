"""Migrations are recorded by name: a home whose rows carry only positions is not migrated again, and a
migration inserted into the list is applied where it is missing."""

from __future__ import annotations

from agentmem_mcp.db import migrations
from agentmem_mcp.db.connection import connect
from agentmem_mcp.db.migrations import MIGRATIONS, migrate


def recorded(conn) -> list[tuple[int, str]]:
    return [tuple(row) for row in conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")]


def test_each_migration_is_recorded_once_by_name(tmp_path):
    conn = connect(tmp_path / "a.db")
    assert migrate(conn) == len(MIGRATIONS)
    assert migrate(conn) == len(MIGRATIONS)
    assert recorded(conn) == [(n, m.__name__) for n, m in enumerate(MIGRATIONS, start=1)]


def test_rows_without_names_count_by_position(tmp_path):
    conn = connect(tmp_path / "b.db")
    migrate(conn)
    conn.execute("UPDATE schema_migrations SET name = NULL")
    conn.commit()
    migrate(conn)  # m001 again would fail: its tables exist
    assert len(recorded(conn)) == len(MIGRATIONS)


def test_a_migration_inserted_later_is_applied_where_missing(tmp_path, monkeypatch):
    conn = connect(tmp_path / "c.db")
    migrate(conn)

    def m003b_extra_table(c):
        c.execute("CREATE TABLE extra (x INTEGER)")

    monkeypatch.setattr(migrations, "MIGRATIONS", [*MIGRATIONS[:3], m003b_extra_table, *MIGRATIONS[3:]])
    assert migrate(conn) == len(MIGRATIONS) + 1
    assert conn.execute("SELECT COUNT(*) FROM extra").fetchone()[0] == 0
    assert recorded(conn)[-1] == (len(MIGRATIONS) + 1, "m003b_extra_table")
    migrate(conn)
    assert len(recorded(conn)) == len(MIGRATIONS) + 1


def test_an_existing_home_gets_the_unembedded_index_and_counts_its_backlog_through_it(store):
    """m014: the backfill's count at every open reads a partial index, not the whole memories table."""
    from agentmem_mcp.db import memories, memory_reads

    ids = [store.save(f"Release step {n}: tag, build and push image {n}", type="workflow").id for n in range(3)]
    conn = store.conn
    conn.execute("DROP INDEX memories_unembedded")  # a home migrated before m014, whose model changed since
    conn.execute("DELETE FROM schema_migrations WHERE name = 'm014_unembedded_index'")
    conn.execute("UPDATE memories SET embedding_model = NULL WHERE id IN (?, ?)", ids[:2])
    conn.commit()
    migrate(conn)
    assert memories.unembedded(conn) == 2
    assert {row["id"] for row in memory_reads.unembedded_rows(conn, 10)} == set(ids[:2])
    assert conn.execute("SELECT sql FROM sqlite_master WHERE name = 'memories_unembedded'").fetchone()[0].endswith(
        "WHERE embedding_model IS NULL")  # partial: it holds only the backlog, so it costs nothing once embedded


def test_no_index_holds_what_the_sweep_decays(store):
    """m015: the sweep rewrites confidence and strength of many rows at each run; an index holding either would be
    rewritten with them."""
    conn = store.conn
    indexes = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memories'")]
    assert {"memories_knowledge", "memories_recent", "memories_pinned"} <= set(indexes)
    assert "memories_briefing" not in indexes
    for name in indexes:
        columns = {row[2] for row in conn.execute(f"PRAGMA index_xinfo('{name}')")}
        where = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0] or ""
        assert not {"confidence", "strength"} & columns and "confidence" not in where and "strength" not in where, name
