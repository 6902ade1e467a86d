"""The sweep's decay over columns: new confidences and strengths for a whole store, as ``retention`` decays them.

Decay is tied to elapsed time, not to how often sweeps run: confidence decays once per ``CONFIDENCE_PERIOD_DAYS``
and strength once per ``STRENGTH_PERIOD_DAYS``; a sweep applies the periods elapsed on each clock (the caller
counts them), each one as ``retention.decay_confidence`` / ``decay_strength`` would, one multiplication at a
time, so the values are the same floats as applying those functions in a loop. Pure functions: no database, no
clock.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .forgetting_columns import MemoryColumns
from .retention import CONSOLIDATED_TIERS, FORGET_BELOW, SWEEP_CONFIDENCE_FACTOR, UNUSED_DAYS

DAY = 86400.0
CONFIDENCE_PERIOD_DAYS = 1.0
STRENGTH_PERIOD_DAYS = 7.0
STRENGTH_FACTOR, STRENGTH_FLOOR = 0.9, 0.1  # retention.decay_strength's factor and floor


class ColumnDecay(NamedTuple):
    """Per memory: the confidence and strength after this sweep's decay, whether each changed, and whether the
    confidence is now under the floor (``FORGET_BELOW``; never for P0)."""

    confidence: np.ndarray
    confidence_changed: np.ndarray
    strength: np.ndarray
    strength_changed: np.ndarray
    low_confidence: np.ndarray


def plan_decay(columns: MemoryColumns, strength: np.ndarray, now: float, confidence_periods: int,
               strength_periods: int) -> ColumnDecay:
    """The decay of ``confidence_periods`` confidence periods and ``strength_periods`` strength periods.

    A memory unused for ``UNUSED_DAYS`` or more loses 5% of its confidence per period, for at most the periods
    it has been unused past that; a consolidated memory (episodic, semantic, procedural) unused for a strength
    period or more loses 10% of its strength per period it has been unused, never going below 0.1 (a value
    already under it is kept). P0 and pinned memories (``columns.p0``) never decay.
    """
    decays = ~columns.p0
    days = (now - columns.last_used_at) / DAY
    confidence = columns.confidence
    unused = decays & (days >= UNUSED_DAYS)
    confidence_steps = np.zeros(len(columns), dtype=np.int64)
    confidence_steps[unused] = np.minimum(
        confidence_periods, np.floor_divide(days[unused] - UNUSED_DAYS, CONFIDENCE_PERIOD_DAYS).astype(np.int64) + 1)
    decayed = confidence
    for step in range(int(confidence_steps.max(initial=0))):
        decayed = np.where(confidence_steps > step, decayed * SWEEP_CONFIDENCE_FACTOR, decayed)

    consolidated = np.zeros(len(columns), dtype=bool)
    for tier in CONSOLIDATED_TIERS:
        consolidated |= columns.tier == tier
    strength_steps = np.zeros(len(columns), dtype=np.int64)
    if strength_periods:
        aged = decays & consolidated & (days >= STRENGTH_PERIOD_DAYS)
        strength_steps[aged] = np.minimum(
            strength_periods, np.floor_divide(days[aged], STRENGTH_PERIOD_DAYS).astype(np.int64))
    weakened = strength
    for step in range(int(strength_steps.max(initial=0))):
        floor = np.where(STRENGTH_FLOOR < weakened, STRENGTH_FLOOR, weakened)  # min(strength, floor)
        lower = weakened * STRENGTH_FACTOR
        weakened = np.where(strength_steps > step, np.where(floor > lower, floor, lower), weakened)
    return ColumnDecay(decayed, decayed != confidence, weakened, weakened != strength,
                       decays & (decayed < FORGET_BELOW))
