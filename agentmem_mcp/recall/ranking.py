"""Pure ranking policy: rank fusion, reranking by a memory's own state, token budgets, similarity."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_WORDS = re.compile(r"[^\W_]+", re.UNICODE)


def estimate_tokens(text: str) -> int:
    """A cheap token estimate: ~4 characters per token, one per CJK character."""
    cjk = len(_CJK_CHAR.findall(text))
    return math.ceil((len(text) - cjk) / 4) + cjk


@dataclass
class Fused:
    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)  # retriever -> 1-based rank


def _fuse(results: Mapping[str, Sequence[tuple[str, float]]], weights: Mapping[str, float],
          absent: Mapping[str, Collection[str]] | None, gain: Callable[[int, float, float], float]) -> list[Fused]:
    """The shared core: each answering retriever adds weight * gain(rank, score, its best score) to the ids
    it returned (an id counted once per retriever), then each id's sum is divided by the weights of the
    retrievers that answered and could have returned it."""
    answered = [name for name in results if weights.get(name, 0) > 0]
    total_weight = sum(weights[name] for name in answered) or 1.0
    fused: dict[str, Fused] = {}
    for name in answered:
        weight = weights[name]
        best = max((score for _, score in results[name]), default=0.0)
        for rank, (item, score) in enumerate(results[name], start=1):
            entry = fused.get(item)
            if entry is None:
                entry = fused[item] = Fused(item, 0.0)
            elif name in entry.ranks:
                continue
            entry.ranks[name] = rank
            entry.score += weight * gain(rank, score, best)
    lacking = [(weights[name], absent[name]) for name in answered if absent and absent.get(name)]
    for entry in fused.values():
        missing = sum(weight for weight, ids in lacking if entry.id in ids)
        entry.score /= (total_weight - missing) or total_weight
    return sorted(fused.values(), key=lambda f: (-f.score, f.id))


def fuse_rankings(rankings: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: int = 60,
                  absent: Mapping[str, Collection[str]] | None = None) -> list[Fused]:
    """Weighted reciprocal rank fusion, renormalised over the retrievers that answered.

    `rankings` maps a retriever name to its ids, best first; a retriever that did not run is absent
    (an empty list counts as having answered). Score = sum(w_r / (k + rank_r)) / sum(w_r).
    `absent` names, per retriever, ids it could not return (a memory with no vector, by design or not yet): their
    sum of weights leaves that retriever out, so missing data is not counted as a poor rank.
    """
    return _fuse({name: [(item, 0.0) for item in ids] for name, ids in rankings.items()}, weights, absent,
                 lambda rank, _score, _best: 1.0 / (k + rank))


def fuse_scores(results: Mapping[str, Sequence[tuple[str, float]]], weights: Mapping[str, float],
                absent: Mapping[str, Collection[str]] | None = None) -> list[Fused]:
    """Weighted fusion of the retrievers' own scores, each divided by that retriever's best score.

    `results` maps a retriever name to (id, score) pairs; a retriever that did not run is absent. A
    negative score (a cosine below zero) counts as 0. Score = sum(w_r * s_r / best_r) / sum(w_r), in 0..1,
    so a memory that one retriever is sure of keeps its margin (reciprocal ranks flatten it: with k = 60
    the first place is worth barely more than the tenth). `absent` as in `fuse_rankings`.
    """
    ordered = {name: sorted(pairs, key=lambda pair: -pair[1]) for name, pairs in results.items()}
    return _fuse(ordered, weights, absent, lambda _rank, score, best: max(score, 0.0) / best if best > 0 else 0.0)


def _ramp(x: float, low: float, high: float) -> float:
    """0 at or under `low`, 1 at or over `high`, linear between."""
    return min(max((x - low) / (high - low), 0.0), 1.0)


def vector_margin(pairs: Sequence[tuple[str, float]]) -> float | None:
    """How far the vector retriever's best cosine stands above its second, as a share of the best; None when
    there is no second candidate to stand above or no candidate is above zero."""
    top = sorted((score for _, score in pairs), reverse=True)[:2]
    if len(top) < 2 or top[0] <= 0:
        return None
    return (top[0] - top[1]) / top[0]


def keyword_trust(completeness: float, margin: float | None, complete: tuple[float, float],
                  stands_out: tuple[float, float]) -> float:
    """The factor on BM25's weight in score fusion for one search, 0..1.

    Score fusion divides BM25's scores by its best, so a best hit holding one common word of the query counts
    as much as one holding them all. `completeness` is that best hit's score against a full match's (BM25's
    score of a memory of average length holding each query term once: the sum of their IDF); `margin` the
    vector retriever's (`vector_margin`). BM25 keeps its whole weight when its best match is complete enough
    (`complete`: ramps 0 -> 1 over that range) or when the vectors' best does not stand out (`stands_out`:
    1 -> 0 over that range); only a partial keyword match against a clear nearest meaning loses weight, down
    to none: the case of a question asked in other words than its memory."""
    if margin is None:
        return 1.0
    return max(_ramp(completeness, *complete), 1.0 - _ramp(margin, *stands_out))


def expansion_share(completeness: float, complete: tuple[float, float]) -> float:
    """How much of its weight query expansion gets for one search, 0..1: all of it when BM25's best match holds
    under `complete[0]` of a full match's score, none from `complete[1]` up, linear between (a query whose own
    keywords match well is not expanded)."""
    return 1.0 - _ramp(completeness, *complete)


PRIORITY_IMPORTANCE_FLOOR = {"P0": 0.9, "P1": 0.0, "P2": 0.0}
PRIORITY_FACTOR = {"P0": 1.0, "P1": 1.0, "P2": 0.9}


def state_factor(confidence: float, importance: float, priority: str, retention: float) -> float:
    """How much a memory's own state scales its relevance: in [0.55, 1.0].

    Relevance decides the order; state breaks near-ties and sinks doubtful, unimportant, faded
    memories. Confidence (how trustworthy) and priority (how important) both count.
    """
    importance = max(importance, PRIORITY_IMPORTANCE_FLOOR.get(priority, 0.0))
    state = 0.45 * confidence + 0.3 * importance + 0.25 * retention
    return (0.55 + 0.45 * min(max(state, 0.0), 1.0)) * PRIORITY_FACTOR.get(priority, 1.0)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORDS.findall(text)]


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


_SPECIFIC = re.compile(r"[\w./:-]*\d[\w./:-]*|[A-Za-z]+_[\w]+|[a-z]+[A-Z]\w*|[\w.-]+/[\w./-]+")


def specific_tokens(text: str) -> set[str]:
    """Numbers, versions, identifiers and paths: what makes two similar sentences about different things."""
    return {token.strip(".:-").lower() for token in _SPECIFIC.findall(text)}


def humanize_age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("y", 365 * 86400), ("mo", 30 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


_HOW_TO = re.compile(r"^\W*(?:how (?:do|can|should|would|could) (?:i|we|you|one)|how to|what(?:'s| is) the "
                     r"(?:command|way|script) (?:to|for)|(?:which|what) (?:command|script) (?:do|does|should|runs?|"
                     r"starts?|builds?)|wie (?:kann|soll|muss) (?:ich|man)|wie (?:starte|baue|teste|installiere)|"
                     r"comment (?:faire|lancer|démarrer|construire|tester)|cómo (?:ejecuto|inicio|construyo|pruebo))\b",
                     re.IGNORECASE)
# what a how-to question asks to do, as the learned commands' purposes name it (consolidate.command_label)
_PURPOSES = (("Run the tests", re.compile(r"\b(?:tests?|testing|specs?|test suite|testen)\b", re.I)),
             ("Check the code", re.compile(r"\b(?:lint|linter|linting|static (?:checks?|analysis)|type ?check\w*|"
                                           r"quality checks?|checks)\b", re.I)),
             ("Format the code", re.compile(r"\b(?:format|formatter|formatting)\b", re.I)),
             ("Build", re.compile(r"\b(?:build|compile|bundle|bauen|kompilieren|construire)\b", re.I)),
             ("Start the app", re.compile(r"\b(?:start|run|serve|launch|dev server|server|starten|lancer|"
                                          r"démarrer|inicio)\b", re.I)),
             ("Install dependencies", re.compile(r"\b(?:install|dependencies|deps|set ?up|installieren)\b", re.I)))
PROCEDURE_BOOST = 1.3  # a how-to question ("how do I run the tests?") weighs procedures (workflows) this much more


_WHICH_FILE = re.compile(r"\b(?:which|what) (?:files?|scripts?|modules?|components?|classes?|tests?)\b|"
                         r"\bwhere (?:is|are|do|does|did)\b[^?]*\b(?:defined|live|lives|implemented|handled|"
                         r"configured|stored)\b|\bin which files?\b", re.IGNORECASE)


def asks_which_file(query: str) -> bool:
    """Whether a query asks which file (script, module, component) holds something: the files a memory
    names answer it, wherever they sit in the memory's text."""
    return bool(_WHICH_FILE.search(query))


def asked_purpose(query: str) -> str | None:
    """What a how-to question asks to do ("how do I run the linter?" -> "Check the code"), or None."""
    if not asks_how_to(query):
        return None
    return next((label for label, pattern in _PURPOSES if pattern.search(query)), None)


def asks_how_to(query: str) -> bool:
    """Whether a query asks how to do something, which a procedure (a learned workflow) answers best."""
    return bool(_HOW_TO.search(query))

