"""Sentence embeddings, loaded lazily (and in the background by the server).

The default model runs on `tokenizers` and `onnxruntime` directly (index/sentence_model.py), without fastembed's
imports; any other model runs on fastembed. Its files come from AGENTMEM_EMBED_MODEL_PATH or fastembed's
download (index/model_files.py). Until the model is ready, `vectors()` returns None and search runs on BM25 +
graph.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .heap import release_freed
from .model_files import ModelUnavailable, cached_or_downloaded, default_model_cache, downloaded_folder, local_folder
from .sentence_model import MEAN_POOLED, SentenceModel, onnx_session, without_telemetry

log = logging.getLogger("agentmem.embedder")

# Known dimensions, so a vector table can be made before the model has loaded.
KNOWN_DIMENSIONS = {
    "sentence-transformers/all-MiniLM-L6-v2": 384,
    "BAAI/bge-small-en-v1.5": 384,
    "BAAI/bge-base-en-v1.5": 768,
    "nomic-ai/nomic-embed-text-v1.5": 768,
}


def without_spinning(model: Any) -> Any:
    """The same fastembed model (same tokenizer) on an onnxruntime session whose threads sleep when idle;
    the model itself if fastembed's internals differ (fastembed does not expose the setting).

    By default onnxruntime's threads spin for a while after each inference, and on two cores that takes a
    core from whatever search does next (similar words, the join): searches over long memories are faster
    with threads that sleep, and on short ones the two are the same within noise, saving included
    (docs/benchmarks.md). Making the session again costs 0.25 s at load; `heap.release_freed` then
    gives the first session's memory back."""
    try:
        import copy

        quiet = copy.copy(model)
        quiet.model = copy.copy(model.model)
        quiet.model.model = session_like(model.model.model, spinning=False)
        return quiet
    except Exception as exc:  # a slower search is still a search
        log.info("the model keeps its own onnxruntime session (fastembed internals differ): %s: %s",
                 type(exc).__name__, exc)
        return model


def session_like(session: Any, *, spinning: bool) -> Any:
    """A new onnxruntime session of the same model file, providers and thread counts as `session`, with threads
    that spin after each inference or not (and then no memory arena: `sentence_model.onnx_session`)."""
    old = session.get_session_options()
    return onnx_session(session._model_path, spinning=spinning, intra_threads=old.intra_op_num_threads,
                        inter_threads=old.inter_op_num_threads, providers=session.get_providers())


# Texts per model call, sorted by length first: small batches of like length ran faster than big ones on a 2-core
# machine, idle and loaded (scripts/bench_embed_batch.py; docs/benchmarks.md, "Background worker"); texts of a word
# or two (the worker's word vectors) take less of the model's time in bigger batches
MODEL_BATCH = 4
SHORT_TEXT_CHARS = 24
SHORT_TEXT_BATCH = 32
PASSAGE_CACHE_ENTRIES = 4096  # ~1.5 KB of vector a text (384 float32), plus the text: a few MB at most
QUERY_CACHE_ENTRIES = 512


class PassageCache:
    """The vectors of the texts embedded last (least recently used dropped first), safe across threads."""

    def __init__(self, entries: int = PASSAGE_CACHE_ENTRIES) -> None:
        self.entries = entries
        self._vectors: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    def get_many(self, texts: Sequence[str]) -> list[Any | None]:
        with self._lock:
            found = []
            for text in texts:
                vector = self._vectors.get(text)
                if vector is not None:
                    self._vectors.move_to_end(text)
                    self.hits += 1
                found.append(vector)
            return found

    def __contains__(self, text: str) -> bool:
        with self._lock:
            return text in self._vectors

    def put_many(self, texts: Sequence[str], vectors: Sequence[Any]) -> None:
        with self._lock:
            for text, vector in zip(texts, vectors):
                self._vectors[text] = vector
                self._vectors.move_to_end(text)
            while len(self._vectors) > self.entries:
                self._vectors.popitem(last=False)


