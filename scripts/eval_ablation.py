"""Ranking ablations on LoCoMo and LongMemEval: what each ingredient of agentmem's search is worth, and
what the alternatives measured. The harness to tune against before changing search.

    python scripts/eval_ablation.py [--benchmark locomo|longmemeval|both] [--limit N] [--json FIGURES.json]

Each LoCoMo conversation and each LongMemEval haystack (user turns) is ingested once through the real write
path into a fresh store, as eval_locomo.py and eval_longmemeval.py do. For each question the script then
computes, over every memory of the store, tantivy BM25 scores (the product's analyzer) over several
document variants (the memory alone; with one to three earlier turns of its session, as
index/neighbours.py builds them; with the turn after as well; the context alone) and the exact cosine of
every memory to the query (the store's own vectors). Each variant ranks the memories from those arrays
as search does (candidates: the top 60 of each retriever; scores fused by value or by reciprocal rank),
applies search's date window and the memories' state factor, and is scored with the benchmarks' own
metrics. The row `product` mirrors `Store.search`; the evaluation scripts measure the real search path.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_locomo  # noqa: E402
import eval_longmemeval  # noqa: E402
from eval_common import (  # noqa: E402
    DEFAULT_CACHE,
    DEFAULT_MODEL_PATH,
    fmt,
    machine_info,
    make_embedder,
    mean,
    print_header,
    print_table,
    store_chunk_vectors,
    temp_store,
    write_json,
)

from agentmem_mcp.index.fulltext import FulltextDoc, FulltextIndex  # noqa: E402
from agentmem_mcp.index.neighbours import context_text  # noqa: E402
from agentmem_mcp.lifecycle.retention import retention  # noqa: E402
from agentmem_mcp.ranking import state_factor  # noqa: E402
from agentmem_mcp.retrieval import RETRIEVER_DEPTH, TIME_WINDOW_BOOST  # noqa: E402
from agentmem_mcp.store import memory_text  # noqa: E402
from agentmem_mcp.timewords import time_window, without_relative_time  # noqa: E402

Features = dict[str, np.ndarray]

# BM25 document variants: name -> (earlier turns, with the next turn, context only, longest memory given one)
DOCUMENTS = {"plain": (0, False, False, None), "ctx1": (1, False, False, None), "ctx2": (2, False, False, None),
             "ctx3": (3, False, False, None), "ctx1+next": (1, True, False, None), "ctx2only": (2, False, True, None),
             "ctx2<=300": (2, False, False, 300), "ctx2<=600": (2, False, False, 600)}


def contexts(contents: list[str], groups: list[str], earlier: int, with_next: bool,
             longest: int | None = None) -> list[str]:
    """Each memory's BM25 context, as index/neighbours.py builds it from the `earlier` memories before it in
    its session (nearest first), optionally followed by the opening of the memory after it; none for a
    memory longer than `longest` characters."""
    out = []
    for i in range(len(contents)):
        if longest is not None and len(contents[i]) > longest:
            out.append("")
            continue
        before = []
        for j in range(i - 1, -1, -1):
            if groups[j] != groups[i] or len(before) == earlier:
                break
            before.append(contents[j])
        context = context_text(before, turns=earlier) if earlier else ""
        if with_next and i + 1 < len(contents) and groups[i + 1] == groups[i]:
            context = "\n".join(p for p in (context, context_text([contents[i + 1]], turns=1)) if p)
        out.append(context)
    return out


class Haystack:
    """One store's memories in time order, their BM25 variants, vectors and state factors."""

    def __init__(self, store, memory_ids: list[str], groups: list[str], home: Path) -> None:
        self.store, self.ids, self.groups = store, memory_ids, groups
        self.position = {m: i for i, m in enumerate(memory_ids)}
        rows = {r["id"]: r for r in store.conn.execute("SELECT * FROM memories")}
        texts = [memory_text(rows[m]["title"], rows[m]["content"], [], []) for m in memory_ids]
        contents = [rows[m]["content"] for m in memory_ids]
        self.created = np.array([rows[m]["created_at"] for m in memory_ids])
        now = store.now()
        self.state = np.array([state_factor(rows[m]["confidence"], rows[m]["importance"], rows[m]["priority"],
                                            retention((now - rows[m]["created_at"]) / 86400, rows[m]["strength"]))
                               for m in memory_ids])
        self.indexes = {}
        for name, (earlier, with_next, only, longest) in DOCUMENTS.items():
            index = FulltextIndex(home / name)
            context = contexts(contents, groups, earlier, with_next, longest)
            docs = context if only else ["\n".join(p for p in pair if p) for pair in zip(texts, context)]
            index.apply([FulltextDoc(m, store.project, "episodic", "context", True, d)
                         for m, d in zip(memory_ids, docs)], [])
            self.indexes[name] = index
        self.chunks, owners = store_chunk_vectors(store, memory_ids)
        self.owners = np.asarray(owners)
        self.pieces, piece_owners = store_chunk_vectors(store, memory_ids, pieces=True)
        self.piece_owners = np.asarray(piece_owners, dtype=int)

    def features(self, query: str, query_vector: np.ndarray) -> Features:
        n = len(self.ids)
        out: Features = {}
        keywords = without_relative_time(query)  # as Store.search does
        for name, index in self.indexes.items():
            out[name] = self.bm25(index, keywords)
        out["ctx2, raw query"] = self.bm25(self.indexes["ctx2"], query) if keywords != query else out["ctx2"]
        sims = self.chunks @ query_vector
        cos = np.full(n, -1.0)
        np.maximum.at(cos, self.owners, sims)
        piece = np.full(n, -2.0)
        if len(self.piece_owners):
            np.maximum.at(piece, self.piece_owners, self.pieces @ query_vector)
        out["cos, chunks only"] = cos
        out["cos"] = np.where(piece > -2.0, (cos + piece) / 2, cos)  # vectors.combine
        out["qvec"] = query_vector
        return out

    def bm25(self, index: FulltextIndex, query: str) -> np.ndarray:
        scores = np.zeros(len(self.ids))
        for memory_id, score in index.search(query, projects=None, latest_only=False, limit=len(self.ids)):
            scores[self.position[memory_id]] = score
        return scores

    def post(self, scores: np.ndarray, query: str) -> np.ndarray:
        window = time_window(query, self.store.now())
        if window is not None:
            scores = scores * np.where((self.created >= window[0]) & (self.created <= window[1]),
                                       TIME_WINDOW_BOOST, 1.0)
        return scores * self.state


