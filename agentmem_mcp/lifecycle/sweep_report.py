"""What a forgetting sweep did, or would do on a dry run (`sweep.sweep` makes it): the ids removed and why, the
counts of what decayed and was pruned, and, made only when read, every scored memory with its decision, as JSON,
a text table and the summary that `agentmem stats` shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .forgetting import ForgetScore
from .forgetting_columns import ColumnPlan
from .retention import FORGET_BELOW

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
class SweepDetails:
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
    details: SweepDetails | None = field(default=None, repr=False, compare=False)

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
