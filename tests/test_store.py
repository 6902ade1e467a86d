"""The core store end to end: real SQLite (sqlean + sqlite-vec), real tantivy, the real model."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentmem_mcp.config import load_settings
from agentmem_mcp.db.audit import verify
from agentmem_mcp.models import TIERS, TYPES, InvalidInput, NotFound
from agentmem_mcp.store import Store
from agentmem_mcp.upkeep.maintenance import doctor, reindex
from agentmem_mcp.upkeep.transfer import export, import_

from .conftest import REPO


def ids(result) -> list[str]:
    return [hit.id for hit in result.hits]


def test_new_version_supersedes_and_history_keeps_both(store):
    first = store.save("use yarn to install dependencies", type="decision")
    second = store.save("use pnpm to install dependencies", type="decision")
    assert first.action == "created"
    assert second.action == "superseded" and second.supersedes == first.id and second.version == 2
    found = store.search("install dependencies")
    assert ids(found) == [second.id]
    history = store.history(second.id)
    assert [m.id for m in history] == [first.id, second.id]
    assert [m.is_latest for m in history] == [False, True]
    assert history[0].valid_to is not None
    with_history = store.search("install dependencies", include_history=True)
    assert set(ids(with_history)) == {first.id, second.id}


def test_same_pair_in_two_projects_does_not_supersede(store):
    a = store.save("use yarn to install dependencies", project="/repo/a")
    b = store.save("use pnpm to install dependencies", project="/repo/b")
    assert b.action == "created" and b.supersedes is None
    assert ids(store.search("install dependencies", project="/repo/a")) == [a.id]
    assert ids(store.search("install dependencies", project="/repo/b")) == [b.id]


def test_exact_duplicate_is_a_noop(store):
    first = store.save("The CI runs on GitHub Actions with a matrix of Python 3.10 to 3.13")
    again = store.save("the CI runs on GitHub Actions with a matrix of Python 3.10 to 3.13 ")
    assert again.action == "duplicate" and again.id == first.id
    assert store.stats()["memories"] == 1


def test_projects_are_isolated_and_global_memories_are_everywhere(store):
    a = store.save("Deploys of project A go through make deploy-staging", project="/repo/a")
    b = store.save("Deploys of project B use the helm chart in deploy/chart", project="/repo/b")
    g = store.save("The user wants deploy commands confirmed before running them", project=None, source="user")
    in_a = ids(store.search("how do deploys work", project="/repo/a"))
    in_b = ids(store.search("how do deploys work", project="/repo/b"))
    assert a.id in in_a and b.id not in in_a and g.id in in_a
    assert b.id in in_b and a.id not in in_b and g.id in in_b
    everywhere = ids(store.search("deploy", all_projects=True))
    assert {a.id, b.id, g.id} <= set(everywhere)


def test_explicit_supersedes_ttl_and_audit(store):
    old = store.save("The staging database is staging-db-1 in eu-west-1")
    new = store.save("Staging moved to a managed Postgres cluster", supersedes=old.id, ttl_days=3)
    assert new.action == "superseded" and new.supersedes == old.id
    memory = store.get(new.id)
    assert memory.forget_after is not None and memory.forget_after - memory.created_at == pytest.approx(3 * 86400)
    assert verify(store.conn).ok


def test_secrets_and_private_blocks_never_stored(store):
    saved = store.save(
        "Deploy key is AKIAIOSFODNN7EXAMPLE and the token ghp_abcdefghijklmnopqrstuvwxyz0123456789 "
        "<private>my home address is 1 Main St</private> use make deploy"
    )
    memory = store.get(saved.id)
    assert "AKIAIOSFODNN7EXAMPLE" not in memory.content
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in memory.content
    assert "Main St" not in memory.content
    assert store.search("AKIAIOSFODNN7EXAMPLE").hits == [] or all(
        "AKIA" not in h.snippet for h in store.search("AKIAIOSFODNN7EXAMPLE").hits
    )


@pytest.mark.parametrize("content", ["", "   ", "ok", "lgtm", 42, None, "x" * 70000])
def test_empty_trivial_or_huge_content_is_rejected_clearly(store, content):
    with pytest.raises(InvalidInput) as error:
        store.save(content)
    assert len(str(error.value)) > 20
    assert store.stats()["memories"] == 0


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "nonsense"},
        {"importance": 2},
        {"tier": "x"},
        {"tags": [1, 2]},
        {"ttl_days": -1},
        {"priority": "P9"},
        {"supersedes": "../../etc/passwd"},
    ],
)
def test_bad_options_are_rejected(store, bad):
    with pytest.raises((InvalidInput, NotFound)):
        store.save("a perfectly fine memory about the build", **bad)


NASTY_QUERIES = [
    '"unbalanced quote',
    "it's",
    "foo-bar baz",
    "src/app/main.py",
    "key:value",
    "a AND b OR NOT c",
    "(parens (nested)",
    "emoji 🚀🔥 deploy",
    "x" * 10_000,
    "NOT",
    "AND OR",
    "*",
    "title:foo",
    "[1 TO 2]",
    "\\",
    "-",
    "🚀",
    "\x00\x01",
    "SELECT * FROM memories; DROP TABLE memories",
    "配置",
]


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_odd_queries_answer_or_fail_clearly(store, query):
    store.save("parse the key:value config in src/app/main.py (it's foo-bar style)")
    result = store.search(query)
    assert result.mode == "hybrid"
    assert store.stats()["memories"] == 1


@pytest.mark.parametrize("query", ["", "   ", None, 5])
def test_empty_query_is_a_clear_error(store, query):
    with pytest.raises(InvalidInput):
        store.search(query)


@pytest.mark.parametrize(
    "options",
    [
        {"limit": 0},
        {"limit": -5},
        {"limit": 10**9},
        {"budget_tokens": 1},
        {"types": ["nonsense"]},
        {"min_confidence": 3},
    ],
)
def test_bad_search_options(store, options):
    with pytest.raises(InvalidInput):
        store.search("anything", **options)


def test_chinese_and_identifiers(store):
    zh = store.save("部署之前必须先运行所有的单元测试")
    store.save("Unit tests live in the tests folder and use pytest fixtures")
    ident = store.save("parseConfig reads the YAML settings file at startup")
    assert ids(store.search("部署测试"))[0] == zh.id
    assert ids(store.search("parse config"))[0] == ident.id
    assert ids(store.search("parse_config"))[0] == ident.id


def test_search_without_model_says_so(settings):
    with Store.open(settings, project="/repo/a", load_embedder=False) as cold:
        saved = cold.save("the release checklist lives in docs/release.md")
        result = cold.search("release checklist")
        assert result.mode == "bm25+graph" and result.notes
        assert ids(result) == [saved.id]
        assert cold.get(saved.id).embedding_model is None


def test_vectors_are_added_once_the_model_is_ready(settings, embedder):
    with Store.open(settings, project="/repo/a", load_embedder=False) as cold:
        saved = cold.save("the release checklist lives in docs/release.md")
    with Store.open(settings, project="/repo/a", embedder=embedder) as warm:
        assert warm.get(saved.id).embedding_model == embedder.model_id
        assert ids(warm.search("where is the list of steps for shipping a version"))[0] == saved.id


def test_a_memory_of_several_sentences_is_also_scored_sentence_by_sentence(store):
    """A one-chunk memory with several sentences gets a vector per sentence piece, kept out of the KNN table;
    its vector score is (best chunk + best piece) / 2, the same from KNN and from the exact re-scoring."""
    import numpy as np

    from agentmem_mcp.index import vectors

    text = ("I'm looking for throw pillows for the living room couch, something in blue or grey. "
            "By the way, I bought a new coffee table from West Elm about three weeks ago.")
    saved = store.save(text, title="Throw pillows")
    single = store.save("Use pnpm, not yarn, to install the dependencies of the web app")
    assert store.conn.execute("SELECT COUNT(*) FROM memory_chunks WHERE chunk_index > 0").fetchone()[0] == 0
    assert store.stats()["vector_backlog"] == {"memories": 0, "sentence_pieces": 2, "words": 2}
    assert store.add_sentence_pieces() == 2  # the worker's job: saving does not wait for pieces
    assert store.add_sentence_pieces() == 0
    from agentmem_mcp.upkeep.stats import format_stats

    assert "vector queue 0 memories, 0 awaiting sentence pieces, 2 awaiting word vectors" in format_stats(
        store.stats())
    assert store.get(saved.id) and [r[0] for r in store.conn.execute(
        "SELECT pieces FROM memories ORDER BY pieces")] == [0, 2]
    rows = store.conn.execute("SELECT memory_id, chunk_index, text FROM memory_chunks ORDER BY memory_id, "
                              "chunk_index").fetchall()
    mine = [(r["chunk_index"], r["text"]) for r in rows if r["memory_id"] == saved.id]
    assert [i for i, _ in mine] == [0, vectors.PIECE_INDEX, vectors.PIECE_INDEX + 1]
    assert mine[2][1].startswith("By the way") and "Throw pillows" in mine[0][1]
    assert [r["chunk_index"] for r in rows if r["memory_id"] == single.id] == [0]
    assert store.conn.execute(f"SELECT COUNT(*) FROM {vectors.TABLE}").fetchone()[0] == 2  # chunks only

    query = np.asarray(store.embedder.embed_query("what furniture did I buy recently?"), np.float32)
    whole, first, second = (np.asarray(v, np.float32) for v in store.embedder.embed([t for _, t in mine]))
    expected = (float(whole @ query) + max(float(first @ query), float(second @ query))) / 2
    assert vectors.similarities(store.conn, query, [saved.id])[saved.id] == pytest.approx(expected, abs=1e-5)
    knn = dict(vectors.knn(store.conn, query, projects=None, latest_only=True, k=5))
    assert knn[saved.id] == pytest.approx(expected, abs=1e-5)
    assert expected > float(whole @ query)  # the sentence about the table lifts it
    store.forget(ids=[saved.id], reason="test")
    assert store.conn.execute("SELECT COUNT(*) FROM memory_chunks WHERE memory_id = ?", (saved.id,)).fetchone()[0] \
        == 0


def test_sentence_pieces_are_added_bit_by_bit_and_redone_with_new_vectors(store):
    from agentmem_mcp.index import vectors

    texts = ["The billing service listens on port 8001 in staging. Its health check answers on /healthz there.",
             "Mail goes out through Postmark in production. Bounces come back to the shared support inbox.",
             "Feature flags are read from LaunchDarkly at startup. Changing a flag needs a restart of the pods.",
             "The nightly backup runs at 03:00 UTC every day. It keeps thirty days of snapshots in cold storage.",
             "Integration tests need Docker running locally. They start Postgres and Redis containers."]
    assert all(len(vectors.sentence_pieces(t)) == 2 for t in texts)
    saved = [store.save(t) for t in texts] + [store.save("Use pnpm, not yarn")]
    assert store.conn.execute("SELECT COUNT(*) FROM memories WHERE is_latest = 1").fetchone()[0] == 6
    pieces = "SELECT COUNT(*) FROM memory_chunks WHERE chunk_index >= ?"
    assert store.add_sentence_pieces(limit=4) == 4
    assert store.add_sentence_pieces(limit=4) == 2
    assert store.add_sentence_pieces(limit=4) == 0  # every memory has been looked at
    assert store.conn.execute(pieces, (vectors.PIECE_INDEX,)).fetchone()[0] == 10
    # a model change drops every vector: the memories are embedded again, then get their pieces again
    with store.transaction() as conn:
        conn.execute("UPDATE meta SET value = 'some-other-model|384' WHERE key = 'embedding_model'")
    store.prepare_vectors()
    assert store.conn.execute(pieces, (vectors.PIECE_INDEX,)).fetchone()[0] == 0
    assert store.add_sentence_pieces() == 6
    assert store.conn.execute(pieces, (vectors.PIECE_INDEX,)).fetchone()[0] == 10
    store.forget(ids=[saved[0].id], reason="test")
    assert store.conn.execute(pieces, (vectors.PIECE_INDEX,)).fetchone()[0] == 8


def test_reading_a_memory_ignores_columns_a_later_version_adds(store):
    saved = store.save("Feature flags are read from LaunchDarkly at startup")
    with store.transaction() as conn:
        conn.execute("ALTER TABLE memories ADD COLUMN added_by_a_later_version TEXT DEFAULT 'x'")
    assert store.get(saved.id).content == "Feature flags are read from LaunchDarkly at startup"
    assert [m.id for m in store.history(saved.id)] == [saved.id]


def test_a_hit_counts_as_an_access(store):
    saved = store.save("Run database migrations with alembic upgrade head", source="hook")
    before = store.get(saved.id)
    store.search("alembic migrations")
    after = store.get(saved.id)
    assert after.access_count == before.access_count + 1
    assert after.last_accessed_at is not None and after.strength > before.strength
    assert after.confidence > before.confidence


def test_token_budget_caps_the_answer(store):
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    for n in range(30):
        filler = " ".join(f"{words[(n + k) % 10]}{n}{k}" for k in range(40))
        store.save(f"Service {words[n % 10]}-{n} exposes metrics on port {9000 + n}: {filler}")
    result = store.search("service metrics port", limit=30, budget_tokens=300)
    assert 0 < len(result.hits) < 30 and result.tokens <= 300 and result.truncated > 0


def test_forget_by_id_removes_every_version_everywhere(store):
    first = store.save("use yarn to install dependencies")
    second = store.save("use pnpm to install dependencies")
    result = store.forget(ids=[second.id], reason="wrong")
    assert set(result.ids) == {first.id, second.id}
    assert store.search("install dependencies", include_history=True).hits == []
    with pytest.raises(NotFound):
        store.get(first.id)
    store.flush()
    assert store.fulltext.ids() == set()
    assert store.conn.execute("SELECT COUNT(*) FROM memory_chunks").fetchone()[0] == 0
    rows = store.conn.execute("SELECT action, detail FROM audit WHERE action = 'forget'").fetchall()
    assert len(rows) == 2 and all("install" not in row["detail"] for row in rows)
    assert verify(store.conn).ok


def test_forget_by_filter_previews_first(store):
    store.save("a bug: the upload fails above 2GB, fixed with multipart", type="bug")
    keep = store.save("we decided to keep the monorepo layout", type="decision")
    preview = store.forget(type="bug", dry_run=True)
    assert preview.count == 1 and store.stats()["memories"] == 2
    done = store.forget(type="bug")
    assert done.count == 1 and ids(store.search("monorepo")) == [keep.id]


def test_forget_unknown_or_malformed_ids(store):
    with pytest.raises(NotFound):
        store.forget(ids=["m_0000000000000000"])
    with pytest.raises(InvalidInput):
        store.forget(ids=["../../x"])
    with pytest.raises(InvalidInput):
        store.forget()


KILL_AFTER_COMMIT = textwrap.dedent("""
    import os, sys
    from agentmem_mcp.config import load_settings
    from agentmem_mcp.index.indexer import Indexer
    from agentmem_mcp.store import Store
    store = Store.open(load_settings(), project="/repo/a")
    Indexer.drain = lambda self, limit=None, stop=None: os._exit(9)   # die after the SQLite commit
    store.forget(ids=[sys.argv[1]])
    store.close()
