"""The forgetting sweep against a real store on disk: deletions, TTL, decay, pruning, dry runs, the CLI."""

from __future__ import annotations

import importlib
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentmem_mcp.config import load_settings
from agentmem_mcp.db.audit import verify
from agentmem_mcp.lifecycle.retention import FORGET_BELOW
from agentmem_mcp.lifecycle.sweep import SweepRequest, maybe_sweep, sweep
from agentmem_mcp.models import InvalidInput, NotFound
from agentmem_mcp.store import Store
from agentmem_mcp.upkeep.transfer import export_lines

sweep_module = importlib.import_module("agentmem_mcp.lifecycle.sweep")

DAY = 86400.0
NOW = time.time()

# The worked example of docs/lifecycle.md: importance, age in days, composite score, deleted at 0.6.
WORKED = [
    (0.9, 2, 0.1039, False, "Use pnpm rather than npm: the lockfile is pnpm-lock.yaml"),
    (0.8, 10, 0.2886, False, "The API server listens on port 8080 behind the nginx proxy"),
    (0.3, 1, 0.3783, False, "Yesterday's flaky checkout test was caused by a timezone assumption"),
    (0.2, 25, 0.6748, True, "Old experiment: tried Redis Streams for the job queue, abandoned"),
    (0.25, 60, 0.6742, True, "Temporary workaround pinned urllib3 below version two during migration"),
]
TABLES = ("memories", "audit", "meta", "index_outbox", "memory_entities", "memory_links", "memory_chunks")


@pytest.fixture
def plain(home: Path):
    """A store without the embedding model, for tests where vectors do not matter."""
    with Store.open(
        load_settings(env={}, home=home, embeddings=False), project="/repo/a", load_embedder=False
    ) as opened:
        yield opened


def words(i: int) -> str:
    """Content that shares no word with any other i's, so nothing supersedes anything."""
    return " ".join(f"{w}{i}q" for w in ("amber", "birch", "cedar", "delta", "ember", "fjord"))


def save(store: Store, content: str, age_days: float = 0.0, **options) -> str:
    options.setdefault("source", "user")  # P0 and pinned memories are the user's (an agent's would be held back)
    result = store.save(content, created_at=NOW - age_days * DAY, **options)
    assert result.action == "created", result
    return result.id


def save_worked(store: Store) -> list[str]:
    return [save(store, content, age, importance=importance) for importance, age, _, _, content in WORKED]


