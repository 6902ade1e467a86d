"""The forgetting sweep: the I/O half of the lifecycle, over every project of a store.

One sweep reads every latest memory once, scores it with a forgetting strategy (``forgetting``), and
unless it is a dry run: deletes what passed its TTL, what the strategy selects (over the threshold, at
most ``max_deletions``, never P0 or pinned) and what has fallen under confidence 0.1; decays
confidence and strength (``retention``); prunes superseded versions older than ``prune_after_days``;
and records what it did in the meta key ``last_sweep``. Decay is tied to elapsed time, not to how
often sweeps run: confidence decays once per ``CONFIDENCE_PERIOD_DAYS`` and strength once per
``STRENGTH_PERIOD_DAYS``, each clock kept in meta, so running a sweep twice never decays twice.

``maybe_sweep`` is what the background worker calls: it sweeps only when one is due and never raises.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..db import audit, memories, meta
from ..models import InvalidInput, StoreDamaged
from .forget import delete_memories
from .forgetting import (
    P0_REASON,
    ForgetPlan,
    ForgetScore,
    MemoryFacts,
    make_strategy,
    plan_forgetting,
    should_sweep,
)
from .retention import (
    CONSOLIDATED_TIERS,
    FORGET_BELOW,
    NEVER_DECAYS,
    UNUSED_DAYS,
    decay_confidence,
    decay_strength,
    should_forget_for_confidence,
)

if TYPE_CHECKING:
    from ..parts import Parts

log = logging.getLogger("agentmem.sweep")

DAY = 86400.0
CONFIDENCE_PERIOD_DAYS = 1.0
STRENGTH_PERIOD_DAYS = 7.0
PRUNE_AFTER_DAYS = 90.0
MAX_PRUNED = 2000
MAX_CATCH_UP = 30  # decay periods applied at most in one sweep, after a long pause
BATCH = 500
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
class SweepReport:
    """What a sweep did (or, for a dry run, would do).

    The id lists hold what was (would be) removed: ``expired`` (TTL), ``deleted`` (strategy score),
    ``low_confidence`` (under 0.1). ``entries()`` is every scored memory with its decision.
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
    scores: list[ForgetScore] = field(default_factory=list, repr=False)
    decisions: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False)  # id -> decision, reason
    titles: dict[str, str] = field(default_factory=dict, repr=False)

    def entries(self) -> list[SweepEntry]:
        """Every scored memory: removals first (expire, forget, delete), then the rest by score."""
        rank = {decision: i for i, decision in enumerate(ACTIONS)}
        last = len(ACTIONS)
        decisions = self.decisions
        ordered = sorted(self.scores, key=lambda s: rank.get(decisions[s.id][0], last) if s.id in decisions else last)
        result = []
        for s in ordered:
            decision, reason = decisions.get(s.id) or ("protect" if s.reason == P0_REASON else "keep", s.reason)
            result.append(SweepEntry(s.id, s.score, decision, reason, self.titles.get(s.id, "")))
        return result

    def record(self) -> dict[str, Any]:
        """The summary stored in meta ``last_sweep`` (and shown by ``agentmem stats``)."""
        return {"at": self.at, "strategy": self.strategy, "dry_run": self.dry_run, "scored": self.scored,
                "deleted": len(self.deleted), "expired": len(self.expired),
                "low_confidence": len(self.low_confidence), "decayed": self.confidence_decayed,
                "strength_decayed": self.strength_decayed, "pruned_versions": self.pruned_versions,
                "duration_s": round(self.duration_s, 3)}

    def to_dict(self, limit: int | None = None) -> dict[str, Any]:
        """The whole report as JSON-ready data; ``limit`` caps the ``memories`` list (None: all)."""
        entries = self.entries()
        return {**self.record(), "threshold": self.threshold, "max_deletions": self.max_deletions,
                "over_cap": self.over_cap, "protected": self.protected, "deleted_ids": self.deleted,
                "expired_ids": self.expired, "low_confidence_ids": self.low_confidence,
                "memories": [e.to_dict() for e in entries[:limit]]}

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
        entries = self.entries()
        header = f"{'id':18}  {'score':>5}  {'decision':8}  {'reason':60}  title"
        lines = [header, "-" * len(header)]
        for e in entries[:limit]:
            lines.append(f"{e.id:18}  {e.score:5.3f}  {e.decision:8}  {_cut(e.reason, 60):60}  {_cut(e.title, 50)}")
        if len(entries) > limit:
            lines.append(f"... {len(entries) - limit} more memories not shown (--json lists them all)")
        lines.append(self.summary())
        return "\n".join(lines)


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass
class _Decay:
    confidence: list[tuple[float, int, str, float]] = field(default_factory=list)  # new, rowid, id, old
    strength: list[tuple[float, int, str, float]] = field(default_factory=list)
    low_confidence: dict[str, float] = field(default_factory=dict)
    clocks: dict[meta.Key[float], float] = field(default_factory=dict)  # decay clock -> its new value


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

    conn = store.conn
    cursor = conn.cursor()
    cursor.row_factory = None
    rows = cursor.execute(_LATEST).fetchall()
    facts = [MemoryFacts(*row[:9]) for row in rows]
    plan = plan_forgetting(facts, scorer, now, threshold=threshold, max_deletions=max_deletions)
    decay = _plan_decay(conn, facts, rows, now)

    report = SweepReport(at=now, strategy=strategy, dry_run=dry_run, threshold=threshold,
                         max_deletions=max_deletions, scored=len(facts), protected=plan.protected,
                         scores=plan.report, titles={row[0]: row[10] for row in rows})
    _decide(report, plan, decay, threshold)
    prune_before = now - prune_after_days * DAY
    if dry_run:
        removed = set(report.expired) | set(report.deleted) | set(report.low_confidence)
        report.confidence_decayed = sum(1 for change in decay.confidence if change[2] not in removed)
        report.strength_decayed = sum(1 for change in decay.strength if change[2] not in removed)
        report.pruned_versions = len(_prunable(conn, prune_before, max_pruned))
        report.duration_s = time.perf_counter() - started
        return report
    _apply(store, report, decay, facts, now)
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


