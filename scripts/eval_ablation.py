"""Ranking ablations on LoCoMo and LongMemEval: what each ingredient of agentmem's search is worth, and
what the alternatives measured. The harness to tune against before changing search.

    python scripts/eval_ablation.py [--benchmark locomo|longmemeval|both] [--limit N] [--more] [--json FIGURES.json]

Each LoCoMo conversation and each LongMemEval haystack (user turns) is ingested once through the real write
path into a fresh store, as eval_locomo.py and eval_longmemeval.py do. For each question the script then
computes, over every memory of the store, tantivy BM25 scores (the product's analyzer) over several
document variants (the memory alone; with one to three earlier turns of its session, as
index/neighbours.py builds them; with the turn after as well; the context alone) and the exact cosine of
every memory to the query (the store's own vectors). Each variant ranks the memories from those arrays
as search does (candidates: the top 60 of each retriever; scores fused by value or by reciprocal rank),
applies search's date window and the memories' state factor, and is scored with the benchmarks' own
metrics. The row `product` mirrors `Store.search`; the evaluation scripts measure the real search path.
Rows starting with "+" rerank the scores of the product without similar words or answer chunks; rows starting with
"product +" add to the product itself. `--more` adds rows that embed other texts (chunks
without their timestamp, each turn with the turn before it, the question without its question words):
a cold cache embeds each store once more for them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import eval_locomo
import eval_longmemeval
import numpy as np
from ablation_haystack import Features, Haystack, best_per_memory, with_piece
from ablation_haystack import contexts as contexts
from eval_common import (
    DEFAULT_CACHE,
    DEFAULT_MODEL_PATH,
    fmt,
    machine_info,
    make_embedder,
    mean,
    print_header,
    print_table,
    temp_store,
    write_json,
)

from agentmem_mcp.index.tokenize import terms
from agentmem_mcp.recall.retrieval import (
    RETRIEVER_DEPTH,
)

# fusion ------------------------------------------------------------------------------------------

def top(scores: np.ndarray, depth: int = RETRIEVER_DEPTH) -> np.ndarray:
    mask = np.zeros(len(scores), bool)
    mask[np.argsort(-scores, kind="stable")[:depth]] = True
    return mask & (scores > 0)


def with_similar_words(f: Features, weight: float = 0.5) -> np.ndarray:
    """BM25 plus `weight` x the similar-word score, for the candidates of BM25 and the vectors (as search)."""
    return f["ctx2"] + weight * f["similar"] * (top(f["ctx2"]) | top(f["cos"]))


def by_value(lexical: np.ndarray, cosine: np.ndarray, w_bm25: float = 0.4, exact: bool = True) -> np.ndarray:
    """Score fusion as search does it: candidates = top 60 of each; each score over its best; weighted."""
    lex_top, cos_top = top(lexical), top(cosine)
    candidates = lex_top | cos_top
    lex = np.where(lex_top, lexical, 0.0)
    cos = np.maximum(cosine, 0.0) if exact else np.where(cos_top, np.maximum(cosine, 0.0), 0.0)
    fused = (w_bm25 * lex / (lex.max() or 1.0) + (1 - w_bm25) * cos / (cos.max() or 1.0))
    return np.where(candidates, fused, 0.0)


def by_rank(lexical: np.ndarray, cosine: np.ndarray, w_bm25: float = 0.4, k: int = 60) -> np.ndarray:
    out = np.zeros(len(lexical))
    for scores, weight in ((lexical, w_bm25), (cosine, 1 - w_bm25)):
        mask = top(scores)
        order = np.argsort(-scores, kind="stable")
        rank = np.empty(len(scores))
        rank[order] = np.arange(1, len(scores) + 1)
        out += np.where(mask, weight / (k + rank), 0.0)
    return out


def min_max_cosines(lexical: np.ndarray, cosine: np.ndarray, w_bm25: float = 0.4) -> np.ndarray:
    """Score fusion with the cosines scaled to 0..1 over the candidates (lowest to highest)."""
    candidates = top(lexical) | top(cosine)
    low = cosine[candidates].min() if candidates.any() else 0.0
    scaled = np.clip((cosine - low) / ((cosine.max() - low) or 1.0), 0.0, 1.0)
    lex = np.where(top(lexical), lexical, 0.0)
    return np.where(candidates, w_bm25 * lex / (lex.max() or 1.0) + (1 - w_bm25) * scaled, 0.0)


def rooted_bm25(lexical: np.ndarray, cosine: np.ndarray, w_bm25: float = 0.4) -> np.ndarray:
    """Score fusion with the BM25 share square-rooted (weak keyword matches weigh more)."""
    candidates = top(lexical) | top(cosine)
    lex = np.where(top(lexical), lexical, 0.0)
    cos = np.maximum(cosine, 0.0)
    return np.where(candidates, w_bm25 * np.sqrt(lex / (lex.max() or 1.0)) + (1 - w_bm25) * cos / (cos.max() or 1.0),
                    0.0)


def keyword_feedback(f: Features, hay: Haystack, first: int = 5, words: int = 10, weight: float = 0.2) -> np.ndarray:
    """RM3-like: a second BM25 query of the `words` most telling terms of the `first` best memories."""
    ranked = np.argsort(-by_value(f["ctx2"], f["cos"]), kind="stable")[:first]
    asked = set(terms(f["keywords"]))
    gain: Counter[str] = Counter()
    for i in ranked:
        for term, n in Counter(hay.words[i]).items():
            if term not in asked and len(term) > 2 and hay.idf.get(term, 0.0) >= 1.5:
                gain[term] += n / max(len(hay.words[i]), 1) * hay.idf[term]
    extra = " ".join(t for t, _ in gain.most_common(words))
    lexical = f["ctx2"] + (weight * hay.bm25(hay.indexes["ctx2"], extra) if extra else 0.0)
    return by_value(lexical, f["cos"])


def from_next_turn(f: Features, hay: Haystack, share: float = 0.7) -> np.ndarray:
    """A turn scores at least `share` of the turn after it (a question gains from its answer)."""
    scores = by_value(f["ctx2"], f["cos"])
    has = hay.next >= 0
    out = scores.copy()
    out[has] = np.maximum(scores[has], share * scores[hay.next[has]])
    return out


Reorder = Callable[[np.ndarray, "Haystack"], list[int]]


def session_diversity(decay: float = 0.9, depth: int = 30) -> Reorder:
    """Greedy: each pick's score is multiplied by `decay` per earlier pick from its session."""
    def reorder(final: np.ndarray, hay: Haystack) -> list[int]:
        order = [int(i) for i in np.argsort(-final, kind="stable") if final[i] > 0]
        pool, picked, seen = order[:depth], [], Counter()
        while pool:
            best = max(pool, key=lambda i: final[i] * decay ** seen[hay.groups[i]])
            pool.remove(best)
            picked.append(best)
            seen[hay.groups[best]] += 1
        return picked + order[depth:]
    return reorder


