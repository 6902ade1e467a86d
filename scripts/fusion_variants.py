"""The fusion variants eval_fusion.py compares (its docstring says what each one does): `search_as` runs one
`Store.search` with `ranking.fuse_scores` replaced by the variant named, the signals it reads from that search's own
candidates, and the per-retriever normalisations."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import statistics
from collections.abc import Callable
from typing import Any

from agentmem_mcp.recall import retrieval

SHIPPED = retrieval.fuse_scores


_now: dict[str, Any] = {"variant": "shipped", "store": None, "query": ""}
_IMPORTANCE: dict[tuple[str, str], float] = {}


def clamp(x: float, lo: float, hi: float) -> float:
    return min(max((x - lo) / (hi - lo), 0.0), 1.0)


def signals(results: dict[str, list[tuple[str, float]]]) -> dict[str, float] | None:
    """What a variant reads of one search's candidates (module docstring); None without vectors or BM25."""
    cosine = dict(results.get("vector", ()))
    bm25 = sorted(results.get("bm25", ()), key=lambda pair: -pair[1])
    best = max(cosine.values(), default=0.0)
    if not bm25 or best <= 0:
        return None
    top = sorted(cosine.values(), reverse=True)
    store, query = _now["store"], _now["query"]
    share = retrieval.pending_matches(store, query, [bm25[0][0]], None, False).get(bm25[0][0], 0.0)
    matched = _matched(store, query, bm25[0][0])
    return {"meaning": max(cosine.get(bm25[0][0], 0.0), 0.0) / best,
            "rare": max((_rarity(store, t) for t in matched), default=0.0),
            "meaning3": statistics.mean(max(cosine.get(i, 0.0), 0.0) for i, _ in bm25[:3]) / statistics.mean(top[:3]),
            "share": share, "terms": _terms(store, query, bm25[0][0]), "query_terms": len(_query_terms(store, query)),
            "margin": (top[0] - top[1]) / top[0] if len(top) > 1 else 1.0, "best": best,
            "vrank": 1 + sum(1 for score in cosine.values() if score > cosine.get(bm25[0][0], 0.0))}


def _query_terms(store: Any, query: str) -> set[str]:
    from agentmem_mcp.recall.timewords import without_relative_time

    return set(store.fulltext.query_terms(without_relative_time(query)))


def _full_match() -> float:
    """A full keyword match's BM25 score for the current query (`FulltextIndex.full_match_score`)."""
    store, query = _now["store"], _now["query"]
    return store.fulltext.full_match_score(list(_query_terms(store, query)))


def _idf_share(results: dict[str, list[tuple[str, float]]]) -> float:
    """BM25's best score (after similar words) against a full match's (`FulltextIndex.full_match_score`)."""
    bm25 = results.get("bm25") or []
    if not bm25:
        return 1.0
    full = _full_match()
    return max(score for _, score in bm25) / full if full > 0 else 1.0


def _rarity(store: Any, term: str) -> float:
    """A term's BM25 IDF in the store relative to an unseen term's: 1 for a term one memory holds, near 0 for
    one every memory holds."""
    from agentmem_mcp.index.fulltext import bm25_idf

    searcher = store.fulltext._searcher()
    total = max(searcher.num_docs, 1)
    return bm25_idf(total, searcher.doc_freq("text", term)) / bm25_idf(total, 0)