def _plan_decay(conn: Any, facts: Sequence[MemoryFacts], rows: Sequence[tuple], now: float) -> _Decay:
    """New confidences and strengths for the periods elapsed on each decay clock, and who falls under 0.1."""
    decay = _Decay()
    confidence_periods = _periods(conn, CONFIDENCE_CLOCK, CONFIDENCE_PERIOD_DAYS, now, decay.clocks)
    strength_periods = _periods(conn, STRENGTH_CLOCK, STRENGTH_PERIOD_DAYS, now, decay.clocks)
    for m, row in zip(facts, rows):
        if m.priority == NEVER_DECAYS:
            continue
        days = (now - m.last_used_at) / DAY
        confidence = m.confidence
        if days >= UNUSED_DAYS:
            for _ in range(min(confidence_periods, int((days - UNUSED_DAYS) // CONFIDENCE_PERIOD_DAYS) + 1)):
                confidence = decay_confidence(confidence, days, m.priority)
            if confidence != m.confidence:
                decay.confidence.append((confidence, row[11], m.id, m.confidence))
        if should_forget_for_confidence(confidence, m.priority):
            decay.low_confidence[m.id] = confidence
        if strength_periods and m.tier in CONSOLIDATED_TIERS and days >= STRENGTH_PERIOD_DAYS:
            strength = new_strength = row[9]
            for _ in range(min(strength_periods, int(days // STRENGTH_PERIOD_DAYS))):
                new_strength = decay_strength(new_strength, m.tier)
            if new_strength != strength:
                decay.strength.append((new_strength, row[11], m.id, strength))
    return decay


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


def _decide(report: SweepReport, plan: ForgetPlan, decay: _Decay, threshold: float) -> None:
    decisions = report.decisions
    for s in plan.deletions:
        report.deleted.append(s.id)
        decisions[s.id] = ("delete", s.reason)
    if plan.expired or decay.low_confidence:
        reasons = {s.id: s.reason for s in plan.report}
        report.expired = list(plan.expired)
        for memory_id in plan.expired:
            decisions[memory_id] = ("expire", reasons[memory_id])
        for memory_id, confidence in decay.low_confidence.items():
            if memory_id not in decisions:
                report.low_confidence.append(memory_id)
                decisions[memory_id] = ("forget", f"confidence {confidence:.3f} < {FORGET_BELOW:g}; "
                                                  f"{reasons[memory_id]}")
    for s in plan.report:  # highest score first: the over-threshold memories lead
        if s.score < threshold:
            break
        if s.id not in decisions and s.reason != P0_REASON:
            report.over_cap += 1
            decisions[s.id] = ("over cap", f"over the threshold, past this run's cap; {s.reason}")


def _prunable(conn: Any, cutoff: float, limit: int) -> list[Any]:
    """Superseded versions last changed (superseded) before ``cutoff``, oldest first."""
    return conn.execute(
        "SELECT id, title, type, version, project FROM memories WHERE is_latest = 0 AND updated_at < ? "
        "ORDER BY updated_at LIMIT ?", (cutoff, limit)).fetchall()


def _apply(store: Parts, report: SweepReport, decay: _Decay, facts: Sequence[MemoryFacts], now: float) -> None:
    snapshot = {m.id: m.last_accessed_at for m in facts}
    planned = set(report.expired) | set(report.deleted) | set(report.low_confidence)
    report.expired = _remove(store, report.expired, snapshot, "ttl expired", now)
    report.deleted = _remove(store, report.deleted, snapshot,
                             f"forgetting strategy {report.strategy}: score >= {report.threshold:g}", now)
    confidence = [change for change in decay.confidence if change[2] not in planned]
    strength = [change for change in decay.strength if change[2] not in planned]
    with store.transaction() as conn:
        report.confidence_decayed = memories.decay(conn, "confidence", confidence)
        report.strength_decayed = memories.decay(conn, "strength", strength)
        for clock, value in decay.clocks.items():
            meta.put(conn, clock, value)
    report.low_confidence = _remove(store, report.low_confidence, snapshot, f"confidence below {FORGET_BELOW:g}",
                                    now)


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
