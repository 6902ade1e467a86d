"""Shared pieces of the retrieval evaluations: metrics, baselines, an embedding cache, temporary stores,
latency statistics, report printing. One module so that both scripts and the tests import the same
definitions.

The metric functions are pure and follow the definitions of the benchmarks' own code (LongMemEval's
src/retrieval/eval_utils.py, LoCoMo's evidence recall); `tests/test_eval.py` pins them on hand-made
rankings.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import math
import os
import platform
import re
import shlex
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from harness import cpu_model

from agentmem_mcp.config import load_settings
from agentmem_mcp.index.embedder import Embedder
from agentmem_mcp.store import Store

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_MODEL_PATH = SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentmem-eval"
EVAL_PROJECT = "eval"


# metrics -----------------------------------------------------------------------------------------

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


# baselines over the same documents ---------------------------------------------------------------

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


def settle(store: Store) -> None:
    """What the background worker does for freshly imported memories before anyone searches them: embed
    their sentence pieces (index/vectors.py) and their new words (index/words.py). A deployment does it
    within a few worker passes."""
    while store.add_sentence_pieces():
        pass
    while store.add_word_vectors():
        pass


def store_chunk_vectors(store: Store, memory_ids: Sequence[str], pieces: bool = False,
                        answers: bool = False) -> tuple[np.ndarray, list[int]]:
    """The float vectors agentmem stored for these memories' chunks (or, with `pieces`, their sentence
    pieces; with `answers`, their answer chunks), and each one's index in `memory_ids`: the dense baseline
    searches the memories' own chunk vectors, as the product's KNN does without answer chunks (read from
    `memory_chunks.embedding`, or from the vec0 table when it holds the floats)."""
    from agentmem_mcp.index.vectors import ANSWER_INDEX, PIECE_INDEX

    position = {memory_id: i for i, memory_id in enumerate(memory_ids)}
    dim = store.embedder.dimension or 384
    columns = {row[1] for row in store.conn.execute("PRAGMA table_info(memory_chunks)")}
    sql = ("SELECT memory_id, embedding FROM memory_chunks c" if "embedding" in columns else
           "SELECT c.memory_id, v.embedding FROM memory_chunks c JOIN memory_vectors v ON v.chunk_id = c.id")
    sql += (f" WHERE c.chunk_index >= {PIECE_INDEX}" if pieces else f" WHERE c.chunk_index = {ANSWER_INDEX}"
            if answers else f" WHERE c.chunk_index < {ANSWER_INDEX}")
    vectors, owners = [], []
    for memory_id, blob in store.conn.execute(sql).fetchall():
        if memory_id in position and blob is not None and len(blob) == dim * 4:
            vectors.append(np.frombuffer(blob, dtype=np.float32))
            owners.append(position[memory_id])
    return (np.vstack(vectors) if vectors else np.zeros((0, dim), np.float32)), owners


# the embedding cache -----------------------------------------------------------------------------

class EmbeddingCache:
    """Vectors by (model, text) hash, in memory and optionally in a SQLite file, so a re-run (or another
    experiment on the same texts) does not pay for the model again. Vectors are the model's own output."""

    def __init__(self, path: Path | None, model_id: str) -> None:
        self.model_id = model_id
        self.memory: dict[bytes, np.ndarray] = {}
        self.db: sqlite3.Connection | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(path), timeout=60, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")
            self.db.commit()

    def key(self, text: str) -> bytes:
        return hashlib.sha1(f"{self.model_id}\x00{text}".encode()).digest()

    def get_many(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        keys = [self.key(t) for t in texts]
        missing = [k for k in dict.fromkeys(keys) if k not in self.memory]
        if missing and self.db is not None:
            for start in range(0, len(missing), 500):
                part = missing[start:start + 500]
                marks = ",".join("?" * len(part))
                for key, blob in self.db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part):
                    self.memory[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
        return [self.memory.get(k) for k in keys]

    def put_many(self, texts: Sequence[str], vectors: Sequence[np.ndarray]) -> None:
        rows = []
        for text, vector in zip(texts, vectors):
            key = self.key(text)
            self.memory[key] = np.asarray(vector, dtype=np.float32)
            rows.append((key, self.memory[key].tobytes()))
        if self.db is not None and rows:
            self.db.executemany("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)", rows)
            self.db.commit()

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


class CachingEmbedder(Embedder):
    """The product's Embedder (same model, same query path) whose passage vectors are memoised.

    Misses are embedded in length-sorted batches of `batch_size` (less padding: ~1.5x faster on a small
    CPU than the product's batches of 32). Query embeddings are never cached, so search latency is real.
    """

    def __init__(self, model_name: str, model_path: Path | None, cache: EmbeddingCache, batch_size: int = 8) -> None:
        super().__init__(model_name, model_path)
        self.cache = cache
        self.batch_size = batch_size
        self.computed = 0
        self.compute_seconds = 0.0

    def embed(self, texts: Sequence[str]) -> list[Any] | None:
        if not self.ready or not texts:
            return None if not self.ready else []
        found = self.cache.get_many(texts)
        missing = list(dict.fromkeys(t for t, v in zip(texts, found) if v is None))
        if missing:
            self.compute(missing)
            found = self.cache.get_many(texts)
        return list(found)

    def compute(self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None) -> None:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        step = max(self.batch_size * 32, 256)
        for start in range(0, len(order), step):
            part = [texts[i] for i in order[start:start + step]]
            began = time.perf_counter()
            vectors = [v.astype("float32") for v in self._model.embed(part, batch_size=self.batch_size)]
            self.compute_seconds += time.perf_counter() - began
            self.computed += len(part)
            self.cache.put_many(part, vectors)
            if progress:
                progress(min(start + step, len(order)), len(order))

    def prefill(self, texts: Iterable[str], progress: Callable[[int, int], None] | None = None) -> int:
        """Embed, ahead of ingestion, every text not yet cached; returns how many were computed."""
        texts = list(dict.fromkeys(texts))
        found = self.cache.get_many(texts)
        missing = [t for t, v in zip(texts, found) if v is None]
        if missing:
            self.compute(missing, progress)
        return len(missing)


def embedding_chunks(content: str, title: str | None = None) -> list[str]:
    """The chunk texts agentmem's write path embeds for a memory (to prefill the cache; a mismatch after a
    product change only costs time: the write path embeds whatever it misses)."""
    from agentmem_mcp.index.vectors import chunk_text, memory_pieces
    from agentmem_mcp.lifecycle.remember import check_content, derive_title
    from agentmem_mcp.store import memory_text

    body = check_content(content)
    text = memory_text(title or derive_title(body), body)
    return [*chunk_text(text), *memory_pieces(text, body)]


def make_embedder(model_path: Path, cache_dir: Path | None, model_name: str = DEFAULT_MODEL_NAME) -> CachingEmbedder:
    cache = EmbeddingCache(cache_dir / "embeddings.sqlite" if cache_dir else None, model_name)
    embedder = CachingEmbedder(model_name, model_path, cache)
    if not embedder.load():
        raise SystemExit(f"cannot load the embedding model from {model_path}: {embedder.error}\n"
                         "Pass --model-path DIR (a fastembed-compatible all-MiniLM-L6-v2 folder).")
    return embedder


def setting_overrides(pairs: Sequence[str]) -> dict[str, str]:
    """`--set rrf_k=10` (or `--set AGENTMEM_RRF_K=10`) -> {"AGENTMEM_RRF_K": "10"}, checked against the settings."""
    from agentmem_mcp.config import SETTINGS

    by_name = {f.name: f.env for f in SETTINGS} | {f.env: f.env for f in SETTINGS}
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name.strip() not in by_name:
            raise SystemExit(f"--set {pair!r}: expected NAME=VALUE with NAME one of {', '.join(sorted(by_name))}")
        env[by_name[name.strip()]] = value.strip()
    load_settings(env=env, home=Path(tempfile.gettempdir()))  # fail early on a bad value
    return env


@contextlib.contextmanager
def temp_store(embedder: Embedder, model_path: Path, project: str = EVAL_PROJECT,
               env: dict[str, str] | None = None) -> Iterator[Store]:
    """A fresh store in a temporary home with default settings, except the `env` overrides (AGENTMEM_* names);
    the caller's own AGENTMEM_* environment and config file are ignored."""
    home = Path(tempfile.mkdtemp(prefix="agentmem-eval-"))
    store = None
    try:
        settings = load_settings(env=env or {}, home=home, embed_model_path=model_path)
        store = Store.open(settings, project=project, embedder=embedder)
        yield store
    finally:
        if store is not None:
            store.close()
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def with_settings(store: Store, **changes: Any) -> Iterator[Store]:
    """The same store (same memories, same indexes) searched with other settings for a while, e.g.
    `fusion="rrf"`: a comparison row that costs no second ingestion."""
    saved = store.settings
    store.settings = saved.replace(**changes)
    try:
        yield store
    finally:
        store.settings = saved


def session_key(session: str) -> str:
    """The session id a stored turn carries: an opaque digest of the benchmark's own id, so that nothing
    such as LongMemEval's `answer_` prefix reaches the store (the store only groups turns by it)."""
    return "s-" + hashlib.sha1(session.encode()).hexdigest()[:16]


def timed_search(store: Store, query: str, latencies: list[float], **options: Any):
    began = time.perf_counter()
    result = store.search(query, record_access=False, **options)
    latencies.append(time.perf_counter() - began)
    return result


# what a budgeted answer shows --------------------------------------------------------------------

def _normal(text: str) -> str:
    return " ".join(text.split())


def visible_fraction(content: str, span: tuple[int, int], shown: Sequence[str]) -> float:
    """The share of content[span] (in whitespace-normalised form) that appears in the shown pieces of text
    (hit titles and snippets, ellipses removed), each located in the normalised content."""
    start, end = span
    normal = _normal(content)
    text_start = len(_normal(content[:start])) + (1 if start and content[start - 1].isspace() else 0)
    piece = _normal(content[start:end])
    text_start = normal.find(piece, max(0, text_start - 2)) if piece else -1
    if text_start < 0 or not piece:
        return 0.0
    text_end = text_start + len(piece)
    covered: list[tuple[int, int]] = []
    for raw in shown:
        core = _normal(raw.strip("…").strip())
        if len(core) < 8:
            continue
        at = normal.find(core)
        while at >= 0:
            covered.append((max(at, text_start), min(at + len(core), text_end)))
            at = normal.find(core, at + 1)
    covered = sorted((a, b) for a, b in covered if b > a)
    total, reach = 0, text_start
    for a, b in covered:
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total / len(piece)


# reporting ---------------------------------------------------------------------------------------

def machine_info() -> dict[str, Any]:
    cpu = cpu_model()
    return {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"), "nproc": os.cpu_count(),
            "cpu": cpu, "python": platform.python_version(), "platform": platform.platform(),
            "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
            "command": " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv])}


def print_header(title: str, info: dict[str, Any]) -> None:
    print(f"# {title}")
    print(f"date: {info['date']}   machine: {info['nproc']} cpus, {info['cpu']}   python {info['python']}   "
          f"load average at start: {info['load_average']}")
    print(f"command: {info['command']}")


def fmt(value: Any, percent: bool = True) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value * 100:.1f}" if percent else f"{value:.3f}"
    return str(value)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def write_json(path: Path | None, payload: dict[str, Any]) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")


def progress_printer(label: str, every: float = 10.0) -> Callable[[int, int], None]:
    began = time.perf_counter()
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.perf_counter()
        if now - last[0] >= every or done == total:
            last[0] = now
            rate = done / max(now - began, 1e-9)
            eta = (total - done) / rate if rate else 0
            print(f"  {label}: {done}/{total} ({rate:.1f}/s, {eta:.0f}s left)", file=sys.stderr, flush=True)
    return report
