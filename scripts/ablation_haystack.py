"""What eval_ablation.py ranks from: one store's memories as arrays (tantivy BM25 scores over several document
variants, every memory's exact cosine to the query, sentence pieces, similar words, dates and states), built once per
store and asked per question."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
from eval_common import (
    store_chunk_vectors,
)

from agentmem_mcp.db import word_vectors as stored_word_vectors
from agentmem_mcp.index import words as word_vectors
from agentmem_mcp.index.fulltext import FulltextDoc, FulltextIndex
from agentmem_mcp.index.neighbours import context_text
from agentmem_mcp.index.tokenize import STOPWORDS, terms, without_stamp
from agentmem_mcp.index.vectors import chunk_text
from agentmem_mcp.lifecycle.remember import derive_title
from agentmem_mcp.lifecycle.retention import retention
from agentmem_mcp.recall.ranking import state_factor
from agentmem_mcp.recall.retrieval import (
    TIME_WINDOW_BOOST,
    query_word_vectors,
    query_words,
)
from agentmem_mcp.recall.timewords import time_window, without_relative_time
from agentmem_mcp.store import memory_text

# BM25 document variants: name -> (earlier turns, with the next turn, context only, longest memory given one)
Features = dict[str, np.ndarray]


DOCUMENTS = {"plain": (0, False, False, None), "ctx1": (1, False, False, None), "ctx2": (2, False, False, None),
             "ctx3": (3, False, False, None), "ctx1+next": (1, True, False, None), "ctx2only": (2, False, True, None),
             "ctx2<=300": (2, False, False, 300), "ctx2<=600": (2, False, False, 600)}


def contexts(contents: list[str], groups: list[str], earlier: int, with_next: bool,
             longest: int | None = None) -> list[str]:
    """Each memory's BM25 context, as index/neighbours.py builds it from the `earlier` memories before it in
    its session (nearest first), optionally followed by the opening of the memory after it; none for a
    memory longer than `longest` characters."""
    out = []
    for i in range(len(contents)):
        if longest is not None and len(contents[i]) > longest:
            out.append("")
            continue
        before = []
        for j in range(i - 1, -1, -1):
            if groups[j] != groups[i] or len(before) == earlier:
                break
            before.append(contents[j])
        context = context_text(before, turns=earlier) if earlier else ""
        if with_next and i + 1 < len(contents) and groups[i + 1] == groups[i]:
            context = "\n".join(p for p in (context, context_text([contents[i + 1]], turns=1)) if p)
        out.append(context)
    return out


NO_PIECE = -2.0  # below any cosine


def best_per_memory(n: int, owners: np.ndarray, similarities: np.ndarray, floor: float = -1.0) -> np.ndarray:
    """The best of each memory's rows (owners[i] = the memory of row i); `floor` for a memory with none."""
    best = np.full(n, floor)
    if len(owners):
        np.maximum.at(best, owners, similarities)
    return best


def with_piece(chunks: np.ndarray, piece: np.ndarray, piece_weight: float = 0.5) -> np.ndarray:
    """vectors.combine over arrays (weight 0.5): a memory with sentence pieces scores chunk and piece."""
    return np.where(piece > NO_PIECE, (1 - piece_weight) * chunks + piece_weight * piece, chunks)


def without_question_words(query: str) -> str:
    kept = [w for w in re.findall(r"[\w'-]+", query) if w.lower() not in STOPWORDS]
    return " ".join(kept) or query


