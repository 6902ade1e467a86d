"""Lifecycle policy: retention, confidence and forgetting as pure functions (no database, no clock)."""

from __future__ import annotations

import copy
import dataclasses
import math
import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmem_mcp.lifecycle.forgetting import (
    P0_REASON,
    STRATEGIES,
    AgeStrategy,
    CapacityStrategy,
    CompositeStrategy,
    ForgetScore,
    ImportanceStrategy,
    MemoryFacts,
    make_strategy,
    plan_forgetting,
    should_sweep,
)
from agentmem_mcp.lifecycle.retention import (
    CONFIDENCE_CAP,
    confidence_on_access,
    decay_confidence,
    decay_strength,
    initial_confidence,
    retention,
    should_forget_for_confidence,
    strengthen,
)

NOW = 1_700_000_000.0
DAY = 86400.0
POLICY = settings(max_examples=150, deadline=None)


def fact(
    id: str,
    importance: float = 0.5,
    age_days: float = 0.0,
    priority: str = "P1",
    last_used_days: float | None = None,
    forget_after: float | None = None,
) -> MemoryFacts:
    return MemoryFacts(
        id=id,
        importance=importance,
        priority=priority,
        confidence=0.85,
        created_at=NOW - age_days * DAY,
        last_accessed_at=None if last_used_days is None else NOW - last_used_days * DAY,
        forget_after=forget_after,
    )


# --- hypothesis generators -------------------------------------------------------------------

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
days = st.floats(min_value=0.0, max_value=400.0, allow_nan=False)


@st.composite
def memory_facts(draw: st.DrawFn, id: str) -> MemoryFacts:
    created_days = draw(days)
    used_days = draw(st.none() | st.floats(min_value=0.0, max_value=created_days))
    forget_after = draw(st.none() | st.floats(min_value=NOW - 30 * DAY, max_value=NOW + 30 * DAY))
    return MemoryFacts(
        id=id,
        importance=draw(unit),
        priority=draw(st.sampled_from(["P0", "P1", "P2"])),
        confidence=draw(unit),
        created_at=NOW - created_days * DAY,
        last_accessed_at=None if used_days is None else NOW - used_days * DAY,
        access_count=draw(st.integers(min_value=0, max_value=50)),
        tier=draw(st.sampled_from(["working", "episodic", "semantic", "procedural"])),
        forget_after=forget_after,
    )


@st.composite
def memory_lists(draw: st.DrawFn, max_size: int = 25) -> list[MemoryFacts]:
    n = draw(st.integers(min_value=0, max_value=max_size))
    return [draw(memory_facts(f"m{i:03d}")) for i in range(n)]


weights = st.fixed_dictionaries({"importance": unit, "age": unit, "capacity": unit}).filter(
    lambda w: sum(w.values()) > 0
)

forgetting_strategies = st.one_of(
    st.builds(ImportanceStrategy),
    st.builds(
        AgeStrategy,
        half_life_days=st.floats(min_value=0.5, max_value=365.0),
        max_age_days=st.floats(min_value=1.0, max_value=500.0),
    ),
    st.builds(CapacityStrategy, capacity=st.integers(min_value=0, max_value=30)),
    st.builds(
        CompositeStrategy,
        weights=weights,
        half_life_days=st.floats(min_value=0.5, max_value=365.0),
        max_age_days=st.floats(min_value=1.0, max_value=500.0),
        capacity=st.integers(min_value=0, max_value=30),
    ),
)


def weaker_copy(m: MemoryFacts, id: str, less_important: float, older_days: float) -> MemoryFacts:
    """The same memory, less important by `less_important` and last used `older_days` earlier."""
    shift = older_days * DAY
    return dataclasses.replace(
        m,
        id=id,
        importance=max(m.importance - less_important, 0.0),
        created_at=m.created_at - shift,
        last_accessed_at=None if m.last_accessed_at is None else m.last_accessed_at - shift,
    )