# fusion ------------------------------------------------------------------------------------------

def top(scores: np.ndarray, depth: int = RETRIEVER_DEPTH) -> np.ndarray:
    mask = np.zeros(len(scores), bool)
    mask[np.argsort(-scores, kind="stable")[:depth]] = True
    return mask & (scores > 0)


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


def session_boost(scores: np.ndarray, groups: list[str], share: float = 0.2) -> np.ndarray:
    best: dict[str, float] = defaultdict(float)
    for score, group in zip(scores, groups):
        best[group] = max(best[group], score)
    return np.where(scores > 0, scores + share * np.array([best[g] for g in groups]), 0.0)


def dense_feedback(f: Features, hay: Haystack, beta: float = 0.5, m: int = 3) -> np.ndarray:
    """Rocchio on the query vector: add the mean vector of the top m memories of a first pass."""
    first = by_value(f["ctx2"], f["cos"])
    chosen = np.argsort(-first)[:m]
    vectors = np.zeros((m, hay.chunks.shape[1]), np.float32)
    for n, i in enumerate(chosen):
        vectors[n] = hay.chunks[np.flatnonzero(hay.owners == i)[0]]
    query = f["qvec"] + beta * vectors.mean(axis=0)
    query /= np.linalg.norm(query)
    sims = hay.chunks @ query
    cos = np.full(len(hay.ids), -1.0)
    np.maximum.at(cos, hay.owners, sims)
    return by_value(f["ctx2"], cos)


VARIANTS: dict[str, Callable[[Features, Haystack], np.ndarray]] = {
    "product: score fusion 0.4/0.6, 2 earlier turns, exact cosines": lambda f, h: by_value(f["ctx2"], f["cos"]),
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
}


# benchmarks --------------------------------------------------------------------------------------

def rank(scores: np.ndarray, hay: Haystack, query: str, limit: int = 100) -> list[str]:
    final = hay.post(scores, query)
    order = [i for i in np.argsort(-final, kind="stable")[:limit] if final[i] > 0]
    return [hay.ids[i] for i in order]


def run_locomo(path: Path, limit: int | None, embedder, model_path: Path) -> dict[str, list[dict[str, float]]]:
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
                hay = Haystack(store, memory_ids, [turns[turns_of[m][0]].session for m in memory_ids], home)
                for qa in eval_locomo.questions(sample):
                    f = hay.features(qa["question"], np.asarray(embedder.embed_query(qa["question"]), np.float32))
                    for name, variant in VARIANTS.items():
                        ids = rank(variant(f, hay), hay, qa["question"])
                        dias = eval_locomo.unique(turns[p].dia_id for m in ids for p in turns_of[m])
                        metrics = eval_locomo.score(dias, qa["evidence"], session_of)
                        results[name].append({"turn@10": metrics["turn@10"], "session@10": metrics["session@10"]})
        finally:
            shutil.rmtree(home, ignore_errors=True)
        print(f"  {sample.get('sample_id')}: done", file=sys.stderr, flush=True)
    return results


def run_longmemeval(path: Path, limit: int | None, embedder, model_path: Path) -> dict[str, list[dict[str, float]]]:
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
                hay = Haystack(store, memory_ids, [turns[turns_of[m][0]].session_id for m in memory_ids], home)
                question = item["question"]
                f = hay.features(question, np.asarray(embedder.embed_query(question), np.float32))
                for name, variant in VARIANTS.items():
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
        summary["locomo"] = summarize(run_locomo(args.locomo, args.limit, embedder, args.model_path))
        print("\n## LoCoMo, categories 1-4 (%)")
        print_table(["variant", "turn@10", "session@10"],
                    [[name, *(fmt(v) for v in row.values())] for name, row in summary["locomo"].items()])
    if args.benchmark in ("longmemeval", "both"):
        summary["longmemeval"] = summarize(run_longmemeval(args.longmemeval, args.limit, embedder, args.model_path))
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