def _matched(store: Any, query: str, memory_id: str) -> set[str]:
    from agentmem_mcp.index.document import memory_text
    from agentmem_mcp.index.tokenize import index_text

    row = store.conn.execute("SELECT title, content, tags, files FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if row is None:
        return set()
    text = memory_text(row["title"], row["content"], json.loads(row["tags"]), json.loads(row["files"]))
    return _query_terms(store, query) & set(store.fulltext.analyzer.analyze(index_text(text)))


def _terms(store: Any, query: str, memory_id: str) -> int:
    return len(_matched(store, query, memory_id))


def _fusion_part(variant: str) -> str:
    """The part of a variant that acts in the fusion (similar-words, trust and flat act before it)."""
    parts = [part for part in variant.split("+")
             if part.split(":")[0] not in ("similar-words", "trust", "flat", "expansion")]
    if len(parts) > 1:
        raise SystemExit(f"variant {variant!r}: at most one fusion part")
    return parts[0] if parts else "shipped"


def _normalised(results, weights, absent, gains: dict[str, Callable[[list[float]], Callable[[float], float]]]):
    """Score fusion with each retriever's scores mapped to 0..1 by `gains[name](its scores)` instead of being
    divided by its best (a retriever not named keeps that)."""
    from agentmem_mcp.recall.ranking import _fuse

    mapped = {}
    for name, pairs in results.items():
        scores = [score for _, score in pairs]
        best = max(scores, default=0.0)
        gain = gains[name](scores) if name in gains and scores else (
            lambda score, best=best: max(score, 0.0) / best if best > 0 else 0.0)
        mapped[name] = sorted(((item, gain(score)) for item, score in pairs), key=lambda pair: -pair[1])
    return _fuse(mapped, weights, absent, lambda _rank, score, _best: score)


def _from_floor(floor: float) -> Callable[[list[float]], Callable[[float], float]]:
    def gain(scores: list[float]) -> Callable[[float], float]:
        best = max(scores)
        return lambda score: clamp(score, floor, best) if best > floor else 0.0
    return gain


def _dbsf(z: float) -> Callable[[list[float]], Callable[[float], float]]:
    def gain(scores: list[float]) -> Callable[[float], float]:
        low, best = statistics.mean(scores) - z * statistics.pstdev(scores), max(scores)
        return lambda score: clamp(score, low, best) if best > low else 1.0
    return gain


def _variant_fusion(results, weights, absent=None):
    kind, *numbers = _fusion_part(_now["variant"]).split(":")
    if kind == "vfloor" and numbers == ["min"]:  # the vector retriever's own candidates come first
        return _normalised(results, weights, absent, {"vector": lambda scores: _from_floor(
            min(scores[:retrieval.RETRIEVER_DEPTH]))(scores)})
    p = [float(n) for n in numbers]
    if kind == "vfloor":
        return _normalised(results, weights, absent, {"vector": _from_floor(p[0])})
    if kind == "dbsf":
        return _normalised(results, weights, absent, {"bm25": _dbsf(p[0]), "vector": _dbsf(p[0])})
    if kind == "fullnorm":
        full = _full_match()
        return _normalised(results, weights, absent, {"bm25": lambda scores: (
            lambda score, top=max(max(scores), p[0] * full): max(score, 0.0) / top if top > 0 else 0.0)})
    if kind == "graph":
        return SHIPPED(results, {**weights, "graph": weights["graph"] * p[0]}, absent)
    if kind == "idfshare":
        return SHIPPED(results, {**weights, "bm25": weights["bm25"] * clamp(_idf_share(results), p[0], p[1])}, absent)
    if kind == "mask":
        return SHIPPED(results, {**weights, "bm25": weights["bm25"] * _mask_factor(results, p)}, absent)
    s = signals(results) if kind != "shipped" and "vector" in results else None
    if s is None:
        return SHIPPED(results, weights, absent)
    weights = dict(weights)
    few_terms = s["terms"] <= 1 and s["query_terms"] >= 3
    if kind == "no-bm25":
        weights["bm25"] = 0.0
    elif kind in ("meaning", "meaning3", "share", "rare"):
        weights["bm25"] *= clamp(s[kind], p[0], p[1])
    elif kind == "share-or-meaning":
        weights["bm25"] *= max(clamp(s["share"], p[0], p[1]), clamp(s["meaning"], p[2], p[3]))
    elif kind == "one-term":
        weights["bm25"] *= p[0] if few_terms else 1.0
    elif kind == "one-term-margin":
        weights["bm25"] *= p[0] if few_terms and s["margin"] > p[1] else 1.0
    elif kind == "idf-margin":  # lowered only where BM25's best is incomplete and the vectors' best stands out
        weights["bm25"] *= max(clamp(_idf_share(results), p[0], p[1]), 1 - clamp(s["margin"], p[2], p[3]))
    elif kind == "margin":
        weights["bm25"] *= 1 - clamp(s["margin"], p[0], p[1])
    elif kind == "vrank":
        weights["bm25"] *= 1 - clamp(s["vrank"], p[0], p[1])
    elif kind == "gate":  # each candidate's BM25 score x clamp(its cosine / the best cosine)
        cosine = dict(results["vector"])
        results = {**results, "bm25": [(i, score * clamp(max(cosine.get(i, 0.0), 0.0) / s["best"], p[0], p[1]))
                                       for i, score in results["bm25"]]}
    else:
        raise SystemExit(f"unknown variant {_now['variant']!r}")
    return SHIPPED(results, weights, absent)


def _surface_matched(store: Any, query: str, memory_id: str) -> list[str]:
    """The query's own words whose indexed form the memory holds (what its keyword match rests on)."""
    from agentmem_mcp.index.tokenize import index_text

    matched = _matched(store, query, memory_id)
    return [w for w in re.findall(r"[#\w][\w./#-]*", query)
            if set(store.fulltext.analyzer.analyze(index_text(w))) & matched]


def _importance(store: Any, query: str, words: list[str]) -> float:
    """1 - the cosine between the query and the query without `words`: how much of its meaning they carry."""
    import numpy as np

    masked = query
    for w in words:
        masked = re.sub(r"(?<![\w#])" + re.escape(w) + r"(?!\w)", " ", masked)
    masked = re.sub(r"\s+", " ", masked).strip()
    key = (query, masked)
    if key not in _IMPORTANCE:
        a, b = store.embedder.embed_query(query), store.embedder.embed_query(masked or ".")
        a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
        _IMPORTANCE[key] = 1.0 - float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    return _IMPORTANCE[key]


def _identifier(word: str) -> bool:
    return bool(re.search(r"\d", word) or re.search(r"\w[_./-]\w", word) or re.search(r"[a-z][A-Z]", word))


def _mask_factor(results: dict[str, list[tuple[str, float]]], p: list[float]) -> float:
    """mask:lo:hi[:mlo:mhi[:ident]]: max(ramp(completeness, 0.2, 0.6), ramp(importance of BM25's best hit's
    matched words, lo, hi), [1 - ramp(the vectors' margin, mlo, mhi)], [1 if a matched word is an identifier])."""
    bm25 = sorted(results.get("bm25") or (), key=lambda pair: -pair[1])
    if not bm25 or not results.get("vector"):
        return 1.0
    store, query = _now["store"], _now["query"]
    words = _surface_matched(store, query, bm25[0][0])
    factor = max(clamp(_idf_share(results), 0.2, 0.6), clamp(_importance(store, query, words), p[0], p[1]))
    if len(p) >= 4 and p[3] > p[2]:
        factor = max(factor, 1 - clamp(retrieval.vector_margin(results["vector"]) or 0.0, p[2], p[3]))
    if len(p) >= 5 and p[4] and any(_identifier(w) for w in words):
        factor = 1.0
    return factor


def _trust_with(shipped: Callable[..., float], ranges: list[float], completeness: float, margin: float | None,
                *_: Any) -> float:
    """The shipped factor (`ranking.keyword_trust`) with the ranges of a `trust:a:b:c:d` variant."""
    return shipped(completeness, margin, (ranges[0], ranges[1]), (ranges[2], ranges[3]))


def search_as(store: Any, variant: str, query: str, **options: Any) -> list[Any]:
    """The hits of one search with `variant`'s fusion (similar-words:W sets soft_match_weight for it, trust:a:b:c:d
    the shipped factor's ranges, flat removes that factor, expansion:W[:FROM[:PER_WORD]] sets query expansion's
    knobs: `RankingSettings.expansion_weight`, `expansion_from`, `expansion_per_word`; expansion:0 turns it off)."""
    _now.update(variant=variant, store=store, query=query)
    saved, trust, knobs = store.settings, retrieval.keyword_trust, retrieval.RankingSettings.from_settings
    for part in variant.split("+"):
        kind, *numbers = part.split(":")
        if kind == "expansion":
            names = ("expansion_weight", "expansion_from", "expansion_per_word")
            changed = {name: type(getattr(retrieval.RankingSettings, name))(float(n))
                       for name, n in zip(names, numbers)}
            retrieval.RankingSettings.from_settings = classmethod(  # type: ignore[method-assign]
                lambda cls, settings, changed=changed: dataclasses.replace(knobs(settings), **changed))
        elif kind == "similar-words":
            store.settings = saved.replace(soft_match_weight=float(numbers[0]))
        elif kind == "flat":
            retrieval.keyword_trust = lambda *_: 1.0
        elif kind == "trust":
            retrieval.keyword_trust = functools.partial(_trust_with, trust, [float(n) for n in numbers])
    try:
        return store.search(query, record_access=False, **options).hits
    finally:
        store.settings, retrieval.keyword_trust = saved, trust
        retrieval.RankingSettings.from_settings = knobs  # type: ignore[method-assign]
