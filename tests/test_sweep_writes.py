"""How the sweep writes its decay: one UPDATE for a memory whose two values decay, each column's
compare-and-set kept for a memory changed meanwhile; the report's titles of removed and kept memories;
the connection's page cache set back after a sweep."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from agentmem_mcp.config import load_settings
from agentmem_mcp.lifecycle import sweep as sweeping
from agentmem_mcp.store import Store
from tests.test_sweep_columns import NOW, insert, seed_rows


def _store(home: Path) -> Store:
    return Store.open(load_settings(env={}, home=home, embeddings=False), load_embedder=False)


def test_a_memory_changed_since_the_read_keeps_its_fresher_value(home: Path):
    with _store(home) as store:
        insert(store, seed_rows(random.Random(3), 6, "/w/a", NOW))
        rows = store.conn.execute("SELECT rowid, id, confidence, strength FROM memories WHERE is_latest = 1 "
                                  "ORDER BY rowid").fetchall()
        n = len(rows)
        confidence = np.array([r["confidence"] for r in rows])
        strength = np.array([r["strength"] for r in rows])
        changes = sweeping._DecayWrites(
            np.ones(n, dtype=bool), confidence * 0.5, confidence.copy(),
            np.array([True, True, True, False, True, True][:n]), strength * 0.5, strength.copy(),
            [r["id"] for r in rows], np.array([r["rowid"] for r in rows], dtype=np.int64))
        used, superseded = rows[1]["id"], rows[2]["id"]
        with store.transaction() as conn:  # after the read: one memory used, one superseded
            conn.execute("UPDATE memories SET strength = 9.0 WHERE id = ?", (used,))
            conn.execute("UPDATE memories SET is_latest = 0 WHERE id = ?", (superseded,))
        with store.transaction() as conn:
            counted = changes.write(conn, np.arange(n))
        after = {r["id"]: (r["confidence"], r["strength"]) for r in store.conn.execute(
            "SELECT id, confidence, strength FROM memories")}
        for i, row in enumerate(rows):
            expected = (row["confidence"] * 0.5, row["strength"] * 0.5 if i != 3 else row["strength"])
            if row["id"] == used:
                expected = (row["confidence"] * 0.5, 9.0)
            if row["id"] == superseded:
                expected = (row["confidence"], row["strength"])
            assert after[row["id"]] == expected, i
        assert counted == (n - 1, n - 3)  # confidence: all but the superseded; strength: not 3, used, superseded


def test_the_report_has_the_titles_of_what_was_removed_and_of_what_was_kept(home: Path):
    with _store(home) as store:
        insert(store, seed_rows(random.Random(4), 400, "/w/b", NOW))
        titles = {r[0]: r[1] for r in store.conn.execute("SELECT id, title FROM memories WHERE is_latest = 1")}
        report = sweeping.sweep(store, sweeping.SweepRequest(now=NOW, max_deletions=20))
        removed = set(report.expired) | set(report.deleted) | set(report.low_confidence)
        assert removed and not removed & {r[0] for r in store.conn.execute("SELECT id FROM memories")}
        assert report.titles == titles
        assert {e.id: e.title for e in report.entries()} == titles


def test_a_sweep_sets_the_page_cache_back(home: Path):
    with _store(home) as store:
        insert(store, seed_rows(random.Random(5), 50, "/w/c", NOW))
        store.conn.execute("PRAGMA cache_size = -3000")
        sweeping.sweep(store, sweeping.SweepRequest(now=NOW))
        assert store.conn.execute("PRAGMA cache_size").fetchone()[0] == -3000
