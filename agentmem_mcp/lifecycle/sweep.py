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

import logging
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..db import audit, memories, meta
from ..models import InvalidInput, StoreDamaged
from .decay import CONFIDENCE_PERIOD_DAYS, DAY, STRENGTH_PERIOD_DAYS, ColumnDecay, plan_decay
from .forget import delete_memories
from .forgetting import ForgetScore, make_strategy, should_sweep
from .forgetting_columns import ColumnPlan, MemoryColumns, plan_forgetting
from .retention import FORGET_BELOW

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
CONFIDENCE_CLOCK = meta.LAST_CONFIDENCE_DECAY
STRENGTH_CLOCK = meta.LAST_STRENGTH_DECAY

# Pinned memories count as P0. Columns 0-8 are MemoryFacts' fields, in order; then strength, title, rowid.
_LATEST = (
    "SELECT id, importance, CASE WHEN pinned THEN 'P0' ELSE priority END, confidence, created_at, "
    "last_accessed_at, access_count, tier, forget_after, strength, title, rowid FROM memories WHERE is_latest = 1"
)
ACTIONS = ("expire", "forget", "delete")


@dataclass(frozen=True, slots=True)
class SweepEntry:
    """One memory in a sweep report: its score, what the sweep does with it and why."""

    id: str
    score: float
    decision: str  # expire | forget (confidence) | delete (strategy) | over cap | keep | protect (P0)
    reason: str
    title: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "score": round(self.score, 4), "decision": self.decision, "reason": self.reason,
                "title": self.title}


@dataclass
class _Details:
    """What a report's per-memory views are made from, when asked: the plan, the titles (in the plan's column
    order), the removals decided (index -> decision, reason) and who is over the threshold past the cap."""

    plan: ColumnPlan
    titles: list[str]
    removals: dict[int, tuple[str, str]]
    over_cap: np.ndarray

    def decision(self, i: int) -> tuple[str, str]:
        found = self.removals.get(i)
        if found is not None:
            return found
        if self.over_cap[i]:
            return "over cap", f"over the threshold, past this run's cap; {self.plan.reason(i)}"
        plan = self.plan
        protected = plan.columns.p0[i] and not plan.expired_mask[i]
        return ("protect" if protected else "keep"), plan.reason(i)


