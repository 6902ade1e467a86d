"""Issue 21, offline without a model path: one clear line at once, not fastembed's retries over ~39 s; the
model cache outlives a reboot. No test here reaches a model hub: HF_HUB_OFFLINE is set, or the path is bad."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from agentmem_mcp.config import load_settings
from agentmem_mcp.index.embedder import Embedder
from agentmem_mcp.index.model_files import default_model_cache
from agentmem_mcp.store import Store

from .conftest import MODEL_NAME
from .test_firsthour import agentmem


@pytest.fixture
def offline_env(tmp_path: Path) -> dict[str, str]:
    """No model path, an empty cache, and huggingface_hub told it is offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTMEM_", "FASTEMBED_", "HF_"))}
    env.update(AGENTMEM_HOME=str(tmp_path / "home"), HOME=str(tmp_path / "user"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), HF_HUB_OFFLINE="1")
    return env


def test_search_offline_without_a_model_says_so_once_and_at_once(offline_env, tmp_path):
    saved = agentmem(offline_env, "save", "the build uses pnpm, not npm: the lockfile is pnpm-lock.yaml",
                     cwd=tmp_path)
    assert saved.returncode == 0 and saved.stderr == "", saved.stderr
    started = time.monotonic()
    found = agentmem(offline_env, "search", "pnpm lockfile", cwd=tmp_path)
    elapsed = time.monotonic() - started
    assert found.returncode == 0 and "pnpm-lock.yaml" in found.stdout
    assert elapsed < 15, f"{elapsed:.1f} s"
    lines = found.stderr.strip().splitlines()
    assert len(lines) == 1, found.stderr
    assert "AGENTMEM_EMBED_MODEL_PATH" in lines[0] and "HF_HUB_OFFLINE" in lines[0]
    assert "sleeping" not in found.stderr and "ERROR" not in found.stderr
    assert (tmp_path / "cache" / "agentmem" / "models").is_dir()  # not /tmp/fastembed_cache


def test_doctor_offline_without_a_model_is_quick(offline_env, tmp_path):
    started = time.monotonic()
    checked = agentmem(offline_env, "doctor", cwd=tmp_path)
    assert time.monotonic() - started < 15
    assert checked.returncode == 1 and checked.stderr == "", checked.stderr
    line = next(x for x in checked.stdout.splitlines() if "embedding model" in x)
    assert line.startswith("FAIL") and "AGENTMEM_EMBED_MODEL_PATH" in line and "Error" not in line


def test_a_bad_model_path_fails_at_once(offline_env, tmp_path):
    env = offline_env | {"AGENTMEM_EMBED_MODEL_PATH": str(tmp_path / "no-model-here")}
    del env["HF_HUB_OFFLINE"]  # a bad path is never a reason to try the network
    started = time.monotonic()
    found = agentmem(env, "search", "anything at all", cwd=tmp_path)
    assert time.monotonic() - started < 15
    assert found.returncode == 0 and "no-model-here is not a directory" in found.stderr
    assert len(found.stderr.strip().splitlines()) == 1, found.stderr


def test_the_model_cache_is_under_the_users_cache_directory(tmp_path):
    home = tmp_path / "u"
    linux = default_model_cache({}, home)
    assert linux == (home / "Library/Caches/agentmem/models" if sys.platform == "darwin"
                     else home / ".cache/agentmem/models")
    if sys.platform != "darwin":
        assert default_model_cache({"XDG_CACHE_HOME": "/x/cache"}, home) == Path("/x/cache/agentmem/models")
    assert default_model_cache({"FASTEMBED_CACHE_PATH": "/y/models"}, home) == Path("/y/models")
    assert not str(default_model_cache()).startswith("/tmp/fastembed_cache")


def test_search_says_vector_search_is_loading_until_the_model_is(tmp_path, model_path):
    settings = load_settings(env={}, home=tmp_path / "home", embed_model_path=model_path)
    embedder = Embedder(MODEL_NAME, model_path)
    with Store.open(settings, project="/repo/a", embedder=embedder, load_embedder=False) as store:
        store.save("the build uses pnpm, not npm: the lockfile is pnpm-lock.yaml")
        assert embedder.status == "not loaded"
        embedder.announce_loading()  # what the server does before it loads the model on its thread
        notes = store.search("pnpm").notes
        assert any(note.startswith("vector search is loading") for note in notes), notes
        assert not any("not loaded" in note for note in notes)
        assert embedder.load()
        assert embedder.status == "ready" and store.search("pnpm").notes == []
