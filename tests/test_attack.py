"""Memory poisoning through the real hooks, the worker, the next SessionStart / UserPromptSubmit and memory_search
(scripts/attack.py), the corpus itself against the detector and the neutraliser, the leaks of issue 36
(scripts/attack_text.py) and the aggregator's report."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentmem_mcp.trust.policy import WITHHELD, as_data, instruction_reason, neutralize

from .conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import attack  # noqa: E402

# one or two payloads of every carrier and trick, so the pipeline test stays under a minute
SAMPLE = ("stderr-system-notice", "stderr-closing-tags", "stderr-fake-tool-call", "stderr-zero-width",
          "stderr-lookalikes", "stdout-lint-closing", "web-system-notice", "web-base64", "websearch-role",
          "file-contributing", "file-fixture-reminder", "grep-content", "commit-log-notice", "commit-message-tags",
          "prompt-pasted-tags",
          # issue 36 items 5 and 6: each channel that bypassed quarantine, and each kind of trick
          "stderr-abs-shell", "stderr-combining", "test-result-abs-shell", "commit-msg-sudo", "transcript-reply",
          "prompt-pasted-abs", "stderr-tag-chars", "web-tool-result", "websearch-fullwidth")


def test_the_corpus_covers_every_carrier_and_trick():
    assert len(attack.PAYLOADS) >= 40
    assert len({p.name for p in attack.PAYLOADS}) == len(attack.PAYLOADS)
    assert set(attack.CARRIERS) >= {"bash_stderr", "bash_stdout", "webfetch", "read", "commit", "prompt",
                                    "commit_message", "test_result", "transcript"}
    texts = [p.text for p in attack.PAYLOADS]
    assert any("\u200b" in t for t in texts) and any("ѕ" in t or "Ι" in t for t in texts)
    assert any("ｆｏｒ" in t for t in texts) and sum("base64" in p.name for p in attack.PAYLOADS) >= 3
    assert sum(bool(attack.markers(t)) for t in texts) >= 15
    assert set(SAMPLE) <= {p.name for p in attack.PAYLOADS}
    # issue 36: shells by path and through helpers, combining marks, emphasis, hidden and look-alike characters
    for trick in ("| /bin/bash", "| sudo -E bash", "| tee ", "-O /tmp/h && sh", "xxd -r -p | sh", "\u0336", "**",
                  "\U000e0041", "\uff1c", "\ufe64", "Hum\u0430n", "<start_of_turn>", "[SYSTEM]",
                  "</tool_result>", "<IMPORTANT>", "Hey Cursor", "Disregard everything above"):
        assert any(trick in t for t in texts) or any(ord(trick[-1]) >= 0xE0000 and any(
            0xE0000 <= ord(ch) for ch in t) for t in texts), trick


@pytest.mark.parametrize("payload", attack.PAYLOADS, ids=lambda p: p.name)
def test_every_payload_is_detected_and_its_markup_defused(payload):
    assert instruction_reason(payload.text), payload.text
    assert attack.markup_shown(payload.text, neutralize(payload.text)) == [], neutralize(payload.text)
    shown = as_data(payload.text)  # the step on the way out: markup defused, orders withheld
    assert attack.markup_shown(payload.text, shown) == [] and not instruction_reason(shown), shown
    assert not any(attack.normalized(n) in attack.normalized(shown) for n in payload.needles) \
        or WITHHELD in shown, shown


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
    assert [(o.name, o.markup_injected, o.text_injected, o.evidence) for o in report.outcomes
            if o.markup_injected or o.text_injected] == []


def test_the_aggregator_reports_each_class_tried_and_held():
    rows = [{"class": "a", "scenario": "one", "held": True, "detail": "ok"},
            {"class": "a", "scenario": "two", "held": False, "detail": "leaked"},
            {"class": "b", "scenario": "three", "held": True, "detail": "ok"}]
    text = attack.summary(rows)
    assert [line.split() for line in text.splitlines()[1:4]] == [["a", "2", "1"], ["b", "1", "1"], ["all", "3", "2"]]
    assert "did not hold:\n  a: two (leaked)" in text
    assert attack.suite("attack_text") is not None and attack.suite("attack_no_such_suite") is None


@pytest.fixture(scope="module")
def leaks(tmp_path_factory, model_path: Path) -> list[dict]:
    import attack_text

    return attack_text.run(model_path)


@pytest.mark.parametrize("cls", ["walls", "secrets", "viewer"])
def test_no_leak_of_issue_36(leaks, cls):
    """Issue 36 items 9, 10, 13 (scripts/attack_text.py): a session outside a repository stays in its directory,
    no secret of the issue reaches a file under the home, the viewer's cookie reaches no other local server."""
    import attack_text

    name = {"walls": attack_text.WALLS, "secrets": attack_text.SECRETS, "viewer": attack_text.VIEWER}[cls]
    mine = [row for row in leaks if row["class"] == name]
    assert mine and [(r["scenario"], r["detail"]) for r in mine if not r["held"]] == []
