"""The vector retriever's first pass on this process's copy of the binary codes (index/codes.py): it finds
what sqlite-vec's exhaustive scan finds, and stays in step with writes from this and other connections."""

from __future__ import annotations

import numpy as np
import pytest

from agentmem_mcp.db import vectors as vector_rows
from agentmem_mcp.db.connection import database_file
from agentmem_mcp.index import codes, vectors
from agentmem_mcp.store import Store

TEXTS = [
    "The upload worker retries three times before it gives up on S3.",
    "We deploy to staging with make deploy-staging after the tests pass.",
    "The session token expires after 24 hours; refresh it in the auth middleware.",
    "pnpm is our package manager because of its workspace support.",
    "The scheduler throttles webhook deliveries to 10 per second per customer.",
    "Invoices are rendered to PDF by the report service with weasyprint.",
    "Migrations are applied with alembic upgrade head on every deploy.",
    "The cache is keyed by user id and invalidated when the profile changes.",
    "Docker builds reuse the pip cache through a BuildKit mount.",
    "The parser rejects config files with tabs; use spaces only.",
]
NEW = "Deploys to production need a second reviewer on the release PR."
QUERIES = ["how do we deploy", "token expiry", "which package manager", "cache invalidation", "pdf invoices"]


def _both(store: Store, query: str, count: int = 8, **where) -> tuple[list[int], list[int]]:
    vector = store.embedder.embed_query(query)
    args = {"projects": where.get("projects"), "latest_only": where.get("latest_only", False), "count": count}
    return (vectors.nearest_chunks(store.conn, vector, scan="codes", **args),
            vectors.nearest_chunks(store.conn, vector, scan="vec0", **args))


def _distances(store: Store, query: str, chunk_ids: list[int]) -> list[int]:
    code = store.conn.execute("SELECT vec_quantize_binary(?)", (store.embedder.embed_query(query).tobytes(),)
                              ).fetchone()[0]
    out = []
    for chunk_id in chunk_ids:
        row = store.conn.execute(f"SELECT embedding FROM {vectors.TABLE} WHERE chunk_id = ?", (chunk_id,)).fetchone()
        out.append(int(np.unpackbits(np.frombuffer(bytes(a ^ b for a, b in zip(code, row[0])), np.uint8)).sum()))
    return out


def _same_answer(store: Store, query: str, count: int = 8, **where) -> list[int]:
    ours, theirs = _both(store, query, count, **where)
    assert len(ours) == len(theirs)
    # the same distances in the same order (ties may pick different chunks at the last distance)
    assert _distances(store, query, ours) == _distances(store, query, theirs)
    return ours


@pytest.fixture
def filled(store: Store) -> Store:
    store.save_many([{"content": text} for text in TEXTS], supersede_check=False)
    return store


def test_the_copy_finds_what_vec0_finds(filled: Store) -> None:
    for query in QUERIES:
        found = _same_answer(filled, query)
        assert len(found) == 8


def test_the_copy_follows_saves_deletes_and_latest_flags(filled: Store) -> None:
    _same_answer(filled, "how do we deploy")  # loads the copy
    added = filled.save(NEW).id
    found = _same_answer(filled, NEW, count=3)
    chunk = filled.conn.execute("SELECT id FROM memory_chunks WHERE memory_id = ? AND chunk_index = 0",
                                (added,)).fetchone()[0]
    assert found[0] == chunk
    with filled.transaction() as conn:
        vector_rows.set_latest(conn, added, False)
    assert chunk not in _same_answer(filled, NEW, count=3, latest_only=True)
    assert chunk in _same_answer(filled, NEW, count=3, latest_only=False)
    filled.forget(ids=[added])
    assert chunk not in _same_answer(filled, NEW, count=3)


def test_another_connection_s_writes_reach_the_copy(filled: Store, settings, embedder) -> None:
    _same_answer(filled, "package manager")
    with Store.open(settings, project="/elsewhere", embedder=embedder) as other:
        other.save("We switched from npm to yarn berry for the monorepo's package manager.")
    found = _same_answer(filled, "which package manager do we use", count=2)
    projects = _same_answer(filled, "which package manager do we use", count=2, projects=["/elsewhere"])
    assert len(projects) == 1 and projects[0] in found


def test_projects_filter_and_partitions(store: Store, settings, embedder) -> None:
    store.save_many([{"content": text} for text in TEXTS[:5]], supersede_check=False)
    with Store.open(settings, project="/other", embedder=embedder) as other:
        other.save_many([{"content": text} for text in TEXTS[5:]], supersede_check=False)
    for query in QUERIES:
        _same_answer(store, query, count=4, projects=[None])
        _same_answer(store, query, count=4, projects=["/other", None])
        _same_answer(store, query, count=20, projects=["/nowhere"])


