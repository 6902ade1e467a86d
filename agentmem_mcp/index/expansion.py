"""Query expansion: a query word also searches, through BM25, for its nearest words in the store's vocabulary.

A question asked in other words than its memory shares no keyword with it ("which JS dependency manager do we
prefer?" against "Use pnpm instead of npm for installing packages"). Similar words (index/words.py) rescore the
candidates the retrievers found, by the query word's own rarity; expansion goes one step further: each query word
that carries content brings its `per_word` nearest words of the vocabulary (the words the memories hold, each
embedded on its own by the worker: table `word_vectors`) from a cosine of `from_cosine` up, and BM25 searches them
beside the query's own terms, each boosted by weight x its cosine. A memory holding "packages" is then found and
scored by that word's rarity in the store, as a keyword match of lower weight.

The vocabulary is read whole into one float32 matrix (MAX_WORDS words, the most used first: ~1.5 kB a word); when
the number of stored words grew (checked at most every CHECK_SECONDS) the new words are added, when it fell it is
read again. Each query word's nearest words are kept until the vocabulary changes, so a word asked again costs
nothing. Search asks for expansion only as far as
the query's own keywords failed (recall/retrieval.py): a query whose keywords match well is not expanded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..db import word_vectors
from ..db.connection import Connection
from .words import Vocabulary, same_stem

MAX_WORDS = 30_000  # words of the vocabulary kept in memory (float32: ~46 MB at most)
CHECK_SECONDS = 30.0  # how often the number of stored words is read to notice new ones
NEAREST_KEPT = 16  # nearest words kept per query word, before the query's own filters
MAX_CACHED_QUERY_WORDS = 10_000


def expansion_terms(query: Sequence[str], nearest: Mapping[str, Sequence[tuple[str, float]]], per_word: int,
                    analyse: Callable[[str], str | None], own_terms: set[str],
                    carries_content: Callable[[str], bool]) -> dict[str, float]:
    """The BM25 terms a query expands to and each one's cosine (the best, when two query words bring one term).

    query: the query words; nearest: each one's nearest vocabulary words with their cosines, best first;
    analyse: a word's BM25 term (None: none); own_terms: the query's own BM25 terms (never an expansion);
    carries_content: whether a term can say what a text is about (not a function word of any language). A query
    word brings its first `per_word` nearest words that are neither one of the query's terms, nor a spelling of
    the word itself ("fails~failure": BM25's stemmer or similar words count those), nor a function word."""
    out: dict[str, float] = {}
    for word in query:
        term = analyse(word)
        if term is None or not carries_content(term):
            continue
        taken = 0
        for other, cosine in nearest.get(word, ()):
            if taken >= per_word:
                break
            found = analyse(other)
            if found is None or found in own_terms or same_stem(word, other) or not carries_content(found):
                continue
            out[found] = max(out.get(found, 0.0), cosine)
            taken += 1
    return out


class WordNeighbours:
    """The store's vocabulary as one matrix, for the nearest words of a query word: one per store
    (`Store.word_neighbours`), shared by its threads."""

    def __init__(self, max_words: int = MAX_WORDS, check_seconds: float = CHECK_SECONDS) -> None:
        self.max_words = max_words
        self.check_seconds = check_seconds
        self._lock = threading.Lock()
        self._vocabulary: Vocabulary | None = None
        self._stored = -1
        self._checked = float("-inf")
        self._nearest: dict[tuple[str, float], list[tuple[str, float]]] = {}

    def _current(self, conn: Connection) -> Vocabulary:
        """The vocabulary, read whole the first time and after words were removed (forgotten, another model's),
        and only its new words when some were added."""
        import numpy as np

        now = time.monotonic()
        if self._vocabulary is not None and now - self._checked < self.check_seconds:
            return self._vocabulary
        self._checked = now
        stored = word_vectors.count(conn)
        if self._vocabulary is None or stored < self._stored:
            self._vocabulary = Vocabulary.from_blobs(word_vectors.most_used(conn, self.max_words))
            self._nearest.clear()
        elif stored > self._stored and len(self._vocabulary.words) < self.max_words:
            known = self._vocabulary.row
            added = [w for w in word_vectors.words(conn) if w not in known][:self.max_words - len(known)]
            more = Vocabulary.from_blobs(word_vectors.lookup(conn, added))
            if more.words:
                old = self._vocabulary
                same = old.words and old.matrix.shape[1] == more.matrix.shape[1]
                self._vocabulary = Vocabulary(old.words + more.words, np.vstack([old.matrix, more.matrix])) \
                    if same else more
                self._nearest.clear()
        self._stored = stored
        return self._vocabulary

    def nearest(self, conn: Connection, query: Sequence[str], vectors: Sequence[Any],
                from_cosine: float) -> dict[str, list[tuple[str, float]]]:
        """Each query word's nearest vocabulary words (itself left out) from `from_cosine` up, best first, with
        their cosines; `vectors`: the query words' unit vectors."""
        import numpy as np

        with self._lock:
            vocabulary = self._current(conn)
            if not vocabulary.words:
                return {}
            if len(self._nearest) > MAX_CACHED_QUERY_WORDS:
                self._nearest.clear()
            out: dict[str, list[tuple[str, float]]] = {}
            if vectors and vocabulary.matrix.shape[1] != len(vectors[0]):  # another model's: read them again
                self._vocabulary = None
                vocabulary = self._current(conn)
                if not vocabulary.words or vocabulary.matrix.shape[1] != len(vectors[0]):
                    return {}
            for word, vector in zip(query, vectors):
                key = (word, from_cosine)
                if key not in self._nearest:
                    # one matrix-vector product per word: a matrix-matrix product wakes OpenBLAS's threads
                    similarity = vocabulary.matrix @ np.asarray(vector, dtype=np.float32)
                    count = min(NEAREST_KEPT + 1, len(similarity))
                    top = np.argpartition(-similarity, count - 1)[:count]
                    self._nearest[key] = [(vocabulary.words[i], float(similarity[i]))
                                          for i in top[np.argsort(-similarity[top])]
                                          if similarity[i] >= from_cosine and vocabulary.words[i] != word]
                out[word] = self._nearest[key]
            return out