@dataclass
class SweepReport:
    """What a sweep did (or, for a dry run, would do).

    The id lists hold what was (would be) removed: ``expired`` (TTL), ``deleted`` (strategy score),
    ``low_confidence`` (under 0.1). ``entries()`` is every scored memory with its decision; ``scores``,
    ``decisions`` and ``titles`` are made when first read.
    """

    at: float
    strategy: str
    dry_run: bool
    threshold: float
    max_deletions: int
    scored: int = 0
    expired: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    low_confidence: list[str] = field(default_factory=list)
    over_cap: int = 0
    protected: int = 0
    confidence_decayed: int = 0
    strength_decayed: int = 0
    pruned_versions: int = 0
    duration_s: float = 0.0
    details: _Details | None = field(default=None, repr=False, compare=False)

    @property
    def scores(self) -> list[ForgetScore]:
        """Every scored memory's score and reason, highest score first."""
        return self.details.plan.report if self.details is not None else []

    @property
    def decisions(self) -> dict[str, tuple[str, str]]:
        """id -> (decision, reason) of the memories removed (would be) and of those over the cap."""
        if self.details is None:
            return {}
        ids = self.details.plan.columns.ids
        decided = {ids[i]: value for i, value in self.details.removals.items()}
        for i in np.flatnonzero(self.details.over_cap).tolist():
            decided[ids[i]] = self.details.decision(i)
        return decided

    @property
    def titles(self) -> dict[str, str]:
        return dict(zip(self.details.plan.columns.ids, self.details.titles)) if self.details is not None else {}

    def entries(self, limit: int | None = None) -> list[SweepEntry]:
        """Every scored memory (the first ``limit``): removals first (expire, forget, delete), then by score."""
        details = self.details
        if details is None:
            return []
        plan = details.plan
        order = plan.order()
        group = np.full(len(order), len(ACTIONS), dtype=np.int8)
        rank = {decision: i for i, decision in enumerate(ACTIONS)}
        for i, (decision, _) in details.removals.items():
            group[i] = rank.get(decision, len(ACTIONS))
        order = order[np.argsort(group[order], kind="stable")][:limit]
        ids, scores, titles = plan.columns.ids, plan.scores, details.titles
        return [SweepEntry(ids[i], float(scores[i]), *details.decision(i), titles[i]) for i in order.tolist()]

    def record(self) -> dict[str, Any]:
        """The summary stored in meta ``last_sweep`` (and shown by ``agentmem stats``)."""
        return {"at": self.at, "strategy": self.strategy, "dry_run": self.dry_run, "scored": self.scored,
                "deleted": len(self.deleted), "expired": len(self.expired),
                "low_confidence": len(self.low_confidence), "decayed": self.confidence_decayed,
                "strength_decayed": self.strength_decayed, "pruned_versions": self.pruned_versions,
                "duration_s": round(self.duration_s, 3)}

    def to_dict(self, limit: int | None = None) -> dict[str, Any]:
        """The whole report as JSON-ready data; ``limit`` caps the ``memories`` list (None: all)."""
        entries = self.entries(limit)
        return {**self.record(), "threshold": self.threshold, "max_deletions": self.max_deletions,
                "over_cap": self.over_cap, "protected": self.protected, "deleted_ids": self.deleted,
                "expired_ids": self.expired, "low_confidence_ids": self.low_confidence,
                "memories": [e.to_dict() for e in entries]}

    def summary(self) -> str:
        would = "would " if self.dry_run else ""
        removed = len(self.expired) + len(self.deleted) + len(self.low_confidence)
        text = (f"{'dry run: ' if self.dry_run else ''}{would}remove {removed} of {self.scored} memories: "
                f"{len(self.expired)} TTL-expired, {len(self.deleted)} by {self.strategy} "
                f"(score >= {self.threshold:g}, at most {self.max_deletions}"
                + (f", {self.over_cap} more over the cap" if self.over_cap else "")
                + f"), {len(self.low_confidence)} under confidence {FORGET_BELOW:g}; "
                f"{self.protected} P0/pinned protected; {would}decay confidence of {self.confidence_decayed} "
                f"and strength of {self.strength_decayed}; {would}prune {self.pruned_versions} superseded "
                f"versions ({self.duration_s:.2f} s)")
        return text + (". Nothing was changed." if self.dry_run else ".")

    def table(self, limit: int = 30) -> str:
        """A text table of the top ``limit`` memories (removals first, then by score) and a summary line."""
        entries = self.entries(limit)
        header = f"{'id':18}  {'score':>5}  {'decision':8}  {'reason':60}  title"
        lines = [header, "-" * len(header)]
        for e in entries:
            lines.append(f"{e.id:18}  {e.score:5.3f}  {e.decision:8}  {_cut(e.reason, 60):60}  {_cut(e.title, 50)}")
        if self.scored > limit:
            lines.append(f"... {self.scored - limit} more memories not shown (--json lists them all)")
        lines.append(self.summary())
        return "\n".join(lines)


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def sweep(store: Parts, *, strategy: str = "composite", dry_run: bool = False, threshold: float = 0.6,
          max_deletions: int = 50, now: float | None = None, options: Mapping[str, Any] | None = None,
          prune_after_days: float = PRUNE_AFTER_DAYS, max_pruned: int = MAX_PRUNED) -> SweepReport:
    """Score every latest memory of every project and forget, decay and prune accordingly.

    strategy: importance | age | capacity | composite; ``options`` are its arguments (e.g.
    ``{"half_life_days": 14, "capacity": 5000}``). Memories scoring ``>= threshold`` are deleted, at most
    ``max_deletions`` per run; P0 and pinned memories never are. TTL-expired memories and those whose
    confidence falls under 0.1 go too, outside that cap. Superseded versions older than
    ``prune_after_days`` are pruned, at most ``max_pruned`` per run (the rest next time).
    dry_run=True changes nothing, not even ``last_sweep``, and returns the same report.
    """
    started = time.perf_counter()
    now = store.now() if now is None else now
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or threshold != threshold:
        raise InvalidInput(f"threshold must be a number (a forget score in 0..1); got {threshold!r}")
    if isinstance(max_deletions, bool) or not isinstance(max_deletions, int) or max_deletions < 0:
        raise InvalidInput(f"max_deletions must be a whole number >= 0; got {max_deletions!r}")
    if not prune_after_days >= 0 or isinstance(max_pruned, bool) or not isinstance(max_pruned, int) or max_pruned < 0:
        raise InvalidInput("prune_after_days must be a number of days >= 0 and max_pruned a whole number >= 0")
    try:
        scorer = make_strategy(strategy, **dict(options or {}))
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    with audit.batched():  # one head write for the sweep's thousands of audit rows, not one per commit
        return _sweep(store, scorer, strategy, dry_run, threshold, max_deletions, now, prune_after_days, max_pruned,
                      started)