def scores_by_id(strategy, memories: list[MemoryFacts]) -> dict[str, float]:
    return {s.id: s.score for s in strategy.score(memories, NOW)}


# --- retention and confidence ----------------------------------------------------------------


def test_initial_confidence_by_source():
    assert initial_confidence("user") == 0.95
    assert initial_confidence("agent") == 0.85
    assert initial_confidence("import") == 0.85
    assert initial_confidence("hook") == 0.5
    assert initial_confidence("consolidation") == 0.5
    assert initial_confidence("hook", user_confirmed=True) == 0.95


def test_initial_confidence_unknown_source_names_the_valid_ones():
    with pytest.raises(ValueError, match="agent, consolidation, hook, import, user"):
        initial_confidence("telepathy")


def test_retention_values():
    assert retention(0, 1.0) == 1.0
    assert retention(-5, 1.0) == 1.0
    assert retention(1.0, 1.0) == pytest.approx(math.exp(-1))
    assert retention(1.0, 0.0) == retention(1.0, 0.1)
    assert retention(1.0, 1.0) > retention(2.0, 1.0)
    assert retention(10_000.0, 0.1) > 0


@POLICY
@given(
    d1=st.floats(min_value=-10.0, max_value=1e7, allow_nan=False),
    d2=st.floats(min_value=-10.0, max_value=1e7, allow_nan=False),
    s1=st.floats(min_value=0.0, max_value=1e6, allow_nan=False),
    s2=st.floats(min_value=0.0, max_value=1e6, allow_nan=False),
)
def test_retention_in_unit_interval_decreasing_in_days_increasing_in_strength(d1, d2, s1, s2):
    d1, d2 = sorted((d1, d2))
    s1, s2 = sorted((s1, s2))
    for d in (d1, d2):
        for s in (s1, s2):
            assert 0 < retention(d, s) <= 1
    assert retention(d1, s1) >= retention(d2, s1)
    assert retention(d1, s1) <= retention(d1, s2)


def test_strength_grows_on_access_and_decays_only_in_consolidated_tiers():
    assert strengthen(2.0) == 3.0
    assert strengthen(0.0) == pytest.approx(0.15)
    assert decay_strength(2.0, "semantic") == pytest.approx(1.8)
    assert decay_strength(2.0, "procedural") == pytest.approx(1.8)
    assert decay_strength(2.0, "episodic") == pytest.approx(1.8)
    assert decay_strength(2.0, "working") == 2.0
    assert decay_strength(0.105, "semantic") == 0.1
    assert decay_strength(0.05, "semantic") == 0.05
    assert decay_strength(3.0, "semantic", factor=0.5, floor=2.0) == 2.0


@POLICY
@given(
    strength=st.floats(min_value=0.0, max_value=1e6),
    tier=st.sampled_from(["working", "semantic", "episodic"]),
)
def test_decay_never_raises_strength_and_strengthen_always_does(strength, tier):
    assert decay_strength(strength, tier) <= strength
    assert strengthen(strength) > strength


def test_confidence_on_access_and_decay():
    assert confidence_on_access(0.5) == pytest.approx(0.525)
    assert confidence_on_access(0.93) == CONFIDENCE_CAP
    assert confidence_on_access(0.99) == 0.99
    assert decay_confidence(0.8, 59.9, "P1") == 0.8
    assert decay_confidence(0.8, 60, "P1") == pytest.approx(0.76)
    assert decay_confidence(0.8, 500, "P0") == 0.8
    assert should_forget_for_confidence(0.09, "P2")
    assert not should_forget_for_confidence(0.1, "P2")
    assert not should_forget_for_confidence(0.01, "P0")


@POLICY
@given(start=unit, accesses=st.integers(min_value=0, max_value=100))
def test_confidence_never_exceeds_cap_through_access(start, accesses):
    c = start
    for _ in range(accesses):
        nxt = confidence_on_access(c)
        assert nxt >= c
        c = nxt
    assert c <= max(start, CONFIDENCE_CAP)


