"""Shared fixtures: a real store on disk in a temporary home, with the real embedding model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentmem_mcp.config import load_settings
from agentmem_mcp.index.embedder import Embedder
from agentmem_mcp.store import Store
from scripts.live_processes import SharedProcess, stop_shared_processes

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
DEFAULT_MODEL = SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
LEFT_RUNNING = pytest.StashKey[list[SharedProcess]]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `long(seconds)` first, longest first, the rest after in their order: with `-n 3` the longest
    ones start at once on every process instead of one of them ending the run alone."""
    def seconds(item: pytest.Item) -> float:
        marker = item.get_closest_marker("long")
        return -float(marker.args[0]) if marker and marker.args else 0.0

    items.sort(key=seconds)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the shared processes this session's tests left running (a hook that found none starts one, which stays
    until idle, 10 minutes by default): those whose home is in this session's temporary folder, never any other.
    With xdist this runs in the controller, whose folder holds every worker's; the terminal summary lists them, so
    that a leak is seen."""
    if hasattr(session.config, "workerinput"):
        return
    # pytest's folder for this session, read without making one (pytest has no public way to ask for that)
    base = getattr(getattr(session.config, "_tmp_path_factory", None), "_basetemp", None)
    if base is not None:  # None: no test asked for a temporary folder
        session.config.stash[LEFT_RUNNING] = stop_shared_processes(Path(base))


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """Name the shared processes pytest_sessionfinish stopped."""
    left = config.stash.get(LEFT_RUNNING, [])
    if left:
        terminalreporter.section("shared processes the tests left running (stopped now)", red=True)
        for process in left:
            started = "by a hook (--for-hooks)" if process.for_hooks else "by a server"
            terminalreporter.line(f"pid {process.pid}, started {started}, home {process.home}")
        terminalreporter.line("a test that runs hooks sets AGENTMEM_HOOK_STARTS_PROCESS=0 (cli_env does) or stops "
                              "what it started (scripts/live_processes.py)")


def require_shared(path: Path, what: str) -> Path:
    """Skip when shared data is missing, except in CI where it is required."""
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{what} is required in CI but missing at {path}")
        pytest.skip(f"{what} not found at {path}")
    return path


@pytest.fixture
def shared_transcript() -> Path:
    return require_shared(SHARED / "eval/transcripts/claude_code_spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
                          "the shared Claude Code transcript")


@pytest.fixture(scope="session")
def model_path() -> Path:
    path = Path(os.environ.get("AGENTMEM_EMBED_MODEL_PATH") or DEFAULT_MODEL).resolve()
    return require_shared(path, "the embedding model (set AGENTMEM_EMBED_MODEL_PATH)")


@pytest.fixture(scope="session")
def embedder(model_path: Path) -> Embedder:
    """One loaded model for the whole test session (loading takes ~0.5 s)."""
    model = Embedder(MODEL_NAME, model_path)
    assert model.load(), model.error
    return model


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def settings(home: Path, model_path: Path):
    return load_settings(env={}, home=home, embed_model_path=model_path)


@pytest.fixture
def store(settings, embedder):
    with Store.open(settings, project="/repo/a", embedder=embedder) as opened:
        yield opened


@pytest.fixture
def cli_env(home: Path, model_path: Path) -> dict[str, str]:
    """Environment for running the real `agentmem` command in a subprocess, without the markers of a coding agent's
    shell (tests that play the agent set them: cli/confirm_user.py), whatever shell runs the tests."""
    from agentmem_mcp.cli.confirm_user import AGENT_APPS, AGENT_SHELLS

    markers = {name for name, _ in (*AGENT_SHELLS, *AGENT_APPS)}
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_") and k not in markers}
    # a hook that finds no shared process would start one that outlives the test (tests/test_hook_start.py turns it on)
    env.update(AGENTMEM_HOME=str(home), AGENTMEM_EMBED_MODEL_PATH=str(model_path), AGENTMEM_HOOK_STARTS_PROCESS="0")
    return env