def _sweep(store: Parts, scorer: Any, strategy: str, dry_run: bool, threshold: float, max_deletions: int,
           now: float, prune_after_days: float, max_pruned: int, started: float) -> SweepReport:
    conn = store.conn
    columns, strength, titles, rowids = _read_latest(conn)
    plan = plan_forgetting(columns, scorer, now, threshold=threshold, max_deletions=max_deletions)
    clocks: dict[meta.Key[float], float] = {}
    decay = plan_decay(columns, strength, now, _periods(conn, CONFIDENCE_CLOCK, CONFIDENCE_PERIOD_DAYS, now, clocks),
                       _periods(conn, STRENGTH_CLOCK, STRENGTH_PERIOD_DAYS, now, clocks))

    report = SweepReport(at=now, strategy=strategy, dry_run=dry_run, threshold=threshold,
                         max_deletions=max_deletions, scored=len(columns), protected=plan.protected)
    planned = _decide(report, plan, decay, titles)
    prune_before = now - prune_after_days * DAY
    if dry_run:
        report.confidence_decayed = int((decay.confidence_changed & ~planned).sum())
        report.strength_decayed = int((decay.strength_changed & ~planned).sum())
        report.pruned_versions = len(_prunable(conn, prune_before, max_pruned))
        report.duration_s = time.perf_counter() - started
        return report
    _apply(store, report, plan, decay, planned, strength, rowids, clocks, now)
    prunable = _prunable(conn, prune_before, max_pruned)
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
    """Every latest memory as columns, with their strengths, titles and rowids, read a page at a time."""
    cursor = conn.cursor()
    cursor.row_factory = None
    cursor.execute(_LATEST)
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
    report.details = _Details(plan, titles, removals, over_cap)
    return deleted | plan.expired_mask | forgotten


def _prunable(conn: Any, cutoff: float, limit: int) -> list[Any]:
    """Superseded versions last changed (superseded) before ``cutoff``, oldest first."""
    return conn.execute(
        "SELECT id, title, type, version, project FROM memories WHERE is_latest = 0 AND updated_at < ? "
        "ORDER BY updated_at LIMIT ?", (cutoff, limit)).fetchall()