class Haystack:
    """One store's memories in time order, their BM25 variants, vectors and state factors."""

    def __init__(self, store, memory_ids: list[str], groups: list[str], home: Path, embedder,
                 more: bool = False) -> None:
        self.store, self.ids, self.groups = store, memory_ids, groups
        self.position = {m: i for i, m in enumerate(memory_ids)}
        rows = {r["id"]: r for r in store.conn.execute("SELECT * FROM memories")}
        texts = [memory_text(rows[m]["title"], rows[m]["content"], [], []) for m in memory_ids]
        contents = [rows[m]["content"] for m in memory_ids]
        self.created = np.array([rows[m]["created_at"] for m in memory_ids])
        now = store.now()
        self.state = np.array([state_factor(rows[m]["confidence"], rows[m]["importance"], rows[m]["priority"],
                                            retention((now - rows[m]["created_at"]) / 86400, rows[m]["strength"]))
                               for m in memory_ids])
        self.indexes = {}
        for name, (earlier, with_next, only, longest) in DOCUMENTS.items():
            index = FulltextIndex(home / name)
            context = contexts(contents, groups, earlier, with_next, longest)
            docs = context if only else ["\n".join(p for p in pair if p) for pair in zip(texts, context)]
            index.apply([FulltextDoc(m, store.project, "episodic", "context", True, d)
                         for m, d in zip(memory_ids, docs)], [])
            self.indexes[name] = index
        self.chunks, owners = store_chunk_vectors(store, memory_ids)
        self.owners = np.asarray(owners)
        self.pieces, piece_owners = store_chunk_vectors(store, memory_ids, pieces=True)
        self.piece_owners = np.asarray(piece_owners, dtype=int)
        self.answers, answer_owners = store_chunk_vectors(store, memory_ids, answers=True)
        self.answer_owners = np.asarray(answer_owners, dtype=int)
        self.first_chunk = np.zeros(len(memory_ids), dtype=int)  # each memory's first chunk vector
        for row in range(len(self.owners) - 1, -1, -1):
            self.first_chunk[self.owners[row]] = row
        self.words = [terms(without_stamp(c)) for c in contents]
        frequency = Counter(t for words in self.words for t in set(words))
        self.idf = {t: math.log(1 + (len(contents) - n + 0.5) / (n + 0.5)) for t, n in frequency.items()}
        self.next = np.array([i + 1 if i + 1 < len(groups) and groups[i + 1] == groups[i] else -1
                              for i in range(len(groups))])
        # each session as one document: its turns' terms, and the mean of its turns' first chunk vectors
        sessions = list(dict.fromkeys(groups))
        self.session_of = np.array([sessions.index(g) for g in groups])
        self.session_terms = [Counter() for _ in sessions]
        self.session_vectors = np.zeros((len(sessions), self.chunks.shape[1]), np.float32)
        for i, words in enumerate(self.words):
            self.session_terms[self.session_of[i]].update(words)
            self.session_vectors[self.session_of[i]] += self.chunks[self.first_chunk[i]]
        self.session_vectors /= np.linalg.norm(self.session_vectors, axis=1, keepdims=True)
        frequency = Counter(t for counts in self.session_terms for t in counts)
        self.session_idf = {t: math.log(1 + (len(sessions) - n + 0.5) / (n + 0.5)) for t, n in frequency.items()}
        stored = dict(store.conn.execute("SELECT id, words FROM memories WHERE words IS NOT NULL").fetchall())
        self.memory_words = {i: word_vectors.searched_words(stored[m]) for i, m in enumerate(memory_ids)
                             if m in stored}
        self.word_vectors = word_vectors.Vocabulary.from_blobs(
            stored_word_vectors.lookup(store.conn, [w for ws in self.memory_words.values() for w in ws]))
        self.embedder, self.more = embedder, more
        if more:
            stamp_free, owners = [], []
            for i, content in enumerate(contents):
                body = without_stamp(content)
                for chunk in chunk_text(memory_text(derive_title(body), body)):
                    stamp_free.append(chunk)
                    owners.append(i)
            self.stamp_free = np.asarray(embedder.embed(stamp_free), np.float32)
            self.stamp_free_owners = np.asarray(owners)
            with_earlier = [("\n".join(p for p in (c, without_stamp(b)) if p))[:900]
                            for c, b in zip(contexts(contents, groups, 1, False), contents)]
            self.with_earlier = np.asarray(embedder.embed(with_earlier), np.float32)

    def features(self, query: str, query_vector: np.ndarray) -> Features:
        n = len(self.ids)
        out: Features = {}
        keywords = without_relative_time(query)  # as Store.search does
        for name, index in self.indexes.items():
            out[name] = self.bm25(index, keywords)
        out["ctx2, raw query"] = self.bm25(self.indexes["ctx2"], query) if keywords != query else out["ctx2"]
        cos, piece = self.cosines(query_vector)
        out["cos, chunks only"] = cos
        out["cos"] = with_piece(cos, piece)  # without answer chunks: the base of the older rows
        out["piece"] = piece
        answer = best_per_memory(n, self.answer_owners, self.answers @ query_vector, NO_PIECE)
        out["cos with answers"] = np.maximum(out["cos"], answer)  # vectors.combine
        out["qvec"] = query_vector
        out["keywords"] = keywords
        out["similar"] = self.similar_words(query)
        if self.more:
            stamp_free = best_per_memory(n, self.stamp_free_owners, self.stamp_free @ query_vector)
            out["cos, stamp-free chunks"] = with_piece(stamp_free, piece)
            out["cos + turn with the one before"] = 0.75 * out["cos"] + 0.25 * (self.with_earlier @ query_vector)
            stripped = np.asarray(self.embedder.embed([without_question_words(query)])[0], np.float32)
            mean_query = (stripped + query_vector) / np.linalg.norm(stripped + query_vector)
            out["cos, query without question words"] = with_piece(*self.cosines(mean_query))
        return out

    def similar_words(self, query: str) -> np.ndarray:
        """Each memory's similar-word score, as search computes it (retrieval.query_words and
        query_word_vectors, then index/words.py over every memory)."""
        asked = query_word_vectors(self.store, query_words(self.store, query))
        found = word_vectors.soft_scores(*asked, self.memory_words, self.word_vectors)
        out = np.zeros(len(self.ids))
        for i, (score, _) in found.items():
            out[i] = score
        return out

    def cosines(self, query_vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each memory's best chunk cosine, and its best sentence-piece cosine (NO_PIECE: it has none)."""
        n = len(self.ids)
        return (best_per_memory(n, self.owners, self.chunks @ query_vector),
                best_per_memory(n, self.piece_owners, self.pieces @ query_vector, NO_PIECE))

    def bm25(self, index: FulltextIndex, query: str) -> np.ndarray:
        scores = np.zeros(len(self.ids))
        for memory_id, score in index.search(query, projects=None, latest_only=False, limit=len(self.ids)):
            scores[self.position[memory_id]] = score
        return scores

    def post(self, scores: np.ndarray, query: str) -> np.ndarray:
        window = time_window(query, self.store.now())
        if window is not None:
            scores = scores * np.where((self.created >= window[0]) & (self.created <= window[1]),
                                       TIME_WINDOW_BOOST, 1.0)
        return scores * self.state
