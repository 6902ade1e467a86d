"""The embedding model as agentmem runs it (index/embedder.py): its onnxruntime session, no telemetry."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import MODEL_NAME, REPO


def test_the_model_runs_on_a_session_whose_threads_do_not_spin(embedder, model_path):
    """onnxruntime's threads spinning after an inference took a core from the rest of a search on two
    cores, and its memory arena kept the peak of every batch: the model runs on a session with neither. A model
    left to fastembed gets its session made again that way (`without_spinning`), and embeds the same."""
    from fastembed import TextEmbedding

    from agentmem_mcp.index.embedder import without_spinning

    options = embedder._model.session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.get_session_config_entry("session.inter_op.allow_spinning") == "0"
    assert not options.enable_cpu_mem_arena
    plain = TextEmbedding(model_name=embedder.model_name, specific_model_path=str(model_path))
    with pytest.raises(RuntimeError):  # not set: onnxruntime's default, threads that spin
        plain.model.model.get_session_options().get_session_config_entry("session.intra_op.allow_spinning")
    quiet = without_spinning(plain)
    assert quiet is not plain and quiet.model.model is not plain.model.model
    assert quiet.model.tokenizer is plain.model.tokenizer
    assert not quiet.model.model.get_session_options().enable_cpu_mem_arena
    text = "Melanie signed up for a pottery class; it is like therapy for her."
    before, after = next(iter(plain.embed([text]))), next(iter(quiet.embed([text])))
    assert float(np.dot(before, after)) > 0.9999
    assert float(np.dot(embedder.embed_query(text), embedder.embed([text])[0])) > 0.9999
    odd = object()
    assert without_spinning(odd) is odd  # other internals: the model keeps its own session


TEXTS = ["", "a", "Ran `pytest -q`: 3 failed, 410 passed in 12.3s", "数据库连接池超时 after the deploy",
         "Melanie signed up for a pottery class; it is like therapy for her.",
         "def round_half_up(x: float) -> int:\n    return int(x + 0.5)  # invoices round half up",
         "the build uses pnpm, not npm " * 80]  # over the model's 256 tokens: truncated


def test_the_model_gives_fastembeds_vectors_bit_for_bit(embedder, model_path):
    """agentmem runs the default model with tokenizers and onnxruntime itself (index/sentence_model.py): the same
    files give the same vectors as fastembed's, to the bit, one text or a batch of mixed lengths at a time."""
    from fastembed import TextEmbedding

    from agentmem_mcp.index.sentence_model import SentenceModel

    assert isinstance(embedder._model, SentenceModel)
    theirs = TextEmbedding(model_name=embedder.model_name, specific_model_path=str(model_path))
    for size in (1, 3, 8):
        ours = np.vstack(list(embedder._model.embed(TEXTS, batch_size=size)))
        expected = np.vstack(list(theirs.embed(TEXTS, batch_size=size)))
        assert ours.dtype == expected.dtype == np.float32
        assert np.array_equal(ours, expected), (size, float(np.abs(ours - expected).max()))
    for text in TEXTS[:5]:
        assert np.array_equal(embedder.embed_query(text), next(iter(theirs.query_embed([text]))))
    fresh = type(embedder)(embedder.model_name, model_path)
    assert fresh.load()
    passages = fresh.embed(TEXTS)  # the Embedder's own batching: sorted by length, MODEL_BATCH at a time
    assert all(np.array_equal(v, w) for v, w in zip(passages, theirs.embed(TEXTS, batch_size=1)))


LOAD_WITHOUT_FASTEMBED = """
import sys
from pathlib import Path
from agentmem_mcp.index.embedder import Embedder
embedder = Embedder("sentence-transformers/all-MiniLM-L6-v2", Path(sys.argv[1]))
assert embedder.load(), embedder.error
assert embedder.embed(["a memory"]) and embedder.embed_query("a query") is not None
print(" ".join(sorted(name for name in sys.modules if "." not in name)))
"""


