"""The `index_outbox` table: memories written to SQLite and not yet applied to the BM25 index. Writers queue a
memory in their own transaction (so SQLite and the queue agree); the indexer applies the queue batch by batch
and removes what it applied. The only module that writes this table's SQL."""

from __future__ import annotations

from collections.abc import Iterable

from .connection import Connection


def queue(conn: Connection, memory_ids: Iterable[str], at: float, op: str = "upsert") -> None:
    """Queue memories to be indexed again ('upsert') or dropped from the index ('delete'), inside the caller's
    transaction."""
    conn.executemany("INSERT INTO index_outbox (memory_id, op, created_at) VALUES (?, ?, ?)",
                     [(memory_id, op, at) for memory_id in memory_ids])


def queue_every_memory(conn: Connection, at: float) -> None:
    """Replace the queue by every memory (the index is rebuilt from SQLite), inside the caller's transaction."""
    conn.execute("DELETE FROM index_outbox")
    conn.execute("INSERT INTO index_outbox (memory_id, op, created_at) SELECT id, 'upsert', ? FROM memories", (at,))


def pending_upserts(conn: Connection, limit: int) -> list[str]:
    """Memories written but not yet applied to BM25 (by any process), at most `limit`."""
    return [row[0] for row in conn.execute(
        "SELECT DISTINCT memory_id FROM index_outbox WHERE op = 'upsert' LIMIT ?", (limit,))]


def backlog(conn: Connection) -> int:
    """How many index changes wait (by any process)."""
    return conn.execute("SELECT COUNT(*) FROM index_outbox").fetchone()[0]


def next_batch(conn: Connection, size: int) -> list[tuple[int, str]]:
    """The oldest `size` queued changes as (seq, memory_id)."""
    return [(row[0], row[1]) for row in conn.execute(
        "SELECT seq, memory_id FROM index_outbox ORDER BY seq LIMIT ?", (size,))]


def remove(conn: Connection, seqs: list[int]) -> None:
    """Drop applied changes from the queue, inside the caller's transaction."""
    conn.execute(f"DELETE FROM index_outbox WHERE seq IN ({','.join('?' * len(seqs))})", seqs)


def last_seq(conn: Connection) -> int:
    """The newest queued change's sequence number (0 when the queue is empty)."""
    return conn.execute("SELECT COALESCE(MAX(seq), 0) FROM index_outbox").fetchone()[0]


def remove_through(conn: Connection, seq: int) -> None:
    """Drop the queued changes up to `seq`: an index rewritten from the memories as they were then holds them."""
    conn.execute("DELETE FROM index_outbox WHERE seq <= ?", (seq,))
