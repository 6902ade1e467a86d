"""The forgetting strategies over columns: the same scores and reasons as ``forgetting``, for a whole store.

``forgetting`` scores a list of ``MemoryFacts``, one Python object per memory; a sweep over a million memories
reads them as columns instead (``MemoryColumns``: numpy arrays in ``MemoryFacts``' order, a missing time as NaN)
and scores them here with the same arithmetic, operation for operation, so every score is the same float.
A reason is a string per memory, so it is made only when asked for (``reason(i)``): a sweep needs the reasons of
what it removes, a report all of them. Strategies other than the built-in ones are scored through
``MemoryFacts`` as before. Pure functions: no database, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .forgetting import (
    P0_REASON,
    SECONDS_PER_DAY,
    AgeStrategy,
    CapacityStrategy,
    CompositeStrategy,
    ForgetScore,
    ForgettingStrategy,
    ImportanceStrategy,
    MemoryFacts,
    _raw_scores,
)

Reason = Callable[[int], str]


def _max(values: np.ndarray, floor: float) -> np.ndarray:
    """Python's ``max(value, floor)`` for each value (the first argument wins a tie, as there)."""
    return np.where(floor > values, floor, values)


def _min(values: np.ndarray, cap: float) -> np.ndarray:
    """Python's ``min(value, cap)`` for each value."""
    return np.where(cap < values, cap, values)


class MemoryColumns:
    """Many memories' ``MemoryFacts`` as columns: ``ids`` a list, times and numbers float64 arrays (None as NaN),
    ``priority`` and ``tier`` object arrays. ``last_used_at`` is ``MemoryFacts.last_used_at`` for each."""

    __slots__ = ("ids", "importance", "priority", "confidence", "created_at", "last_accessed_at", "access_count",
                 "tier", "forget_after", "last_used_at", "p0")

    def __init__(self, ids: Sequence[str], importance: Any, priority: Any, confidence: Any, created_at: Any,
                 last_accessed_at: Any, access_count: Any, tier: Any, forget_after: Any) -> None:
        self.ids = list(ids)
        self.importance = np.asarray(importance, dtype=np.float64)
        self.priority = np.asarray(priority, dtype=object)
        self.confidence = np.asarray(confidence, dtype=np.float64)
        self.created_at = np.asarray(created_at, dtype=np.float64)
        self.last_accessed_at = np.asarray(last_accessed_at, dtype=np.float64)
        self.access_count = np.asarray(access_count, dtype=np.int64)
        self.tier = np.asarray(tier, dtype=object)
        self.forget_after = np.asarray(forget_after, dtype=np.float64)
        last, created = self.last_accessed_at, self.created_at
        self.last_used_at = np.where(np.isnan(last) | (last < created), created, last)
        self.p0 = self.priority == "P0"

    @classmethod
    def from_facts(cls, facts: Sequence[MemoryFacts]) -> MemoryColumns:
        def column(name: str) -> list[Any]:
            return [getattr(m, name) for m in facts]

        return cls(column("id"), column("importance"), column("priority"), column("confidence"),
                   column("created_at"), column("last_accessed_at"), column("access_count"), column("tier"),
                   column("forget_after"))

    def __len__(self) -> int:
        return len(self.ids)

    def facts(self) -> list[MemoryFacts]:
        """The same memories as ``MemoryFacts`` (for a strategy that has no column form)."""
        def time(value: float) -> float | None:
            return None if math.isnan(value) else value

        return [MemoryFacts(memory_id, importance, priority, confidence, created, time(last), int(count), tier,
                            time(forget))
                for memory_id, importance, priority, confidence, created, last, count, tier, forget in zip(
                    self.ids, self.importance.tolist(), self.priority.tolist(), self.confidence.tolist(),
                    self.created_at.tolist(), self.last_accessed_at.tolist(), self.access_count.tolist(),
                    self.tier.tolist(), self.forget_after.tolist())]


def column_scores(strategy: ForgettingStrategy, columns: MemoryColumns, now: float) -> tuple[np.ndarray, Reason]:
    """``strategy``'s scores of every memory (float64, input order) and a function giving the i-th one's reason."""
    kind = type(strategy)
    if kind is ImportanceStrategy:
        importance = _min(_max(columns.importance, 0.0), 1.0)
        return 1.0 - importance, lambda i: f"importance {float(importance[i]):.2f}"
    if kind is AgeStrategy:
        return _age(strategy, columns, now)
    if kind is CapacityStrategy:
        return _capacity(strategy.capacity, columns)
    if kind is CompositeStrategy:
        return _composite(strategy, columns, now)
    scores, reasons = _raw_scores(strategy, columns.facts(), now)
    return np.asarray(scores, dtype=np.float64), reasons.__getitem__


def _age(strategy: AgeStrategy, columns: MemoryColumns, now: float) -> tuple[np.ndarray, Reason]:
    rate = math.log(2) / strategy.half_life_days
    half_life, max_age = strategy.half_life_days, strategy.max_age_days
    ages = _max((now - columns.last_used_at) / SECONDS_PER_DAY, 0.0)
    # math.expm1 (the C library's), not numpy's own: they differ in the last bit for ~2% of arguments
    exponents = -ages * rate
    scores = np.where(ages > max_age, 1.0, -np.fromiter(map(math.expm1, exponents.tolist()), np.float64,
                                                        len(exponents)))

    def reason(i: int) -> str:
        age = float(ages[i])
        return (f"age {age:.1f} d, beyond max age {max_age:g} d" if age > max_age
                else f"age {age:.1f} d (half-life {half_life:g} d)")

    return scores, reason