""")


def test_forget_then_crash_before_the_index_update(settings, embedder, cli_env):
    with Store.open(settings, project="/repo/a", embedder=embedder) as store:
        doomed = store.save("the legacy payments service runs on host pay-01")
        store.save("the new payments service runs on kubernetes")
    done = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_COMMIT, doomed.id],
        env=cli_env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 9, done.stderr
    with Store.open(settings, project="/repo/a", embedder=embedder) as store:
        assert doomed.id not in ids(store.search("legacy payments service host"))
        with pytest.raises(NotFound):
            store.get(doomed.id)
        out = io.StringIO()
        export(store, out)
        assert doomed.id not in out.getvalue()
        assert doomed.id not in store.fulltext.ids()


def test_export_import_round_trip(store, tmp_path, embedder, model_path):
    a = store.save("use yarn to install dependencies", type="decision", importance=0.9, tags=["tooling"])
    store.save("use pnpm to install dependencies", type="decision")
    store.save("部署之前必须先运行所有的单元测试")
    store.save("The API server listens on port 8080", project=None, ttl_days=30, source="user")
    store.search("install dependencies")
    queries = ["install dependencies", "部署", "which port does the api use"]
    before = {q: ids(store.search(q, record_access=False)) for q in queries}
    dump = io.StringIO()
    export(store, dump)
    other = load_settings(env={}, home=tmp_path / "other", embed_model_path=model_path)
    with Store.open(other, project="/repo/a", embedder=embedder) as fresh:
        report = import_(fresh, io.StringIO(dump.getvalue()))
        assert report.imported == 4 and report.skipped == 0
        after = {q: ids(fresh.search(q, record_access=False)) for q in queries}
        assert after == before
        original = store.get(a.id)
        copied = fresh.get(a.id)
        for field in (
            "created_at",
            "confidence",
            "importance",
            "version",
            "is_latest",
            "tags",
            "root_id",
            "access_count",
            "last_accessed_at",
        ):
            assert getattr(copied, field) == getattr(original, field), field
        again = import_(fresh, io.StringIO(dump.getvalue()))
        assert again.imported == 0 and again.skipped == 4
        assert fresh.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 4


def test_reindex_and_doctor_repair_a_deleted_index(store):
    saved = store.save("Feature flags are read from LaunchDarkly at startup")
    import shutil

    shutil.rmtree(store.settings.fulltext_dir)
    store.fulltext.reset()
    assert {c.name: c.ok for c in doctor(store)}["bm25 index"] is False
    result = reindex(store)
    assert result["indexed"] == 1
    assert store.stats()["vector_backlog"] == {"memories": 0, "sentence_pieces": 0, "words": 0}
    assert all(c.ok for c in doctor(store)), [c for c in doctor(store) if not c.ok]
    assert ids(store.search("feature flags"))[0] == saved.id


def test_bm25_schema_marker_rebuilds_older_and_keeps_newer(store):
    """An index from an older schema is rebuilt from SQLite at open; one written by a newer agentmem (a newer
    process beside this one) is used as it is rather than wiped, so the two do not wipe it in turn."""
    from agentmem_mcp.index import fulltext

    saved = store.save("Feature flags are read from LaunchDarkly at startup")
    marker = store.settings.fulltext_dir / "agentmem-schema"
    store.close()

    marker.write_text(str(int(fulltext.SCHEMA_VERSION) + 1))
    newer = Store.open(store.settings, project="/repo/a", load_embedder=False)
    try:
        assert marker.read_text() == str(int(fulltext.SCHEMA_VERSION) + 1)
        assert newer.fulltext.count() == 1  # not wiped
        assert ids(newer.search("launchdarkly flags", retrievers=("bm25",))) == [saved.id]
    finally:
        newer.close()

    marker.write_text("2")
    older = Store.open(store.settings, project="/repo/a", load_embedder=False)
    try:
        assert marker.read_text() == fulltext.SCHEMA_VERSION
        assert ids(older.search("launchdarkly flags", retrievers=("bm25",))) == [saved.id]
    finally:
        older.close()
    assert fulltext.needs_rebuild("1") and fulltext.needs_rebuild("garbage")
    assert not fulltext.needs_rebuild(fulltext.SCHEMA_VERSION + "\n")


def test_bm25_filters_select_without_adding_to_the_score(store):
    """Project, latest, tier and type filters choose which memories may match; they must not add their own
    score to every hit (that shrank the gap between strong and weak matches once fusion divides by the best)."""
    store.save("Feature flags are read from LaunchDarkly at startup")
    store.save("The startup banner is printed once")
    store.flush()
    plain = store.fulltext.search("launchdarkly startup flags", projects=None, latest_only=False)
    filtered = store.fulltext.search("launchdarkly startup flags", projects=[store.project, None], latest_only=True,
                                     tiers=list(TIERS), types=list(TYPES))
    assert len(plain) == 2
    assert [m for m, _ in filtered] == [m for m, _ in plain]
    assert [s for _, s in filtered] == pytest.approx([s for _, s in plain])
    assert store.fulltext.search("launchdarkly", projects=["/elsewhere"]) == []


def test_bm25_terms_alone_then_admitted_give_the_filtered_answer(store, monkeypatch):
    """The filtered search's fast path (the terms alone, block-max WAND, then the memories SQLite admits) gives
    the best admitted matches with their scores, as the query with its filters does; when too few of the wide
    hits are admitted it falls back to that query."""
    from agentmem_mcp.db import memories
    from agentmem_mcp.db.memories import MemoryFilter
    from agentmem_mcp.index import fulltext

    monkeypatch.setattr(fulltext, "WIDE_FACTOR", 2)
    for n in range(12):
        store.save(f"the deploy script {n} pushes the release image to the registry", project="/repo/b")
        store.save(f"the deploy checklist {n} names who approves the release", tier="episodic")
    for n in range(6):
        old = store.save(f"the release notes {n} are written by hand before each deploy")
        store.save(f"the release notes {n} are generated from commits before each deploy", supersedes=old.id)
    store.flush()
    calls = []

    def admitted(chosen):
        def check(ids):
            calls.append(len(ids))
            return memories.admitted(store.conn, ids, chosen)
        return check

    for projects, tiers, limit in (([store.project, None], ["semantic"], 4), ([store.project, None], None, 5),
                                   (["/repo/b"], None, 3), (None, ["episodic"], 30),
                                   ([store.project], ["semantic"], 1)):
        chosen = MemoryFilter(projects=projects, latest_only=True, tiers=tiers or ())
        options = dict(projects=projects, latest_only=True, tiers=tiers, limit=limit)
        filtered = store.fulltext.search("deploy release registry notes", **options)
        fast = store.fulltext.search("deploy release registry notes", **options, admitted=admitted(chosen))
        assert [m for m, _ in fast] == [m for m, _ in filtered] and filtered
        assert [s for _, s in fast] == pytest.approx([s for _, s in filtered])
    assert 36 in calls  # 30 wanted, 60 asked: every match (36) read, so the admitted ones are the answer
    tops = []
    real_top = fulltext.FulltextIndex._top
    monkeypatch.setattr(fulltext.FulltextIndex, "_top", lambda self, query, limit: tops.append(limit)
                        or real_top(self, query, limit))
    only_b = MemoryFilter(projects=["/repo/b"], latest_only=True)
    assert store.fulltext.search("release notes deploy", projects=["/repo/b"], limit=3,
                                 admitted=admitted(only_b)) == store.fulltext.search(
        "release notes deploy", projects=["/repo/b"], limit=3)
    assert tops[:2] == [6, 3]  # /repo/b's memories score lowest: too few admitted among 6, so the filtered query


def test_words_nearly_every_memory_holds_leave_a_big_index_s_query_only_where_asked(tmp_path):
    """common_share: in an index of COMMON_MIN_DOCS memories or more, a term held by more than that share of them
    (a template's words) is left out of the query, which finds the same best matches; a small index, or a
    query of such terms only, keeps every term."""
    from agentmem_mcp.index.fulltext import COMMON_MIN_DOCS, FulltextDoc, FulltextIndex

    index = FulltextIndex(tmp_path / "fulltext")
    docs = [FulltextDoc(f"m{n}", "/repo", "semantic", "fact", True,
                        f"see the notes: the {['router', 'parser', 'queue'][n % 3]} retries job {n} on port {n % 50}")
            for n in range(COMMON_MIN_DOCS + 200)]
    index.apply(docs, [])
    query = "see the notes: the parser retries job 17 on port 17"
    plain = index.search(query, projects=None, limit=10)
    cut = index.search(query, projects=None, limit=10, common_share=0.9)
    assert [m for m, _ in cut] == [m for m, _ in plain] and plain[0][0] == "m17"
    assert [s for _, s in cut] == pytest.approx([s for _, s in plain], rel=0.01)  # the common terms' IDF: ~0
    searched = []
    real = index._top
    index._top = lambda q, limit: searched.append(str(q)) or real(q, limit)
    index.search(query, projects=None, limit=10, common_share=0.9)
    assert "note" not in searched[0] and "retri" not in searched[0] and "parser" in searched[0]
    assert index.search("see the notes", projects=None, limit=3, common_share=0.9)  # nothing else to keep
    small = FulltextIndex(tmp_path / "small")
    small.apply(docs[:5], [])
    searched.clear()
    small._top = lambda q, limit: searched.append(str(q)) or FulltextIndex._top(small, q, limit)
    small.search(query, projects=None, limit=3, common_share=0.9)
    assert "note" in searched[0]


def test_model_change_reembeds_instead_of_mixing(store):
    store.save("Feature flags are read from LaunchDarkly at startup")
    with store.transaction() as conn:
        conn.execute("UPDATE meta SET value = 'some-other-model|384' WHERE key = 'embedding_model'")
    store.prepare_vectors()
    row = store.conn.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
    assert row[0].startswith(store.embedder.model_id)
    assert store.conn.execute("SELECT COUNT(*) FROM memories WHERE embedding_model IS NULL").fetchone()[0] == 0
    assert store.search("launchdarkly flags").hits


def test_files_are_private(store):
    assert oct(os.stat(store.settings.home).st_mode & 0o777) == "0o700"
    assert oct(os.stat(store.db_path).st_mode & 0o777) == "0o600"


SAVER = textwrap.dedent("""
    import sys
    from agentmem_mcp.config import load_settings
    from agentmem_mcp.store import Store
    store = Store.open(load_settings(), project="/repo/a")
    tag = sys.argv[1]
    templates = {"p": "process p remembers fact number {n}: the widget p{n} uses port {port}",
                 "q": "worker q stored observation {n} about gadget q{n}, served from host q-{port}"}
    for n in range(int(sys.argv[2])):
        store.save(templates[tag].format(n=n, port=n + 1000))
    store.close()
""")


@pytest.mark.slow
def test_two_processes_save_concurrently(settings, embedder, cli_env):
    with Store.open(settings, project="/repo/a", embedder=embedder):
        pass
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SAVER, tag, "500"],
            env=cli_env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("p", "q")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert "locked" not in err.lower()
    with Store.open(settings, project="/repo/a", embedder=embedder) as store:
        assert store.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 1000
        assert len(store.fulltext.ids()) == 1000
        for query, prefix in (("widget p0", "process p"), ("gadget q499", "worker q"), ("widget p250", "process p")):
            assert store.search(query, limit=3).hits[0].title.startswith(prefix)


def test_settings_from_toml_and_env(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.toml").write_text("search_budget_tokens = 999\nweight_graph = 0.5\n")
    settings = load_settings(env={"AGENTMEM_HOME": str(home), "AGENTMEM_WEIGHT_GRAPH": "0.1"})
    assert settings.search_budget_tokens == 999 and settings.weight_graph == 0.1
    from agentmem_mcp.config import ConfigError

    with pytest.raises(ConfigError):
        load_settings(env={"AGENTMEM_HOME": str(home), "AGENTMEM_RRF_K": "lots"})


def test_cli_round_trip(cli_env, tmp_path):
    def agentmem(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "agentmem_mcp", *args],
            env=cli_env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            input=stdin,
            timeout=120,
        )

    saved = agentmem("save", "use ruff for linting and formatting", "--type", "decision", "--json")
    assert saved.returncode == 0, saved.stderr
    memory_id = json.loads(saved.stdout)["id"]
    found = agentmem("search", "linting", "--json")
    assert json.loads(found.stdout)["hits"][0]["id"] == memory_id
    assert memory_id in agentmem("search", "linting").stdout
    assert "ruff" in agentmem("get", memory_id).stdout
    bad = agentmem("save", "")
    assert bad.returncode == 2 and "empty" in bad.stderr
    assert agentmem("doctor").returncode == 0
    assert "ok" in agentmem("audit", "--verify").stdout
    dump = agentmem("export")
    assert memory_id in dump.stdout
    assert agentmem("forget", memory_id, "--i-am-the-user").returncode == 0
    assert json.loads(agentmem("search", "linting", "--json").stdout)["hits"] == []
    restored = agentmem("import", "-", "--i-am-the-user", stdin=dump.stdout)
    assert "imported 1" in restored.stdout
    stats = json.loads(agentmem("stats", "--json").stdout)
    assert stats["memories"] == 1
    reindexed = agentmem("reindex")
    assert reindexed.returncode == 0 and "reindexed 1" in reindexed.stdout


def test_an_imported_conversation_gets_answer_chunks_from_the_worker(cli_env, tmp_path):
    """As a user runs it: import a conversation, let the worker run once, search for what an answer says nothing of."""
    from agentmem_mcp.upkeep.transfer import FORMAT

    turns = ["Tim: The season is over at last. What did your team win at the end of it?",
             "John: We even won a trophy! Everyone was cheering in the locker room.",
             "Tim: I started reading a new fantasy series last week.",
             "John: Nice, send me the title when you can. My knee is finally better too.",
             "Tim: Did you ever try the new climbing gym downtown?",
             "John: Not yet, maybe next month."]
    records = [{"kind": "header", "format": FORMAT}] + [
        {"kind": "memory", "id": f"m_{n:016x}", "content": text, "tier": "episodic", "type": "context",
         "session_id": "chat-1", "created_at": 1_700_000_000.0 + n} for n, text in enumerate(turns)]
    export = tmp_path / "chat.jsonl"
    export.write_text("\n".join(json.dumps(r) for r in records))

    def agentmem(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "agentmem_mcp", *args], env=cli_env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)

    assert "imported 6" in agentmem("import", str(export), "--global", "--i-am-the-user").stdout
    worked = agentmem("worker", "--once")
    assert worked.returncode == 0, worked.stderr
    stats = json.loads(agentmem("stats", "--json").stdout)
    assert stats["vector_backlog"]["sentence_pieces"] == 0, stats
    found = json.loads(agentmem("search", "What did John's team win at the end of the season?", "--json").stdout)
    assert {hit["id"] for hit in found["hits"][:2]} == {f"m_{0:016x}", f"m_{1:016x}"}  # the question, its answer
    from agentmem_mcp.db.connection import connect
    from agentmem_mcp.index.vectors import ANSWER_INDEX

    conn = connect(Path(cli_env["AGENTMEM_HOME"]) / "agentmem.db")
    try:
        answered = [r[0] for r in conn.execute("SELECT memory_id FROM memory_chunks WHERE chunk_index = ? "
                                               "ORDER BY memory_id", (ANSWER_INDEX,))]
    finally:
        conn.close()
    assert answered == [f"m_{1:016x}", f"m_{5:016x}"]  # the answers to Tim's two questions


def test_corpus_secrets_in_saves_and_imports_reach_no_file(store, settings, tmp_path):
    """Every secret of the corpus, in its realistic context, through memory_save (content, title, tags) and
    through an import (content, title, tags, files): none is in any byte agentmem writes (database, WAL,
    BM25 segments, logs). (A bare value such as a password, out of any context, is not recognisable as a
    secret: the corpus places each secret where it really appears.)"""
    from agentmem_mcp.upkeep.transfer import FORMAT, import_

    from .secrets_corpus import SECRET_CASES

    for n, case in enumerate(SECRET_CASES):
        store.save(f"note {n}: {case.context}", title=case.context.splitlines()[0][:200], tags=[case.context])
    export = tmp_path / "hostile.jsonl"
    records = [{"kind": "header", "format": FORMAT}] + [
        {"kind": "memory", "id": f"m_{n:016x}", "content": f"imported {n}: {case.context}", "title": case.context,
         "tags": [case.context], "files": [case.context], "project": store.project, "tier": "semantic",
         "type": "fact"} for n, case in enumerate(SECRET_CASES)]
    export.write_text("\n".join(json.dumps(r) for r in records))
    with export.open() as lines:
        assert import_(store, lines).imported == len(SECRET_CASES)
    store.flush()
    written = b"".join(p.read_bytes() for p in sorted(settings.home.rglob("*")) if p.is_file())
    assert [case.kind for case in SECRET_CASES if case.secret.encode() in written] == []


def test_a_turn_is_found_through_the_turns_before_it_in_its_session(store):
    """Neighbouring-turn context: "Is it your third one?" is about the greyhound named just before it."""
    base = 1_700_000_000.0
    turns = [("Maria: We adopted a retired racing greyhound from the shelter last weekend!", "s-1"),
             ("John: That is wonderful news. Is it your third one already?", "s-1"),
             ("John: The weather in Seattle was lovely for the game yesterday.", "s-2"),
             ("Maria: Yes, the third! The other two are getting used to her slowly.", "s-2")]
    saved = store.save_many([{"content": text, "tier": "episodic", "type": "context", "session_id": session,
                              "created_at": base + n, "source": "import"} for n, (text, session) in enumerate(turns)])
    store.flush()
    found = store.fulltext.search("greyhound", projects=[store.project, None])
    assert [memory_id for memory_id, _ in found][:2] == [saved[0].id, saved[1].id]
    assert saved[3].id not in {memory_id for memory_id, _ in found}  # another session: no context from s-1
    assert saved[1].id in ids(store.search("the greyhound, is it the third?", limit=3))
    assert "greyhound" not in store.get(saved[1].id).content  # the memory itself is unchanged


def test_an_answer_gets_a_vector_with_the_question_asked_before_it(store):
    """Answer chunks: "We even won a trophy!" is found for what was asked just before it."""
    from agentmem_mcp.index import vectors

    base = 1_700_000_000.0
    turns = ["Tim: The season is over at last. What did your team win at the end of it?",
             "John: We even won a trophy! Everyone was cheering in the locker room.",
             "John: And my knee is finally better too.",
             "Tim: I started reading a new fantasy series last week.",
             "John: Nice, send me the title when you can."]
    saved = store.save_many([{"content": text, "tier": "episodic", "type": "context", "session_id": "s-1",
                              "created_at": base + n, "source": "import"} for n, text in enumerate(turns)])
    question = store.embedder.embed_query("What did John's team win at the end of the season?")
    before = vectors.similarities(store.conn, question, [saved[1].id])[saved[1].id]
    while store.add_sentence_pieces():
        pass
    answers = "SELECT memory_id, text FROM memory_chunks WHERE chunk_index = ?"
    rows = store.conn.execute(answers, (vectors.ANSWER_INDEX,)).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(saved[1].id, "What did your team win at the end of it?\n" + turns[1])]
    after = vectors.similarities(store.conn, question, [saved[1].id])[saved[1].id]
    assert after > before + 0.1
    # the answer chunk is in the KNN table: the vector retriever finds the memory by it
    found = dict(vectors.knn(store.conn, question, projects=None, latest_only=True, k=5))
    assert found[saved[1].id] == pytest.approx(after)
    assert saved[1].id in ids(store.search("What did John's team win at the end of the season?", limit=3))
    # a model change drops it with every vector, the worker makes it again; forgetting removes it
    with store.transaction() as conn:
        conn.execute("UPDATE meta SET value = 'some-other-model|384' WHERE key = 'embedding_model'")
    store.prepare_vectors()
    assert store.conn.execute(answers, (vectors.ANSWER_INDEX,)).fetchall() == []
    while store.add_sentence_pieces():
        pass
    assert len(store.conn.execute(answers, (vectors.ANSWER_INDEX,)).fetchall()) == 1
    knn_rows = "SELECT COUNT(*) FROM memory_vectors"
    kept = store.conn.execute(knn_rows).fetchone()[0]
    store.forget(ids=[saved[1].id], reason="test")
    assert store.conn.execute(answers, (vectors.ANSWER_INDEX,)).fetchall() == []
    assert store.conn.execute(knn_rows).fetchone()[0] == kept - 2  # its chunk and its answer chunk


def test_turn_notes_of_a_coding_session_get_their_neighbours_in_the_order_saved(store):
    """The worker writes a session's turn notes with one time and no speaker names: the note after the agent's
    question gets that question as its answer chunk, a short note the openings of the notes before it in BM25
    (a long one carries its own context); the session's summary (another kind) is no neighbour of theirs."""
    from agentmem_mcp.index import vectors

    at = 1_700_000_000.0
    notes = ["Pre-commit failed on pre-existing Credo warnings in lib/spotter/transcripts.ex.\n\n"
             "Would you like me to skip the hook for this commit, or fix the pre-existing issues first?",
             "Committed with --no-verify as agreed: 3 files, the hook's warnings left for spotter-0p7.",
             "Phoenix server is starting in the background on port 4000. " * 8]  # a report: its own context
    summary = store.save_many([{"content": "Session: unified transcript view, committed, server started.",
                                "tier": "episodic", "type": "summary", "session_id": "s-c", "created_at": at,
                                "source": "consolidation"}])[0]
    saved = store.save_many([{"content": text, "tier": "episodic", "type": "context", "session_id": "s-c",
                              "created_at": at, "source": "consolidation"} for text in notes])
    while store.add_sentence_pieces():
        pass
    store.flush()
    rows = store.conn.execute("SELECT memory_id, text FROM memory_chunks WHERE chunk_index = ?",
                              (vectors.ANSWER_INDEX,)).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(saved[1].id, "Would you like me to skip the hook for this commit, or "
                                             "fix the pre-existing issues first?\n" + notes[1])]
    found = [m for m, _ in store.fulltext.search("Credo", projects=None)]
    assert set(found) == {saved[0].id, saved[1].id}  # the note that names it, and the short one after it
    assert summary.id not in found  # its own text does not name it, and notes are not its neighbours
    store.forget(ids=[saved[0].id], reason="test")
    store.flush()
    assert store.fulltext.search("Credo", projects=None) == []
    while store.add_sentence_pieces():
        pass
    assert store.conn.execute("SELECT COUNT(*) FROM memory_chunks WHERE chunk_index = ?",
                              (vectors.ANSWER_INDEX,)).fetchone()[0] == 0


