"""Which memories to forget: scoring strategies and the plan a sweep executes, as pure functions.

A strategy looks at a batch of ``MemoryFacts`` and gives each memory a forget score in [0, 1]
(higher = forget sooner) with a one-line reason a person can read. ``plan_forgetting`` turns those
scores into a ``ForgetPlan``: what to delete (over a threshold, capped per run, never P0), what has
passed its TTL, and a full report for dry runs. Nothing here touches a database or reads a clock:
``now`` (seconds since the epoch) is always passed in, so a plan is reproducible and testable.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Protocol

SECONDS_PER_DAY = 86400.0
P0_REASON = "P0: never forgotten"
DEFAULT_WEIGHTS: Mapping[str, float] = {"importance": 0.5, "age": 0.3, "capacity": 0.2}


@dataclass(frozen=True, slots=True)
class MemoryFacts:
    """What a forgetting strategy may look at for one memory (times in seconds since the epoch)."""

    id: str
    importance: float
    priority: str
    confidence: float
    created_at: float
    last_accessed_at: float | None
    access_count: int = 0
    tier: str = "semantic"
    forget_after: float | None = None

    @property
    def last_used_at(self) -> float:
        """When the memory was last used, or created if it has not been used since."""
        last = self.last_accessed_at
        return self.created_at if last is None or last < self.created_at else last


@dataclass(frozen=True, slots=True)
class ForgetScore:
    """A strategy's verdict on one memory: ``score`` in [0, 1] (1 = forget first) and why."""

    id: str
    score: float
    reason: str


class ForgettingStrategy(Protocol):
    """Scores memories for forgetting; ``score`` returns one ``ForgetScore`` per memory, in input order."""

    name: str

    def score(self, memories: Sequence[MemoryFacts], now: float) -> list[ForgetScore]: ...


class ImportanceStrategy:
    """Forget the unimportant: score = 1 - importance (importance clamped to [0, 1])."""

    name = "importance"

    def score(self, memories: Sequence[MemoryFacts], now: float) -> list[ForgetScore]:
        return _as_forget_scores(memories, *self.raw_scores(memories, now))

    def raw_scores(self, memories: Sequence[MemoryFacts], now: float) -> tuple[list[float], list[str]]:
        """Scores and reasons as two lists in input order (the fast path composites use)."""
        importances = [min(max(m.importance, 0.0), 1.0) for m in memories]
        return [1.0 - i for i in importances], [f"importance {i:.2f}" for i in importances]


class AgeStrategy:
    """Forget the long unused: exponential in the days since the memory was last used (or created).

    score = 1 - exp(-age / (half_life / ln 2)), so a memory unused for one half-life scores 0.5;
    anything unused for longer than ``max_age_days`` scores 1.0.
    """

    name = "age"

    def __init__(self, half_life_days: float = 7.0, max_age_days: float = 90.0) -> None:
        if not half_life_days > 0:
            raise ValueError(f"half_life_days must be > 0, got {half_life_days!r}")
        if not max_age_days > 0:
            raise ValueError(f"max_age_days must be > 0, got {max_age_days!r}")
        self.half_life_days = half_life_days
        self.max_age_days = max_age_days

    def score(self, memories: Sequence[MemoryFacts], now: float) -> list[ForgetScore]:
        return _as_forget_scores(memories, *self.raw_scores(memories, now))

    def raw_scores(self, memories: Sequence[MemoryFacts], now: float) -> tuple[list[float], list[str]]:
        """Scores and reasons as two lists in input order (the fast path composites use)."""
        rate = math.log(2) / self.half_life_days
        half_life, max_age = self.half_life_days, self.max_age_days
        expm1 = math.expm1
        ages = [max((now - m.last_used_at) / SECONDS_PER_DAY, 0.0) for m in memories]
        scores = [1.0 if age > max_age else -expm1(-age * rate) for age in ages]
        reasons = [
            f"age {age:.1f} d, beyond max age {max_age:g} d"
            if age > max_age
            else f"age {age:.1f} d (half-life {half_life:g} d)"
            for age in ages
        ]
        return scores, reasons


