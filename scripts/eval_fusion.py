"""Variants of score fusion beside the shipped one, on the three sets issue 22 weighs them on.

    python scripts/eval_fusion.py paraphrases [--home DIR] [--variants NAME,...]
    python scripts/eval_fusion.py locomo [--limit 3] [--cache-dir DIR] [--variants ...]
    python scripts/eval_fusion.py coding --kept HOME [--variants ...]

Each store is built once and every question is searched once per variant on it, through `Store.search` as an
agent calls it, so the variants differ by their fusion alone:
- `paraphrases`: bench_core.py's paraphrase set (48 questions sharing no word with their memory) among its 1,000
  generated memories (real model vectors; the store is kept in `--home` and reused when it exists); recall@1/5/10
  and MRR of each pair's memory, and the vector retriever alone.
- `locomo`: eval_locomo.py's stores and questions (its first `--limit` conversations); turn@5/@10, session@10.
- `coding`: the probes of eval_coding.py on a copy of a home it kept (`eval_coding.py --in-process --keep-home
  DIR`, then `--kept DIR`); search@5 as eval_coding.py scores it (hits not counted as accesses here, so the
  shipped row equals eval_coding.py's only when its searches left the ranking as they found it).

A variant changes, for one search, BM25's weight in score fusion (or its scores) from what that search's own
candidates show, on top of the shipped weight (`ranking.keyword_trust`); `flat` is the fusion before that factor
(BM25's weight as set). This script wraps `retrieval.fuse_scores` for its own runs; the product is not changed by it.
Signals, for BM25's best hit (after similar words) against the vector results (every candidate's cosine):
`meaning` = its cosine / the best cosine; `meaning3` = the mean cosine of BM25's top 3 / that of the vectors' top
3; `share` = the weighted share of the query's terms its text holds (`retrieval.pending_matches`); `terms` = how
many distinct query terms it holds; `margin` = (best cosine - second) / best; `rare` = the highest IDF, against an
unseen term's, of the query terms it holds; `idfshare` = BM25's best score (after similar words) against the sum of
the query terms' IDF. clamp(x, lo, hi) maps lo..hi to 0..1. `graph:F` multiplies the graph's weight by F;
`idf-margin:a:b:c:d` multiplies BM25's weight by max(clamp(idfshare, a, b), 1 - clamp(margin, c, d)).
`trust:a:b:c:d` replaces the shipped factor's ranges (`keyword_complete` = a..b, `vector_stands_out` = c..d; the
shipped one is trust:0.2:0.6:0.02:0.12); `vrank:lo:hi` multiplies BM25's weight by 1 - clamp(the rank of BM25's
best hit among the cosines, lo, hi) (agreement of the two retrievers' best). Variants that change how a retriever's
scores become 0..1 instead of dividing by its best: `fullnorm:a` divides BM25's by max(its best, a x a full
match's score), so a partial match counts as the share of a full one it scores; `vfloor:F` counts cosines from F
(`vfloor:min`: from the lowest of the vector retriever's own candidates), (cos - F) / (best - F); `dbsf:z` maps
BM25's and the vectors' scores each from their mean - z standard deviations (0) to their best (1). Parts join with
`+` (`similar-words:2.0+trust:0.4:0.8:0:0.02`); `flat` as a part removes the shipped factor. `mask:lo:hi[:mlo:mhi[:1]]`
(with `flat`) multiplies BM25's weight by max(clamp(idfshare, 0.2, 0.6), clamp(importance, lo, hi)[, 1 -
clamp(margin, mlo, mhi)][, 1 when a matched word holds a digit, an inner `_./-` or a camelCase step]), where
importance = 1 - the cosine between the query and the query without the words BM25's best hit matched (one more
embedding per search): whether the keyword match rests on words that carry the question's meaning.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentmem_mcp import retrieval

SHIPPED = retrieval.fuse_scores
MODEL = Path("/work/shared/models/all-MiniLM-L6-v2-onnx-int8")
DEFAULT_VARIANTS = ("shipped,flat,no-bm25,meaning:0.5:0.9,meaning:0.6:1.0,meaning3:0.5:0.9,gate:0.4:0.8,share:0.2:0.6,"
                    "share-or-meaning:0.2:0.6:0.5:0.9,one-term:0.5,one-term:0.25,one-term-margin:0.25:0.1,"
                    "margin:0.1:0.3,similar-words:1.0,similar-words:2.0")
_now: dict[str, Any] = {"variant": "shipped", "store": None, "query": ""}


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
    from agentmem_mcp.timewords import without_relative_time

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
    parts = [part for part in variant.split("+") if part.split(":")[0] not in ("similar-words", "trust", "flat")]
    if len(parts) > 1:
        raise SystemExit(f"variant {variant!r}: at most one fusion part")
    return parts[0] if parts else "shipped"


def _normalised(results, weights, absent, gains: dict[str, Callable[[list[float]], Callable[[float], float]]]):
    """Score fusion with each retriever's scores mapped to 0..1 by `gains[name](its scores)` instead of being
    divided by its best (a retriever not named keeps that)."""
    from agentmem_mcp.ranking import _fuse

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


_IMPORTANCE: dict[tuple[str, str], float] = {}


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
    the shipped factor's ranges, flat removes that factor)."""
    _now.update(variant=variant, store=store, query=query)
    saved, trust = store.settings, retrieval.keyword_trust
    for part in variant.split("+"):
        kind, *numbers = part.split(":")
        if kind == "similar-words":
            store.settings = saved.replace(soft_match_weight=float(numbers[0]))
        elif kind == "flat":
            retrieval.keyword_trust = lambda *_: 1.0
        elif kind == "trust":
            retrieval.keyword_trust = functools.partial(_trust_with, trust, [float(n) for n in numbers])
    try:
        return store.search(query, record_access=False, **options).hits
    finally:
        store.settings, retrieval.keyword_trust = saved, trust