def test_forgetting_a_turn_leaves_none_of_its_text_with_the_turns_after_it(store):
    """The answer chunk and the BM25 context of the next turns held the forgotten turn's words: both are redone."""
    from agentmem_mcp.index import vectors

    base = 1_700_000_000.0
    turns = ["Ana: My new passport number ends in 4471. Which airline did you book for Lisbon?",
             "Ben: TAP, the morning flight on Friday.",
             "Ben: I still need a hotel near the river."]
    saved = store.save_many([{"content": text, "tier": "episodic", "type": "context", "session_id": "s-9",
                              "created_at": base + n, "source": "import"} for n, text in enumerate(turns)])
    while store.add_sentence_pieces():
        pass
    store.flush()
    chunk_texts = "SELECT group_concat(text, ' ') FROM memory_chunks"
    assert "Which airline" in store.conn.execute(chunk_texts).fetchone()[0]
    assert {m for m, _ in store.fulltext.search("passport", projects=None)} == {s.id for s in saved}
    store.forget(ids=[saved[0].id], reason="test")
    store.flush()
    assert "Which airline" not in store.conn.execute(chunk_texts).fetchone()[0]
    assert store.fulltext.search("passport", projects=None) == []  # the next two turns are indexed again
    while store.add_sentence_pieces():  # the worker's next pass: no question before Ben's turn any more
        pass
    assert store.conn.execute("SELECT COUNT(*) FROM memory_chunks WHERE chunk_index = ?",
                              (vectors.ANSWER_INDEX,)).fetchone()[0] == 0
    assert store.conn.execute("SELECT COUNT(*) FROM memories WHERE pieces IS NULL").fetchone()[0] == 0