def test_a_copy_too_far_behind_reloads(filled: Store, monkeypatch) -> None:
    _same_answer(filled, "deploy")
    monkeypatch.setattr(codes, "RELOAD_ABOVE", 1)
    filled.save_many([{"content": f"Release {n} was tagged after the deploy checklist."} for n in range(3)])
    _same_answer(filled, "release checklist", count=5)


def test_the_log_is_pruned(filled: Store, monkeypatch) -> None:
    monkeypatch.setattr(vector_rows, "LOG_KEEP", 5)
    monkeypatch.setattr(vector_rows, "PRUNE_EVERY", 4)
    _same_answer(filled, "deploy")
    filled.save_many([{"content": f"Release {n} needs the changelog updated before tagging."} for n in range(12)])
    rows = filled.conn.execute("SELECT COUNT(*) FROM vector_changes").fetchone()[0]
    assert rows <= 5 + 4
    _same_answer(filled, "changelog before tagging", count=6)  # pruned past the copy: it reloads


def test_the_search_path_uses_the_copy(filled: Store) -> None:
    before = filled.search("how do we deploy", limit=3).hits
    key = database_file(filled.conn)
    assert key in codes._MATRICES and codes._MATRICES[key].size == len(TEXTS)
    assert before and "deploy" in before[0].snippet.lower()


def test_an_unknown_layout_falls_back_to_vec0(filled: Store, monkeypatch) -> None:
    monkeypatch.setattr(vector_rows, "_VERSIONS", set())
    codes.forget(filled.conn)
    vector = filled.embedder.embed_query("deploy")
    assert codes.nearest(filled.conn, vectors.TABLE, 384, b"\0" * 48, 5, None, False) is None
    assert vectors.nearest_chunks(filled.conn, vector, projects=None, latest_only=False, count=5)


def test_the_two_passes_keep_close_neighbours() -> None:
    """Among 20,000 random codes, 50 that differ from the query in 80 of 384 bits (cosine ~0.6, a close
    neighbour for this model) are all found by the two passes, nearest first."""
    rng = np.random.default_rng(7)
    matrix = codes.CodeMatrix("t", 6)
    raw = rng.integers(0, 2**63, size=(20000, 6), dtype=np.int64).view(np.uint64)
    query = raw[0].copy()
    bits = np.unpackbits(query.view(np.uint8))
    planted = rng.choice(np.arange(1, 20000), size=50, replace=False)
    for row in planted:
        flipped = bits.copy()
        flipped[rng.choice(384, size=80, replace=False)] ^= 1
        raw[row] = np.packbits(flipped).view(np.uint64)
    ids = np.arange(1, 20001, dtype=np.int64)
    matrix._set(ids, raw, np.zeros(len(ids), np.int32), np.ones(len(ids), bool))
    found = matrix.nearest(query.tobytes(), 51, None, False, two_passes=True)
    assert found[0] == 1
    assert set(found[1:]) == set((planted + 1).tolist())
    assert matrix.nearest(query.tobytes(), 51, None, False) == found  # one pass (20,000 codes): the same here


@pytest.mark.parametrize("seed,threads", [(1, 1), (2, 1), (3, 1), (1, 2), (2, 3), (3, 4)])
def test_the_scan_equals_sorting_every_kept_code(seed: int, threads: int, monkeypatch) -> None:
    """The blocked scan with excluded rows masked gives exactly the kept codes sorted by (distance, chunk id),
    whatever the filters (dead rows, superseded rows, other projects), across block boundaries, and split over
    one to four scan threads (parts of 2-6 blocks, the last one short)."""
    monkeypatch.setattr(codes, "BLOCK", 1000)
    monkeypatch.setattr(codes, "PARALLEL_ABOVE", 2000)
    monkeypatch.setattr(codes, "SCAN_THREADS", threads)
    if threads > 1:
        assert 1 < len(codes._parts(5500)) <= threads
    rng = np.random.default_rng(seed)
    n = 5500
    raw = rng.integers(0, 2**63, size=(n, 6), dtype=np.int64).view(np.uint64)
    raw[rng.choice(n, 400)] = raw[0]  # ties at distance 0
    matrix = codes.CodeMatrix("t", 6)
    ids = np.sort(rng.choice(10**6, size=n, replace=False)).astype(np.int64)
    projects = rng.integers(0, 3, size=n).astype(np.int32)
    latest = rng.random(n) < 0.8
    matrix._set(ids, raw, projects, latest)
    matrix.projects = {"a": 0, "b": 1, "": 2}
    matrix.alive[:n] = rng.random(n) < 0.95
    query = raw[rng.integers(n)].copy()
    query[0] ^= np.uint64(0xFFFF)
    distances = np.unpackbits((raw ^ query).view(np.uint8), axis=1).sum(axis=1)
    for wanted, latest_only, count in ((None, False, 50), (["a"], True, 160), (["b", ""], True, 7), (["a"], False,
                                                                                                     n)):
        keep = matrix.alive[:n] & (latest if latest_only else True)
        if wanted is not None:
            keep &= np.isin(projects, [matrix.projects[p] for p in wanted])
        rows = np.flatnonzero(keep)
        expected = rows[np.lexsort((ids[rows], distances[rows]))][:count]
        assert matrix.nearest(query.tobytes(), count, wanted, latest_only) == ids[expected].tolist()
        found = matrix.nearest(query.tobytes(), count, wanted, latest_only, two_passes=True)
        assert set(found) <= set(ids[rows].tolist()) and len(found) == min(count, len(rows))
    matrix.alive[:n] = False
    matrix.filters.clear()  # written behind the copy's back: its filters must be made again
    assert matrix.nearest(query.tobytes(), 5, None, False) == []