def paraphrases(variants: list[str], home: Path) -> dict[str, dict]:
    from bench_paraphrases import PARAPHRASES, _quality, save_pairs
    from bench_store import build

    from agentmem_mcp.config import load_settings
    from agentmem_mcp.index.embedder import Embedder
    from agentmem_mcp.store import Store

    pairs = json.loads(PARAPHRASES.read_text())["pairs"]
    fresh = not (home / "pair_ids.json").exists()
    settings = load_settings(env={}, home=home, embed_model_path=MODEL)
    embedder = Embedder(settings.embed_model, MODEL)
    if not embedder.load():
        raise SystemExit(f"cannot load the model: {embedder.error}")
    out: dict[str, dict] = {}
    with Store.open(settings, project="/bench/project", embedder=embedder) as store:
        if fresh:
            build(store, 1000, seed=1000)
            ids = save_pairs(store, pairs)
            (home / "pair_ids.json").write_text(json.dumps(ids))
        ids = json.loads((home / "pair_ids.json").read_text())

        def rank(variant: str, query: str, target: str, retrievers: tuple[str, ...]) -> int | None:
            hits = search_as(store, variant, query, limit=10, retrievers=retrievers)
            return next((n for n, hit in enumerate(hits, start=1) if hit.id == target), None)

        alone = [rank("shipped", p["query"], t, ("vector",)) for p, t in zip(pairs, ids)]
        out["vector retriever alone"] = _quality(alone)
        print("vector retriever alone", out["vector retriever alone"], flush=True)
        for variant in variants:
            ranks = [rank(variant, p["query"], t, ("bm25", "vector", "graph")) for p, t in zip(pairs, ids)]
            out[variant] = _quality(ranks) | {"lower_than_vectors": sum(
                1 for h, v in zip(ranks, alone) if v is not None and (h is None or h > v))}
            print(variant, out[variant], flush=True)
    return out


