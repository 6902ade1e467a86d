"""A sentence-embedding model's files run with `tokenizers` and `onnxruntime` directly, without fastembed.

fastembed imports requests, huggingface_hub, loguru, PIL, trio and more to run a model that needs none of them,
and they stay in the memory of every process that holds the model (docs/benchmarks.md). For the models in
`MEAN_POOLED` this module does what fastembed does with the same files (its tokenizer set-up, mean pooling over
the real tokens in float64, L2 normalisation, the model's dtype), so the vectors are the same bit for bit
(tests/test_embedder.py). Any other model still runs on fastembed (index/embedder.py).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("agentmem.embedder")

# Models run here: name -> the model file in its folder (as fastembed's description of the model names it)
MEAN_POOLED = {"sentence-transformers/all-MiniLM-L6-v2": "model.onnx"}


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


def onnx_session(path: str | Path, *, spinning: bool, intra_threads: int = 0, inter_threads: int = 0,
                 providers: Sequence[Any] = ("CPUExecutionProvider",)) -> Any:
    """An onnxruntime session of the model file at `path`, fully optimised (as fastembed makes it), with threads
    that spin after each inference (onnxruntime's default) or not.

    Without spinning, the session also has no CPU memory arena: the arena keeps the peak of every batch it has
    run (a batch of long passages stays in the process's memory); without it the memory goes back after the
    batch, at the same speed (docs/benchmarks.md). Spinning threads took
    a core from the rest of a search on two cores (index/embedder.without_spinning)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if intra_threads:
        options.intra_op_num_threads = intra_threads
        options.inter_op_num_threads = inter_threads
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.enable_cpu_mem_arena = False
    return ort.InferenceSession(str(path), sess_options=options, providers=list(providers))


def _read_json(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as file:
        data = json.load(file)
    return data if isinstance(data, dict) else {}


def _context(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63 else None


def load_tokenizer(folder: Path) -> Any:
    """The model's tokenizer, set up as fastembed sets it up (`fastembed.common.preprocessor_utils.load_tokenizer`):
    truncated at the stricter of tokenizer_config.json's `model_max_length` / `max_length`, its special tokens
    added, padded to the longest text of a batch with the pad token's id."""
    from tokenizers import AddedToken, Tokenizer

    for name in ("tokenizer.json", "tokenizer_config.json"):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"the model folder {folder} has no {name}")
    config = _read_json(folder / "config.json") if (folder / "config.json").is_file() else {}
    settings = _read_json(folder / "tokenizer_config.json")
    limits = [v for v in (_context(settings.get("model_max_length")), _context(settings.get("max_length"))) if v]
    if not limits:
        raise ValueError(f"{folder / 'tokenizer_config.json'} gives no positive model_max_length or max_length")
    special = _read_json(folder / "special_tokens_map.json") if (folder / "special_tokens_map.json").is_file() else {}

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    truncation = tokenizer.truncation or {}
    tokenizer.enable_truncation(max_length=min(limits),
                                direction=settings.get("truncation_side") or truncation.get("direction", "right"))
    for value in special.values():
        for token in value if isinstance(value, list) else [value]:
            if isinstance(token, str):
                tokenizer.add_special_tokens([token])
            elif isinstance(token, dict):
                tokenizer.add_special_tokens([AddedToken(**token)])
    padding = tokenizer.padding or {}
    pad_token = padding.get("pad_token") or settings.get("pad_token")
    if pad_token is None:
        raise ValueError(f"the model folder {folder} names no pad token")
    pad_id = padding.get("pad_id", config.get("pad_token_id"))
    if pad_id is None:
        pad_id = tokenizer.token_to_id(pad_token)
    if pad_id is None:
        raise ValueError(f"the pad token {pad_token!r} of {folder} has no id")
    tokenizer.enable_padding(direction=settings.get("padding_side") or padding.get("direction", "right"),
                             pad_id=pad_id, pad_type_id=padding.get("pad_type_id", 0), pad_token=pad_token,
                             pad_to_multiple_of=padding.get("pad_to_multiple_of"), length=None)
    return tokenizer


class SentenceModel:
    """A mean-pooled, L2-normalised sentence-embedding model (`MEAN_POOLED`) on a session whose threads do not
    spin and that keeps no memory arena. `embed` and `query_embed` answer as fastembed's TextEmbedding does."""

    def __init__(self, folder: Path, model_file: str = "model.onnx") -> None:
        self.folder = folder
        if not (folder / model_file).is_file():
            raise FileNotFoundError(f"the model folder {folder} has no {model_file}")
        self.tokenizer = load_tokenizer(folder)
        self.session = onnx_session(folder / model_file, spinning=False)
        self.inputs = {node.name for node in self.session.get_inputs()}

    def embed(self, texts: Sequence[str], batch_size: int = 256) -> Iterator[Any]:
        """One normalised vector (the model's dtype) per text, in order, `batch_size` texts per model call."""
        texts = list(texts)
        for start in range(0, len(texts), batch_size):
            yield from self._batch(texts[start:start + batch_size])

    def query_embed(self, texts: Sequence[str]) -> Iterator[Any]:
        return self.embed(texts)

    def _batch(self, texts: list[str]) -> Any:
        import numpy as np

        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self.inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feed)[0]
        # fastembed's mean pooling and normalisation, to the bit: summed in float64, cast back after normalising
        summed = np.sum(hidden, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
        pooled = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        norm = np.maximum(np.linalg.norm(pooled, ord=2, axis=1, keepdims=True), 1e-12)
        return (pooled / norm).astype(hidden.dtype, copy=False)