@pytest.mark.parametrize("seed", [1, 2])
def test_filters_kept_in_step_by_writes_answer_as_filters_made_again(seed: int, monkeypatch) -> None:
    """A scan's filters (projects x latest flag) are made once and then updated row by row as codes are written,
    superseded, deleted and moved between projects (a new project among them): every scan answers as one whose
    filters are made from scratch, and each filter counts the rows it keeps."""
    monkeypatch.setattr(codes, "BLOCK", 500)
    monkeypatch.setattr(codes, "PARALLEL_ABOVE", 1000)
    monkeypatch.setattr(codes, "SCAN_THREADS", 2)
    rng = np.random.default_rng(seed)
    n = 3000
    raw = rng.integers(0, 2**63, size=(n, 6), dtype=np.int64).view(np.uint64)
    matrix = codes.CodeMatrix("t", 6)
    matrix._set(np.arange(10, 10 + 2 * n, 2, dtype=np.int64), raw, rng.integers(0, 3, size=n).astype(np.int32),
                rng.random(n) < 0.8)
    matrix.projects = {"a": 0, "b": 1, "": 2}
    filters = ((None, False), (["a", ""], True), (["b"], False), (["c", ""], True))  # "c": a project to come
    queries = raw[rng.integers(n, size=3)]

    def answers(m: codes.CodeMatrix) -> list[list[int]]:
        return [m.nearest(q.tobytes(), 40, wanted, latest) for q in queries for wanted, latest in filters]

    answers(matrix)  # the filters are made
    assert len(matrix.filters) == codes.FILTERS_KEPT
    for _ in range(4):
        for _ in range(150):
            held = matrix.ids[:matrix.size]
            choice = rng.random()
            code = rng.integers(0, 2**63, size=6, dtype=np.int64).view(np.uint64).tobytes()
            if choice < 0.3:  # a new code (a new project now and then)
                matrix._put(int(held.max()) + 1, (str(rng.choice(["a", "b", "", "c"])), 1, code))
            elif choice < 0.6:  # superseded, or back to latest
                chunk = int(rng.choice(held))
                at = int(np.searchsorted(held, chunk))
                project = next(p for p, number in matrix.projects.items() if number == matrix.project[at])
                matrix._put(chunk, (project, int(rng.random() < 0.5), code))
            elif choice < 0.8:  # moved to another project
                matrix._put(int(rng.choice(held)), (str(rng.choice(["a", "b", ""])), 1, code))
            else:  # deleted
                matrix._put(int(rng.choice(held)), None)
        cached = answers(matrix)
        for kept in matrix.filters.values():
            keep = matrix.alive[:matrix.size] & (matrix.latest[:matrix.size] if kept.latest_only else True)
            if kept.wanted is not None:
                keep &= np.isin(matrix.project[:matrix.size], kept.wanted)
            assert kept.count == int(keep.sum())
        matrix.filters.clear()
        assert cached == answers(matrix)


def test_inside_a_write_transaction_uncommitted_codes_are_not_copied(filled: Store) -> None:
    _same_answer(filled, "deploy")
    key = database_file(filled.conn)
    seq = codes._MATRICES[key].seq
    try:
        with filled.transaction() as conn:
            vector_rows.put(conn, "m_phantom", None, True, ["A phantom chunk about deploys"],
                        [filled.embedder.embed_query("phantom deploys")])
            ours, theirs = _both(filled, "phantom deploys", count=3)
            assert ours == theirs  # served by vec0, which sees the transaction's own rows
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    assert codes._MATRICES[key].seq == seq
    _same_answer(filled, "phantom deploys", count=3)