def test_an_upgrade_gives_the_turns_of_sessions_their_answer_chunks(store):
    """Migration 5 sends a session's turns back to the worker's pieces step; other memories keep theirs."""
    from agentmem_mcp.db import vectors as vector_rows
    from agentmem_mcp.db.migrations import m005_answer_chunks

    turns = store.save_many([{"content": text, "tier": "episodic", "type": "context", "session_id": "s-3",
                              "created_at": 1_700_000_000.0 + n, "source": "import"}
                             for n, text in enumerate(["Ana: Where do the backups go?", "Ben: To the cold bucket."])])
    fact = store.save("Backups are kept for thirty days in the cold storage bucket")
    while store.add_sentence_pieces():
        pass
    with store.transaction() as conn:
        vector_rows.put_answer(conn, turns[1].id, None, False, None, None)  # as a store before answer chunks
        m005_answer_chunks(conn)
    todo = {r[0] for r in store.conn.execute("SELECT id FROM memories WHERE pieces IS NULL")}
    assert todo == {t.id for t in turns} and fact.id not in todo
    while store.add_sentence_pieces():
        pass
    assert [r[0] for r in store.conn.execute("SELECT memory_id FROM memory_chunks WHERE chunk_index = 999")] == \
        [turns[1].id]


def test_fusion_setting_is_checked_and_both_fusions_answer(settings, embedder):
    from agentmem_mcp.config import ConfigError

    with pytest.raises(ConfigError, match="AGENTMEM_FUSION"):
        load_settings(env={"AGENTMEM_FUSION": "borda"}, home=settings.home)
    for fusion in ("score", "rrf"):
        with Store.open(settings.replace(fusion=fusion, home=settings.home / fusion), project="/repo/a",
                        embedder=embedder) as opened:
            target = opened.save(f"Deploys go through the blue-green pipeline ({fusion} fusion)")
            opened.save("The cafeteria serves soup on Tuesdays and Thursdays")
            hits = opened.search("how do we deploy").hits
            assert hits[0].id == target.id and 0 < hits[0].score <= 1


