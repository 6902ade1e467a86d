"""The forgetting sweep: the I/O half of the lifecycle, over every project of a store.

One sweep reads every latest memory once, as columns (``forgetting_columns.MemoryColumns``), scores them with a
forgetting strategy (``forgetting``), and unless it is a dry run: deletes what passed its TTL, what the strategy
selects (over the threshold, at most ``max_deletions``, never P0 or pinned) and what has fallen under confidence
0.1; decays confidence and strength (``decay``); prunes superseded versions older than ``prune_after_days``; and
records what it did in the meta key ``last_sweep``. Decay is tied to elapsed time, not to how often sweeps run:
confidence decays once per ``CONFIDENCE_PERIOD_DAYS`` and strength once per ``STRENGTH_PERIOD_DAYS``, each clock
kept in meta, so running a sweep twice never decays twice.

The decay is written in short transactions, each holding SQLite's write lock for at most the setting
``sweep_lock_ms``, with a pause between them, so saves, hooks and the indexer are never locked out by a sweep of
a large store. The clocks move in the first of them: a sweep interrupted halfway leaves the rest of that period's
decay undone rather than applying it twice.

``maybe_sweep`` is what the background worker calls: it sweeps only when one is due and never raises.
"""

from __future__ import annotations

import gc
import logging
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..db import audit, memories, memory_reads, meta
from ..db.connection import is_damage
from ..models import InvalidInput, StoreDamaged
from .decay import CONFIDENCE_PERIOD_DAYS, DAY, STRENGTH_PERIOD_DAYS, ColumnDecay, plan_decay
from .forget import delete_memories
from .forgetting import make_strategy, should_sweep
from .forgetting_columns import ColumnPlan, MemoryColumns, plan_forgetting
from .retention import FORGET_BELOW
from .sweep_report import SweepDetails, SweepReport

if TYPE_CHECKING:
    from ..parts import Parts

log = logging.getLogger("agentmem.sweep")

PRUNE_AFTER_DAYS = 90.0
MAX_PRUNED = 2000
MAX_CATCH_UP = 30  # decay periods applied at most in one sweep, after a long pause
BATCH = 500
READ_PAGE = 65536  # rows turned into columns at a time, so a million rows are never all Python tuples at once
WRITE_STEP = 256  # decay rows per statement batch; the time budget is checked between batches
# Between two decay transactions. A waiting writer's busy handler retries every 100 ms at most, so a pause of half
# that, once per sweep_lock_ms, meets its retries within a few of them.
YIELD_SECONDS = 0.05
# SQLite's page cache of the sweeping connection while it sweeps, in KiB: its default (2 MB) holds a small part
# of the indexes a large store's decay and deletions rewrite; the previous size is set back afterwards.
SWEEP_CACHE_KIB = 65536
CONFIDENCE_CLOCK = meta.LAST_CONFIDENCE_DECAY
STRENGTH_CLOCK = meta.LAST_STRENGTH_DECAY

@dataclass(frozen=True)
class SweepRequest:
    """What a caller asks `sweep` to do: the CLI and the worker (`maybe_sweep`) each build one.

    It lives beside `sweep`, the operation it feeds. `scorer` is the one place its fields are checked.

    strategy: importance | age | capacity | composite; ``options`` are its arguments (e.g.
    ``{"half_life_days": 14, "capacity": 5000}``). Memories scoring ``>= threshold`` are deleted, at most
    ``max_deletions`` per run. Superseded versions older than ``prune_after_days`` are pruned, at most
    ``max_pruned`` per run. now: the sweep's time (default: the store's clock). dry_run=True changes nothing.
    """
    strategy: str = "composite"
    dry_run: bool = False
    threshold: float = 0.6
    max_deletions: int = 50
    now: float | None = None
    options: Mapping[str, Any] | None = None
    prune_after_days: float = PRUNE_AFTER_DAYS
    max_pruned: int = MAX_PRUNED

    def scorer(self) -> Any:
        """The strategy's scorer, once the request's numbers are checked; InvalidInput says what is wrong."""
        threshold, max_deletions, max_pruned = self.threshold, self.max_deletions, self.max_pruned
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or threshold != threshold:
            raise InvalidInput(f"threshold must be a number (a forget score in 0..1); got {threshold!r}")
        if isinstance(max_deletions, bool) or not isinstance(max_deletions, int) or max_deletions < 0:
            raise InvalidInput(f"max_deletions must be a whole number >= 0; got {max_deletions!r}")
        if not self.prune_after_days >= 0 or isinstance(max_pruned, bool) or not isinstance(max_pruned, int) \
                or max_pruned < 0:
            raise InvalidInput("prune_after_days must be a number of days >= 0 and max_pruned a whole number >= 0")
        try:
            return make_strategy(self.strategy, **dict(self.options or {}))
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None


