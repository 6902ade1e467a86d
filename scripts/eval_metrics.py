"""The retrieval evaluations' metrics and baselines: recall, NDCG, MRR and LoCoMo's evidence recall on a ranking,
latency figures, and the plain BM25, dense and RRF rankers the systems are compared with.

The metric functions are pure and follow the definitions of the benchmarks' own code (LongMemEval's
src/retrieval/eval_utils.py, LoCoMo's evidence recall); `tests/test_eval.py` pins them on hand-made
rankings."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


def recall_any(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """1.0 if any relevant id is in the top k (0.0 when nothing is relevant)."""
    top = set(ranked[:k])
    return float(any(doc in top for doc in relevant))


def recall_all(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """1.0 if every relevant id is in the top k (1.0 when nothing is relevant, as upstream)."""
    top = set(ranked[:k])
    return float(all(doc in top for doc in relevant))


def _dcg(gains: Sequence[float], variant: str) -> float:
    if variant == "longmemeval":  # rel_1 + sum_{i>=2} rel_i / log2(i): ranks 1 and 2 weigh the same
        return sum(g if i == 0 else g / math.log2(i + 1) for i, g in enumerate(gains))
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg(ranked: Sequence[str], relevant: Iterable[str], k: int, variant: str = "standard") -> float:
    """Binary-relevance NDCG@k; 0.0 when nothing is relevant.

    variant "standard" discounts rank r by log2(r + 1); "longmemeval" is LongMemEval's own DCG
    (rank 1 undiscounted, rank r >= 2 divided by log2(r)), which its ndcg_any figures use.
    """
    wanted = set(relevant)
    if not wanted:
        return 0.0
    gains = [1.0 if doc in wanted else 0.0 for doc in ranked[:k]]
    ideal = _dcg([1.0] * min(k, len(wanted)), variant)
    return _dcg(gains, variant) / ideal


def mrr(ranked: Sequence[str], relevant: Iterable[str]) -> float:
    """Reciprocal rank of the first relevant id (0.0 if none is ranked)."""
    wanted = set(relevant)
    for rank, doc in enumerate(ranked, start=1):
        if doc in wanted:
            return 1.0 / rank
    return 0.0


def evidence_recall(ranked: Sequence[str], evidence: Iterable[str], k: int) -> float:
    """LoCoMo's retrieval recall: the share of evidence ids in the top k; 1.0 when there is no evidence."""
    wanted = list(dict.fromkeys(evidence))
    if not wanted:
        return 1.0
    top = set(ranked[:k])
    return sum(1 for doc in wanted if doc in top) / len(wanted)


def unique(items: Iterable[str]) -> list[str]:
    """Items in first-seen order without repeats (a turn ranking -> a session ranking)."""
    return list(dict.fromkeys(items))


def mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) with linear interpolation, as numpy's default."""
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))


def latency_summary(seconds: Sequence[float]) -> dict[str, Any]:
    ms = [s * 1000 for s in seconds]
    return {"count": len(ms), "p50_ms": percentile(ms, 50), "p95_ms": percentile(ms, 95),
            "mean_ms": mean(ms), "max_ms": max(ms) if ms else None}


_TOKEN = re.compile(r"\w+", re.UNICODE)


def bm25_tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


class BM25:
    """Plain Okapi BM25 (k1 = 1.2, b = 0.75, Lucene's idf): lowercase word tokens, no stemming, no stop list."""

    def __init__(self, docs: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.lengths = []
        for index, doc in enumerate(docs):
            counts = Counter(bm25_tokens(doc))
            self.lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings[term].append((index, tf))
        self.n = len(docs)
        self.avgdl = (sum(self.lengths) / self.n) if self.n else 1.0

    def scores(self, query: str) -> np.ndarray:
        scores = np.zeros(self.n)
        for term in set(bm25_tokens(query)):
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1 + (self.n - len(posting) + 0.5) / (len(posting) + 0.5))
            for index, tf in posting:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[index] / self.avgdl)
                scores[index] += idf * tf * (self.k1 + 1) / (tf + norm)
        return scores

    def rank(self, query: str) -> list[int]:
        scores = self.scores(query)
        order = np.argsort(-scores, kind="stable")
        return [int(i) for i in order if scores[i] > 0]


class DenseIndex:
    """Brute-force cosine over chunk vectors; a document scores its best chunk."""

    def __init__(self, chunk_vectors: np.ndarray, chunk_doc: Sequence[int], n_docs: int) -> None:
        self.vectors = chunk_vectors.astype(np.float32)
        self.chunk_doc = np.asarray(chunk_doc, dtype=np.int64)
        self.n_docs = n_docs

    def rank(self, query_vector: np.ndarray) -> list[int]:
        if not len(self.vectors):
            return []
        sims = self.vectors @ query_vector.astype(np.float32)
        best = np.full(self.n_docs, -np.inf)
        np.maximum.at(best, self.chunk_doc, sims)
        order = np.argsort(-best, kind="stable")
        return [int(i) for i in order if np.isfinite(best[i])]


def rrf(rankings: Sequence[Sequence[Any]], k: int = 60, weights: Sequence[float] | None = None) -> list[Any]:
    """Plain (weighted) reciprocal rank fusion of several rankings."""
    weights = weights or [1.0] * len(rankings)
    scores: dict[Any, float] = defaultdict(float)
    for weight, ranking in zip(weights, rankings):
        for rank, item in enumerate(ranking, start=1):
            scores[item] += weight / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])