@POLICY
@given(start=unit, unused=st.lists(st.floats(min_value=0, max_value=1000), max_size=50))
def test_p0_confidence_never_drops_and_others_never_rise(start, unused):
    p0 = p2 = start
    for days_unused in unused:
        p0 = decay_confidence(p0, days_unused, "P0")
        nxt = decay_confidence(p2, days_unused, "P2")
        assert nxt <= p2
        p2 = nxt
    assert p0 == start
    assert not should_forget_for_confidence(p0, "P0")


# --- strategies: worked examples -------------------------------------------------------------

WORKED = [  # importance, age in days, composite score, deleted at threshold 0.6
    (0.9, 2, 0.1039, False),
    (0.8, 10, 0.2886, False),
    (0.3, 1, 0.3783, False),
    (0.2, 25, 0.6748, True),
    (0.25, 60, 0.6742, True),
]


def test_composite_worked_example():
    memories = [fact(f"w{i}", importance, age) for i, (importance, age, _, _) in enumerate(WORKED)]
    strategy = CompositeStrategy(half_life_days=7, max_age_days=90)
    scores = strategy.score(memories, NOW)
    assert [s.id for s in scores] == [m.id for m in memories]
    assert [round(s.score, 4) for s in scores] == [expected for _, _, expected, _ in WORKED]

    plan = plan_forgetting(memories, strategy, NOW, threshold=0.6)
    assert [s.id for s in plan.deletions] == ["w3", "w4"]
    assert {s.id for s in plan.report} - {s.id for s in plan.deletions} == {"w0", "w1", "w2"}
    assert [s.id for s in plan.report] == ["w3", "w4", "w2", "w1", "w0"]
    assert plan.expired == [] and plan.protected == 0


def test_composite_reason_lists_each_part():
    [score] = CompositeStrategy().score([fact("a", 0.2, 25)], NOW)
    assert score.reason == (
        "importance 0.20 [+0.400]; age 25.0 d (half-life 7 d) [+0.275]; rank 1 of 1, within capacity 10000 [+0.000]"
    )


def test_capacity_scores_spread_the_excess_from_zero_to_one():
    memories = [fact(f"c{i}", importance) for i, importance in enumerate([1.0, 0.9, 0.8, 0.7, 0.6])]
    assert [s.score for s in CapacityStrategy(capacity=2).score(memories, NOW)] == [0, 0, 0, 0.5, 1.0]
    shuffled = [memories[i] for i in (3, 0, 4, 2, 1)]
    assert scores_by_id(CapacityStrategy(capacity=2), shuffled) == {
        "c0": 0,
        "c1": 0,
        "c2": 0,
        "c3": 0.5,
        "c4": 1.0,
    }


def test_capacity_edges():
    three = [fact("a", 0.9), fact("b", 0.5), fact("c", 0.1)]
    assert [s.score for s in CapacityStrategy(capacity=2).score(three, NOW)] == [0, 0, 1.0]
    assert [s.score for s in CapacityStrategy(capacity=3).score(three, NOW)] == [0, 0, 0]
    assert CapacityStrategy(capacity=2).score([], NOW) == []
    assert "1 over capacity 2" in CapacityStrategy(capacity=2).score(three, NOW)[2].reason
    with pytest.raises(ValueError, match="capacity"):
        CapacityStrategy(capacity=-1)


def test_capacity_ties_rank_the_more_recently_used_first_then_id():
    memories = [fact("old", 0.5, 30), fact("new", 0.5, 30, last_used_days=1), fact("a", 0.5, 30)]
    assert scores_by_id(CapacityStrategy(capacity=1), memories) == {"new": 0, "a": 0, "old": 1.0}


def test_age_strategy():
    memories = [
        fact("h", age_days=7),
        fact("z", age_days=0),
        fact("f", age_days=-3),
        fact("x", age_days=91),
        fact("used", age_days=200, last_used_days=7),
    ]
    scores = AgeStrategy(half_life_days=7, max_age_days=90).score(memories, NOW)
    assert [round(s.score, 12) for s in scores] == [0.5, 0, 0, 1.0, 0.5]
    assert scores[3].reason == "age 91.0 d, beyond max age 90 d"
    with pytest.raises(ValueError, match="half_life_days"):
        AgeStrategy(half_life_days=0)


