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
candidates show. This script wraps `retrieval.fuse_scores` for its own runs; the product is not changed by it.
Signals, for BM25's best hit (after similar words) against the vector results (every candidate's cosine):
`meaning` = its cosine / the best cosine; `meaning3` = the mean cosine of BM25's top 3 / that of the vectors' top
3; `share` = the weighted share of the query's terms its text holds (`retrieval.pending_matches`); `terms` = how
many distinct query terms it holds; `margin` = (best cosine - second) / best. clamp(x, lo, hi) maps lo..hi to 0..1.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agentmem_mcp import retrieval  # noqa: E402

SHIPPED = retrieval.fuse_scores
MODEL = Path("/work/shared/models/all-MiniLM-L6-v2-onnx-int8")
DEFAULT_VARIANTS = ("shipped,no-bm25,meaning:0.5:0.9,meaning:0.6:1.0,meaning3:0.5:0.9,gate:0.4:0.8,share:0.2:0.6,"
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
    return {"meaning": max(cosine.get(bm25[0][0], 0.0), 0.0) / best,
            "meaning3": statistics.mean(max(cosine.get(i, 0.0), 0.0) for i, _ in bm25[:3]) / statistics.mean(top[:3]),
            "share": share, "terms": _terms(store, query, bm25[0][0]), "query_terms": len(_query_terms(store, query)),
            "margin": (top[0] - top[1]) / top[0] if len(top) > 1 else 1.0, "best": best}


def _query_terms(store: Any, query: str) -> set[str]:
    from agentmem_mcp.timewords import without_relative_time

    return set(store.fulltext.query_terms(without_relative_time(query)))


def _terms(store: Any, query: str, memory_id: str) -> int:
    from agentmem_mcp.index.document import memory_text
    from agentmem_mcp.index.tokenize import index_text

    row = store.conn.execute("SELECT title, content, tags, files FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if row is None:
        return 0
    text = memory_text(row["title"], row["content"], json.loads(row["tags"]), json.loads(row["files"]))
    return len(_query_terms(store, query) & set(store.fulltext.analyzer.analyze(index_text(text))))


def _variant_fusion(results, weights, absent=None):
    kind, *numbers = _now["variant"].split(":")
    p = [float(n) for n in numbers]
    s = signals(results) if kind not in ("shipped", "similar-words") and "vector" in results else None
    if s is None:
        return SHIPPED(results, weights, absent)
    weights = dict(weights)
    few_terms = s["terms"] <= 1 and s["query_terms"] >= 3
    if kind == "no-bm25":
        weights["bm25"] = 0.0
    elif kind in ("meaning", "meaning3", "share"):
        weights["bm25"] *= clamp(s[kind], p[0], p[1])
    elif kind == "share-or-meaning":
        weights["bm25"] *= max(clamp(s["share"], p[0], p[1]), clamp(s["meaning"], p[2], p[3]))
    elif kind == "one-term":
        weights["bm25"] *= p[0] if few_terms else 1.0
    elif kind == "one-term-margin":
        weights["bm25"] *= p[0] if few_terms and s["margin"] > p[1] else 1.0
    elif kind == "margin":
        weights["bm25"] *= 1 - clamp(s["margin"], p[0], p[1])
    elif kind == "gate":  # each candidate's BM25 score x clamp(its cosine / the best cosine)
        cosine = dict(results["vector"])
        results = {**results, "bm25": [(i, score * clamp(max(cosine.get(i, 0.0), 0.0) / s["best"], p[0], p[1]))
                                       for i, score in results["bm25"]]}
    else:
        raise SystemExit(f"unknown variant {_now['variant']!r}")
    return SHIPPED(results, weights, absent)


def search_as(store: Any, variant: str, query: str, **options: Any) -> list[Any]:
    """The hits of one search with `variant`'s fusion (similar-words:W sets soft_match_weight for it)."""
    _now.update(variant=variant, store=store, query=query)
    saved = store.settings
    if variant.startswith("similar-words:"):
        store.settings = saved.replace(soft_match_weight=float(variant.split(":")[1]))
    try:
        return store.search(query, record_access=False, **options).hits
    finally:
        store.settings = saved


def paraphrases(variants: list[str], home: Path) -> dict[str, dict]:
    from bench_core import PARAPHRASES, _quality, build, save_pairs

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
