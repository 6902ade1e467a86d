"""Sentence embeddings with fastembed, loaded lazily (and in the background by the server).

Until the model is ready, `vectors()` returns None and search runs on BM25 + graph.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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
    core from whatever search does next (similar words, the join). On LongMemEval with assistant turns
    stored, search as an agent calls it went from p50 / p95 25.3-26.1 / 47.0-55.5 ms to 20.2-21.3 /
    31.2-36.5 ms (docs/benchmarks.md); on the short memories of the bench store the two are the same within
    noise, saving included. Making the session again costs 0.25 s at load; `_release_freed_memory` then
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
    """A new onnxruntime session of the same model file, providers and thread counts as `session`, made as
    fastembed makes it, with threads that spin after each inference (onnxruntime's default) or not.

    Without spinning, the session also has no CPU memory arena: the arena keeps the peak of every batch it has
    run (64 passages of ~200 tokens took a process from 188 to 963 MB, and it stayed there); without it the
    memory goes back after the batch, at the same speed (docs/benchmarks.md, issue 22)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    old = session.get_session_options()
    if old.intra_op_num_threads:
        options.intra_op_num_threads = old.intra_op_num_threads
        options.inter_op_num_threads = old.inter_op_num_threads
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.enable_cpu_mem_arena = False
    return ort.InferenceSession(session._model_path, sess_options=options, providers=session.get_providers())


def without_telemetry() -> None:
    """Keep onnxruntime from sending usage telemetry. onnxruntime 1.32 starts a thread at import that sends
    events to mobile.events.data.microsoft.com and queues them in ~/.cache/Microsoft/DeveloperTools/; its
    DNS lookups were the UDP socket that the stress test's network check caught (docs/reliability.md).
    agentmem sends nothing of its own accord: ORT_DISABLE_TELEMETRY is set before the import (unless the user set
    it), and telemetry events are turned off after it, for a process that imported onnxruntime earlier.
    The model's first download (no AGENTMEM_EMBED_MODEL_PATH) goes through huggingface_hub, which adds
    the torch version and the coding agent it detects to its user agent unless HF_HUB_DISABLE_TELEMETRY
    is set: it is set too (before fastembed imports huggingface_hub)."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    if os.environ["ORT_DISABLE_TELEMETRY"] not in ("0", "false", "False"):
        try:
            import onnxruntime

            onnxruntime.disable_telemetry_events()
        except (ImportError, AttributeError) as exc:
            log.info("onnxruntime telemetry not turned off after import: %s", exc)


def default_model_cache(env: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    """Where a downloaded model is kept: FASTEMBED_CACHE_PATH if set, else agentmem's folder in the user's
    cache directory (`$XDG_CACHE_HOME/agentmem/models`, `~/.cache/agentmem/models`; on macOS
    `~/Library/Caches/agentmem/models`), which outlives a reboot (fastembed's own default is under /tmp)."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    if env.get("FASTEMBED_CACHE_PATH"):
        return Path(env["FASTEMBED_CACHE_PATH"]).expanduser()
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "agentmem" / "models"
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else home / ".cache"
    return base / "agentmem" / "models"


def _offline(env: Mapping[str, str]) -> bool:
    return env.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "TRUE", "YES", "ON"}


def _hub_reachable(env: Mapping[str, str], timeout: float = 3.0) -> bool:
    """Whether the model hub answers a TCP connection within `timeout` (a proxy is trusted to)."""
    if any(env.get(name) for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    host = urlsplit(env.get("HF_ENDPOINT") or "https://huggingface.co")
    try:
        socket.create_connection((host.hostname or "huggingface.co", host.port or 443), timeout=timeout).close()
    except OSError:
        return False
    return True


class ModelUnavailable(RuntimeError):
    """The model is neither at AGENTMEM_EMBED_MODEL_PATH nor in the cache, and cannot be downloaded now."""


def _no_download(model_name: str, cache: Path, why: str) -> ModelUnavailable:
    return ModelUnavailable(
        f"the embedding model {model_name} is not in {cache} and cannot be downloaded ({why}): set "
        f"AGENTMEM_EMBED_MODEL_PATH to a folder holding the model, or allow the one-time download; "
        f"search uses keywords only meanwhile")


def _release_freed_memory() -> None:
    """Hand memory freed on the C heap back to the system (glibc): the first session's, after
    `without_spinning`. `agentmem serve` then holds 259 MB once the model is loaded, against 314 MB before
    (scripts/bench_hooks.py, docs/benchmarks.md). Elsewhere, nothing."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


# Texts per model call, sorted by length first: small batches of like length ran faster than big ones on a 2-core
# machine, idle and loaded (scripts/bench_embed_batch.py; docs/benchmarks.md, "Background worker")
MODEL_BATCH = 8
PASSAGE_CACHE_ENTRIES = 4096  # ~1.5 KB of vector a text (384 float32), plus the text: a few MB at most


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

    def put_many(self, texts: Sequence[str], vectors: Sequence[Any]) -> None:
        with self._lock:
            for text, vector in zip(texts, vectors):
                self._vectors[text] = vector
                self._vectors.move_to_end(text)
            while len(self._vectors) > self.entries:
                self._vectors.popitem(last=False)


class Embedder:
    """A fastembed TextEmbedding behind a lock, with background loading and a recorded failure."""

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
        self._thread: threading.Thread | None = None
        self._announced = False
        self.dimension: int | None = KNOWN_DIMENSIONS.get(model_name)
        self.passages = PassageCache()
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
        return "loading" if self._thread is not None or self._announced or self._lock.locked() else "not loaded"

    def announce_loading(self) -> None:
        """Say "loading" from now on until the model is loaded: a caller is about to call `load` on its own
        thread (the server does, right after opening the store)."""
        self._announced = True

    def start_loading(self) -> None:
        """Load the model on a daemon thread; returns at once."""
        if not self.enabled or self._thread is not None or self._loaded.is_set():
            return
        self._thread = threading.Thread(target=self.load, name="agentmem-embedder", daemon=True)
        self._thread.start()

    def load(self) -> bool:
        """Load the model now (blocking). Returns whether it is usable."""
        with self._lock:
            if self._loaded.is_set():
                return self.ready
            try:
                without_telemetry()
                from fastembed import TextEmbedding

                kwargs: dict[str, Any] = {"model_name": self.model_name}
                if self.model_path is not None:
                    if not Path(self.model_path).is_dir():
                        raise ModelUnavailable(
                            f"AGENTMEM_EMBED_MODEL_PATH={self.model_path} is not a directory: point it at the "
                            f"folder holding the model, or unset it to download the model once")
                    kwargs["specific_model_path"] = str(self.model_path)
                    model = TextEmbedding(**kwargs)
                else:
                    model = self._cached_or_downloaded(TextEmbedding, kwargs)
                probe = next(iter(model.embed(["probe"])))
                self.dimension = int(probe.shape[0])
                self._model = quiet = without_spinning(model)
                if quiet is not model:
                    model = None  # the first session: its memory goes back to the system
                    _release_freed_memory()
            except Exception as exc:  # any failure means "no vectors", never a crash
                self._error = str(exc) if isinstance(exc, ModelUnavailable) else f"{type(exc).__name__}: {exc}"
                # a model that is simply not here is reported by `status` (search notes, doctor), once
                (log.info if isinstance(exc, ModelUnavailable) else log.warning)(
                    "embedding model %s unavailable: %s", self.model_name, self._error)
            finally:
                self._loaded.set()
        return self.ready

    def _cached_or_downloaded(self, text_embedding: Any, kwargs: dict[str, Any]) -> Any:
        """The model from the cache, else downloaded once into it. Offline (HF_HUB_OFFLINE) or with the hub
        unreachable, a missing model fails at once with one clear error, instead of fastembed's retries
        (seven error lines over ~39 s)."""
        from loguru import logger

        cache = self.cache_dir or default_model_cache()
        cache.mkdir(parents=True, exist_ok=True)
        logger.disable("fastembed")  # a cache miss is expected here: no red "could not find" line
        try:
            return text_embedding(**kwargs, cache_dir=str(cache), local_files_only=True)
        except Exception as exc:
            log.info("embedding model %s not in %s (%s)", self.model_name, cache, type(exc).__name__)
        finally:
            logger.enable("fastembed")
        if _offline(os.environ):
            raise _no_download(self.model_name, cache, "HF_HUB_OFFLINE is set") from None
        if not _hub_reachable(os.environ):
            raise _no_download(self.model_name, cache, "the model hub cannot be reached") from None
        log.info("downloading embedding model %s into %s", self.model_name, cache)
        return text_embedding(**kwargs, cache_dir=str(cache))

    def wait(self, timeout: float | None = None) -> bool:
        if not self._loaded.is_set() and self._thread is None:
            return self.load()
        self._loaded.wait(timeout)
        return self.ready

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
        vectors: list[Any] = [None] * len(texts)
        for index, vector in zip(order, self._model.embed([texts[i] for i in order], batch_size=MODEL_BATCH)):
            vectors[index] = vector.astype("float32")
        if len(texts) > 32:  # a big batch's working memory goes back to the system (no arena keeps it)
            _release_freed_memory()
        return vectors

    def embed_query(self, text: str) -> Any | None:
        if not self.ready:
            return None
        return next(iter(self._model.query_embed([text]))).astype("float32")