def test_importance_strategy_clamps():
    scores = ImportanceStrategy().score([fact("a", 0.25), fact("b", 1.5), fact("c", -1)], NOW)
    assert [(s.score, s.reason) for s in scores] == [
        (0.75, "importance 0.25"),
        (0.0, "importance 1.00"),
        (1.0, "importance 0.00"),
    ]


def test_composite_weights_are_normalised_and_parts_pluggable():
    memories = [fact("a", 0.2, 25)]
    doubled = CompositeStrategy(weights={"importance": 1.0, "age": 0.6, "capacity": 0.4})
    assert doubled.score(memories, NOW)[0].score == pytest.approx(0.6748, abs=1e-4)
    only_importance = CompositeStrategy(weights={"importance": 2.0})
    assert only_importance.score(memories, NOW)[0] == ForgetScore("a", 0.8, "importance 0.20 [+0.800]")

    class Constant:
        name = "constant"

        def score(self, memories, now):
            return [ForgetScore(m.id, 1.0, "always") for m in memories]

    mixed = CompositeStrategy(weights={"importance": 1, "constant": 1}, parts={"constant": Constant()})
    assert mixed.score(memories, NOW)[0] == ForgetScore("a", 0.9, "importance 0.20 [+0.400]; always [+0.500]")


def test_composite_rejects_bad_weights():
    with pytest.raises(ValueError, match="at least one weight"):
        CompositeStrategy(weights={"importance": 0, "age": 0})
    with pytest.raises(ValueError, match="finite number"):
        CompositeStrategy(weights={"importance": -1})
    with pytest.raises(ValueError, match="no weight"):
        CompositeStrategy(weights={"importance": 1}, parts={"age": AgeStrategy()})
    with pytest.raises(ValueError, match="valid names"):
        CompositeStrategy(weights={"importance": 1, "luck": 1})


def test_make_strategy():
    assert set(STRATEGIES) == {"importance", "age", "capacity", "composite"}
    assert make_strategy("capacity", capacity=3).capacity == 3
    assert make_strategy("age", half_life_days=14).half_life_days == 14
    assert make_strategy("composite", weights={"age": 1}).weights == {"age": 1.0}
    with pytest.raises(ValueError, match="valid names: age, capacity, composite, importance"):
        make_strategy("random")
    with pytest.raises(ValueError, match="bad options"):
        make_strategy("importance", capacity=3)


# --- strategies: properties ------------------------------------------------------------------


@POLICY
@given(
    strategy=forgetting_strategies,
    others=memory_lists(),
    base=memory_facts("a"),
    less_important=unit,
    older_days=days,
)
def test_older_or_less_important_never_scores_lower(strategy, others, base, less_important, older_days):
    weaker = weaker_copy(base, "b", less_important, older_days)
    scores = scores_by_id(strategy, [*others, weaker, base])
    assert scores["b"] >= scores["a"]


@POLICY
@given(
    strategy=forgetting_strategies,
    memories=memory_lists().filter(bool),
    data=st.data(),
    less_important=unit,
    older_days=days,
)
def test_weakening_a_memory_never_lowers_its_score(strategy, memories, data, less_important, older_days):
    i = data.draw(st.integers(min_value=0, max_value=len(memories) - 1))
    before = strategy.score(memories, NOW)[i].score
    weakened = [*memories]
    weakened[i] = weaker_copy(memories[i], memories[i].id, less_important, older_days)
    assert strategy.score(weakened, NOW)[i].score >= before


@POLICY
@given(strategy=forgetting_strategies, memories=memory_lists())
def test_scores_are_in_unit_interval_and_in_input_order(strategy, memories):
    scores = strategy.score(memories, NOW)
    assert [s.id for s in scores] == [m.id for m in memories]
    assert all(0 <= s.score <= 1 and s.reason for s in scores)