def _capacity(capacity: int, columns: MemoryColumns) -> tuple[np.ndarray, Reason]:
    n = len(columns)
    order = _importance_order(columns)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(1, n + 1)
    excess = n - capacity
    over = rank - capacity
    scores = np.zeros(n, dtype=np.float64)
    beyond = over > 0
    scores[beyond] = 1.0 if excess == 1 else (over[beyond] - 1) / (excess - 1)

    def reason(i: int) -> str:
        r = int(rank[i])
        if r <= capacity:
            return f"rank {r} of {n}, within capacity {capacity}"
        return f"rank {r} of {n}, {r - capacity} over capacity {capacity}"

    return scores, reason


def _importance_order(columns: MemoryColumns) -> np.ndarray:
    """Indices by (-importance, -last_used_at, id), as ``CapacityStrategy`` ranks them."""
    importance, used = -columns.importance, -columns.last_used_at
    order = np.lexsort((used, importance))
    if len(order) < 2:
        return order
    ordered_importance, ordered_used = importance[order], used[order]
    tied = (ordered_importance[1:] == ordered_importance[:-1]) & (ordered_used[1:] == ordered_used[:-1])
    if tied.any():  # equal importance and last use: the id decides, as in the tuple sort
        ids = columns.ids
        start = 0
        for position in np.flatnonzero(~np.append(tied, False)).tolist():  # the last index of each run
            if position > start:
                order[start:position + 1] = sorted(order[start:position + 1].tolist(), key=ids.__getitem__)
            start = position + 1
    return order


def _composite(strategy: CompositeStrategy, columns: MemoryColumns, now: float) -> tuple[np.ndarray, Reason]:
    totals = np.zeros(len(columns), dtype=np.float64)
    parts: list[tuple[Reason, np.ndarray]] = []
    for weight, part in strategy.parts:
        scores, reason = column_scores(part, columns, now)
        contributions = weight * scores
        totals = totals + contributions
        parts.append((reason, contributions))

    def reason(i: int) -> str:
        return "; ".join(f"{part_reason(i)} [+{float(contributions[i]):.3f}]" for part_reason, contributions in parts)

    return _min(totals, 1.0), reason


class ColumnPlan:
    """``ForgetPlan`` for ``MemoryColumns``: the same deletions, expired ids, protected count and (made when first
    read) report, plus the columns a sweep works with: ``scores``, ``expired_mask``, ``deletable`` (over the
    threshold, not P0, not expired), ``deletion_index`` (the deletions' indices) and ``reason(i)``, the reason
    the report gives memory i."""

    def __init__(self, columns: MemoryColumns, scores: np.ndarray, reason: Reason, now: float, threshold: float,
                 max_deletions: int) -> None:
        self.columns, self.scores, self._reason = columns, scores, reason
        forget_after = columns.forget_after
        with np.errstate(invalid="ignore"):
            self.expired_mask = ~np.isnan(forget_after) & (forget_after <= now)
        self.deletable = ~self.expired_mask & ~columns.p0 & (scores >= threshold)
        ids = columns.ids
        self.expired = [ids[i] for i in np.flatnonzero(self.expired_mask).tolist()]
        self.protected = int(columns.p0.sum())
        self.deletion_index = self._highest(np.flatnonzero(self.deletable), max_deletions)
        self.deletions = [ForgetScore(ids[i], float(scores[i]), reason(i)) for i in self.deletion_index]
        self._report: list[ForgetScore] | None = None

    def _highest(self, candidates: np.ndarray, limit: int) -> list[int]:
        """The ``limit`` candidates of highest score (ties: lowest id first), in that order."""
        if limit <= 0 or not len(candidates):
            return []
        scores, ids = self.scores, self.columns.ids
        if len(candidates) > limit:  # keep the top `limit` and everything tied with the last of them
            cut = np.partition(scores[candidates], len(candidates) - limit)[len(candidates) - limit]
            candidates = candidates[scores[candidates] >= cut]
        ranked = sorted(candidates.tolist(), key=lambda i: (-scores[i], ids[i]))
        return ranked[:limit]

    def reason(self, i: int) -> str:
        if self.expired_mask[i]:
            return "P0 with a TTL that has expired" if self.columns.p0[i] else f"TTL expired; {self._reason(i)}"
        return P0_REASON if self.columns.p0[i] else self._reason(i)

    def order(self) -> np.ndarray:
        """Every memory's index, highest score first (ties: lowest id first), as the report lists them."""
        return np.lexsort((np.array(self.columns.ids), -self.scores))

    @property
    def report(self) -> list[ForgetScore]:
        if self._report is None:
            ids, scores = self.columns.ids, self.scores
            self._report = [ForgetScore(ids[i], float(scores[i]), self.reason(i)) for i in self.order().tolist()]
        return self._report


def plan_forgetting(columns: MemoryColumns, strategy: ForgettingStrategy, now: float, threshold: float = 0.6,
                    max_deletions: int = 50) -> ColumnPlan:
    """``forgetting.plan_forgetting`` over columns: the same decisions, the report made when first read."""
    if max_deletions < 0:
        raise ValueError(f"max_deletions must be >= 0, got {max_deletions!r}")
    scores, reason = column_scores(strategy, columns, now)
    if len(scores) != len(columns):
        raise ValueError(f"strategy {strategy.name!r} returned {len(scores)} scores for {len(columns)}")
    return ColumnPlan(columns, scores, reason, now, threshold, max_deletions)