def sweep(store: Parts, request: SweepRequest) -> SweepReport:
    """Score every latest memory of every project and forget, decay and prune as `request` asks (`SweepRequest`).

    P0 and pinned memories are never deleted by score. TTL-expired memories and those whose confidence falls under
    0.1 go too, outside the ``max_deletions`` cap; superseded versions beyond ``max_pruned`` go next time.
    A dry run changes nothing, not even ``last_sweep``, and returns the same report.
    """
    started = time.perf_counter()
    now = store.now() if request.now is None else request.now
    scorer = request.scorer()
    # one head write for the sweep's thousands of audit rows, not one per commit
    with audit.batched(), _page_cache(store.conn, SWEEP_CACHE_KIB):
        report = SweepReport(at=now, strategy=request.strategy, dry_run=request.dry_run,
                             threshold=request.threshold, max_deletions=request.max_deletions)
        return _sweep(store, report, scorer, request.prune_after_days, request.max_pruned, started)


@contextmanager
def _page_cache(conn: Any, kib: int) -> Iterator[None]:
    """The connection's page cache at least ``kib`` KiB while inside, then as it was."""
    previous = conn.execute("PRAGMA cache_size").fetchone()[0]
    size = -previous if previous < 0 else previous * conn.execute("PRAGMA page_size").fetchone()[0] // 1024
    if size >= kib:
        yield
        return
    conn.execute(f"PRAGMA cache_size = {-int(kib)}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA cache_size = {int(previous)}")


def _sweep(store: Parts, report: SweepReport, scorer: Any, prune_after_days: float, max_pruned: int,
           started: float) -> SweepReport:
    """The sweep `report` describes (its time, strategy, dry_run, threshold and max_deletions), filling it in."""
    conn = store.conn
    now, dry_run = report.at, report.dry_run
    columns, strength, titles, rowids = _read_latest(conn)
    plan = plan_forgetting(columns, scorer, now, threshold=report.threshold, max_deletions=report.max_deletions)
    clocks: dict[meta.Key[float], float] = {}
    decay = plan_decay(columns, strength, now, _periods(conn, CONFIDENCE_CLOCK, CONFIDENCE_PERIOD_DAYS, now, clocks),
                       _periods(conn, STRENGTH_CLOCK, STRENGTH_PERIOD_DAYS, now, clocks))

    report.scored, report.protected = len(columns), plan.protected
    planned = _decide(report, plan, decay, titles)
    prune_before = now - prune_after_days * DAY
    if dry_run:
        report.confidence_decayed = int((decay.confidence_changed & ~planned).sum())
        report.strength_decayed = int((decay.strength_changed & ~planned).sum())
        report.pruned_versions = len(memory_reads.superseded_before(conn, prune_before, max_pruned))
        report.duration_s = time.perf_counter() - started
        return report
    _apply(store, report, plan, decay, planned, strength, rowids, clocks)
    prunable = memory_reads.superseded_before(conn, prune_before, max_pruned)
    if prunable:
        delete_memories(store, prunable, f"superseded more than {prune_after_days:g} days ago", now,
                        action="prune")
    report.pruned_versions = len(prunable)
    report.duration_s = time.perf_counter() - started
    with store.transaction() as conn:
        meta.put(conn, meta.LAST_SWEEP, report.record())
        detail = {key: value for key, value in report.record().items() if key not in ("at", "duration_s")}
        audit.append(conn, "sweep", None, None, detail, at=now)
    if report.expired or report.deleted or report.low_confidence or prunable:
        store.indexer.erase_soon()  # what the sweep forgot leaves the BM25 segments and the WAL too
    return report


