"""A single save compares its BM25 candidates with the draft on a pool thread while the model embeds
(remember._early_candidates); the write's verdicts use those comparisons and decide as they would without them."""

from __future__ import annotations

import threading

from agentmem_mcp.lifecycle import remember
from agentmem_mcp.store import Store


def test_a_changed_value_supersedes_through_the_early_comparison(store: Store, monkeypatch) -> None:
    first = store.save("The staging API listens on port 8080", type="fact")
    store.save("Invoices are rendered to PDF by the report service", type="fact")
    seen: list[tuple[str, dict]] = []
    kept_early, kept_decide = remember._early_candidates, remember.decide
    decided_on: list[str] = []

    def early(*args, **kwargs):
        found = kept_early(*args, **kwargs)
        seen.append((threading.current_thread().name, found[1]))
        return found

    def decide(old_text, new_text):
        decided_on.append(threading.current_thread().name)
        return kept_decide(old_text, new_text)

    monkeypatch.setattr(remember, "_early_candidates", early)
    monkeypatch.setattr(remember, "decide", decide)
    main = threading.current_thread().name
    second = store.save("The staging API listens on port 9090", type="fact")
    assert second.action == "superseded" and second.supersedes == first.id, second
    (thread, decided), = seen
    assert thread != main  # on the pool thread, beside the embedding
    assert first.id in decided and decided[first.id].kind == "supersede"
    assert main not in decided_on  # the write used the early comparisons: none was made again on this thread


def test_the_early_comparisons_give_the_verdicts_a_late_lookup_gives(store: Store, monkeypatch) -> None:
    """The same saves with the early lookup turned off (as for bulk saves) end the same way."""
    texts = ["We deploy with make deploy after the tests pass", "The cache is keyed by user id",
             "We deploy with make deploy once the tests have passed", "The cache is keyed by the user id",
             "The cache is keyed by team id"]
    early = [(r.action, r.reason, len(r.conflicts_with)) for r in (store.save(text) for text in texts)]
    other = Store.open(store.settings, project="/repo/b", embedder=store.embedder)
    monkeypatch.setattr(remember, "EARLY_CANDIDATES", 0)
    try:
        late = [(r.action, r.reason, len(r.conflicts_with)) for r in (other.save(text) for text in texts)]
    finally:
        other.close()
    assert early == late
    assert [entry[0] for entry in early].count("superseded") >= 1, early
