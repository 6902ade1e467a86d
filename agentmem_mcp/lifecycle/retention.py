"""How a memory fades and firms up: retention, strength and confidence as pure functions.

Retention follows an Ebbinghaus curve, ``R = exp(-days_since_access / S)``, where the strength ``S``
(in days) grows by half each time the memory is used. Confidence starts from where the memory came
from, rises a little with each use (capped), and falls a little on every sweep once the memory has
gone unused for ``UNUSED_DAYS``; a P0 memory never loses confidence. Time never comes from a clock
here: callers pass ages in days.
"""

from __future__ import annotations

import math
import sys

INITIAL_CONFIDENCE: dict[str, float] = {
    "user": 0.95,
    "agent": 0.85,
    "import": 0.85,
    "hook": 0.5,
    "consolidation": 0.5,
}
USER_CONFIRMED_CONFIDENCE = 0.95
CONFIDENCE_CAP = 0.95
FORGET_BELOW = 0.1
UNUSED_DAYS = 60

ACCESS_CONFIDENCE_FACTOR = 1.05
SWEEP_CONFIDENCE_FACTOR = 0.95
STRENGTHEN_FACTOR = 1.5
MIN_STRENGTH = 0.1
CONSOLIDATED_TIERS = frozenset({"semantic", "procedural", "episodic"})
NEVER_DECAYS = "P0"


def initial_confidence(source: str, user_confirmed: bool = False) -> float:
    """The confidence a new memory starts with.

    ``source`` is where it came from (``user``, ``agent``, ``import``, ``hook``, ``consolidation``);
    ``user_confirmed`` lifts any source to the user-confirmed level (0.95).
    """
    if source not in INITIAL_CONFIDENCE:
        valid = ", ".join(sorted(INITIAL_CONFIDENCE))
        raise ValueError(f"unknown memory source {source!r}; use one of: {valid}")
    if user_confirmed:
        return USER_CONFIRMED_CONFIDENCE
    return INITIAL_CONFIDENCE[source]


def retention(days_since_access: float, strength: float) -> float:
    """How much of a memory is retained after ``days_since_access`` days, in (0, 1].

    ``strength`` is the memory's stability in days (floored at 0.1); a negative age (clock skew)
    counts as zero.
    """
    days = max(days_since_access, 0.0)
    stability = max(strength, MIN_STRENGTH)
    # exp() underflows to 0.0 for very old memories; the curve never reaches zero, and a zero would
    # erase every other ranking signal it is multiplied with.
    return max(math.exp(-days / stability), sys.float_info.min)


def strengthen(strength: float) -> float:
    """The strength after one more use: 1.5 times the old one (from at least the 0.1 floor)."""
    return max(strength, MIN_STRENGTH) * STRENGTHEN_FACTOR


def decay_strength(strength: float, tier: str, factor: float = 0.9, floor: float = 0.1) -> float:
    """The strength after one sweep: consolidated tiers (episodic, semantic, procedural) lose
    ``1 - factor`` of it, never going below ``floor``; other tiers (working) are left unchanged.

    A strength already under the floor is kept as it is: a decay never raises a value.
    """
    if tier not in CONSOLIDATED_TIERS:
        return strength
    return max(strength * factor, min(strength, floor))


def confidence_on_access(confidence: float) -> float:
    """The confidence after the memory is used: 5% more, capped at 0.95.

    A value already above the cap (set by hand, say) is left as it is rather than lowered.
    """
    if confidence >= CONFIDENCE_CAP:
        return confidence
    return min(confidence * ACCESS_CONFIDENCE_FACTOR, CONFIDENCE_CAP)


def decay_confidence(confidence: float, days_unused: float, priority: str) -> float:
    """The confidence after one sweep: 5% less once unused for 60 days or more; P0 never decays."""
    if priority == NEVER_DECAYS or days_unused < UNUSED_DAYS:
        return confidence
    return confidence * SWEEP_CONFIDENCE_FACTOR


def should_forget_for_confidence(confidence: float, priority: str) -> bool:
    """Whether confidence has fallen low enough (< 0.1) to forget the memory; never for P0."""
    return priority != NEVER_DECAYS and confidence < FORGET_BELOW
