"""Benchmark the forgetting sweep on a store of 100,000 memories.

    python scripts/bench_lifecycle.py                 # build a store in a temp dir, time 3 sweeps
    python scripts/bench_lifecycle.py --home DIR      # build DIR once, reuse it on later runs

Memories are inserted with SQL in batches (no vectors, no BM25 documents: scoring does not need them),
with a realistic spread of importance, age, use, priority, tier, TTLs and superseded versions. Each run
copies the database to a fresh home, opens it and times one full `sweep()` (scoring, deletions through
`delete_memories`, decay, version pruning, the `last_sweep` record). Prints the median of the runs.

Each run also times, before its sweep, the session-start briefing of one project of the store
(`context.session_context`, what the SessionStart hook waits for; the median of 7 calls), since the sweep and
the briefing share the store's indexes.

After each first sweep the script also times what the indexer thread then does because the sweep removed
memories (maintenance.erase_forgotten: the BM25 index rebuilt from SQLite, the WAL truncated), run to its end in
the script's thread (`Indexer.settle`). Nothing waits for it in real use, but until it ends the forgotten text is
still in the BM25 segments; and the next day's sweep, timed after it, then runs alone as it would a day later,
instead of beside that rewrite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness import cpu_model, scratch_dir

from agentmem_mcp.config import load_settings
from agentmem_mcp.db.connection import connect
from agentmem_mcp.lifecycle.sweep import SweepRequest, sweep
from agentmem_mcp.recall.briefing import session_context
from agentmem_mcp.store import Store

DAY = 86400.0
PROJECTS = [f"/home/dev/project-{i}" for i in range(8)] + [None]
TIERS = [("working", 0.10), ("episodic", 0.25), ("semantic", 0.50), ("procedural", 0.15)]
TYPES = ["pattern", "preference", "architecture", "bug", "workflow", "fact", "decision", "context", "summary"]
SOURCES = [("agent", 0.5), ("user", 0.2), ("hook", 0.15), ("consolidation", 0.15)]
CONFIDENCE = {"user": 0.95, "agent": 0.85, "hook": 0.5, "consolidation": 0.5}
COLUMNS = ("id, project, tier, type, title, content, source, confidence, importance, priority, pinned, strength, "
           "access_count, last_accessed_at, created_at, updated_at, forget_after, version, parent_id, root_id, "
           "is_latest, content_hash")


def _pick(rng: random.Random, weighted: list[tuple[str, float]]) -> str:
    return rng.choices([v for v, _ in weighted], [w for _, w in weighted])[0]


def _memory(rng: random.Random, n: int, now: float) -> list[tuple]:
    """One memory as rows: the latest version and, for about one in ten, an older superseded version."""
    memory_id = f"m_{n:016x}"
    age = min(rng.expovariate(1 / 60), 400.0)  # most memories are weeks old, a few over a year
    created = now - age * DAY
    used = rng.random() < 0.6
    access_count = int(rng.expovariate(1 / 4)) + 1 if used else 0
    last_access = created + rng.random() * (now - created) if used else None
    source = _pick(rng, SOURCES)
    priority = rng.choices(["P0", "P1", "P2"], [0.05, 0.7, 0.25])[0]
    confidence = CONFIDENCE[source] * (0.95 ** int(max(age - 60, 0) / 7))
    forget_after = created + rng.uniform(1, 120) * DAY if rng.random() < 0.03 else None
    tier = _pick(rng, TIERS)
    title = f"memory {n}: {rng.choice(TYPES)} about module_{n % 997}"
    row = [memory_id, rng.choice(PROJECTS), tier, rng.choice(TYPES), title,
           f"{title}. Details of the decision and why it was made, number {n}.", source, confidence,
           round(rng.betavariate(2, 2.5), 3), priority, int(rng.random() < 0.01), 1.5 ** min(access_count, 12),
           access_count, last_access, created, created, forget_after, 1, None, memory_id, 1, f"h{n:063x}"]
    if rng.random() >= 0.1 or age < 1:
        return [tuple(row)]
    old_id = f"m_{n + 0x8000000000:016x}"
    old_created = created - rng.uniform(1, 200) * DAY
    old = [old_id, row[1], tier, row[3], title + " (old)", row[5] + " Earlier wording.", source, confidence,
           row[8], row[9], 0, 1.0, 0, None, old_created, created, None, 1, None, old_id, 0, f"o{n:063x}"]
    row[17], row[18], row[19] = 2, old_id, old_id
    return [tuple(old), tuple(row)]


def build(home: Path, count: int, seed: int = 7) -> None:
    settings = load_settings(env={}, home=home, embeddings=False)
    with Store.open(settings, load_embedder=False) as store:
        existing = store.conn.execute("SELECT COUNT(*) FROM memories WHERE is_latest = 1").fetchone()[0]
        if existing >= count:
            print(f"reusing {home} ({existing} memories)", flush=True)
        else:
            rng = random.Random(seed)
            now = time.time()
            marks = ",".join("?" * len(COLUMNS.split(",")))
            for start in range(existing, count, 10000):
                rows = [r for n in range(start, min(start + 10000, count)) for r in _memory(rng, n, now)]
                with store.transaction() as conn:
                    conn.executemany(f"INSERT INTO memories ({COLUMNS}) VALUES ({marks})", rows)
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            print(f"built {home} with {count} memories", flush=True)
    started = time.perf_counter()
    with Store.open(settings, load_embedder=False):  # an empty BM25 index is rebuilt from SQLite, once, here
        pass
    print(f"opened it: {time.perf_counter() - started:.1f} s (the BM25 index built from SQLite if it was empty)",
          flush=True)


@dataclass
class Timing:
    wall: float
    cpu: float  # the whole process: the store's indexer thread applies the sweep's deletions meanwhile
    record: dict
    thread_cpu: float | None = None  # the sweeping thread alone

    def line(self, label: str) -> str:
        own = "" if self.thread_cpu is None else f" ({self.thread_cpu:.2f} s in the sweep's thread)"
        return f"{label}: {self.wall:.2f} s wall, {self.cpu:.2f} s CPU{own}  {json.dumps(self.record)}"


def timed_sweep(store: Store, **options) -> Timing:
    started, cpu_started, thread_started = time.perf_counter(), time.process_time(), time.thread_time()
    report = sweep(store, SweepRequest(**options))
    return Timing(time.perf_counter() - started, time.process_time() - cpu_started, report.record(),
                  time.thread_time() - thread_started)


def timed_erasure(store: Store) -> Timing:
    """The erasure the sweep asked the indexer for (with the sweep's own outbox rows), run to its end here."""
    started, cpu_started = time.perf_counter(), time.process_time()
    store.indexer.settle()
    memories = store.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
    wal = store.settings.database.with_name(store.settings.database.name + "-wal")
    return Timing(time.perf_counter() - started, time.process_time() - cpu_started,
                  {"memories_indexed": memories, "wal_bytes_after": wal.stat().st_size if wal.exists() else 0})


BRIEFING_PROJECT = PROJECTS[0]
BRIEFING_CALLS = 7


def timed_briefing(store: Store) -> float:
    """The median time, in ms, of BRIEFING_CALLS session-start briefings of BRIEFING_PROJECT (1,500 tokens)."""
    times = []
    for _ in range(BRIEFING_CALLS):
        started = time.perf_counter()
        session_context(store.conn, BRIEFING_PROJECT, 1500)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def run_once(source_db: Path, max_deletions: int) -> tuple[Timing, Timing, Timing, float]:
    """The briefing's time, then a first sweep on a fresh copy (the backlog: decay, expiry, pruning), the erasure
    after it, and a second sweep a day later."""
    with tempfile.TemporaryDirectory(prefix="agentmem-bench-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        shutil.copyfile(source_db, home / "agentmem.db")
        shutil.copytree(source_db.parent / "fulltext", home / "fulltext")  # the runs do not rebuild it at open
        settings = load_settings(env={}, home=home, embeddings=False)
        with Store.open(settings, load_embedder=False) as store:
            briefing = timed_briefing(store)
            first = timed_sweep(store, max_deletions=max_deletions)
            erased = timed_erasure(store)
            later = timed_sweep(store, max_deletions=max_deletions, now=store.now() + DAY)
    return first, later, erased, briefing


def summary(label: str, timings: list[Timing]) -> str:
    walls = [t.wall for t in timings]
    threads = [t.thread_cpu for t in timings if t.thread_cpu is not None]
    own = f", the sweep's thread {statistics.median(threads):.2f} s" if threads else ""
    return (f"{label}: median {statistics.median(walls):.2f} s over {len(walls)} runs (min {min(walls):.2f}, "
            f"max {max(walls):.2f}; CPU median {statistics.median(t.cpu for t in timings):.2f} s{own})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="store to build or reuse (default: a temporary directory)")
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-deletions", type=int, default=50)
    args = parser.parse_args(argv)

    with scratch_dir("agentmem-bench-src-", keep=args.home) as root:
        home = args.home or root / "home"
        build(home, args.memories)
        load_before = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
        conn = connect(home / "agentmem.db", load_vec=False)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        firsts, laters, erasures, briefings = [], [], [], []
        for run in range(args.runs):
            first, later, erased, briefing = run_once(home / "agentmem.db", args.max_deletions)
            briefings.append(briefing)
            print(f"run {run + 1}, the briefing of {BRIEFING_PROJECT} before the sweep: {briefing:.1f} ms "
                  f"(median of {BRIEFING_CALLS})", flush=True)
            firsts.append(first)
            laters.append(later)
            print(first.line(f"run {run + 1}, first sweep"), flush=True)
            erasures.append(erased)
            print(erased.line(f"run {run + 1}, the erasure after it (BM25 rebuilt from SQLite)"), flush=True)
            print(later.line(f"run {run + 1}, a day later"), flush=True)
    print(summary(f"first sweep of {args.memories:,} memories (targets: <= 5 s at 100k, <= 30 s at 1M)", firsts))
    print(summary("the next day's sweep", laters))
    print(f"the briefing of one project (context.session_context, 1,500 tokens): median "
          f"{statistics.median(briefings):.1f} ms over {len(briefings)} runs (each of {BRIEFING_CALLS} calls)")
    print(summary("the erasure after the first sweep (the indexer thread's in real use; nothing waits for it)",
                  erasures))
    print(f"load average before the runs: {load_before}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %z')}")
    print(f"machine: {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}"
          f" usable), {cpu_model()}, Python {platform.python_version()}, {platform.system()} {platform.release()}")
    print(f"command: {' '.join(shlex.quote(a) for a in [sys.executable, *sys.argv])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
