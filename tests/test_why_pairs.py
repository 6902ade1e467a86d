"""Issue 21: a search hit's `why` names similar-word pairs a reader can follow ("countries~england"), not the
weak pairs the model makes between words of one register ("failure~answers", "project~request",
"hook~catches"); through the real CLI, in a real home, after the real worker embedded the words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_firsthour import agentmem

REVIEWS = "The reviewer answers every pull request within a day and catches most typos before the merge."
TRIP = "I was in England last spring with my sister, it was awesome!"
OTHERS = ["The release checklist lives in docs/release.md and must be followed.",
          "Use pnpm, not npm, to install the frontend dependencies."]


def _hits(env: dict[str, str], cwd: Path, query: str) -> dict[str, dict]:
    """The hits of a search, by the start of their title."""
    found = agentmem(env, "search", query, "--all-projects", "--json", cwd=cwd)
    assert found.returncode == 0, found.stderr
    return {hit["title"][:40]: hit for hit in json.loads(found.stdout)["hits"]}


def test_why_names_real_similar_words_only(cli_env, tmp_path):
    for text in [REVIEWS, TRIP, *OTHERS]:
        saved = agentmem(cli_env, "save", text, cwd=tmp_path)
        assert saved.returncode == 0, saved.stderr
    worked = agentmem(cli_env, "worker", "--once", cwd=tmp_path)
    assert worked.returncode == 0, worked.stderr

    trip = _hits(cli_env, tmp_path, "Which countries has she been to?")[TRIP[:40]]
    assert "similar words: countries~england" in trip["why"], trip

    reviews = _hits(cli_env, tmp_path, "why does the hook report a failure in this project")
    assert reviews, "the vector retriever finds every memory of so small a store"
    for hit in reviews.values():  # "project~request", "hook~catches", "hook~pull": nothing to name
        assert "similar words" not in hit["why"], hit
    off = dict(cli_env, AGENTMEM_SOFT_MATCH_WEIGHT="0")
    plain = _hits(off, tmp_path, "why does the hook report a failure in this project")
    assert reviews[REVIEWS[:40]]["score"] > plain[REVIEWS[:40]]["score"]  # the weak pairs still count in the score


def test_a_weak_pair_counts_but_is_not_named():
    import numpy as np

    from agentmem_mcp.index import words

    def unit(*values: float) -> np.ndarray:
        vector = np.asarray(values, dtype=np.float32)
        return vector / np.linalg.norm(vector)

    hook, pull, git = unit(1, 0, 0), unit(0.52, 0.854, 0), unit(0.8, 0.6, 0)
    vocabulary = words.Vocabulary.from_vectors({"pull": pull, "git": git})
    found = words.soft_scores(["hook"], [hook], [2.0], {"weak": ["pull"], "strong": ["pull", "git"]}, vocabulary)
    assert found["weak"][0] == pytest.approx(2.0 * (float(hook @ pull) - 0.4) / 0.6, abs=1e-5)
    assert found["weak"][1] == ""  # counted in the score, not named
    assert found["strong"][1] == "hook~git"  # the named pair is the strongest from SHOWN_FROM up