# --- plan_forgetting ---------------------------------------------------------------------------


def test_plan_caps_deletions_and_ttl_does_not_count_against_the_cap():
    memories = [fact(f"d{i}", importance=0.0, age_days=100) for i in range(5)]
    memories += [
        fact("ttl", 1.0, forget_after=NOW - 1),
        fact("ttl-p0", 1.0, priority="P0", forget_after=NOW),
        fact("later", 1.0, forget_after=NOW + 1),
        fact("p0", 0.0, age_days=100, priority="P0"),
    ]
    plan = plan_forgetting(memories, CompositeStrategy(), NOW, max_deletions=2)
    assert [s.id for s in plan.deletions] == ["d0", "d1"]
    assert plan.expired == ["ttl", "ttl-p0"]
    assert plan.protected == 2
    report = {s.id: s for s in plan.report}
    assert len(report) == len(memories)
    assert report["p0"].reason == P0_REASON and report["p0"].score == pytest.approx(0.8)
    assert report["ttl"].reason.startswith("TTL expired; ")
    assert plan_forgetting(memories, CompositeStrategy(), NOW, max_deletions=0).deletions == []
    with pytest.raises(ValueError, match="max_deletions"):
        plan_forgetting(memories, CompositeStrategy(), NOW, max_deletions=-1)


@POLICY
@given(
    strategy=forgetting_strategies,
    memories=memory_lists(max_size=40),
    threshold=unit,
    max_deletions=st.integers(min_value=0, max_value=20),
)
def test_plan_never_deletes_p0_or_more_than_the_cap(strategy, memories, threshold, max_deletions):
    before = copy.deepcopy(memories)
    plan = plan_forgetting(memories, strategy, NOW, threshold=threshold, max_deletions=max_deletions)
    assert memories == before, "plan_forgetting must not change its input"
    assert plan == plan_forgetting(memories, strategy, NOW, threshold=threshold, max_deletions=max_deletions)

    by_id = {m.id: m for m in memories}
    expired = [m.id for m in memories if m.forget_after is not None and m.forget_after <= NOW]
    assert plan.expired == expired
    assert plan.protected == sum(m.priority == "P0" for m in memories)
    assert len(plan.deletions) <= max_deletions
    deleted = [s.id for s in plan.deletions]
    assert not [i for i in deleted if by_id[i].priority == "P0" or i in expired]
    assert all(s.score >= threshold for s in plan.deletions)
    assert [s.score for s in plan.deletions] == sorted((s.score for s in plan.deletions), reverse=True)

    assert sorted(s.id for s in plan.report) == sorted(by_id)
    assert [s.score for s in plan.report] == sorted((s.score for s in plan.report), reverse=True)
    eligible = [s for s in plan.report if s.id not in expired and by_id[s.id].priority != "P0" and s.score >= threshold]
    assert len(deleted) == min(len(eligible), max_deletions)
    kept = [s.score for s in eligible if s.id not in deleted]
    if kept and plan.deletions:
        assert max(kept) <= min(s.score for s in plan.deletions)
    assert all(s.reason == P0_REASON for s in plan.report if by_id[s.id].priority == "P0" and s.id not in expired)


def test_should_sweep():
    assert should_sweep(10, 100, None, 24)
    assert should_sweep(101, 100, 1, 24)
    assert should_sweep(10, 100, 24, 24)
    assert not should_sweep(100, 100, 23.9, 24)


# --- performance -----------------------------------------------------------------------------