def test_a_memory_without_any_evidence_is_not_a_hit(store):
    store.save("We deploy with the blue-green pipeline in .github/workflows/deploy.yml")
    store.save("Tests run with pytest -q; the slow ones are marked")
    store.save("The cafeteria serves soup on Tuesdays")
    for query in ("how do we ship to production", "deploy.yml", "zzyzx qwerty"):
        assert all(hit.score > 0 for hit in store.search(query).hits), query


def test_a_server_store_rebuilds_bm25_in_the_background(settings, monkeypatch):
    """A long-running server opens a store whose BM25 index must be rebuilt (an upgrade, a deleted index):
    it answers at once, searching what is indexed so far and saying so, and the rebuild finishes behind it.
    Closing in the middle leaves the rest in the outbox for the next process, which finishes it."""
    import shutil
    import threading
    import time

    from agentmem_mcp.index import indexer as store_module
    from agentmem_mcp.index.fulltext import FulltextIndex

    monkeypatch.setattr(store_module, "BIG_BACKLOG", 20)
    monkeypatch.setattr(store_module, "OUTBOX_BATCH", 10)
    with Store.open(settings, project="/repo/a", load_embedder=False) as first:
        first.save_many([{"content": f"Routine note {n} about the build"} for n in range(60)])
        needle = first.save("The payments service retries webhooks with exponential backoff")
    shutil.rmtree(settings.fulltext_dir)

    gate = threading.Event()
    apply = FulltextIndex.apply
    monkeypatch.setattr(FulltextIndex, "apply", lambda self, *a, **k: (gate.wait(30), apply(self, *a, **k))[1])
    began = time.monotonic()
    server_store = Store.open(settings, project="/repo/a", load_embedder=False, index_in_background=True)
    try:
        assert time.monotonic() - began < 5  # not waiting for the rebuild
        during = server_store.search("payments webhooks backoff", retrievers=("bm25",))
        assert any("keyword index is being rebuilt (61 memories left)" in note for note in during.notes), during.notes
        assert server_store.stats()["index_backlog"] == 61
        gate.set()
        deadline = time.monotonic() + 30
        while server_store.index_backlog() and time.monotonic() < deadline:
            time.sleep(0.05)
        after = server_store.search("payments webhooks backoff", retrievers=("bm25",))
        assert ids(after)[0] == needle.id and after.notes == []
    finally:
        server_store.close()

    shutil.rmtree(settings.fulltext_dir)
    gate.clear()
    server_store = Store.open(settings, project="/repo/a", load_embedder=False, index_in_background=True)
    threading.Timer(0.5, gate.set).start()
    began = time.monotonic()
    server_store.close()  # the indexer stops after its batch; close applies at most BIG_BACKLOG more
    assert time.monotonic() - began < 10
    from agentmem_mcp.db.connection import connect

    conn = connect(settings.database)
    try:
        assert 0 < conn.execute("SELECT COUNT(*) FROM index_outbox").fetchone()[0] < 61
    finally:
        conn.close()
    with Store.open(settings, project="/repo/a", load_embedder=False) as reopened:
        assert reopened.index_backlog() == 0  # a plain open (the CLI) applies the rest before answering
        assert reopened.fulltext.count() == 61
        assert ids(reopened.search("payments webhooks backoff", retrievers=("bm25",)))[0] == needle.id


