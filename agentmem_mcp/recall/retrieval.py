"""`memory_search`: retrieve (BM25 + vectors + entity graph) -> fuse -> rerank (re-checked against SQLite) -> pack.

The query's embedding (and the vector retriever after it) runs on a pool thread while this one runs BM25 and the
graph. Every candidate any of them found gets its exact cosine similarity to the query (the vector retriever
returns only its nearest 60) and, in BM25, credit for its words similar in meaning to the query's
(index/words.py); then the retrievers' scores are fused, each
divided by its best and weighted (`fusion = score`, the default), or their rankings by weighted
reciprocal rank fusion (`fusion = rrf`), renormalised over the retrievers that answered. Every
candidate is joined back against SQLite (so a stale index entry can never resurrect a deleted or
superseded memory), filtered, reranked by the memory's own state (confidence, importance/priority,
retention) and by the time the query names, and packed under a token budget. Every ranking knob is in
`ranking_settings.RankingSettings`. The only write of a search is its hits' access statistics
(`_record_access`); a long BM25 queue is left to the indexer's thread, and only a BM25 index found damaged
is rebuilt from here (`Indexer.heal`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any

from ..db import memories
from ..db.connection import OperationalError, write_transaction
from ..db.memories import MemoryFilter
from ..index import graph, vectors, words
from ..index.document import memory_text
from ..index.expansion import expansion_terms
from ..index.tokenize import index_text
from ..lifecycle.access import note_access
from ..lifecycle.retention import retention
from ..models import AgentmemError, SearchHit, SearchRequest, SearchResult
from ..project import project_for, worktree_root
from ..trust.policy import as_data, typed_by_user
from .anchors import missing_files, stale_note
from .ranking import (
    Fused,
    asks_how_to,
    asks_which_file,
    estimate_tokens,
    expansion_share,
    fuse_rankings,
    fuse_scores,
    humanize_age,
    keyword_trust,
    state_factor,
    vector_margin,
)
from .ranking_settings import RankingSettings
from .snippets import snippet, summary_snippet, with_files
from .timewords import time_window, without_relative_time

if TYPE_CHECKING:
    from ..parts import Parts

log = logging.getLogger("agentmem.retrieval")

HIT_OVERHEAD_TOKENS = 24
RETRIEVER_DEPTH = RankingSettings.retriever_depth  # scripts/eval_ablation.py reads these two
TIME_WINDOW_BOOST = RankingSettings.time_window_boost
ACCESS_BUSY_TIMEOUT_MS = 300
# what the rerank reads of a candidate: its filter's columns, its state, and what a hit shows (not its words,
# tags or hashes)
RERANKED_COLUMNS = ("id, project, is_latest, type, tier, created_at, confidence, quarantined, forget_after, "
                    "last_accessed_at, strength, importance, priority, title, content, files, version, source, key, "
                    "anchor_commit")


_HERE: dict[str, tuple[float, tuple[str | None, str | None]]] = {}
HERE_SECONDS = 2.0  # how long a directory's project and working tree are taken as known
SHOWN_KEPT = 4096  # titles and snippets whose text as shown to an agent is kept


def _where_here(workdir: str | None) -> tuple[str | None, str | None]:
    """The project and the working tree of the caller's directory (`workdir`, else this process's): a walk up the
    file system, once per directory every HERE_SECONDS, not once per search or per hit."""
    here = workdir or os.getcwd()
    now = time.monotonic()
    known = _HERE.get(here)
    if known is not None and now - known[0] < HERE_SECONDS:
        return known[1]
    if len(_HERE) > 64:
        _HERE.clear()
    found = project_for(here), worktree_root(here)
    _HERE[here] = (now, found)
    return found


@lru_cache(maxsize=SHOWN_KEPT)
def _shown(text: str, trusted: bool) -> str:
    """`trust.as_data` of a title or snippet (a pure function, and the hits a store returns recur from one
    search to the next)."""
    return as_data(text, trusted=trusted)


def _tree_for(project: str | None, here: tuple[str | None, str | None]) -> str | None:
    return (here[1] or project) if project and here[0] == project else project


def _stale(row: Any, here: tuple[str | None, str | None]) -> str:
    """A note when project files the memory names are gone from the working tree (the one this process works
    in when it is in the memory's project, else the project's root)."""
    gone = missing_files(row, _tree_for(row["project"], here), row["project"])
    return f"; {stale_note(gone, row['anchor_commit'])}" if gone else ""


def search(store: Parts, request: SearchRequest) -> SearchResult:
    """Find memories relevant to `request.query` (its fields: `SearchRequest`).

    Titles and snippets are shown as data (`trust.as_data`). Each returned hit counts as an access.
    """
    request = request.validated(store.project, store.settings.search_budget_tokens)
    query, limit = request.query, request.limit
    knobs = RankingSettings.from_settings(store.settings)
    results, reasons, notes, query_vector, asked, full_match = _retrieve(
        store, knobs, query, request.projects, not request.include_history, request.tiers, request.types,
        request.retrievers)
    fused, top, similar = _fuse(store, knobs, results, query_vector, asked, full_match)
    hits = _rerank(store, knobs, fused[: knobs.reranked(limit)], request, reasons, top, similar)
    if store.settings.team_url:  # team memory: the server's hits in the same ranking (agentmem_mcp/team/)
        from ..team.recall import merge_hits

        hits = merge_hits(store, request, hits, results, query_vector, notes)
    packed, used = _pack(hits, request.budget_tokens)
    if request.record_access and packed:
        _record_access(store, [h.id for h in packed])
    vector_ran = query_vector is not None
    mode = "hybrid" if vector_ran else "bm25+graph"
    return SearchResult(query=query, hits=packed, mode=mode, notes=notes, truncated=len(hits) - len(packed),
                        tokens=used)


def _fuse(store: Parts, knobs: RankingSettings, results: dict[str, list[tuple[str, float]]], query_vector: Any,
          asked: QueryWords | None, full_match: float | None,
          ) -> tuple[list[Fused], float, dict[str, str]]:
    """The retrievers' results as one ranking; with it the best fused score possible (`top`) and, in score
    fusion, each candidate's closest pair of similar words (for its `why`). In score fusion BM25's weight is
    `ranking.keyword_trust` of how complete its best match is (its best score, similar words included, against
    `full_match`, a full match's score: `_bm25_search`; None when BM25 did not answer) and the vectors' margin."""
    similar: dict[str, str] = {}
    vector_ran = query_vector is not None
    absent = {"vector": _without_vectors(store, results)} if vector_ran else None
    if knobs.fusion == "rrf":
        fused = fuse_rankings({name: [memory_id for memory_id, _ in pairs] for name, pairs in results.items()},
                              knobs.weights, knobs.rrf_k, absent)
        return fused, 1.0 / (knobs.rrf_k + 1), similar
    if vector_ran:
        _complete_similarities(store, results, query_vector)
        if asked is not None and knobs.soft_match_weight > 0:
            try:
                similar = _add_similar_words(store, knobs, asked, results)
            except Exception as exc:  # a help to the ranking, never a reason to fail the search
                log.warning("similar words skipped for this search: %s: %s", type(exc).__name__, exc)
    weights = knobs.weights
    if vector_ran and full_match and results.get("bm25") and "vector" in results:
        completeness = max(score for _, score in results["bm25"]) / full_match
        weights["bm25"] *= keyword_trust(completeness, vector_margin(results["vector"]), knobs.keyword_complete,
                                         knobs.vector_stands_out)
    # a memory no retriever found any evidence for (no keyword, no entity, a cosine below zero) is noise
    return [f for f in fuse_scores(results, weights, absent) if f.score > 0], 1.0, similar


def _pack(hits: list[SearchHit], budget: int) -> tuple[list[SearchHit], int]:
    """The hits that fit in `budget` tokens, in order, and the tokens they take; a first hit too long for the
    budget is cut to fit."""
    packed: list[SearchHit] = []
    used = 0
    for hit in hits:
        cost = estimate_tokens(hit.title + hit.snippet + hit.why) + HIT_OVERHEAD_TOKENS
        if used + cost > budget:
            if not packed and budget - used > HIT_OVERHEAD_TOKENS + 20:
                room = (budget - used - HIT_OVERHEAD_TOKENS - estimate_tokens(hit.title + hit.why)) * 4
                hit.snippet = hit.snippet[: max(room, 40)] + "…"
                packed.append(hit)
                used += estimate_tokens(hit.title + hit.snippet + hit.why) + HIT_OVERHEAD_TOKENS
            break
        packed.append(hit)
        used += cost
    return packed, used


def _record_access(store: Parts, memory_ids: list[str]) -> None:
    """A hit is a use, but never at the cost of the answer: while another process holds the write lock
    for long (or the disk is full) the access is skipped rather than waited for."""
    conn = store.conn
    conn.execute(f"PRAGMA busy_timeout = {min(ACCESS_BUSY_TIMEOUT_MS, store.settings.busy_timeout_ms)}")
    try:
        with write_transaction(conn):
            note_access(conn, memory_ids, store.now())
    except (AgentmemError, OperationalError) as exc:
        log.info("search hits not recorded as accesses: %s", exc)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(store.settings.busy_timeout_ms)}")


def _complete_similarities(store: Parts, results: dict[str, list[tuple[str, float]]], query_vector: Any) -> None:
    """Give the vector results the exact cosine of every candidate the other retrievers found: a memory that
    BM25 ranks first but that is not among the 60 nearest vectors is then scored on both, not on one."""
    scored = {memory_id for memory_id, _ in results.get("vector", ())}
    others = [memory_id for name, pairs in results.items() if name != "vector"
              for memory_id, _ in pairs if memory_id not in scored]
    if others:
        found = vectors.similarities(store.conn, query_vector, others, store.settings.vector_copy_chunks)
        results["vector"] = [*results["vector"], *found.items()]


QueryWords = tuple[list[str], dict[str, Any], dict[str, float]]  # the query's words, stored vectors, IDFs


def query_words(store: Parts, query: str) -> QueryWords:
    """The query's words that BM25 knows, the stored vectors of those the store has, and their IDF, for
    `_add_similar_words` (which embeds the others once the retrievers are done: the query's own embedding,
    on the vector retriever's thread, ran twice as slow beside another on two cores)."""
    asked = words.text_words(without_relative_time(query))
    idf = store.fulltext.word_idf(asked) if asked else {}
    asked = [w for w in asked if w in idf]
    known = store.word_matrix.vectors(store.conn, asked)
    return asked, known, idf


def query_word_vectors(store: Parts, asked: QueryWords) -> tuple[list[str], list[Any], list[float]]:
    """The query words with a vector, their vectors and IDFs; a word no memory has is embedded now and kept
    in memory (`Parts.query_word_cache`), never in the database."""
    query, known, idf = asked
    if missing := [w for w in query if w not in known]:
        cache = store.query_word_cache
        if len(cache) > words.MAX_CACHED_QUERY_WORDS:
            cache.clear()
        if todo := [w for w in missing if w not in cache]:
            cache.update(zip(todo, store.embedder.embed(todo) or []))
        known = {**known, **{w: cache[w] for w in missing if w in cache}}
    query = [w for w in query if w in known]
    return query, [known[w] for w in query], [idf[w] for w in query]


def _expand_keywords(store: Parts, knobs: RankingSettings, query: str, asked: QueryWords,
                     results: dict[str, list[tuple[str, float]]], full_match: float,
                     bm25: Callable[..., tuple[list[tuple[str, float]], float]]) -> float:
    """Search BM25 again with the query's words expanded to their nearest vocabulary words (index/expansion.py),
    each boosted by `expansion_weight` x its cosine x `ranking.expansion_share` of how complete BM25's best
    match was (a complete one is not expanded), and let its results stand for BM25's. Returns a full match's
    score on the new results' scale (`bm25`: `_bm25_search` for this search)."""
    best = max((score for _, score in results["bm25"]), default=0.0)
    share = expansion_share(best / full_match, knobs.keyword_complete)
    if knobs.expansion_weight <= 0 or share <= 0:
        return full_match
    words_with_vectors, vectors_of, _ = query_word_vectors(store, asked)
    if not words_with_vectors:
        return full_match
    fulltext = store.fulltext
    nearest = store.word_neighbours.nearest(store.conn, words_with_vectors, vectors_of, knobs.expansion_from)
    terms = expansion_terms(words_with_vectors, nearest, knobs.expansion_per_word,
                            lambda word: next(iter(fulltext.analyzer.analyze(word)), None),
                            set(fulltext.query_terms(without_relative_time(query))),
                            lambda term: bool(fulltext.content_terms([term])))
    if not terms:
        return full_match
    weight = knobs.expansion_weight * share
    results["bm25"], full_match = bm25(boosts={term: weight * cosine for term, cosine in terms.items()})
    return full_match


def _add_similar_words(store: Parts, knobs: RankingSettings, asked: QueryWords,
                       results: dict[str, list[tuple[str, float]]]) -> dict[str, str]:
    """Add to each candidate's BM25 score `soft_match_weight` x its similar-word score (index/words.py); a
    candidate no keyword found enters the BM25 results that way. Returns the closest pair of words of each
    candidate that has one ("cities~chicago"), for its `why`."""
    candidates = list({memory_id for pairs in results.values() for memory_id, _ in pairs})
    if not asked[0] or "bm25" not in results or not candidates:
        return {}
    memory_words = memories.words_by_id(store.conn, candidates)
    found = store.word_matrix.soft_scores(store.conn, *query_word_vectors(store, asked), memory_words)
    if found:
        weight = knobs.soft_match_weight
        scores = dict(results["bm25"])
        for memory_id, (score, _) in found.items():
            scores[memory_id] = scores.get(memory_id, 0.0) + weight * score
        results["bm25"] = list(scores.items())
    return {memory_id: pair for memory_id, (_, pair) in found.items()}


def _retrieve(store: Parts, knobs: RankingSettings, query: str, projects: list[str | None] | None, latest_only: bool,
              tiers: list[str] | None, types: list[str] | None, retrievers: Sequence[str],
              ) -> tuple[dict[str, list[tuple[str, float]]], dict[str, str], list[str], Any, QueryWords | None,
                         float | None]:
    """Each retriever's (id, score) pairs, the graph's reasons, notes for the answer, the query vector (None
    when the vector retriever did not run), the query's words for `_add_similar_words` (None: not used) and
    a full keyword match's score on BM25's scale (`_bm25_search`; None when BM25 did not answer)."""
    notes: list[str] = []
    vector_ran = "vector" in retrievers and store.embedder.ready
    if "vector" in retrievers and not vector_ran:
        status = store.embedder.status
        notes.append("vector search is loading (the model loads in the first seconds); results use BM25 + entity "
                     "graph meanwhile" if status == "loading" else
                     f"vector search unavailable ({status.removeprefix('unavailable: ')}); results use BM25 + "
                     f"entity graph")
    # Only the query's embedding is worth a thread: the model runs outside the GIL while this thread does the rest.
    # A query embedded lately (and so every retriever) runs here, with no hand-off between threads.
    vector_job = None
    if vector_ran and not store.embedder.knows_query(query):
        vector_job = store.pool.submit(_vector_search, store, knobs, query, projects, latest_only)
    jobs: dict[str, Callable[[], Any]] = {}
    if "bm25" in retrievers:
        jobs["bm25"] = partial(_bm25_search, store, knobs, query, projects, latest_only, tiers, types)
    if vector_ran:
        jobs["vector"] = vector_job.result if vector_job is not None else partial(
            _vector_search, store, knobs, query, projects, latest_only)
    if "graph" in retrievers:
        jobs["graph"] = partial(_graph_search, store, knobs, query)
    results: dict[str, list[tuple[str, float]]] = {}
    reasons: dict[str, str] = {}
    query_vector = None
    full_match = None
    asked: QueryWords | None = None
    if vector_ran and "bm25" in retrievers and knobs.fusion == "score" and (
            knobs.soft_match_weight > 0 or knobs.expansion_weight > 0):
        try:
            asked = query_words(store, query)
        except Exception as exc:  # search goes on without similar words
            log.warning("similar words unavailable for this search: %s: %s", type(exc).__name__, exc)
    for name, job in sorted(jobs.items(), key=lambda item: item[0] == "vector"):  # the embedding's thread last
        try:
            result = job()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # one broken retriever (even a tantivy panic) degrades the answer
            notes.append(f"{name} retriever failed: {type(exc).__name__}: {exc}")
            if name == "bm25":
                store.indexer.heal(exc)
            continue
        if name == "graph":
            result, reasons = result
        if name == "bm25":
            result, full_match = result
        if name == "vector":
            result, query_vector = result
            if query_vector is None:
                continue
        results[name] = list(result)
    results = {name: results[name] for name in ("bm25", "vector", "graph") if name in results}
    if asked is not None and full_match and "bm25" in results and query_vector is not None:
        try:
            full_match = _expand_keywords(store, knobs, query, asked, results, full_match,
                                          partial(_bm25_search, store, knobs, query, projects, latest_only, tiers,
                                                  types))
        except Exception as exc:  # the keyword results stand as they are
            log.warning("query expansion skipped for this search: %s: %s", type(exc).__name__, exc)
    if "bm25" in jobs and (left := store.indexer.rebuilding()):
        notes.append(f"the keyword index is being rebuilt ({left:,} memories left): keyword matches among "
                     "those are missing until it finishes")
    elif "bm25" in jobs and (left := store.indexer.backlog()) > knobs.pending_scan:
        notes.append(f"{left:,} memories saved moments ago are still being indexed for keywords: the first "
                     f"{knobs.pending_scan} were searched by keyword, the rest by meaning only")
    return results, reasons, notes, query_vector, asked, full_match


def _without_vectors(store: Parts, results: dict[str, list[tuple[str, float]]]) -> set[str]:
    """Found ids that have no vector: by design (working memories of reads, edits, ...: worker.VECTOR_CHARS) or
    not yet (saved before the model was ready: the backfill embeds them). Fusion scores them on the other
    retrievers alone rather than as the vectors' last."""
    found = list({memory_id for pairs in results.values() for memory_id, _ in pairs}
                 - {memory_id for memory_id, _ in results.get("vector", ())})
    return memories.without_vectors(store.conn, found)


def _bm25_search(store: Parts, knobs: RankingSettings, query: str, projects: list[str | None] | None, latest_only: bool,
                 tiers: list[str] | None, types: list[str] | None, boosts: dict[str, float] | None = None,
                 ) -> tuple[list[tuple[str, float]], float]:
    """tantivy's BM25, plus the memories still waiting in the outbox (written moments ago, by any process),
    scored by the share of query terms they contain and merged by normalised score. Relative time words
    ("in the past two months") are not keywords: the time window weighs by them (`_rerank`). With the hits,
    the score a full match would have on their scale (`FulltextIndex.full_match_score`; on the share scale of
    merged waiting memories, a full match is 1)."""
    query = without_relative_time(query)
    kept = _kept_bm25(store, knobs, query, projects, latest_only, tiers, types, boosts)
    if kept is not None and kept[1] is not None:
        return list(kept[1][0]), kept[1][1]
    pending = store.indexer.pending_ids(limit=knobs.pending_scan + 1)
    if len(pending) > knobs.pending_scan:  # more than search scans: the indexer applies them, search writes nothing
        store.indexer.index_later()
        pending = pending[:knobs.pending_scan]
    chosen = MemoryFilter(projects=projects, latest_only=latest_only, types=types or (), tiers=tiers or ())
    hits = store.fulltext.search(query, projects=projects, latest_only=latest_only, tiers=tiers, types=types,
                                 limit=knobs.retriever_depth, boosts=boosts,
                                 admitted=lambda ids: memories.admitted(store.conn, ids, chosen))
    full = store.fulltext.full_match_score(store.fulltext.query_terms(query))
    if not pending:
        if kept is not None:
            _keep_bm25(kept[0], (list(hits), full))
        return hits, full
    # Both on one scale, the weighted share of query terms a memory contains: the best indexed hit gets its
    # own share and the other indexed hits their BM25 score in proportion (not 1.0 for the best of weak hits,
    # which would rank them above a fresh memory that contains every term of the query).
    anchor = [hits[0][0]] if hits else []
    extra = pending_matches(store, query, [*pending, *anchor], projects, latest_only, tiers, types)
    scale = extra.get(hits[0][0], 0.0) / (hits[0][1] or 1.0) if hits else 0.0
    merged = {memory_id: score * scale for memory_id, score in hits if memory_id not in extra}
    merged.update(extra)
    return sorted(merged.items(), key=lambda item: -item[1])[:knobs.retriever_depth], full * scale if hits else 1.0


_BM25: dict[tuple, tuple[list[tuple[str, float]], float]] = {}
_BM25_GUARD = threading.Lock()
BM25_KEPT = 256  # keyword answers kept (queries x filters x stores), for a question asked again


def _kept_bm25(store: Parts, knobs: RankingSettings, query: str, projects: list[str | None] | None,
               latest_only: bool, tiers: list[str] | None, types: list[str] | None,
               boosts: dict[str, float] | None = None,
               ) -> tuple[tuple, tuple[list[tuple[str, float]], float] | None] | None:
    """The key of this keyword search's answer and the answer kept for it (None: not kept yet); None when no
    answer may be kept: while index changes wait in the outbox. Every change of a memory that BM25 or its filters
    read queues one there (whichever process makes it), and applying them commits the index, which gives it a new
    `version`: an answer kept for one version and an empty outbox is the answer until then."""
    if store.indexer.backlog():
        return None
    version = store.fulltext.version()
    if version is None:
        return None
    key = (str(store.settings.database), str(store.settings.fulltext_dir), version, query,
           None if projects is None else tuple(projects), latest_only, tuple(tiers or ()), tuple(types or ()),
           knobs.retriever_depth, tuple(sorted((boosts or {}).items())))
    with _BM25_GUARD:
        return key, _BM25.get(key)


def _keep_bm25(key: tuple, answer: tuple[list[tuple[str, float]], float]) -> None:
    with _BM25_GUARD:
        if len(_BM25) >= BM25_KEPT:
            _BM25.pop(next(iter(_BM25)))
        _BM25[key] = answer


def pending_matches(store: Parts, query: str, pending: Sequence[str], projects: list[str | None] | None,
                    latest_only: bool, tiers: list[str] | None = None, types: list[str] | None = None,
                    ) -> dict[str, float]:
    """Weighted share of the query's terms found in each not-yet-indexed memory (0 = no match: left out)."""
    fulltext = store.fulltext
    query_terms = fulltext.query_terms(query)
    if not query_terms or not pending:
        return {}
    weights = fulltext.term_weights(query_terms)
    total = sum(weights.values()) or 1.0
    found: dict[str, float] = {}
    chosen = MemoryFilter(projects=projects, latest_only=latest_only, types=types or (), tiers=tiers or ())
    for row in memories.by_ids(store.conn, list(pending), "id, project, tier, type, is_latest, title, content, "
                               "tags, files"):
        if not chosen.admits(row):
            continue
        text = memory_text(row["title"], row["content"], json.loads(row["tags"]), json.loads(row["files"]))
        doc_terms = set(fulltext.analyzer.analyze(index_text(text)))
        score = sum(w for t, w in weights.items() if t in doc_terms) / total
        if score > 0:
            found[row["id"]] = score
    return found


def _vector_search(store: Parts, knobs: RankingSettings, query: str, projects: list[str | None] | None,
                   latest_only: bool) -> tuple[list[tuple[str, float]], Any]:
    vector = store.embedder.embed_query(query)
    if vector is None:
        return [], None
    return vectors.knn(store.conn, vector, projects=projects, latest_only=latest_only, k=knobs.retriever_depth,
                       copy_limit=store.settings.vector_copy_chunks), vector


def _graph_search(store: Parts, knobs: RankingSettings, query: str,
                  ) -> tuple[list[tuple[str, float]], dict[str, str]]:
    return graph.search(store.conn, query, limit=knobs.retriever_depth)


def _rerank(store: Parts, knobs: RankingSettings, fused: list[Fused], request: SearchRequest,
            reasons: dict[str, str], top: float, similar: dict[str, str] | None = None) -> list[SearchHit]:
    """Join the candidates back against SQLite (a stale index entry never resurrects a forgotten or superseded
    memory), drop those the request's filters exclude, and score each by its fused score x its state, the time
    window and the how-to boost; the best `request.limit` of those scoring at least `min_score`, best first.
    `top`: the best fused score possible, so that a perfect match scores 1 before its state factor; `similar`: the
    closest pair of similar words of a candidate, for its `why`. Only the hits returned get a snippet, a `why` and
    a check of their files."""
    if not fused:
        return []
    by_id = {f.id: f for f in fused}
    rows = memories.by_ids(store.conn, list(by_id), RERANKED_COLUMNS)
    now = store.now()
    query = request.query
    window = time_window(query, now)
    how_to = asks_how_to(query)
    scored: list[tuple[float, Any, bool]] = []
    chosen = MemoryFilter(projects=request.projects, latest_only=not request.include_history,
                          types=request.types or (), tiers=request.tiers or (), since=request.since,
                          until=request.until, min_confidence=request.min_confidence,
                          with_quarantined=request.include_quarantined, live_at=now)
    for row in rows:
        if not chosen.admits(row):
            continue
        last_used = row["last_accessed_at"] or row["created_at"]
        kept = retention((now - last_used) / 86400, row["strength"])
        factor = state_factor(row["confidence"], row["importance"], row["priority"], kept)
        score = by_id[row["id"]].score / top * factor
        in_window = window is not None and window[0] <= row["created_at"] <= window[1]
        if in_window:
            score *= knobs.time_window_boost
        if how_to and row["tier"] == "procedural":
            score *= knobs.procedure_boost
        if round(score, 4) >= knobs.min_score:
            scored.append((score, row, in_window))
    scored.sort(key=lambda item: -item[0])
    if not scored:
        return []
    query_terms = [t.lower() for t in re.findall(r"\w+", query)]
    rarity = store.fulltext.word_idf(query_terms)
    which_file = asks_which_file(query)
    here = _where_here(store.workdir)
    return [SearchHit(
        id=row["id"], title=_shown(row["title"], typed_by_user(row)), type=row["type"], tier=row["tier"],
        project=row["project"],
        snippet=_shown(with_files((summary_snippet if row["type"] == "summary" else snippet)(
            row["content"], query_terms, weights=rarity), row["files"], which_file), typed_by_user(row)),
        score=round(score, 4),
        age=humanize_age(now - row["created_at"]),
        why=_why(by_id[row["id"]], reasons.get(row["id"]), row, in_window, (similar or {}).get(row["id"]))
        + _stale(row, here),
        confidence=round(row["confidence"], 3), version=row["version"], is_latest=bool(row["is_latest"]),
    ) for score, row, in_window in scored[:request.limit]]


def _why(entry: Fused, graph_reason: str | None, row: Any, in_window: bool = False,
         similar: str | None = None) -> str:
    parts = []
    if "bm25" in entry.ranks:
        parts.append(f"keywords #{entry.ranks['bm25']}" + (f" (similar words: {similar})" if similar else ""))
    if "vector" in entry.ranks:
        parts.append(f"meaning #{entry.ranks['vector']}")
    if "graph" in entry.ranks:
        parts.append(graph_reason or f"entities #{entry.ranks['graph']}")
    if in_window:
        parts.append("from the time asked about")
    parts.append(f"confidence {row['confidence']:.2f}")
    if row["priority"] == "P0":
        parts.append("P0")
    if not row["is_latest"]:
        parts.append(f"superseded version {row['version']}")
    if row["quarantined"] is not None:
        parts.append(f"QUARANTINED: {row['quarantined']}")
    return "; ".join(parts)