class CapacityStrategy:
    """Forget what does not fit: memories ranked past ``capacity`` score up to 1.0.

    Memories are ranked by importance (highest first; ties: more recently used first, then id).
    Ranks 1..capacity score 0. The ``e = n - capacity`` memories beyond it score ``i / (e - 1)``
    for ``i = 0 .. e - 1`` in rank order: the first one past capacity scores 0, the weakest 1.0,
    evenly spaced between (a single memory past capacity scores 1.0). With capacity 2 and
    importances 1.0, 0.9, 0.8, 0.7, 0.6 the scores are 0, 0, 0, 0.5, 1.0.
    """

    name = "capacity"

    def __init__(self, capacity: int = 10000) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity!r}")
        self.capacity = capacity

    def score(self, memories: Sequence[MemoryFacts], now: float) -> list[ForgetScore]:
        return _as_forget_scores(memories, *self.raw_scores(memories, now))

    def raw_scores(self, memories: Sequence[MemoryFacts], now: float) -> tuple[list[float], list[str]]:
        """Scores and reasons as two lists in input order (the fast path composites use)."""
        n, capacity = len(memories), self.capacity
        keys = [(-m.importance, -m.last_used_at, m.id) for m in memories]
        order = sorted(range(n), key=keys.__getitem__)
        excess = n - capacity
        scores = [0.0] * n
        reasons = [""] * n
        for rank0, i in enumerate(order):
            rank = rank0 + 1
            if rank <= capacity:
                reasons[i] = f"rank {rank} of {n}, within capacity {capacity}"
            else:
                over = rank - capacity
                scores[i] = 1.0 if excess == 1 else (over - 1) / (excess - 1)
                reasons[i] = f"rank {rank} of {n}, {over} over capacity {capacity}"
        return scores, reasons


def _as_forget_scores(
    memories: Sequence[MemoryFacts], scores: list[float], reasons: list[str]
) -> list[ForgetScore]:
    return [ForgetScore(m.id, s, r) for m, s, r in zip(memories, scores, reasons)]


def _raw_scores(
    strategy: ForgettingStrategy, memories: Sequence[MemoryFacts], now: float
) -> tuple[list[float], list[str]]:
    raw = getattr(strategy, "raw_scores", None)
    if raw is not None:
        scores, reasons = raw(memories, now)
    else:
        result = strategy.score(memories, now)
        scores, reasons = [s.score for s in result], [s.reason for s in result]
    if len(scores) != len(memories):
        raise ValueError(f"strategy {strategy.name!r} returned {len(scores)} scores for {len(memories)}")
    return scores, reasons


class CompositeStrategy:
    """A weighted sum of other strategies (by default importance 0.5, age 0.3, capacity 0.2).

    ``weights`` maps strategy names to non-negative weights, normalised to sum to 1 so the score
    stays in [0, 1]. The built-in parts are made from ``half_life_days``, ``max_age_days`` and
    ``capacity``; any other registered strategy is made with its defaults, and ``parts`` can supply
    ready-made strategy objects by name. The reason lists each part with its contribution.
    """

    name = "composite"

    def __init__(
        self,
        weights: Mapping[str, float] | None = None,
        half_life_days: float = 7.0,
        max_age_days: float = 90.0,
        capacity: int = 10000,
        parts: Mapping[str, ForgettingStrategy] | None = None,
    ) -> None:
        weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        given = dict(parts or {})
        unweighted = sorted(set(given) - set(weights))
        if unweighted:
            raise ValueError(f"composite parts {unweighted} have no weight; add them to weights")
        for part_name, weight in weights.items():
            if not (0 <= weight < math.inf):
                raise ValueError(f"weight for {part_name!r} must be a finite number >= 0, got {weight!r}")
        total = sum(weights.values())
        if total <= 0:
            raise ValueError("composite weights must include at least one weight > 0")
        self.weights = {part_name: weight / total for part_name, weight in weights.items()}
        self.parts: list[tuple[float, ForgettingStrategy]] = []
        for part_name, weight in self.weights.items():
            if weight == 0:
                continue
            if part_name in given:
                part = given[part_name]
            else:
                part = _builtin_part(part_name, half_life_days, max_age_days, capacity)
            self.parts.append((weight, part))

    def score(self, memories: Sequence[MemoryFacts], now: float) -> list[ForgetScore]:
        return _as_forget_scores(memories, *self.raw_scores(memories, now))

    def raw_scores(self, memories: Sequence[MemoryFacts], now: float) -> tuple[list[float], list[str]]:
        """Scores and reasons as two lists in input order."""
        totals = [0.0] * len(memories)
        reason_columns = []
        for weight, part in self.parts:
            scores, reasons = _raw_scores(part, memories, now)
            contributions = [weight * s for s in scores]
            totals = [t + c for t, c in zip(totals, contributions)]
            reason_columns.append([f"{r} [+{c:.3f}]" for r, c in zip(reasons, contributions)])
        return [min(t, 1.0) for t in totals], ["; ".join(row) for row in zip(*reason_columns)]


