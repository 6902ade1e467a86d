"""bench_core.py --paraphrases: the hand-written pairs of scripts/data/paraphrase_pairs.json saved among the
generated memories, each pair's question (no content word in common with its memory) asked through hybrid search
and through the vector retriever alone: recall@1/5/10 and MRR for both."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from bench_store import build
from harness import REPO

from agentmem_mcp.config import load_settings
from agentmem_mcp.index.embedder import Embedder
from agentmem_mcp.store import Store

PARAPHRASES = REPO / "scripts" / "data" / "paraphrase_pairs.json"


def _rank(store: Store, query: str, target: str, retrievers: tuple[str, ...]) -> int | None:
    hits = store.search(query, limit=10, record_access=False, retrievers=retrievers).hits
    return next((n for n, hit in enumerate(hits, start=1) if hit.id == target), None)


def _quality(ranks: list[int | None]) -> dict:
    return {f"recall@{k}": sum(1 for r in ranks if r is not None and r <= k) for k in (1, 5, 10)} | {
        "mrr": round(sum(1 / r for r in ranks if r) / len(ranks), 3), "pairs": len(ranks)}


def save_pairs(store: Store, pairs: list[dict]) -> list[str]:
    """Save each pair's memory, with its sentence pieces and word vectors as the worker would add them; their ids."""
    ids = [store.save(pair["memory"], type=pair["type"]).id for pair in pairs]
    store.flush()
    while store.add_sentence_pieces():
        pass
    while store.add_word_vectors():
        pass
    return ids


def paraphrase_quality(store: Store, pairs: list[dict]) -> dict:
    """Recall of each pair's memory for its question: hybrid search against the vector retriever alone."""
    ids = save_pairs(store, pairs)
    overlapping = [pair["query"] for pair in pairs
                   if set(store.fulltext.query_terms(pair["query"])) & set(store.fulltext.query_terms(pair["memory"]))]
    hybrid, vector, lost = [], [], []
    for pair, target in zip(pairs, ids):
        h = _rank(store, pair["query"], target, ("bm25", "vector", "graph"))
        v = _rank(store, pair["query"], target, ("vector",))
        hybrid.append(h)
        vector.append(v)
        if v is not None and (h is None or h > v):
            lost.append({"query": pair["query"], "hybrid_rank": h, "vector_rank": v})
    return {"hybrid": _quality(hybrid), "vector_only": _quality(vector), "hybrid_lower": lost,
            "sharing_words": overlapping}


def main_paraphrases(args: argparse.Namespace, embedder: Embedder, results: dict) -> None:
    pairs = json.loads(args.paraphrases.read_text())["pairs"]
    for size in [int(s) for s in args.sizes.split(",") if s]:
        with tempfile.TemporaryDirectory() as tmp:
            settings = load_settings(env={}, home=Path(tmp) / "home", embed_model_path=args.model)
            with Store.open(settings, project="/bench/project", embedder=embedder) as store:
                print(f"building {size:,} memories", file=sys.stderr)
                build(store, size, seed=size, synthetic_vectors=size > args.synthetic_above)
                row = paraphrase_quality(store, pairs)
                row["corpus_vectors"] = "hashed" if size > args.synthetic_above else "model"
                results["sizes"][size] = row
                print(json.dumps({size: row}, indent=1), flush=True)
    print(f"\n{results['date']} | {results['machine']}\n{results['command']}")
    for size, row in results["sizes"].items():
        for mode in ("hybrid", "vector_only"):
            q = row[mode]
            print(f"{size:>9,} {mode:>11}: recall@1 {q['recall@1']}/{q['pairs']}, @5 {q['recall@5']}, "
                  f"@10 {q['recall@10']}, MRR {q['mrr']}")
        print(f"{size:>9,}: hybrid ranks lower than vectors alone on {len(row['hybrid_lower'])} pairs; "
              f"{len(row['sharing_words'])} pairs share a word")