def test_a_process_that_holds_the_model_has_not_imported_fastembed(model_path):
    """fastembed imports requests, huggingface_hub, loguru, PIL, trio... to run a model that needs none of them
    (~38 MB of the process that holds it): with the model's files at hand, none of it is imported."""
    done = subprocess.run([sys.executable, "-c", LOAD_WITHOUT_FASTEMBED, str(model_path)], cwd=REPO, timeout=120,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = set(done.stdout.split())
    assert {"onnxruntime", "tokenizers", "numpy"} <= imported
    assert not imported & {"fastembed", "huggingface_hub", "requests", "loguru", "PIL", "trio", "httpx", "tqdm"}


def test_a_model_fastembed_downloaded_is_found_in_its_cache_and_run_here(model_path, tmp_path, embedder,
                                                                        monkeypatch):
    """Without AGENTMEM_EMBED_MODEL_PATH the files are where fastembed downloads them (here: a cache laid out as
    huggingface_hub lays out a download, with the same files): fastembed finds them in a child process, and the
    model runs in this one, with the same vectors."""
    from agentmem_mcp.index.embedder import Embedder

    snapshot = tmp_path / "cache" / "models--Qdrant--all-MiniLM-L6-v2-onnx" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    for name in ("model.onnx", "tokenizer.json", "tokenizer_config.json", "config.json", "special_tokens_map.json"):
        (snapshot / name).symlink_to(model_path / name)
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("0123abcd")
    cached = Embedder(MODEL_NAME, None, cache_dir=tmp_path / "cache")
    assert cached.load(), cached.error
    assert cached._model.folder == snapshot
    assert np.array_equal(cached.embed_query("pnpm lockfile"), embedder.embed_query("pnpm lockfile"))
    empty = Embedder(MODEL_NAME, None, cache_dir=tmp_path / "empty")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no test reaches a model hub
    assert not empty.load()
    assert "cannot be downloaded (HF_HUB_OFFLINE is set)" in empty.error and "AGENTMEM_EMBED_MODEL_PATH" in empty.error


LOAD_AND_EMBED = """
import sys, time
from pathlib import Path
from agentmem_mcp.index.embedder import Embedder
embedder = Embedder("sentence-transformers/all-MiniLM-L6-v2", Path(sys.argv[1]))
assert embedder.load(), embedder.error
embedder.embed(["a memory"]) and embedder.embed_query("a query")
from huggingface_hub import constants
assert constants.HF_HUB_DISABLE_TELEMETRY == (sys.argv[2] == "off"), constants.HF_HUB_DISABLE_TELEMETRY
time.sleep(1.5)
"""


def _load_in(home: Path, model_path: Path, **env: str) -> Path:
    # onnxruntime sends nothing when CI is set (as .ci/run sets it): the child runs as on a user's machine
    left_out = ("ORT_DISABLE_TELEMETRY", "HF_HUB_DISABLE_TELEMETRY", "DISABLE_TELEMETRY", "DO_NOT_TRACK",
                "XDG_CACHE_HOME", "CI", "GITHUB_ACTIONS", "TF_BUILD")
    environ = {k: v for k, v in os.environ.items() if k not in left_out}
    expected = "on" if env.get("HF_HUB_DISABLE_TELEMETRY") == "0" else "off"  # huggingface_hub telemetry
    done = subprocess.run([sys.executable, "-c", LOAD_AND_EMBED, str(model_path), expected], cwd=REPO, timeout=120,
                          env={**environ, "HOME": str(home), **env}, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return home / ".cache" / "Microsoft"


def test_loading_the_model_sends_no_telemetry(model_path, tmp_path):
    """onnxruntime 1.32 sends usage events to Microsoft from a thread it starts at import, queued in
    ~/.cache/Microsoft/DeveloperTools; agentmem turns that off before importing it, and huggingface_hub's
    user-agent details for a first download too. A user's own settings win (the control)."""
    assert not _load_in(tmp_path / "ours", model_path).exists()
    theirs = _load_in(tmp_path / "theirs", model_path, ORT_DISABLE_TELEMETRY="0", HF_HUB_DISABLE_TELEMETRY="0")
    if not theirs.exists():
        pytest.skip("this onnxruntime keeps no telemetry queue: nothing to compare with")


def test_a_text_embedded_lately_is_not_embedded_again(model_path):
    """A summary saved again at each turn repeats most of its lines: the model embeds each text once, the
    vectors are the model's own, and the cache keeps only the most recent texts."""
    from agentmem_mcp.index.embedder import Embedder, PassageCache

    class Counting(Embedder):
        model_texts: list[str] = []

        def _embed_passages(self, texts):
            self.model_texts.extend(texts)
            return super()._embed_passages(texts)

    embedder = Counting("sentence-transformers/all-MiniLM-L6-v2", model_path)
    assert embedder.load(), embedder.error
    first = embedder.embed(["Ran `mix test`: 410 passed", "Edited lib/session_live.ex", "Ran `mix test`: 410 passed"])
    assert embedder.model_texts == ["Ran `mix test`: 410 passed", "Edited lib/session_live.ex"]
    assert float(np.dot(first[0], first[2])) > 0.9999 and first[0] is not first[2]
    again = embedder.embed(["Edited lib/session_live.ex", "Committed 64f1b9a"])
    assert embedder.model_texts[2:] == ["Committed 64f1b9a"]
    assert float(np.dot(again[0], first[1])) > 0.9999
    fresh = Embedder("sentence-transformers/all-MiniLM-L6-v2", model_path)
    assert fresh.load()
    assert float(np.dot(fresh.embed(["Committed 64f1b9a"])[0], again[1])) > 0.9999  # the same as without a cache
    again[1][:] = 0  # a caller changing its vector changes nothing cached
    assert float(np.dot(embedder.embed(["Committed 64f1b9a"])[0], fresh.embed(["Committed 64f1b9a"])[0])) > 0.9999
    small = PassageCache(entries=2)
    small.put_many(["a", "b"], [np.ones(2), np.ones(2)])
    small.get_many(["a"])  # a is used again: b is now the oldest
    small.put_many(["c"], [np.ones(2)])
    assert [v is not None for v in small.get_many(["a", "b", "c"])] == [True, False, True]


def test_words_go_to_the_model_in_big_batches_and_sentences_in_small_ones(model_path):
    from agentmem_mcp.index.embedder import Embedder

    fresh = Embedder(MODEL_NAME, model_path)
    assert fresh.load()
    calls: list[tuple[int, int]] = []
    model_embed = fresh._model.embed

    def counted(texts, batch_size=256):
        texts = list(texts)
        calls.append((len(texts), batch_size))
        return model_embed(texts, batch_size=batch_size)

    fresh._model.embed = counted
    words = [f"word{n}" for n in range(40)]
    sentences = [f"Ran `pytest -q tests/test_{n}.py`: {n} passed, the cache was warm" for n in range(10)]
    vectors = fresh.embed([*sentences[:5], *words, *sentences[5:]])
    assert sorted(calls) == [(10, 4), (40, 32)]  # one call for each kind, each at its own batch size
    alone = Embedder(MODEL_NAME, model_path)
    assert alone.load()
    one_by_one = [vector for text in [*sentences[:5], *words, *sentences[5:]] for vector in alone.embed([text])]
    assert all(np.array_equal(v, w) for v, w in zip(vectors, one_by_one))