class Embedder:
    """The embedding model behind a lock, with background loading and a recorded failure."""

    def __init__(self, model_name: str, model_path: Path | None = None, *, enabled: bool = True,
                 cache_dir: Path | None = None) -> None:
        self.model_name = model_name
        self.model_path = model_path
        self.cache_dir = cache_dir  # None: default_model_cache()
        self.enabled = enabled
        self._model: Any = None
        self._error: str | None = None if enabled else "embeddings are turned off (AGENTMEM_EMBEDDINGS=0)"
        self._loaded = threading.Event()
        self._lock = threading.Lock()
        self._announced = False
        self.dimension: int | None = KNOWN_DIMENSIONS.get(model_name)
        self.passages = PassageCache()
        self.queries = PassageCache(QUERY_CACHE_ENTRIES)
        if not enabled:
            self._loaded.set()

    @property
    def model_id(self) -> str:
        return self.model_name

    @property
    def ready(self) -> bool:
        return self._model is not None

    @property
    def error(self) -> str | None:
        return self._error

    @property
    def status(self) -> str:
        if self.ready:
            return "ready"
        if self._error:
            return f"unavailable: {self._error}"
        return "loading" if self._announced or self._lock.locked() else "not loaded"

    def announce_loading(self) -> None:
        """Say "loading" from now on until the model is loaded: a caller is about to call `load` on its own
        thread (the server does, right after opening the store)."""
        self._announced = True

    def load(self) -> bool:
        """Load the model now (blocking). Returns whether it is usable."""
        with self._lock:
            if self._loaded.is_set():
                return self.ready
            try:
                without_telemetry()
                model = self._load_model()
                self.dimension = int(next(iter(model.embed(["probe"]))).shape[0])
                self._model = model
                release_freed()
            except Exception as exc:  # any failure means "no vectors", never a crash
                self._error = str(exc) if isinstance(exc, ModelUnavailable) else f"{type(exc).__name__}: {exc}"
                # a model that is simply not here is reported by `status` (search notes, doctor), once
                (log.info if isinstance(exc, ModelUnavailable) else log.warning)(
                    "embedding model %s unavailable: %s", self.model_name, self._error)
            finally:
                self._loaded.set()
        return self.ready

    def _load_model(self) -> Any:
        """The model on a session whose threads do not spin: run here (`SentenceModel`) if it is one of
        `MEAN_POOLED`, else fastembed's TextEmbedding."""
        cache = self.cache_dir or default_model_cache()
        model_file = MEAN_POOLED.get(self.model_name)
        if model_file is not None:
            folder = (local_folder(self.model_path) if self.model_path is not None
                      else downloaded_folder(self.model_name, cache))
            return SentenceModel(folder, model_file)
        if self.model_path is not None:
            from fastembed import TextEmbedding

            model = TextEmbedding(model_name=self.model_name, specific_model_path=str(local_folder(self.model_path)))
        else:
            model = cached_or_downloaded(self.model_name, cache)
        return without_spinning(model)  # the first session's memory goes back to the system in `load`

    def wait(self) -> bool:
        """Load the model unless it is loaded (blocking; a load on another thread is waited for). Returns whether
        it is usable."""
        return self.ready if self._loaded.is_set() else self.load()

    def embed(self, texts: Sequence[str]) -> list[Any] | None:
        """Normalised float32 vectors for passages, or None when the model is not ready. A text embedded lately by
        this process is not embedded again (`PassageCache`: a session's summary saved again at each turn repeats
        most of its lines, a prompt or an error repeats)."""
        if not self.ready or not texts:
            return None if not self.ready else []
        texts = list(texts)
        found = self.passages.get_many(texts)
        missing = list(dict.fromkeys(t for t, v in zip(texts, found) if v is None))
        if missing:
            computed = self._embed_passages(missing)
            if computed is None:
                return None
            self.passages.put_many(missing, computed)
            fresh = dict(zip(missing, computed))
            found = [v if v is not None else fresh[t] for t, v in zip(texts, found)]
        return [v.copy() for v in found]

    def _embed_passages(self, texts: list[str]) -> list[Any] | None:
        """The model's vectors for `texts` (all different), in order."""
        # texts of like length batched together: a batch is padded to its longest text, so one long text among
        # short ones makes the whole batch cost what it costs
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        short = sum(1 for i in order if len(texts[i]) <= SHORT_TEXT_CHARS)
        vectors: list[Any] = [None] * len(texts)
        for part, batch in ((order[:short], SHORT_TEXT_BATCH), (order[short:], MODEL_BATCH)):
            if part:
                for index, vector in zip(part, self._model.embed([texts[i] for i in part], batch_size=batch)):
                    vectors[index] = vector.astype("float32")
        if len(texts) > 32:  # a big batch's working memory goes back to the system (no arena keeps it)
            release_freed()
        return vectors

    def embed_query(self, text: str) -> Any | None:
        """The query's normalised float32 vector, or None when the model is not ready. A query asked lately is not
        embedded again (an agent repeats a search; a prompt is recalled by the hook, then searched by the agent)."""
        if not self.ready:
            return None
        [vector] = self.queries.get_many([text])
        if vector is None:
            vector = self._embed_query(text)
            if vector is None:
                return None
            self.queries.put_many([text], [vector])
        return vector.copy()

    def knows_query(self, text: str) -> bool:
        """Whether `embed_query(text)` would answer from the queries asked lately, without the model."""
        return self.ready and text in self.queries

    def _embed_query(self, text: str) -> Any | None:
        """The model's vector for one query."""
        return next(iter(self._model.query_embed([text]))).astype("float32")
