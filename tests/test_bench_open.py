"""scripts/bench_open.py, run as a user runs it, on a small home."""

from __future__ import annotations

import json
import subprocess
import sys

from agentmem_mcp.config import load_settings
from agentmem_mcp.store import Store

from .conftest import REPO


def test_the_open_benchmark_times_a_cold_and_a_warm_open_of_a_home(tmp_path, model_path, embedder):
    home = tmp_path / "home"
    with Store.open(load_settings(env={}, home=home, embed_model_path=model_path), embedder=embedder) as store:
        for n in range(5):
            store.save(f"The release pipeline step {n} pushes the image to the registry", type="workflow")
    out = tmp_path / "open.json"
    done = subprocess.run([sys.executable, "scripts/bench_open.py", str(home), "--rounds", "1", "--model-path",
                           str(model_path), "--json", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())
    [round_] = report["rounds"]
    for state in ("cold", "warm"):
        assert set(round_[state]) == {"model_s", "open_s", "first_search_s", "second_search_s"}
        assert all(value > 0 for value in round_[state].values())
    assert report["medians"]["warm_open_s"] == round_["warm"]["open_s"]
    missing = subprocess.run([sys.executable, "scripts/bench_open.py", str(tmp_path / "nowhere")], cwd=REPO,
                             capture_output=True, text=True, check=False)
    assert missing.returncode != 0 and "no agentmem.db" in missing.stderr