def test_scoring_and_planning_100k_memories_is_fast():
    rng = random.Random(7)
    memories = [
        MemoryFacts(
            id=f"mem-{i:06d}",
            importance=rng.random(),
            priority=rng.choice(["P0", "P1", "P2"]),
            confidence=rng.random(),
            created_at=NOW - rng.uniform(0, 200) * DAY,
            last_accessed_at=None if rng.random() < 0.3 else NOW - rng.uniform(0, 50) * DAY,
            forget_after=NOW + rng.uniform(-5, 5) * DAY if rng.random() < 0.1 else None,
        )
        for i in range(100_000)
    ]
    started = time.thread_time()  # CPU time of this thread: the suite's other processes do not count against it
    plan = plan_forgetting(memories, CompositeStrategy(capacity=50_000), NOW)
    elapsed = time.thread_time() - started
    assert len(plan.report) == 100_000 and len(plan.deletions) == 50
    assert elapsed < 3.0, f"scoring + planning 100k memories took {elapsed:.2f} s of CPU (budget 3 s)"


def test_fusion_does_not_count_a_missing_vector_as_a_poor_rank():
    from agentmem_mcp.recall.ranking import fuse_rankings

    rankings = {"bm25": ["a", "b"], "vector": ["b"], "graph": ["a", "b"]}
    weights = {"bm25": 0.4, "vector": 0.6, "graph": 0.3}
    plain = {f.id: f.score for f in fuse_rankings(rankings, weights, 60)}
    assert plain["b"] > plain["a"]  # b is found by all three retrievers, a by two
    fair = fuse_rankings(rankings, weights, 60, absent={"vector": {"a"}})
    assert [f.id for f in fair] == ["a", "b"]  # a has no vector by design: judged on BM25 and graph alone
    assert fair[0].score == pytest.approx((0.4 / 61 + 0.3 / 61) / 0.7)
    assert {f.id: f.score for f in fair}["b"] == pytest.approx(plain["b"])


def test_time_words_in_a_query_name_a_window():
    import datetime as dt

    from agentmem_mcp.recall.timewords import DAY, time_window

    now = dt.datetime(2026, 11, 29, 12, 0).timestamp()  # a Sunday, local time
    start, end = time_window("what did we change 3 days ago?", now)
    assert start < now - 3 * DAY < end < now
    assert time_window("the bug from yesterday", now) == (now - 2 * DAY, now)
    assert time_window("tests we fixed today", now) == (now - DAY, now)
    start, end = time_window("decisions in the past two weeks", now)
    assert start == now - 15 * DAY and end == now
    start, end = time_window("what broke last Saturday", now)
    assert start < now - DAY < end  # Saturday is one day back
    assert time_window("how do we run the tests", now) is None
    assert time_window("agoraphobia in 2 daysago", now) is None


def test_dates_in_a_query_name_a_day_month_or_year():
    import datetime as dt

    from agentmem_mcp.recall.timewords import DAY, date_window, time_window

    now = dt.datetime(2026, 11, 29, 12, 0).timestamp()

    def day(y, m, d):
        return dt.datetime(y, m, d).timestamp()

    for query in ("what did we decide on 7 July, 2023?", "the July 7th, 2023 outage", "deploy of 2023-07-07",
                  "the 7th of July 2023", "notes from July 7,2023"):
        start, end = date_window(query, now)
        assert start < day(2023, 7, 7) < day(2023, 7, 8) < end and end - start == 2 * DAY, query
    start, end = date_window("what changed in March 2024", now)
    assert start < day(2024, 3, 1) and day(2024, 3, 31) < end < day(2024, 4, 3)
    start, end = date_window("how many releases in March?", now)  # the latest March before now
    assert start < day(2026, 3, 1) < day(2026, 3, 31) < end < day(2026, 4, 3)
    start, end = date_window("what did we ship in December?", now)  # December 2026 has not come yet
    assert start < day(2025, 12, 1) < day(2025, 12, 31) < end < day(2026, 1, 3)
    start, end = date_window("who came on May 3rd?", now)
    assert start < day(2026, 5, 3) < end
    start, end = date_window("everything we decided in 2025", now)
    assert start < day(2025, 1, 1) and day(2025, 12, 31) < end < day(2026, 1, 3)
    for query in ("what may I do here", "march the tests forward", "I have 3 may be 4", "version 2 of the api",
                  "on 31 February 2023", "error 2023-13-45"):
        assert date_window(query, now) is None, query
    assert date_window("the port we used in may", now) == date_window("in May", now)  # "in may" is the month
    # a named date wins over relative words: the conversation on that date said "last weekend"
    start, end = time_window("what did Maria do last weekend, as she said on 10 April 2023?", now)
    assert start < day(2023, 4, 10) < end


