"""The embedding model as agentmem runs it (index/embedder.py): its onnxruntime session, no telemetry."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import REPO


def test_the_model_runs_on_a_session_whose_threads_do_not_spin(embedder):
    """onnxruntime's threads spinning after an inference took a core from the rest of a search on two
    cores: the loaded model runs on a session made again with spinning off, and embeds the same."""
    from fastembed import TextEmbedding

    from agentmem_mcp.index.embedder import without_spinning

    options = embedder._model.model.model.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.get_session_config_entry("session.inter_op.allow_spinning") == "0"
    plain = TextEmbedding(model_name=embedder.model_name, specific_model_path=str(embedder.model_path))
    with pytest.raises(RuntimeError):  # not set: onnxruntime's default, threads that spin
        plain.model.model.get_session_options().get_session_config_entry("session.intra_op.allow_spinning")
    quiet = without_spinning(plain)
    assert quiet is not plain and quiet.model.model is not plain.model.model
    assert quiet.model.tokenizer is plain.model.tokenizer
    text = "Melanie signed up for a pottery class; it is like therapy for her."
    before, after = next(iter(plain.embed([text]))), next(iter(quiet.embed([text])))
    assert float(np.dot(before, after)) > 0.9999
    assert float(np.dot(embedder.embed_query(text), embedder.embed([text])[0])) > 0.9999
    odd = object()
    assert without_spinning(odd) is odd  # other internals: the model keeps its own session


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
