"""The sweep over columns decides what the per-memory policy decides, and a long sweep does not lock saves out.

The policy functions (`forgetting.plan_forgetting` over `MemoryFacts`, `retention.decay_*`) are the reference:
the column forms must give the same floats, reasons and decisions, on random memories and on a seeded store.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from agentmem_mcp.config import load_settings
from agentmem_mcp.db import meta
from agentmem_mcp.lifecycle import forgetting, forgetting_columns
from agentmem_mcp.lifecycle.decay import plan_decay
from agentmem_mcp.lifecycle.forgetting import CompositeStrategy, MemoryFacts, make_strategy
from agentmem_mcp.lifecycle.forgetting_columns import MemoryColumns
from agentmem_mcp.lifecycle.retention import (
    CONSOLIDATED_TIERS,
    UNUSED_DAYS,
    decay_confidence,
    decay_strength,
    should_forget_for_confidence,
)
from agentmem_mcp.lifecycle.sweep import SweepRequest, sweep
from agentmem_mcp.store import Store

DAY = 86400.0
NOW = 1_800_000_000.0
TIERS = ("working", "episodic", "semantic", "procedural")
STRATEGIES = [("composite", {}), ("composite", {"capacity": 40}), ("importance", {}), ("age", {}),
              ("age", {"half_life_days": 3.0, "max_age_days": 20.0}), ("capacity", {"capacity": 30}),
              ("capacity", {"capacity": 0}), ("composite", {"weights": {"importance": 1, "age": 1}})]


def random_facts(rng: random.Random, n: int) -> list[MemoryFacts]:
    """Memories with ties (rounded importances, shared times), unused ones, P0, TTLs past and future."""
    times = [NOW - rng.choice([0, 1, 7, 59.5, 60, 61, 90, 200, 400]) * DAY for _ in range(5)]
    facts = []
    for i in range(n):
        created = rng.choice(times) if rng.random() < 0.4 else NOW - rng.uniform(0, 300) * DAY
        accessed = None if rng.random() < 0.4 else rng.choice([created - DAY, created,
                                                               created + rng.uniform(0, 50) * DAY])
        importance = rng.choice([0.0, 0.25, 0.5, 1.0, 1.2, -0.1]) if rng.random() < 0.5 else rng.random()
        forget_after = None if rng.random() < 0.8 else NOW + rng.choice([-1, 0, 1]) * DAY
        facts.append(MemoryFacts(f"m{rng.randrange(10 ** 6):06d}-{i}", importance, rng.choice(["P0", "P1", "P2"]),
                                 rng.choice([0.5, 0.85, 0.95, 0.105, 0.09, rng.random()]), created, accessed,
                                 rng.randrange(5), rng.choice(TIERS), forget_after))
    return facts


def reference_decay(facts: list[MemoryFacts], strengths: list[float], confidence_periods: int,
                    strength_periods: int, now: float = NOW) -> tuple[list[float], list[float], list[bool]]:
    """The decay as the per-memory loop applied it, with retention's functions."""
    confidences, weakened, low = [], [], []
    for m, strength in zip(facts, strengths):
        confidence = m.confidence
        if m.priority == "P0":
            confidences.append(confidence)
            weakened.append(strength)
            low.append(False)
            continue
        days = (now - m.last_used_at) / DAY
        if days >= UNUSED_DAYS:
            for _ in range(min(confidence_periods, int((days - UNUSED_DAYS) // 1.0) + 1)):
                confidence = decay_confidence(confidence, days, m.priority)
        if strength_periods and m.tier in CONSOLIDATED_TIERS and days >= 7.0:
            for _ in range(min(strength_periods, int(days // 7.0))):
                strength = decay_strength(strength, m.tier)
        confidences.append(confidence)
        weakened.append(strength)
        low.append(should_forget_for_confidence(confidence, m.priority))
    return confidences, weakened, low


@pytest.mark.parametrize("seed", range(12))
def test_column_plans_equal_the_per_memory_plans(seed):
    rng = random.Random(seed)
    facts = random_facts(rng, rng.choice([0, 1, 2, 50, 200]))
    columns = MemoryColumns.from_facts(facts)
    for name, options in STRATEGIES:
        strategy = make_strategy(name, **options)
        threshold, cap = rng.choice([0.3, 0.5, 0.6, 0.9]), rng.choice([0, 1, 5, 50, 1000])
        expected = forgetting.plan_forgetting(facts, strategy, NOW, threshold=threshold, max_deletions=cap)
        got = forgetting_columns.plan_forgetting(columns, strategy, NOW, threshold=threshold, max_deletions=cap)
        assert got.deletions == expected.deletions, (name, options)
        assert got.expired == expected.expired and got.protected == expected.protected
        assert got.report == expected.report, (name, options)


def test_a_strategy_without_a_column_form_is_scored_through_memory_facts():
    class Newest:
        name = "newest"

        def score(self, memories, now):
            return [forgetting.ForgetScore(m.id, min(m.created_at / now, 1.0), "by creation") for m in memories]

    facts = random_facts(random.Random(3), 60)
    strategy = CompositeStrategy(weights={"importance": 1, "newest": 1}, parts={"newest": Newest()})
    expected = forgetting.plan_forgetting(facts, strategy, NOW, threshold=0.4)
    got = forgetting_columns.plan_forgetting(MemoryColumns.from_facts(facts), strategy, NOW, threshold=0.4)
    assert got.report == expected.report and got.deletions == expected.deletions


@pytest.mark.parametrize("seed", range(8))
def test_column_decay_equals_the_per_memory_loop(seed):
    rng = random.Random(100 + seed)
    facts = random_facts(rng, 300)
    strengths = [rng.choice([0.05, 0.1, 0.11, 1.0, 3.375, rng.uniform(0, 60)]) for _ in facts]
    columns = MemoryColumns.from_facts(facts)
    for confidence_periods, strength_periods in ((1, 1), (0, 0), (30, 4), (3, 0), (0, 30)):
        confidences, weakened, low = reference_decay(facts, strengths, confidence_periods, strength_periods)
        decay = plan_decay(columns, np.array(strengths), NOW, confidence_periods, strength_periods)
        assert decay.confidence.tolist() == confidences
        assert decay.strength.tolist() == weakened
        assert decay.low_confidence.tolist() == low
        assert decay.confidence_changed.tolist() == [a != m.confidence for a, m in zip(confidences, facts)]
        assert decay.strength_changed.tolist() == [a != b for a, b in zip(weakened, strengths)]


COLUMNS = ("id, project, tier, type, title, content, source, confidence, importance, priority, pinned, strength, "
           "access_count, last_accessed_at, created_at, updated_at, forget_after, version, parent_id, root_id, "
           "is_latest, content_hash")


def seed_rows(rng: random.Random, count: int, project: str, now: float, strength: float = 2.0) -> list[tuple]:
    """Latest memories (and some superseded versions) with a spread of age, use, priority, tier and TTL."""
    rows = []
    for n in range(count):
        memory_id = f"m_{project[-1]}{n:015x}"
        created = now - rng.uniform(0, 300) * DAY
        accessed = created + rng.random() * (now - created) if rng.random() < 0.5 else None
        forget_after = created + rng.uniform(1, 200) * DAY if rng.random() < 0.05 else None
        priority = rng.choice(["P0", "P1", "P1", "P2"])
        row = [memory_id, project, rng.choice(TIERS), "fact", f"memory {n} of {project}", f"content {n} {project}",
               "agent", rng.choice([0.85, 0.5, 0.12, 0.2]), round(rng.random(), 2), priority,
               int(rng.random() < 0.03), strength, rng.randrange(4), accessed, created, created, forget_after, 1,
               None, memory_id, 1, f"h{project[-1]}{n:062x}"]
        if rng.random() < 0.1:
            old_id = memory_id + "o"
            rows.append((old_id, project, row[2], "fact", row[4] + " (old)", row[5] + " old", "agent", 0.85, 0.5,
                         "P1", 0, 1.0, 0, None, created - 200 * DAY, created - rng.uniform(0, 200) * DAY, None, 1,
                         None, old_id, 0, f"o{project[-1]}{n:062x}"))
            row[17], row[18], row[19] = 2, old_id, old_id
        rows.append(tuple(row))
    return rows


def insert(store: Store, rows: list[tuple]) -> None:
    marks = ",".join("?" * len(COLUMNS.split(",")))
    with store.transaction() as conn:
        conn.executemany(f"INSERT INTO memories ({COLUMNS}) VALUES ({marks})", rows)


def latest_facts(store: Store) -> tuple[list[MemoryFacts], list[float]]:
    rows = store.conn.execute(
        "SELECT id, importance, CASE WHEN pinned THEN 'P0' ELSE priority END, confidence, created_at, "
        "last_accessed_at, access_count, tier, forget_after, strength FROM memories WHERE is_latest = 1").fetchall()
    return [MemoryFacts(*row[:9]) for row in rows], [row[9] for row in rows]


def test_the_sweep_of_a_seeded_store_does_what_the_per_memory_policy_says(home: Path):
    settings = load_settings(env={}, home=home, embeddings=False)
    with Store.open(settings, load_embedder=False) as store:
        insert(store, seed_rows(random.Random(5), 1500, "/seeded/a", NOW))
        for now, periods in ((NOW, (1, 1)), (NOW + 20 * DAY, (20, 2))):
            facts, strengths = latest_facts(store)
            expected = forgetting.plan_forgetting(facts, CompositeStrategy(capacity=1000), now, max_deletions=40)
            confidences, weakened, low = reference_decay(facts, strengths, *periods, now=now)
            dry = sweep(store, SweepRequest(now=now, dry_run=True, options={"capacity": 1000}, max_deletions=40))
            assert dry.deleted == [s.id for s in expected.deletions] and dry.expired == expected.expired
            assert [(e.id, e.score) for e in dry.entries() if e.decision in ("keep", "protect", "over cap")] == [
                (s.id, s.score) for s in expected.report if s.id not in set(dry.deleted) | set(dry.expired)
                | set(dry.low_confidence)]
            removed = set(expected.expired) | {s.id for s in expected.deletions}
            forgotten = [m.id for m, is_low in zip(facts, low) if is_low and m.id not in removed]
            report = sweep(store, SweepRequest(now=now, options={"capacity": 1000}, max_deletions=40))
            same = {"duration_s": 0, "pruned_versions": 0}  # a removed memory's old versions go with it, unpruned
            assert report.record() | same == dry.record() | same | {"dry_run": False}
            assert report.low_confidence == forgotten and report.deleted == dry.deleted
            gone = removed | set(forgotten)
            after = {row[0]: (row[1], row[2]) for row in store.conn.execute(
                "SELECT id, confidence, strength FROM memories WHERE is_latest = 1")}
            assert set(after) == {m.id for m in facts} - gone
            for m, confidence, strength in zip(facts, confidences, weakened):
                if m.id not in gone:
                    assert after[m.id] == (confidence, strength), m


DECAYED = "SELECT COUNT(*) FROM memories WHERE strength < 2.0 AND is_latest = 1"


def test_a_save_during_a_long_sweep_waits_at_most_a_short_transaction(home: Path):
    """The decay of 24,000 memories is written in many short transactions; a save made while it runs gets the
    lock between two of them, and the decay goes on after it."""
    settings = load_settings(env={}, home=home, embeddings=False, sweep_lock_ms=30)
    with Store.open(settings, load_embedder=False) as sweeper, \
            Store.open(settings, project="/elsewhere", load_embedder=False) as saver:
        insert(sweeper, [row[:11] + (2.0,) + row[12:13] + (None, NOW - 400 * DAY, NOW - 400 * DAY) + row[16:]
                         for row in seed_rows(random.Random(9), 24_000, "/long/a", NOW)])
        done = threading.Event()
        thread = threading.Thread(target=lambda: (sweep(sweeper, SweepRequest(now=NOW)), done.set()))
        thread.start()
        try:
            deadline = time.monotonic() + 120
            while meta.get(saver.conn, meta.LAST_STRENGTH_DECAY) is None:  # set in the decay's first transaction
                assert time.monotonic() < deadline and thread.is_alive(), "the sweep never started its decay"
                time.sleep(0.002)
            started = time.perf_counter()
            saved = saver.save("The staging deploy needs the VPN up first", source="user")
            waited = time.perf_counter() - started
            decayed_at_save = saver.conn.execute(DECAYED).fetchone()[0]
        finally:
            thread.join(timeout=300)
        assert done.is_set() and saved.action == "created"
        decayed = saver.conn.execute(DECAYED).fetchone()[0]
        assert decayed_at_save < decayed, "the save waited for the whole decay"
        assert waited < 3.0, f"the save waited {waited:.2f} s"
