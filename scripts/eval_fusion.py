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
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from fusion_variants import _from_floor as _from_floor
from fusion_variants import _normalised as _normalised
from fusion_variants import _variant_fusion as _variant_fusion
from fusion_variants import clamp as clamp
from fusion_variants import search_as as search_as
from harness import default_model

from agentmem_mcp.recall import retrieval

MODEL = default_model()
DEFAULT_VARIANTS = ("shipped,flat,no-bm25,meaning:0.5:0.9,meaning:0.6:1.0,meaning3:0.5:0.9,gate:0.4:0.8,share:0.2:0.6,"
                    "share-or-meaning:0.2:0.6:0.5:0.9,one-term:0.5,one-term:0.25,one-term-margin:0.25:0.1,"
                    "margin:0.1:0.3,similar-words:1.0,similar-words:2.0")


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

    embedder = make_embedder(MODEL, cache_dir)
    scores: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for sample in json.loads(lc.DEFAULT_DATA.read_text())[:limit]:
        turns = lc.conversation_turns(sample)
        session_of = {t.dia_id: t.session for t in turns}
        with temp_store(embedder, MODEL) as store:
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