def _builtin_part(name: str, half_life_days: float, max_age_days: float, capacity: int) -> ForgettingStrategy:
    if name == "age":
        return AgeStrategy(half_life_days, max_age_days)
    if name == "capacity":
        return CapacityStrategy(capacity)
    if name == "composite":
        raise ValueError("a composite cannot contain the default composite; pass it in parts instead")
    return make_strategy(name)


STRATEGIES: dict[str, type] = {
    "importance": ImportanceStrategy,
    "age": AgeStrategy,
    "capacity": CapacityStrategy,
    "composite": CompositeStrategy,
}


def make_strategy(name: str, **options: object) -> ForgettingStrategy:
    """Build the strategy registered as ``name`` in ``STRATEGIES`` with ``options`` as its arguments."""
    cls = STRATEGIES.get(name)
    if cls is None:
        raise ValueError(
            f"unknown forgetting strategy {name!r}; valid names: {', '.join(sorted(STRATEGIES))}"
        )
    try:
        inspect.signature(cls).bind(**options)
    except TypeError as e:
        raise ValueError(f"bad options for forgetting strategy {name!r}: {e}") from None
    return cls(**options)


@dataclass
class ForgetPlan:
    """What one sweep would do.

    ``deletions``: memories to delete for their score, highest first. ``report``: every memory's
    score, highest first (the dry-run view). ``expired``: ids whose TTL (forget_after) has passed,
    P0 included, since a TTL is an explicit instruction. ``protected``: how many P0 memories were
    shielded from score-based deletion.
    """

    deletions: list[ForgetScore] = field(default_factory=list)
    report: list[ForgetScore] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    protected: int = 0


def plan_forgetting(
    memories: Sequence[MemoryFacts],
    strategy: ForgettingStrategy,
    now: float,
    threshold: float = 0.6,
    max_deletions: int = 50,
) -> ForgetPlan:
    """Decide what a sweep forgets, without changing anything.

    Memories scoring ``>= threshold`` are deleted, highest score first, at most ``max_deletions``.
    P0 memories are never deleted for their score (the report shows their score with the reason
    "P0: never forgotten"). Memories whose ``forget_after <= now`` are listed in ``expired``
    whatever their priority; they are not in ``deletions`` and do not count against the cap.
    """
    if max_deletions < 0:
        raise ValueError(f"max_deletions must be >= 0, got {max_deletions!r}")
    scores, reasons = _raw_scores(strategy, memories, now)
    report: list[ForgetScore] = []
    candidates: list[ForgetScore] = []
    expired: list[str] = []
    protected = 0
    for m, score, reason in zip(memories, scores, reasons):
        is_p0 = m.priority == "P0"
        protected += is_p0
        deletable = False
        if m.forget_after is not None and m.forget_after <= now:
            expired.append(m.id)
            reason = "P0 with a TTL that has expired" if is_p0 else f"TTL expired; {reason}"
        elif is_p0:
            reason = P0_REASON
        else:
            deletable = score >= threshold
        forget_score = ForgetScore(m.id, score, reason)
        report.append(forget_score)
        if deletable:
            candidates.append(forget_score)
    _sort_highest_first(report)
    _sort_highest_first(candidates)
    return ForgetPlan(
        deletions=candidates[:max_deletions], report=report, expired=expired, protected=protected
    )


def _sort_highest_first(scores: list[ForgetScore]) -> None:
    # Two C-level stable sorts (id, then score descending) beat one sort on a Python tuple key.
    scores.sort(key=attrgetter("id"))
    scores.sort(key=attrgetter("score"), reverse=True)


def should_sweep(
    memory_count: int, count_threshold: int, hours_since_last: float | None, interval_hours: float
) -> bool:
    """Whether a forgetting sweep is due: too many memories, never run before, or the interval passed."""
    if hours_since_last is None:
        return True
    return memory_count > count_threshold or hours_since_last >= interval_hours
