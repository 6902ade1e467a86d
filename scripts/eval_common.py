"""Shared pieces of the retrieval evaluations: an embedding cache, temporary stores, settings overrides, what a
budgeted answer shows, the report's header. The metrics and baselines are in eval_metrics.py, the model path,
tables and JSON output in harness.py; both are imported from here too, so that the scripts and the tests name
one module."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import os
import platform
import shlex
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from eval_metrics import BM25 as BM25
from eval_metrics import DenseIndex as DenseIndex
from eval_metrics import bm25_tokens as bm25_tokens
from eval_metrics import evidence_recall as evidence_recall
from eval_metrics import latency_summary as latency_summary
from eval_metrics import mean as mean
from eval_metrics import mrr as mrr
from eval_metrics import ndcg as ndcg
from eval_metrics import percentile as percentile
from eval_metrics import recall_all as recall_all
from eval_metrics import recall_any as recall_any
from eval_metrics import rrf as rrf
from eval_metrics import unique as unique
from harness import MODEL_NAME, cpu_model, default_model
from harness import SHARED as SHARED
from harness import fmt as fmt
from harness import print_table as print_table
from harness import write_json as write_json

from agentmem_mcp.config import load_settings
from agentmem_mcp.index.embedder import Embedder
from agentmem_mcp.store import Store

DEFAULT_MODEL_NAME = MODEL_NAME
DEFAULT_MODEL_PATH = default_model()
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentmem-eval"
EVAL_PROJECT = "eval"


def settle(store: Store) -> None:
    """What the background worker does for freshly imported memories before anyone searches them: embed
    their sentence pieces (index/vectors.py) and their new words (index/words.py). A deployment does it
    within a few worker passes."""
    while store.add_sentence_pieces():
        pass
    while store.add_word_vectors():
        pass


def ingest_turns(store: Store, turns: Sequence[tuple[str, float, str]], sessions: bool = True,
                 ) -> tuple[list[str | None], dict[str, list[int]], int]:
    """Save every (content, created_at, session) turn as an episodic memory, in batches of 1,000 (with an opaque id
    of its session unless `sessions` is false), then settle the store; returns the memory id of each turn (None if
    skipped), the turns of each memory, and how many turns were skipped as trivial. Identical contents collapse
    into one memory (the product's duplicate rule), so one memory can stand for several turns."""
    from agentmem_mcp.lifecycle.remember import check_content
    from agentmem_mcp.models import InvalidInput

    items, positions, skipped = [], [], 0
    for position, (content, created_at, session) in enumerate(turns):
        try:
            check_content(content)
        except InvalidInput:
            skipped += 1
            continue
        items.append({"content": content, "type": "context", "tier": "episodic", "project": store.project,
                      "created_at": created_at, "valid_from": created_at, "source": "import",
                      "session_id": session_key(session) if sessions else None})
        positions.append(position)
    memory_of: list[str | None] = [None] * len(turns)
    for start in range(0, len(items), 1000):
        for position, result in zip(positions[start:start + 1000], store.save_many(items[start:start + 1000])):
            memory_of[position] = result.id
    settle(store)
    turns_of: dict[str, list[int]] = defaultdict(list)
    for position, memory_id in enumerate(memory_of):
        if memory_id is not None:
            turns_of[memory_id].append(position)
    return memory_of, turns_of, skipped


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


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options eval_locomo.py and eval_longmemeval.py share: output, model, embedding cache, settings."""
    parser.add_argument("--json", type=Path, default=None, help="write every figure as JSON")
    parser.add_argument("--model-path", type=Path, default=DEFAULT_MODEL_PATH,
                        help="folder of the all-MiniLM-L6-v2 ONNX model (default: ../shared/models/...)")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE,
                        help="embedding cache folder (default: %(default)s)")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="NAME=VALUE",
                        help="override one agentmem setting in every store, e.g. --set rrf_k=10 (repeatable)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
    parser.add_argument("--no-sessions", action="store_true",
                        help="store turns without their session (no neighbouring-turn context): what the context adds")


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