def test_sentence_pieces_of_a_memory():
    from agentmem_mcp.index.vectors import CHUNK_CHARS, combine, memory_pieces, sentence_pieces

    text = ("[2023/05/26 (Fri) 03:20] user: I need throw pillows for my couch. "
            "Thanks! I got a new coffee table last week.")
    pieces = sentence_pieces(text)
    assert pieces == ["user: I need throw pillows for my couch.", "Thanks! I got a new coffee table last week."]
    # the stamp is dropped, the short "Thanks!" joined the next sentence
    assert sentence_pieces("Use pnpm, not yarn.") == []  # one sentence: its chunk says it all
    assert sentence_pieces("Run the tests first. Then deploy.") == []  # one piece after joining short ones
    long = "This sentence is long enough to be a piece of its own. " * 20
    assert len(long) > CHUNK_CHARS and sentence_pieces(long) == []  # chunks split long texts already
    assert memory_pieces(f"Pillows\n{text}", text) == pieces  # from the body, not the title
    assert memory_pieces(f"{text}\n{long}", text) == []  # the whole memory takes several chunks
    assert combine(0.4, None) == 0.4 and combine(0.4, 0.6) == pytest.approx(0.5)


def test_relative_time_words_are_not_keywords():
    from agentmem_mcp.recall.timewords import without_relative_time as strip

    assert strip("How many pieces of furniture did I buy in the past few months?") == \
        "How many pieces of furniture did I buy ?"
    assert strip("what did we change 3 days ago and yesterday?") == "what did we change and ?"
    assert strip("What broke last Saturday, this week, today") == "What broke , ,"
    assert strip("the deploy on 7 July, 2023 in March") == "the deploy on 7 July, 2023 in March"  # dates stay
    assert strip("how do we run the tests") == "how do we run the tests"
    assert strip("yesterday") == "yesterday"  # nothing else to search for
    assert strip("İstanbul office last week") == "İstanbul office last week"  # offsets would move: unchanged


def test_keyword_search_ignores_relative_time_words(store):
    now = store.now()
    desk = store.save("Bought a standing desk for the home office", created_at=now - 20 * 86400)
    store.save("Retro: the past few months went into the API migration", created_at=now - 20 * 86400)
    query = "which desk did I buy in the past few months?"
    assert [h.id for h in store.search(query, retrievers=("bm25",)).hits] == [desk.id]
    assert store.search(query).hits[0].id == desk.id


def test_search_prefers_memories_from_the_time_the_query_names(store):
    now = store.now()
    old = store.save("the flaky upload test was fixed by raising the timeout", created_at=now - 40 * 86400)
    recent = store.save("the flaky upload test was fixed by mocking the clock", created_at=now - 86400)
    plain = [h.id for h in store.search("how was the flaky upload test fixed").hits]
    assert set(plain[:2]) == {old.id, recent.id}
    dated = store.search("how was the flaky upload test fixed yesterday").hits
    assert dated[0].id == recent.id and "from the time asked about" in dated[0].why
    month = store.search("how was the flaky upload test fixed about 6 weeks ago").hits
    assert month[0].id == old.id


def test_score_fusion_keeps_the_margin_a_retriever_is_sure_of():
    from agentmem_mcp.recall.ranking import fuse_rankings, fuse_scores

    weights = {"bm25": 0.4, "vector": 0.6}
    # BM25 is sure of "a" (twice anything else); the vectors find nothing that stands out.
    results = {"bm25": [("a", 12.0), ("b", 5.0), ("c", 4.0)],
               "vector": [("c", 0.41), ("b", 0.40), ("a", 0.36)]}
    by_score = fuse_scores(results, weights)
    assert [f.id for f in by_score][0] == "a"
    assert by_score[0].score == pytest.approx((0.4 * 1.0 + 0.6 * 0.36 / 0.41) / 1.0)
    assert by_score[0].ranks == {"bm25": 1, "vector": 3}
    by_rank = fuse_rankings({n: [i for i, _ in pairs] for n, pairs in results.items()}, weights, 60)
    assert by_rank[0].id != "a"  # reciprocal ranks flatten BM25's certainty: what score fusion is for