def mmr(redundancy: float = 0.1, depth: int = 30) -> Reorder:
    """Maximal marginal relevance over the memories' first chunk vectors."""
    def reorder(final: np.ndarray, hay: Haystack) -> list[int]:
        order = [int(i) for i in np.argsort(-final, kind="stable") if final[i] > 0]
        pool, picked = order[:depth], []
        vectors = {i: hay.chunks[hay.first_chunk[i]] for i in pool}
        best_score = final[order[0]] if order else 1.0
        while pool:
            def value(i: int) -> float:
                similar = max((float(vectors[i] @ vectors[j]) for j in picked), default=0.0)
                return final[i] / best_score - redundancy * similar
            chosen = max(pool, key=value)
            pool.remove(chosen)
            picked.append(chosen)
        return picked + order[depth:]
    return reorder


def session_boost(scores: np.ndarray, groups: list[str], share: float = 0.2) -> np.ndarray:
    best: dict[str, float] = defaultdict(float)
    for score, group in zip(scores, groups):
        best[group] = max(best[group], score)
    return np.where(scores > 0, scores + share * np.array([best[g] for g in groups]), 0.0)


def session_document(f: Features, hay: Haystack, share: float = 0.3, w_bm25: float = 0.7,
                     k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    """Hierarchical: each candidate gains `share` x the best score x its session's score as one document
    (BM25 over all its turns' terms, session-level IDF; cosine of the mean of its turns' vectors), fused
    `w_bm25` / 1 - `w_bm25` after each is divided by its best."""
    scores = by_value(with_similar_words(f), f["cos with answers"])
    asked = set(terms(f["keywords"]))
    lengths = np.array([sum(c.values()) for c in hay.session_terms], float)
    average = lengths.mean() or 1.0
    bm25 = np.array([sum(hay.session_idf[t] * c[t] * (k1 + 1) / (c[t] + k1 * (1 - b + b * n / average))
                         for t in asked if c.get(t)) for c, n in zip(hay.session_terms, lengths)])
    cos = np.maximum(hay.session_vectors @ f["qvec"], 0.0)
    session = w_bm25 * bm25 / (bm25.max() or 1.0) + (1 - w_bm25) * cos / (cos.max() or 1.0)
    return np.where(scores > 0, scores + share * scores.max() * session[hay.session_of], 0.0)


def dense_feedback(f: Features, hay: Haystack, beta: float = 0.5, m: int = 3) -> np.ndarray:
    """Rocchio on the query vector: add the mean vector of the top m memories of a first pass."""
    first = by_value(f["ctx2"], f["cos"])
    chosen = np.argsort(-first)[:m]
    vectors = np.zeros((m, hay.chunks.shape[1]), np.float32)
    for n, i in enumerate(chosen):
        vectors[n] = hay.chunks[np.flatnonzero(hay.owners == i)[0]]
    query = f["qvec"] + beta * vectors.mean(axis=0)
    query /= np.linalg.norm(query)
    return by_value(f["ctx2"], best_per_memory(len(hay.ids), hay.owners, hay.chunks @ query))


VARIANTS: dict[str, Callable[[Features, Haystack], np.ndarray]] = {
    "product: score fusion 0.4/0.6, 2 earlier turns, exact cosines, similar words, answer chunks":
        lambda f, h: by_value(with_similar_words(f), f["cos with answers"]),
    "without answer chunks (before 2026-11-30 03:00 UTC)": lambda f, h: by_value(with_similar_words(f), f["cos"]),
    "without similar words (before 2026-11-30; the base of the rows below)":
        lambda f, h: by_value(f["ctx2"], f["cos"]),
    "similar words weigh 0.3": lambda f, h: by_value(with_similar_words(f, 0.3), f["cos"]),
    "similar words weigh 1.0": lambda f, h: by_value(with_similar_words(f, 1.0), f["cos"]),
    "without sentence pieces (before 19:20 UTC)": lambda f, h: by_value(f["ctx2"], f["cos, chunks only"]),
    "relative time words as keywords too (before 18:50 UTC)": lambda f, h: by_value(f["ctx2, raw query"], f["cos"]),
    "before 2026-11-29: RRF k=60 0.4/0.6, no context": lambda f, h: by_rank(f["plain"], f["cos"]),
    "RRF k=60, 2 earlier turns": lambda f, h: by_rank(f["ctx2"], f["cos"]),
    "RRF k=10 0.5/0.5, no context": lambda f, h: by_rank(f["plain"], f["cos"], 0.5, 10),
    "score fusion, no context": lambda f, h: by_value(f["plain"], f["cos"]),
    "score fusion without exact cosines (two top-60 lists)": lambda f, h: by_value(f["ctx2"], f["cos"], exact=False),
    "BM25 weight 0.3": lambda f, h: by_value(f["ctx2"], f["cos"], 0.3),
    "BM25 weight 0.35": lambda f, h: by_value(f["ctx2"], f["cos"], 0.35),
    "BM25 weight 0.5": lambda f, h: by_value(f["ctx2"], f["cos"], 0.5),
    "BM25 weight 0.6": lambda f, h: by_value(f["ctx2"], f["cos"], 0.6),
    "1 earlier turn": lambda f, h: by_value(f["ctx1"], f["cos"]),
    "3 earlier turns": lambda f, h: by_value(f["ctx3"], f["cos"]),
    "1 earlier turn + the next turn": lambda f, h: by_value(f["ctx1+next"], f["cos"]),
    "context only for memories up to 300 characters": lambda f, h: by_value(f["ctx2<=300"], f["cos"]),
    "context only for memories up to 600 characters": lambda f, h: by_value(f["ctx2<=600"], f["cos"]),
    "context as a second field, weight 0.5": lambda f, h: by_value(f["plain"] + 0.5 * f["ctx2only"], f["cos"]),
    "+ session boost (0.2 x its best turn)": lambda f, h: session_boost(by_value(f["ctx2"], f["cos"]), h.groups),
    "+ dense pseudo-relevance feedback (chunk vectors only)": dense_feedback,
    "product + session as one document (0.3 x best; BM25 0.7, mean vector 0.3)": session_document,
    "product + session as one document (0.2 x best)": lambda f, h: session_document(f, h, 0.2),
    "product + session as one document (0.5 x best)": lambda f, h: session_document(f, h, 0.5),
    "+ keyword feedback (RM3-like: 10 terms of the top 5, weight 0.2)": keyword_feedback,
    "+ a turn scores at least 0.7 of the turn after it": from_next_turn,
    "+ session diversity (x0.9 per earlier pick of its session, top 30)":
        lambda f, h: (by_value(f["ctx2"], f["cos"]), session_diversity()),
    "+ MMR over chunk vectors (redundancy 0.1, top 30)": lambda f, h: (by_value(f["ctx2"], f["cos"]), mmr()),
    "sentence pieces weigh 0.7 (chunks 0.3)":
        lambda f, h: by_value(f["ctx2"], with_piece(f["cos, chunks only"], f["piece"], 0.7)),
    "cosines min-max scaled over the candidates": lambda f, h: min_max_cosines(f["ctx2"], f["cos"]),
    "BM25 share square-rooted": lambda f, h: rooted_bm25(f["ctx2"], f["cos"]),
}
MORE: dict[str, Callable[[Features, Haystack], np.ndarray]] = {
    "chunk vectors without the leading timestamp": lambda f, h: by_value(f["ctx2"], f["cos, stamp-free chunks"]),
    "+ a vector of each turn with the turn before (a quarter of the cosine)":
        lambda f, h: by_value(f["ctx2"], f["cos + turn with the one before"]),
    "dense query: mean of the question and the question without question words":
        lambda f, h: by_value(f["ctx2"], f["cos, query without question words"]),
}


# benchmarks --------------------------------------------------------------------------------------

def rank(scores: np.ndarray | tuple[np.ndarray, Reorder], hay: Haystack, query: str, limit: int = 100) -> list[str]:
    """Memory ids best first: the scores after search's date window and state factor, in order or reordered
    by a variant's reranker."""
    scores, reorder = scores if isinstance(scores, tuple) else (scores, None)
    final = hay.post(scores, query)
    order = reorder(final, hay) if reorder else [i for i in np.argsort(-final, kind="stable") if final[i] > 0]
    return [hay.ids[i] for i in order[:limit]]


def variants(more: bool) -> dict[str, Callable[[Features, Haystack], Any]]:
    return {**VARIANTS, **(MORE if more else {})}


def run_locomo(path: Path, limit: int | None, embedder, model_path: Path,
               more: bool = False) -> dict[str, list[dict[str, float]]]:
    data = json.loads(path.read_text(encoding="utf-8"))[:limit]
    embedder.prefill([c for s in data for t in eval_locomo.conversation_turns(s)
                      for c in eval_locomo.embedding_chunks(t.content)])
    results: dict[str, list[dict[str, float]]] = defaultdict(list)
    for sample in data:
        turns = eval_locomo.conversation_turns(sample)
        session_of = {t.dia_id: t.session for t in turns}
        home = Path(tempfile.mkdtemp(prefix="agentmem-ablation-"))
        try:
            with temp_store(embedder, model_path) as store:
                _, turns_of, _ = eval_locomo.ingest(store, turns)
                memory_ids = list(turns_of)
                hay = Haystack(store, memory_ids, [turns[turns_of[m][0]].session for m in memory_ids], home,
                               embedder, more)
                for qa in eval_locomo.questions(sample):
                    f = hay.features(qa["question"], np.asarray(embedder.embed_query(qa["question"]), np.float32))
                    for name, variant in variants(more).items():
                        ids = rank(variant(f, hay), hay, qa["question"])
                        dias = eval_locomo.unique(turns[p].dia_id for m in ids for p in turns_of[m])
                        metrics = eval_locomo.score(dias, qa["evidence"], session_of)
                        results[name].append({"turn@10": metrics["turn@10"], "session@10": metrics["session@10"]})
        finally:
            shutil.rmtree(home, ignore_errors=True)
        print(f"  {sample.get('sample_id')}: done", file=sys.stderr, flush=True)
    return results


def run_longmemeval(path: Path, limit: int | None, embedder, model_path: Path,
                    more: bool = False) -> dict[str, list[dict[str, float]]]:
    data = json.loads(path.read_text(encoding="utf-8"))[:limit]
    roles = ("user",)
    embedder.prefill([c for item in data for text in eval_longmemeval.haystack_turns(item, roles)[1]
                      for c in eval_longmemeval.embedding_chunks(text)])
    results: dict[str, list[dict[str, float]]] = defaultdict(list)
    for n, item in enumerate(data, start=1):
        turns, contents = eval_longmemeval.haystack_turns(item, roles)
        rel = eval_longmemeval.relevance(item, turns)
        asked_at = eval_longmemeval.parse_date(item["question_date"])
        home = Path(tempfile.mkdtemp(prefix="agentmem-ablation-"))
        try:
            with temp_store(embedder, model_path) as store:
                store.now = lambda at=asked_at: at  # the clock of a deployment asked that day
                _, turns_of, _ = eval_longmemeval.ingest(store, turns, contents)
                memory_ids = list(turns_of)
                hay = Haystack(store, memory_ids, [turns[turns_of[m][0]].session_id for m in memory_ids], home,
                               embedder, more)
                question = item["question"]
                f = hay.features(question, np.asarray(embedder.embed_query(question), np.float32))
                for name, variant in variants(more).items():
                    ranking = eval_longmemeval.rankings_from_memories(rank(variant(f, hay), hay, question),
                                                                      turns_of, turns)
                    metrics = eval_longmemeval.score(ranking, rel)
                    results[name].append({k: metrics[k] for k in ("peer.recall_any@5", "session.recall_all@5",
                                                                   "session.ndcg_any@5", "turn.recall_all@5")
                                          if k in metrics})
        finally:
            shutil.rmtree(home, ignore_errors=True)
        if n % 20 == 0:
            print(f"  questions: {n}/{len(data)}", file=sys.stderr, flush=True)
    return results


def summarize(results: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float | None]]:
    metrics = list(dict.fromkeys(k for rows in results.values() for row in rows for k in row))
    return {name: {m: mean(row[m] for row in rows if m in row) for m in metrics} for name, rows in results.items()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", choices=("locomo", "longmemeval", "both"), default="both")
    parser.add_argument("--locomo", type=Path, default=eval_locomo.DEFAULT_DATA, help="LoCoMo JSON file")
    parser.add_argument("--longmemeval", type=Path, default=eval_longmemeval.DEFAULT_DATA,
                        help="LongMemEval JSON file (user turns are stored)")
    parser.add_argument("--limit", type=int, default=None, help="first N conversations / questions")
    parser.add_argument("--more", action="store_true",
                        help="also the rows that embed other texts (slower on a cold embedding cache)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--model-path", type=Path, default=DEFAULT_MODEL_PATH)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args(argv)
    info = machine_info()
    print_header("Ranking ablations", info)
    began = time.perf_counter()
    embedder = make_embedder(args.model_path, args.cache_dir)
    summary: dict[str, Any] = {}
    if args.benchmark in ("locomo", "both"):
        summary["locomo"] = summarize(run_locomo(args.locomo, args.limit, embedder, args.model_path, args.more))
        print("\n## LoCoMo, categories 1-4 (%)")
        print_table(["variant", "turn@10", "session@10"],
                    [[name, *(fmt(v) for v in row.values())] for name, row in summary["locomo"].items()])
    if args.benchmark in ("longmemeval", "both"):
        summary["longmemeval"] = summarize(run_longmemeval(args.longmemeval, args.limit, embedder, args.model_path,
                                                           args.more))
        print("\n## LongMemEval, user turns (%): peer recall_any@5 over all questions, official metrics over "
              "the official ones")
        print_table(["variant", "peer R@5", "S R_all@5", "S ndcg@5", "T R_all@5"],
                    [[name, *(fmt(v) for v in row.values())] for name, row in summary["longmemeval"].items()])
    embedder.cache.close()
    print(f"\nwall time {time.perf_counter() - began:.0f} s")
    payload = {"run": info, "summary": summary}
    write_json(args.json, payload)
    return payload


if __name__ == "__main__":
    main()