def test_a_background_rebuild_goes_on_after_another_process_held_the_writer(settings, monkeypatch):
    """tantivy allows one writer across processes: a rebuild whose batch found the writer busy (past the
    lock timeout) is not abandoned with the note still showing; the indexer tries again."""
    import shutil
    import time

    from agentmem_mcp.index import indexer as store_module
    from agentmem_mcp.index.fulltext import FulltextIndex, IndexBusyError

    monkeypatch.setattr(store_module, "BIG_BACKLOG", 20)
    with Store.open(settings, project="/repo/a", load_embedder=False) as first:
        first.save_many([{"content": f"Routine note {n} about the deploy"} for n in range(60)])
    shutil.rmtree(settings.fulltext_dir)

    apply, refusals = FulltextIndex.apply, []

    def busy_once(self, *args, **kwargs):
        if not refusals:
            refusals.append(1)
            raise IndexBusyError("another process holds the BM25 index writer")
        return apply(self, *args, **kwargs)

    monkeypatch.setattr(FulltextIndex, "apply", busy_once)
    with Store.open(settings, project="/repo/a", load_embedder=False, index_in_background=True) as server_store:
        deadline = time.monotonic() + 30
        while server_store.index_backlog() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert refusals and server_store.index_backlog() == 0
        assert server_store.fulltext.count() == 60 and server_store.rebuilding() == 0


def test_a_memory_still_waiting_for_its_vector_is_not_outranked_for_lacking_one(settings, embedder):
    """A memory saved before the model was ready (another process, or a shared process still loading it) has no
    vector until the backfill runs: meanwhile a search ranks it on its other evidence, not below every memory that
    has a vector."""
    similar = [f"Decision {n}: route the {word} traffic through the {other} gateway because the old one timed out"
               for n, word, other in ((1, "billing", "north"), (2, "search", "south"), (3, "upload", "east"),
                                      (4, "login", "west"), (5, "report", "central"))]
    with Store.open(settings, project="/repo/a", embedder=embedder) as warm:
        for text in similar:
            warm.save(text, type="decision")
        with Store.open(settings, project="/repo/a", load_embedder=False) as cold:
            waiting = cold.save("Decision 6: route the checkout traffic through the harbour gateway because the "
                                "old one timed out")
        assert warm.get(waiting.id).embedding_model is None
        result = warm.search("Decision 6: route the checkout traffic through the harbour gateway because the old "
                             "one timed out", limit=3)
        assert result.mode == "hybrid"
        assert ids(result)[0] == waiting.id