def _read_latest(conn: Any) -> tuple[MemoryColumns, np.ndarray, list[str], np.ndarray]:
    """Every latest memory as columns, with their strengths, titles and rowids, read a page at a time. The cyclic
    garbage collector is paused meanwhile (if it ran): the rows are millions of new tuples, none in a cycle, and
    each of its passes would walk them all."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _read_columns(conn)
    finally:
        if collecting:
            gc.enable()


def _read_columns(conn: Any) -> tuple[MemoryColumns, np.ndarray, list[str], np.ndarray]:
    cursor = memory_reads.sweep_rows(conn)
    texts: list[list[Any]] = [[], [], [], []]  # id, priority, tier, title
    numbers: list[list[np.ndarray]] = [[] for _ in range(8)]
    while True:
        page = cursor.fetchmany(READ_PAGE)
        if not page:
            break
        (ids, importance, priority, confidence, created, accessed, count, tier, forget_after, strength, title,
         rowid) = zip(*page)
        del page
        for column, values in zip(texts, (ids, priority, tier, title)):
            column.extend(values)
        for column, values in zip(numbers, (importance, confidence, created, accessed, count, forget_after,
                                            strength, rowid)):
            column.append(np.array(values, dtype=np.float64 if values is not rowid else np.int64))
    joined = [np.concatenate(column) if column else np.zeros(0) for column in numbers]
    importance, confidence, created, accessed, count, forget_after, strength, rowids = joined
    columns = MemoryColumns(texts[0], importance, texts[1], confidence, created, accessed, count, texts[2],
                            forget_after)
    return columns, strength, texts[3], rowids.astype(np.int64)


def _periods(conn: Any, key: meta.Key[float], period_days: float, now: float,
             clocks: dict[meta.Key[float], float]) -> int:
    """Whole decay periods elapsed on the clock ``key`` (1 on a first sweep); sets its next value in clocks."""
    last = meta.get(conn, key)
    if last is None:
        clocks[key] = now
        return 1
    periods = int(max(now - last, 0.0) // (period_days * DAY))
    if periods:
        clocks[key] = now if periods > MAX_CATCH_UP else last + periods * period_days * DAY
    return min(periods, MAX_CATCH_UP)


def _decide(report: SweepReport, plan: ColumnPlan, decay: ColumnDecay, titles: list[str]) -> np.ndarray:
    """Fill the report's removals and counts; returns the mask of the memories it removes (would remove)."""
    ids = plan.columns.ids
    removals: dict[int, tuple[str, str]] = {}
    deleted = np.zeros(len(ids), dtype=bool)
    for i, s in zip(plan.deletion_index, plan.deletions):
        report.deleted.append(s.id)
        removals[i] = ("delete", s.reason)
        deleted[i] = True
    report.expired = list(plan.expired)
    for i in np.flatnonzero(plan.expired_mask).tolist():
        removals[i] = ("expire", plan.reason(i))
    forgotten = decay.low_confidence & ~plan.expired_mask & ~deleted
    for i in np.flatnonzero(forgotten).tolist():
        report.low_confidence.append(ids[i])
        removals[i] = ("forget", f"confidence {float(decay.confidence[i]):.3f} < {FORGET_BELOW:g}; {plan.reason(i)}")
    over_cap = plan.deletable & ~forgotten & ~deleted
    report.over_cap = int(over_cap.sum())
    report.details = SweepDetails(plan, titles, removals, over_cap)
    return deleted | plan.expired_mask | forgotten


def _apply(store: Parts, report: SweepReport, plan: ColumnPlan, decay: ColumnDecay, planned: np.ndarray,
           strength: np.ndarray, rowids: np.ndarray, clocks: Mapping[meta.Key[float], float]) -> None:
    """Write what a sweep decided (at `report.at`): removals, decay, and the clocks."""
    columns, now = plan.columns, report.at
    snapshot = {columns.ids[i]: _time(columns.last_accessed_at[i]) for i in np.flatnonzero(planned).tolist()}
    report.expired = _remove(store, report.expired, snapshot, "ttl expired", now)
    report.deleted = _remove(store, report.deleted, snapshot,
                             f"forgetting strategy {report.strategy}: score >= {report.threshold:g}", now)
    changes = _DecayWrites(decay.confidence_changed & ~planned, decay.confidence, columns.confidence,
                           decay.strength_changed & ~planned, decay.strength, strength, columns.ids, rowids)
    report.confidence_decayed, report.strength_decayed = _write_decay(store, changes, clocks)
    report.low_confidence = _remove(store, report.low_confidence, snapshot, f"confidence below {FORGET_BELOW:g}",
                                    now)


def _time(value: float) -> float | None:
    return None if value != value else float(value)  # NaN: never accessed


@dataclass
class _DecayWrites:
    """What the decay writes: per memory (in the order read, which is rowid order) whether its confidence and its
    strength change, their new values and the values read, its id and rowid."""

    confidence_changed: np.ndarray
    confidence: np.ndarray
    confidence_read: np.ndarray
    strength_changed: np.ndarray
    strength: np.ndarray
    strength_read: np.ndarray
    ids: Sequence[str]
    rowids: np.ndarray

    def steps(self) -> deque[np.ndarray]:
        """The indices of the memories to write, in rowid order, WRITE_STEP at a time."""
        changed = np.flatnonzero(self.confidence_changed | self.strength_changed)
        return deque(changed[start:start + WRITE_STEP] for start in range(0, len(changed), WRITE_STEP))

    def write(self, conn: Any, step: np.ndarray) -> tuple[int, int]:
        """Write one step; returns how many rows had their confidence and their strength changed. A memory whose
        two values change is written once; one that changed meanwhile (the compare-and-set found another value)
        gets each column's own compare-and-set, so a value used or superseded since the read is kept."""
        both = self.confidence_changed[step] & self.strength_changed[step]
        confidence, strength = step[~both & self.confidence_changed[step]], step[~both & self.strength_changed[step]]
        step = step[both]
        counted = [0, 0]
        if len(step):
            written = memories.decay_both(conn, list(zip(
                self.confidence[step].tolist(), self.strength[step].tolist(), self.rowids[step].tolist(),
                self._ids(step), self.confidence_read[step].tolist(), self.strength_read[step].tolist())))
            counted = [written, written]
            if written < len(step):  # some changed meanwhile: each column on its own (the rows written fail it)
                confidence, strength = np.concatenate([confidence, step]), np.concatenate([strength, step])
        for n, (column, chosen, new, read) in enumerate((
                ("confidence", confidence, self.confidence, self.confidence_read),
                ("strength", strength, self.strength, self.strength_read))):
            if len(chosen):
                counted[n] += memories.decay(conn, column, list(zip(
                    new[chosen].tolist(), self.rowids[chosen].tolist(), self._ids(chosen), read[chosen].tolist())))
        return counted[0], counted[1]

    def _ids(self, chosen: np.ndarray) -> list[str]:
        ids = self.ids
        return [ids[i] for i in chosen.tolist()]