def dump(store: Store) -> dict[str, list[tuple]]:
    return {
        table: [tuple(row) for row in store.conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")] for table in TABLES
    }


def confidence(store: Store, memory_id: str) -> float:
    return store.get(memory_id).confidence


def use(store: Store, memory_id: str, at: float) -> None:
    """What a search hit does to a memory, as far as the sweep cares: a fresh last use."""
    with store.transaction() as conn:
        conn.execute(
            "UPDATE memories SET last_accessed_at = ?, access_count = access_count + 1 WHERE id = ?", (at, memory_id)
        )


def exists(store: Store, memory_id: str) -> bool:
    return store.conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone() is not None


# --- the worked example, end to end ----------------------------------------------------------------


def test_worked_example_deletes_the_two_low_ones_everywhere(store):
    ids = save_worked(store)
    report = sweep(store, SweepRequest(now=NOW))

    assert report.deleted == [ids[3], ids[4]]  # highest score first
    assert report.expired == [] and report.low_confidence == [] and report.scored == 5
    entries = {e.id: e for e in report.entries()}
    for memory_id, (_, _, score, deleted, _) in zip(ids, WORKED):
        assert round(entries[memory_id].score, 4) == score
        assert entries[memory_id].decision == ("delete" if deleted else "keep")
    for memory_id in ids[:3]:
        assert store.get(memory_id).id == memory_id
    for memory_id in ids[3:]:
        with pytest.raises(NotFound):
            store.get(memory_id)
    hits = store.search("Redis Streams job queue experiment; urllib3 pinned workaround", all_projects=True).hits
    assert not {hit.id for hit in hits} & set(ids[3:])
    assert ids[0] in {hit.id for hit in store.search("pnpm lockfile").hits}
    exported = {json.loads(line).get("id") for line in export_lines(store)}
    assert set(ids[:3]) <= exported and not exported & set(ids[3:])
    vectors_left = store.conn.execute(
        "SELECT COUNT(*) FROM memory_chunks WHERE memory_id IN (?, ?)", ids[3:]
    ).fetchone()[0]
    assert vectors_left == 0

    reasons = [
        json.loads(row[0])["reason"]
        for row in store.conn.execute(
            "SELECT detail FROM audit WHERE action = 'sweep' AND memory_id IS NOT NULL ORDER BY seq"
        )
    ]
    assert reasons == ["forgetting strategy composite: score >= 0.6"] * 2
    last = json.loads(store.conn.execute("SELECT value FROM meta WHERE key = 'last_sweep'").fetchone()[0])
    assert last["deleted"] == 2 and last["scored"] == 5 and last["dry_run"] is False
    assert last["strategy"] == "composite"
    assert {"at", "expired", "decayed", "pruned_versions", "duration_s"} <= set(last)
    assert store.stats(all_projects=True)["last_sweep"] == last
    assert verify(store.conn).ok


def test_dry_run_reports_everything_and_changes_nothing(plain):
    ids = save_worked(plain)
    save(plain, words(9), 300, importance=0.9)  # would decay (confidence and strength)
    before = dump(plain)

    report = sweep(plain, SweepRequest(dry_run=True, now=NOW))

    assert dump(plain) == before
    assert report.dry_run and report.deleted == [ids[3], ids[4]]
    assert report.confidence_decayed == 1 and report.strength_decayed >= 1
    data = json.loads(json.dumps(report.to_dict()))
    assert data["dry_run"] is True and data["deleted"] == 2 and data["deleted_ids"] == [ids[3], ids[4]]
    assert len(data["memories"]) == 6
    assert all({"id", "score", "decision", "reason", "title"} <= set(m) for m in data["memories"])
    assert [m["decision"] for m in data["memories"][:2]] == ["delete", "delete"]

    real = sweep(plain, SweepRequest(now=NOW))
    assert real.deleted == report.deleted and real.confidence_decayed == report.confidence_decayed


# --- TTL, confidence, strength, versions ------------------------------------------------------------


def test_ttl_expired_memories_are_removed_whatever_their_priority(plain):
    expired = save(plain, words(1), 3, importance=1.0, ttl_days=2)
    expired_p0 = save(plain, words(2), 3, importance=1.0, ttl_days=1, priority="P0")
    alive = save(plain, words(3), 3, importance=1.0, ttl_days=30)

    report = sweep(plain, SweepRequest(now=NOW))

    assert sorted(report.expired) == sorted([expired, expired_p0]) and report.deleted == []
    assert not exists(plain, expired) and not exists(plain, expired_p0) and exists(plain, alive)
    assert {e.id: e.decision for e in report.entries()}[alive] == "keep"


def test_expiry_removes_every_version_of_the_memory(plain):
    old = save(plain, words(1), 20, importance=1.0)
    new = plain.save(words(2), source="user", supersedes=old, ttl_days=1, importance=1.0, created_at=NOW - 5 * DAY).id
    report = sweep(plain, SweepRequest(now=NOW))
    assert report.expired == [new]
    assert not exists(plain, old) and not exists(plain, new)


def test_confidence_decays_for_old_unused_memories_but_never_for_p0_or_pinned(plain):
    old = save(plain, words(1), 100, importance=0.9)
    p0 = save(plain, words(2), 100, importance=0.9, priority="P0")
    pinned = save(plain, words(3), 100, importance=0.9, pinned=True)
    recent = save(plain, words(4), 10, importance=0.9)
    used = save(plain, words(5), 100, importance=0.9)
    use(plain, used, NOW - 5 * DAY)
    start = {memory_id: confidence(plain, memory_id) for memory_id in (old, p0, pinned, recent, used)}

    report = sweep(plain, SweepRequest(now=NOW))

    assert report.confidence_decayed == 1
    assert confidence(plain, old) == pytest.approx(start[old] * 0.95)
    for memory_id in (p0, pinned, recent, used):
        assert confidence(plain, memory_id) == start[memory_id]
    sweep(plain, SweepRequest(now=NOW + 3600))  # within the same decay period: no second decay
    assert confidence(plain, old) == pytest.approx(start[old] * 0.95)
    sweep(plain, SweepRequest(now=NOW + DAY))
    assert confidence(plain, old) == pytest.approx(start[old] * 0.95**2)


def test_memories_falling_under_the_confidence_floor_are_forgotten_but_not_p0(plain):
    fading = save(plain, words(1), 100, importance=0.9, confidence=0.105)
    p0 = save(plain, words(2), 100, importance=0.9, confidence=0.05, priority="P0")
    report = sweep(plain, SweepRequest(now=NOW))
    assert report.low_confidence == [fading]
    assert {e.id: e.decision for e in report.entries()} == {fading: "forget", p0: "protect"}
    assert not exists(plain, fading) and confidence(plain, p0) == 0.05
    detail = json.loads(
        plain.conn.execute("SELECT detail FROM audit WHERE memory_id = ? AND action = 'sweep'", (fading,)).fetchone()[0]
    )
    assert detail["reason"] == f"confidence below {FORGET_BELOW:g}"


def test_strength_decays_per_period_for_consolidated_tiers_only(plain):
    episodic = save(plain, words(1), 30, importance=0.9, tier="episodic")
    working = save(plain, words(2), 30, importance=0.9, tier="working")
    p0 = save(plain, words(3), 30, importance=0.9, tier="semantic", priority="P0")
    fresh = save(plain, words(4), 2, importance=0.9, tier="procedural")

    assert sweep(plain, SweepRequest(now=NOW)).strength_decayed == 1
    assert plain.get(episodic).strength == pytest.approx(0.9)
    assert plain.get(working).strength == plain.get(p0).strength == plain.get(fresh).strength == 1.0
    # less than a period since the last decay
    assert sweep(plain, SweepRequest(now=NOW + 6 * DAY)).strength_decayed == 0
    sweep(plain, SweepRequest(now=NOW + 7 * DAY))
    assert plain.get(episodic).strength == pytest.approx(0.81)


def test_pruning_removes_old_superseded_versions_and_keeps_the_latest(plain):
    v1 = save(plain, words(1), 200, importance=1.0)
    v2 = plain.save(words(2), source="user", supersedes=v1, importance=1.0, created_at=NOW - 100 * DAY).id
    v3 = plain.save(words(3), source="user", supersedes=v2, importance=1.0, created_at=NOW - 10 * DAY).id

    dry = sweep(plain, SweepRequest(dry_run=True, now=NOW))
    assert dry.pruned_versions == 1 and exists(plain, v1)
    report = sweep(plain, SweepRequest(now=NOW))

    assert report.pruned_versions == 1
    assert [m.id for m in plain.history(v3)] == [v2, v3]
    assert plain.get(v3).is_latest
    assert (
        plain.conn.execute("SELECT action FROM audit WHERE memory_id = ? ORDER BY seq DESC", (v1,)).fetchone()[0]
        == "prune"
    )
    assert sweep(plain, SweepRequest(now=NOW, prune_after_days=5)).pruned_versions == 1  # v2 was superseded 10 days ago
    assert [m.id for m in plain.history(v3)] == [v3]


# --- the cap, P0, concurrency, the audit chain ------------------------------------------------------


def test_max_deletions_caps_strategy_deletions(plain):
    ids = [save(plain, words(i), 20 + 5 * i, importance=0.0) for i in range(10)]
    report = sweep(plain, SweepRequest(max_deletions=3, now=NOW))
    assert len(report.deleted) == 3 and report.over_cap == 7
    assert set(report.deleted) == set(ids[-3:])  # the oldest score highest
    assert sum(exists(plain, memory_id) for memory_id in ids) == 7
    assert "over cap" in {e.decision for e in report.entries()}
    assert "7 more over the cap" in report.table()


def test_p0_and_pinned_memories_are_never_deleted_by_a_strategy(plain):
    p0 = save(plain, words(1), 300, importance=0.0, priority="P0")
    pinned = save(plain, words(2), 300, importance=0.0, pinned=True)
    doomed = save(plain, words(3), 300, importance=0.0)
    report = sweep(plain, SweepRequest(strategy="importance", threshold=0.5, now=NOW))
    assert report.deleted == [doomed] and report.protected == 2
    assert exists(plain, p0) and exists(plain, pinned)


def test_a_memory_used_or_superseded_during_the_sweep_is_not_deleted(plain, monkeypatch):
    used = save(plain, words(1), 100, importance=0.0)
    replaced = save(plain, words(2), 100, importance=0.0)
    original = sweep_module.plan_forgetting

    def plan_then_race(*args, **kwargs):
        plan = original(*args, **kwargs)
        use(plain, used, NOW)
        plain.save(words(3), source="user", supersedes=replaced, importance=0.0)
        return plan

    monkeypatch.setattr(sweep_module, "plan_forgetting", plan_then_race)
    report = sweep(plain, SweepRequest(now=NOW))
    assert report.deleted == []
    assert exists(plain, used) and exists(plain, replaced)
    assert len(plain.history(replaced)) == 2


def test_the_audit_chain_verifies_after_sweeps(plain):
    save_worked(plain)
    save(plain, words(1), 5, importance=1.0, ttl_days=1)
    v1 = save(plain, words(2), 200, importance=1.0)
    plain.save(words(3), source="user", supersedes=v1, importance=1.0, created_at=NOW - 100 * DAY)
    sweep(plain, SweepRequest(now=NOW))
    sweep(plain, SweepRequest(now=NOW + 2 * DAY, strategy="age", threshold=0.9))
    verdict = verify(plain.conn)
    assert verdict.ok, verdict
    actions = [row[0] for row in plain.conn.execute("SELECT action FROM audit ORDER BY seq")]
    assert actions.count("sweep") >= 5 and "prune" in actions


def test_bad_arguments_say_what_to_do(plain):
    with pytest.raises(InvalidInput, match="valid names"):
        sweep(plain, SweepRequest(strategy="random"))
    with pytest.raises(InvalidInput, match="max_deletions"):
        sweep(plain, SweepRequest(max_deletions=-1))
    with pytest.raises(InvalidInput, match="prune_after_days"):
        sweep(plain, SweepRequest(prune_after_days=-1))
    with pytest.raises(InvalidInput, match="bad options"):
        sweep(plain, SweepRequest(options={"half_life": 3}))
    report = sweep(plain, SweepRequest(strategy="age", options={"half_life_days": 1.0, "max_age_days": 10.0},
                                       dry_run=True))
    assert report.scored == 0 and "0 of 0" in report.table()


# --- maybe_sweep -------------------------------------------------------------------------------------


def test_maybe_sweep_runs_only_when_due(plain):
    save(plain, words(1), 1, importance=0.9)
    assert maybe_sweep(plain, now=NOW) is not None  # never run before
    assert maybe_sweep(plain, now=NOW + 3600) is None  # interval not passed, count under the threshold
    assert maybe_sweep(plain, now=NOW + 25 * 3600) is not None  # interval passed
    assert maybe_sweep(plain, count_threshold=0, now=NOW + 25.5 * 3600) is None  # too soon after the last
    assert maybe_sweep(plain, count_threshold=0, now=NOW + 27 * 3600) is not None  # over the count threshold
    assert maybe_sweep(plain, dry_run=True, now=NOW + 60 * 3600).dry_run


def test_maybe_sweep_swallows_and_logs_a_failing_sweep(plain, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(sweep_module, "sweep", broken)
    with caplog.at_level(logging.ERROR, logger="agentmem.sweep"):
        assert maybe_sweep(plain, now=NOW) is None
    [record] = [r for r in caplog.records if r.name == "agentmem.sweep"]
    assert record.levelno == logging.ERROR and "disk on fire" in (record.exc_text or "")
    assert plain.save(words(1)).action == "created"  # the store is still fine


# --- the report and the CLI --------------------------------------------------------------------------


def test_table_shows_removals_first_and_a_summary(plain):
    ids = save_worked(plain)
    table = sweep(plain, SweepRequest(dry_run=True, now=NOW)).table(limit=3)
    lines = table.splitlines()
    assert lines[0].split() == ["id", "score", "decision", "reason", "title"]
    assert lines[2].startswith(ids[3]) and " delete " in lines[2] and "Redis Streams" in lines[2]
    assert lines[3].startswith(ids[4])
    assert "2 more memories not shown" in table
    assert lines[-1].startswith("dry run: would remove 2 of 5 memories") and "Nothing was changed" in lines[-1]


def run_cli(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env.update(AGENTMEM_HOME=str(home), AGENTMEM_EMBEDDINGS="0")
    return subprocess.run(
        [sys.executable, "-m", "agentmem_mcp", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_cli_forget_by_strategy(home, tmp_path):
    with Store.open(load_settings(env={}, home=home, embeddings=False), load_embedder=False) as store:
        ids = save_worked(store)

    shown = run_cli(home, tmp_path, "forget", "--strategy", "composite", "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split()[:5] == ["id", "score", "decision", "reason", "title"]
    assert ids[3] in shown.stdout and "dry run: would remove 2 of 5" in shown.stdout

    listed = run_cli(home, tmp_path, "forget", "--strategy", "composite", "--dry-run", "--json")
    data = json.loads(listed.stdout)
    assert data["dry_run"] is True and data["deleted_ids"] == ids[3:] and len(data["memories"]) == 5

    applied = run_cli(home, tmp_path, "forget", "--strategy", "composite", "--yes", "--json", "--i-am-the-user")
    assert json.loads(applied.stdout)["deleted_ids"] == ids[3:]
    with Store.open(load_settings(env={}, home=home, embeddings=False), load_embedder=False) as store:
        assert [exists(store, memory_id) for memory_id in ids] == [True, True, True, False, False]