def locomo(variants: list[str], limit: int, cache_dir: Path) -> dict[str, dict]:
    import eval_locomo as lc
    from eval_common import make_embedder, temp_store

    embedder = make_embedder(lc.DEFAULT_MODEL_PATH, cache_dir)
    scores: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for sample in json.loads(lc.DEFAULT_DATA.read_text())[:limit]:
        turns = lc.conversation_turns(sample)
        session_of = {t.dia_id: t.session for t in turns}
        with temp_store(embedder, lc.DEFAULT_MODEL_PATH) as store:
            _, turns_of, _ = lc.ingest(store, turns)
            for qa in lc.questions(sample):
                for variant in variants:
                    hits = search_as(store, variant, qa["question"], limit=lc.SEARCH_LIMIT, budget_tokens=100000)
                    ranked = lc.unique(turns[p].dia_id for hit in hits for p in turns_of.get(hit.id, []))
                    scores[variant].append(lc.score(ranked, qa["evidence"], session_of))
        print(f"{sample.get('sample_id')}: done", file=sys.stderr, flush=True)
    embedder.cache.close()
    out = {v: {m: round(100 * statistics.mean(s[m] for s in scores[v]), 1) for m in ("turn@5", "turn@10", "session@10")}
           for v in variants}
    for variant, row in out.items():
        print(variant, row, flush=True)
    return out


def coding(variants: list[str], kept: Path) -> dict[str, dict]:
    from eval_coding import DEFAULT_SPEC, first_match, hits_text

    from agentmem_mcp.config import load_settings
    from agentmem_mcp.index.embedder import Embedder
    from agentmem_mcp.project import project_for
    from agentmem_mcp.store import Store

    work = Path(tempfile.mkdtemp(prefix="eval-fusion-"))
    try:
        shutil.copytree(kept / "home", work / "home")
        settings = load_settings(env={"AGENTMEM_HOME": str(work / "home"), "AGENTMEM_EMBED_MODEL_PATH": str(MODEL)})
        embedder = Embedder(settings.embed_model, MODEL)
        if not embedder.load():
            raise SystemExit(f"cannot load the model: {embedder.error}")
        answered: dict[str, list[str]] = {v: [] for v in variants}
        probes = 0
        for project in json.loads(DEFAULT_SPEC.read_text())["projects"]:
            with Store.open(settings, project=project_for(kept / "projects" / project["name"]) or "",
                            embedder=embedder) as store:
                for probe in project["probes"]:
                    probes += 1
                    for variant in variants:
                        hits = [hit.to_dict() for hit in search_as(store, variant, probe["q"])]
                        if first_match(hits_text(hits), probe["any"]) is not None:
                            answered[variant].append(probe["q"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    shipped = set(answered[variants[0]])
    out = {v: {"search@5": round(100 * len(a) / probes, 1), "answered": len(a), "probes": probes,
               "lost": sorted(shipped - set(a)), "gained": sorted(set(a) - shipped)} for v, a in answered.items()}
    for variant, row in out.items():
        print(variant, f"search@5 {row['search@5']} ({row['answered']}/{probes}); lost {row['lost']}; "
              f"gained {row['gained']}", flush=True)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", choices=("paraphrases", "locomo", "coding"))
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help="comma-separated; the first is the reference")
    parser.add_argument("--home", type=Path, default=Path(tempfile.gettempdir()) / "eval-fusion-paraphrases",
                        help="paraphrases: where the store is built once and reused")
    parser.add_argument("--limit", type=int, default=3, help="locomo: the first N conversations")
    parser.add_argument("--cache-dir", type=Path, default=None, help="locomo: the embedding cache (eval_locomo.py)")
    parser.add_argument("--kept", type=Path, help="coding: a home kept by eval_coding.py --keep-home")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    retrieval.fuse_scores = _variant_fusion
    runs: dict[str, Callable[[], dict]] = {
        "paraphrases": lambda: paraphrases(variants, args.home),
        "locomo": lambda: locomo(variants, args.limit, args.cache_dir or __import__("eval_common").DEFAULT_CACHE),
        "coding": lambda: coding(variants, args.kept or parser.error("coding needs --kept DIR")),
    }
    figures = runs[args.set]()
    if args.json:
        args.json.write_text(json.dumps({"set": args.set, "command": " ".join(sys.argv), "figures": figures}, indent=1))


if __name__ == "__main__":
    main()