def _apply(store: Parts, report: SweepReport, plan: ColumnPlan, decay: ColumnDecay, planned: np.ndarray,
           strength: np.ndarray, rowids: np.ndarray, clocks: Mapping[meta.Key[float], float], now: float) -> None:
    columns = plan.columns
    snapshot = {columns.ids[i]: _time(columns.last_accessed_at[i]) for i in np.flatnonzero(planned).tolist()}
    report.expired = _remove(store, report.expired, snapshot, "ttl expired", now)
    report.deleted = _remove(store, report.deleted, snapshot,
                             f"forgetting strategy {report.strategy}: score >= {report.threshold:g}", now)
    writes = [("confidence", np.flatnonzero(decay.confidence_changed & ~planned), decay.confidence,
               columns.confidence),
              ("strength", np.flatnonzero(decay.strength_changed & ~planned), decay.strength, strength)]
    counts = _write_decay(store, writes, columns.ids, rowids, clocks)
    report.confidence_decayed, report.strength_decayed = counts["confidence"], counts["strength"]
    report.low_confidence = _remove(store, report.low_confidence, snapshot, f"confidence below {FORGET_BELOW:g}",
                                    now)


def _time(value: float) -> float | None:
    return None if value != value else float(value)  # NaN: never accessed


def _write_decay(store: Parts, writes: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray]], ids: Sequence[str],
                 rowids: np.ndarray, clocks: Mapping[meta.Key[float], float]) -> dict[str, int]:
    """Write each (column, indices, new values, values read) as compare-and-set updates, in transactions that
    hold the write lock for at most ``sweep_lock_ms`` each, pausing between them so other writers get the lock.
    The decay clocks move in the first transaction. Returns how many rows of each column changed."""
    budget = store.settings.sweep_lock_ms / 1000
    counts = {column: 0 for column, *_ in writes}
    pending = deque((column, indices, new, old, start) for column, indices, new, old in writes
                    for start in range(0, len(indices), WRITE_STEP))
    first = True
    while first or pending:
        with store.transaction() as conn:
            began = time.perf_counter()
            if first:
                for clock, value in clocks.items():
                    meta.put(conn, clock, value)
                first = False
            while pending and time.perf_counter() - began < budget:
                column, indices, new, old, start = pending.popleft()
                chunk = indices[start:start + WRITE_STEP]
                changes = list(zip(new[chunk].tolist(), rowids[chunk].tolist(), [ids[i] for i in chunk.tolist()],
                                   old[chunk].tolist()))
                counts[column] += memories.decay(conn, column, changes)
        if pending:
            time.sleep(YIELD_SECONDS)
    return counts


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
        marks = ",".join("?" * len(batch))
        current += conn.execute(f"SELECT id, root_id, last_accessed_at FROM memories WHERE id IN ({marks}) "
                                f"AND is_latest = 1", batch).fetchall()
    keep = [row for row in current if row["last_accessed_at"] == snapshot.get(row["id"])]
    roots = [row["root_id"] for row in keep]
    chain = []
    for batch in _batches(roots):
        marks = ",".join("?" * len(batch))
        chain += conn.execute(f"SELECT id, title, type, version, project FROM memories WHERE root_id IN ({marks})",
                              batch).fetchall()
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
    """Run ``sweep(store, **options)`` if one is due; return its report, or None if none ran or it failed.

    A sweep is due when none has run yet, ``interval_hours`` have passed since the last one, or there
    are more than ``count_threshold`` latest memories, though never twice within ``min_interval_hours``.
    Any error is logged to the ``agentmem.sweep`` logger and swallowed: a failing sweep never blocks
    saves or searches, and it is tried again on a later call.
    """
    try:
        now = store.now() if now is None else now
        count = store.conn.execute("SELECT COUNT(*) FROM memories WHERE is_latest = 1").fetchone()[0]
        hours = hours_since_last_sweep(store, now)
        if not should_sweep(count, count_threshold, hours, interval_hours):
            return None
        if hours is not None and hours < min_interval_hours:
            return None
        return sweep(store, now=now, **options)
    except StoreDamaged:  # the database's files changed under this process: it writes no more (logged once)
        raise
    except Exception:
        log.exception("the forgetting sweep failed (saves and searches are unaffected); it will be retried")
        return None