def test_score_fusion_scores_are_within_0_and_1_and_ignore_negative_similarity():
    from agentmem_mcp.recall.ranking import fuse_scores

    fused = fuse_scores({"bm25": [("a", 3.0)], "vector": [("a", 0.8), ("b", -0.2)], "graph": []},
                        {"bm25": 0.4, "vector": 0.6, "graph": 0.3})
    scores = {f.id: f.score for f in fused}
    assert scores["a"] == pytest.approx(1.0 / 1.3) and scores["b"] == 0.0
    fair = fuse_scores({"bm25": [("a", 3.0), ("w", 3.0)], "vector": [("a", 0.8)]}, {"bm25": 0.4, "vector": 0.6},
                       absent={"vector": {"w"}})
    assert {f.id: f.score for f in fair} == {"a": pytest.approx(1.0), "w": pytest.approx(1.0)}
    assert fuse_scores({}, {"bm25": 0.4}) == []


def test_an_answer_chunk_is_the_last_question_of_the_memory_before():
    from agentmem_mcp.index.neighbours import ANSWER_CHARS, QUESTION_CHARS, answer_text, asked_before
    from agentmem_mcp.index.vectors import combine

    asked = "[1:56 pm on 8 May, 2023] Caroline: That bowl is awesome, Mel! What gave you the idea for the colors?"
    assert asked_before(asked) == "What gave you the idea for the colors?"  # the stamp is not copied
    # the last question, wherever it is; a line of its own counts as a sentence
    assert asked_before("Gina: Did you win? Great news either way.") == "Gina: Did you win?"
    reply = ("Pre-commit failed on pre-existing lint errors in lib/.\n\nUse `--no-verify` to skip the hook\n\n"
             "Would you like me to skip the hook for this commit, or fix the pre-existing issues first?")
    assert asked_before(reply) == "Would you like me to skip the hook for this commit, or fix the pre-existing " \
                                  "issues first?"
    assert asked_before("Tests pass: 412 passed in 31 s.\n- lib/a.ex\n- lib/b.ex") is None  # asks nothing
    assert asked_before("Gina: I won the cup.") is None
    assert len(asked_before("Why " + "really " * 100 + "?")) <= QUESTION_CHARS  # its end, where the asking is
    assert answer_text("Did you win?", "[2023] Jon: We did!") == "Did you win?\nJon: We did!"
    long = answer_text("Why?", "Jon: " + "because " * 200)
    assert long.startswith("Why?\nJon: because") and len(long) <= len("Why?\n") + ANSWER_CHARS
    assert combine(0.5, None, 0.7) == 0.7 and combine(0.5, 0.3, 0.2) == 0.4 and combine(0.5, None, None) == 0.5


def test_neighbouring_turn_context_is_the_opening_of_earlier_turns():
    from agentmem_mcp.index.neighbours import CONTEXT_CHARS, context_text

    assert context_text([]) == ""
    assert context_text(["[2:32 pm on 29 January, 2023] Gina: Where is it? Paris?!", "Jon: a dance studio"]) == \
        "Gina: Where is it? Paris?!\nJon: a dance studio"
    assert context_text(["one", "two", "three"]) == "one\ntwo"  # two earlier turns at most
    long = "word " * 100
    cut = context_text([long])
    assert len(cut) <= CONTEXT_CHARS and cut.endswith("word")
    assert context_text(["[not a stamp because there is no closing bracket", ""]) == \
        "[not a stamp because there is no closing bracket"