def _write_decay(store: Parts, changes: _DecayWrites, clocks: Mapping[meta.Key[float], float]) -> tuple[int, int]:
    """Write the decay as compare-and-set updates, in transactions that hold the write lock for at most
    ``sweep_lock_ms`` each, pausing between them so other writers get the lock. The decay clocks move in the
    first transaction. Returns how many rows had their confidence and their strength changed."""
    budget = store.settings.sweep_lock_ms / 1000
    pending = changes.steps()
    confidence = strength = 0
    first = True
    while first or pending:
        with store.transaction() as conn:
            began = time.perf_counter()
            if first:
                for clock, value in clocks.items():
                    meta.put(conn, clock, value)
                first = False
            while pending and time.perf_counter() - began < budget:
                written = changes.write(conn, pending.popleft())
                confidence, strength = confidence + written[0], strength + written[1]
        if pending:
            time.sleep(YIELD_SECONDS)
    return confidence, strength


def _remove(store: Parts, ids: Sequence[str], snapshot: Mapping[str, float | None], reason: str,
            now: float) -> list[str]:
    """Delete these memories with every version of them; returns the ids actually removed.

    A memory superseded or used since the sweep read it is skipped: deleting its chain would take the
    new version with it, and a use is new evidence the sweep did not score.
    """
    if not ids:
        return []
    conn = store.conn
    current = []
    for batch in _batches(ids):
        current += memory_reads.latest_among(conn, batch, "id, root_id, last_accessed_at")
    keep = [row for row in current if row["last_accessed_at"] == snapshot.get(row["id"])]
    roots = [row["root_id"] for row in keep]
    chain = []
    for batch in _batches(roots):
        chain += memory_reads.in_chains(conn, batch)
    if chain:
        delete_memories(store, chain, reason, now, action="sweep")
    kept = {row["id"] for row in keep}
    return [memory_id for memory_id in ids if memory_id in kept]


def _batches(items: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(items), BATCH):
        yield list(items[start:start + BATCH])


def hours_since_last_sweep(store: Parts, now: float) -> float | None:
    """Hours since the last real (not dry-run) sweep, or None if none is recorded."""
    last = meta.get(store.conn, meta.LAST_SWEEP)
    try:
        at = float(last["at"]) if last is not None else None
    except (ValueError, KeyError, TypeError):
        at = None
    return None if at is None else max(now - at, 0.0) / 3600


def maybe_sweep(store: Parts, *, count_threshold: int = 10000, interval_hours: float = 24.0,
                min_interval_hours: float = 1.0, now: float | None = None,
                **options: Any) -> SweepReport | None:
    """Run ``sweep`` with a ``SweepRequest`` of ``options`` (and ``now``) if one is due; return its report, or
    None if none ran or it failed.

    A sweep is due when none has run yet, ``interval_hours`` have passed since the last one, or there
    are more than ``count_threshold`` latest memories, though never twice within ``min_interval_hours``.
    Any error is logged to the ``agentmem.sweep`` logger and swallowed: a failing sweep never blocks
    saves or searches, and it is tried again on a later call.
    """
    try:
        now = store.now() if now is None else now
        count = memory_reads.count_latest(store.conn)
        hours = hours_since_last_sweep(store, now)
        if not should_sweep(count, count_threshold, hours, interval_hours):
            return None
        if hours is not None and hours < min_interval_hours:
            return None
        return sweep(store, SweepRequest(now=now, **options))
    except StoreDamaged:  # the database's files changed under this process: it writes no more (logged once)
        raise
    except Exception as exc:
        if is_damage(exc):  # a damaged database: the worker's caller says so in one line, not a traceback
            raise
        log.exception("the forgetting sweep failed (saves and searches are unaffected); it will be retried")
        return None
