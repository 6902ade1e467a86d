"""Issues 21 and 37.11: a search hit's `why` names a similar-word pair only when it is one word in two spellings
("config~configuration", "repo~repository"), never two words the model merely puts close: words of one register
("failure~answers", "project~request", "hook~catches") nor an antonym or a neighbour of topic ("fails~successfully",
"countries~england"). Those still count in the score. Through the real CLI, in a real home, after the real worker
embedded the words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_firsthour import agentmem

REVIEWS = "The reviewer answers every pull request within a day and catches most typos before the merge."
TRIP = "I was in England last spring with my sister, it was awesome!"
BUILD = "The nightly build finished successfully after the cache was cleared."
LINT = "The configuration of the linter lives in pyproject.toml under tool.ruff."
OTHERS = ["The release checklist lives in docs/release.md and must be followed.",
          "Use pnpm, not npm, to install the frontend dependencies."]


def _hits(env: dict[str, str], cwd: Path, query: str) -> dict[str, dict]:
    """The hits of a search, by the start of their title."""
    found = agentmem(env, "search", query, "--all-projects", "--json", cwd=cwd)
    assert found.returncode == 0, found.stderr
    return {hit["title"][:40]: hit for hit in json.loads(found.stdout)["hits"]}


def test_why_names_one_word_in_two_spellings_only(cli_env, tmp_path):
    for text in [REVIEWS, TRIP, BUILD, LINT, *OTHERS]:
        saved = agentmem(cli_env, "save", text, cwd=tmp_path)
        assert saved.returncode == 0, saved.stderr
    worked = agentmem(cli_env, "worker", "--once", cwd=tmp_path)
    assert worked.returncode == 0, worked.stderr

    lint = _hits(cli_env, tmp_path, "where is the lint config")[LINT[:40]]
    assert "similar words: config~configuration" in lint["why"], lint

    on = dict(cli_env, AGENTMEM_EXPANSION_WEIGHT="0")  # similar words alone, without query expansion
    off = dict(on, AGENTMEM_SOFT_MATCH_WEIGHT="0")
    for query, memory in [("why the build fails", BUILD), ("Which countries has she been to?", TRIP),
                          ("why does the hook report a failure in this project", REVIEWS)]:
        hits = _hits(on, tmp_path, query)
        assert hits, "the vector retriever finds every memory of so small a store"
        for hit in hits.values():  # "fails~successfully", "countries~england", "project~request": nothing to name
            assert "similar words" not in hit["why"], (query, hit)
        plain = _hits(off, tmp_path, query)
        assert hits[memory[:40]]["score"] >= plain[memory[:40]]["score"], query  # the pairs still count
    reviews = "why does the hook report a failure in this project"
    assert _hits(on, tmp_path, reviews)[REVIEWS[:40]]["score"] > _hits(off, tmp_path, reviews)[REVIEWS[:40]][
        "score"]  # the weak pairs raise its score


@pytest.mark.parametrize(("a", "b", "same"), [
    ("fails", "failure", True), ("config", "configuration", True), ("docs", "documentation", True),
    ("add", "added", True), ("repo", "repository", True), ("fails", "successfully", False),
    ("add", "available", False), ("slow", "fast", False), ("enable", "disable", False), ("at", "atom", False)])
def test_one_stem(a, b, same):
    from agentmem_mcp.index.words import same_stem

    assert same_stem(a, b) is same and same_stem(b, a) is same


def test_a_close_pair_of_two_words_counts_but_is_not_named():
    import numpy as np

    from agentmem_mcp.index import words

    def unit(*values: float) -> np.ndarray:
        vector = np.asarray(values, dtype=np.float32)
        return vector / np.linalg.norm(vector)

    hook, pull, git, hooks = unit(1, 0, 0), unit(0.52, 0.854, 0), unit(0.8, 0.6, 0), unit(0.7, 0, 0.714)
    vocabulary = words.Vocabulary.from_vectors({"pull": pull, "git": git, "hooks": hooks})
    found = words.soft_scores(["hook"], [hook], [2.0], {"weak": ["pull"], "strong": ["pull", "git"],
                                                        "spelt": ["git", "hooks"]}, vocabulary)
    assert found["weak"][0] == pytest.approx(2.0 * (float(hook @ pull) - 0.4) / 0.6, abs=1e-5)
    assert found["weak"][1] == "" and found["strong"][1] == ""  # counted in the score, not named
    assert found["strong"][0] == pytest.approx(2.0 * (float(hook @ git) - 0.4) / 0.6, abs=1e-5)
    assert found["spelt"][1] == "hook~hooks"  # one word in two spellings, named though "git" is closer
