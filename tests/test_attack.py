"""Memory poisoning through the real hooks, the worker, the next SessionStart / UserPromptSubmit and memory_search
(scripts/attack.py), and the corpus itself against the detector and the neutraliser."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentmem_mcp.trust import instruction_reason, neutralize

from .conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import attack  # noqa: E402

# one or two payloads of every carrier and trick, so the pipeline test stays under a minute
SAMPLE = ("stderr-system-notice", "stderr-closing-tags", "stderr-fake-tool-call", "stderr-zero-width",
          "stderr-lookalikes", "stdout-lint-closing", "web-system-notice", "web-base64", "websearch-role",
          "file-contributing", "file-fixture-reminder", "grep-content", "commit-log-notice", "commit-message-tags",
          "prompt-pasted-tags")


def test_the_corpus_covers_every_carrier_and_trick():
    assert len(attack.PAYLOADS) >= 40
    assert len({p.name for p in attack.PAYLOADS}) == len(attack.PAYLOADS)
    assert set(attack.CARRIERS) >= {"bash_stderr", "bash_stdout", "webfetch", "read", "commit", "prompt"}
    texts = [p.text for p in attack.PAYLOADS]
    assert any("\u200b" in t for t in texts) and any("ѕ" in t or "Ι" in t for t in texts)
    assert any("ｆｏｒ" in t for t in texts) and sum("base64" in p.name for p in attack.PAYLOADS) >= 3
    assert sum(bool(attack.markers(t)) for t in texts) >= 15
    assert set(SAMPLE) <= {p.name for p in attack.PAYLOADS}


@pytest.mark.parametrize("payload", attack.PAYLOADS, ids=lambda p: p.name)
def test_every_payload_is_detected_and_its_markup_defused(payload):
    assert instruction_reason(payload.text), payload.text
    defused = neutralize(payload.text)
    for marker in attack.markers(payload.text):
        assert marker not in defused, (marker, defused)


@pytest.fixture(scope="module")
def report(tmp_path_factory, model_path: Path) -> attack.Report:
    chosen = tuple(p for p in attack.PAYLOADS if p.name in SAMPLE)
    return attack.attack(tmp_path_factory.mktemp("attack"), model_path, chosen, sessions=3)


def test_search_never_shows_a_payload(report):
    """memory_search over the real server: quarantined memories are left out, the rest is neutralised."""
    shown = [(o.name, o.markup_injected, o.text_injected) for o in report.outcomes
             if "search" in o.markup_injected or "search" in o.text_injected]
    assert shown == []


def test_no_payload_becomes_knowledge_and_every_carrying_memory_is_quarantined(report):
    """Issue 18, item 1: what the worker derives from poisoned tool output is quarantined (or holds none of it)."""
    assert [o.name for o in report.outcomes if o.became_knowledge] == []
    assert [(o.name, o.carrying, o.quarantined) for o in report.outcomes if not o.contained] == []
    assert sum(o.carrying for o in report.outcomes) > 0  # the payloads did reach the store: the test measures


def test_no_payload_reaches_the_next_session(report):
    """Issue 18, item 1: nothing of the payloads at the next SessionStart or UserPromptSubmit."""
    assert report.totals()["markup_injected"] == 0 and report.totals()["text_injected"] == 0
