"""Similar words: a memory word close in meaning to a query word counts as part of a keyword match.

BM25 matches words themselves, so "Which cities has John been to?" scores nothing for "I was in Chicago, it
was awesome!", and the memory's one vector blurs "Chicago" with the rest of it. Each word of the store is
embedded once, on its own, by the background worker (`Store.add_word_vectors`, table `word_vectors`); the
model puts "cities" and "Chicago" at 0.56, "countries" and "England" at 0.64, "pets" and "dog" at 0.70,
"exercises" and "weekend" at 0.17. Search then gives every candidate, for each query word, the similarity of
its closest other word from SIMILAR_FROM up, scaled to 0..1 and weighted by the query word's BM25 IDF, and
adds `soft_match_weight` (0.5: at most half a keyword match per query word) times the sum to the candidate's
BM25 score (what it adds on LoCoMo and LongMemEval: docs/evaluation.md).

A hit's `why` names a pair only when it is one word in two spellings (`same_stem`: "config~configuration",
"fails~failure", "repo~repository") at a cosine from SHOWN_FROM up, the pair of those that weighed most. The
model's cosine alone cannot tell a shared meaning from a shared topic: an antonym or a word of the same register
is as close as a synonym or an instance ("fails~successfully" 0.62, "add~available" 0.62, "slow~fast" 0.75,
"enable~disable" 0.73, against "countries~england" 0.64, "error~exception" 0.70). Such pairs still count in the
score, where a shared topic helps; they are not offered to a reader as an explanation.

Only candidates that BM25, the vectors or the graph found are rescored: the words reorder them, they do not
find new ones (in the evaluation, scoring every memory instead found nothing more). `uses` counts the
memories that have a word, so forgetting the last of them removes the word too. The table's SQL is
db/word_vectors.py's; this module holds the words' packing and the scoring.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from ..db import word_vectors
from ..db.connection import Connection
from .tokenize import STOPWORDS, terms, without_stamp

SIMILAR_FROM = 0.4  # cosine of two words below which they are not similar at all
# cosine from which a pair of one stem is named in a hit's `why`: below it a shared beginning is chance
# ("cat~category" 0.53, "log~login" 0.52, "pass~password" 0.50), above it a variant ("args~arguments" 0.57,
# "use~user" 0.61, "fails~failure" 0.78, "config~configuration" 0.88)
SHOWN_FROM = 0.55
STEM_MIN_CHARS = 3  # the shortest shared beginning that makes two words one stem
STEM_ENDING_CHARS = 2  # how many last letters of the shorter word may differ (fails~failure, fixes~fixing)
MIN_CHARS, MAX_CHARS = 3, 24
SCALE = 127.0  # vectors are stored as int8: 384 bytes a word, cosines off by about 0.005
MAX_CACHED = 100_000  # word vectors a store's WordMatrix keeps (384 bytes each), emptied when full
MAX_CACHED_MEMORIES = 20_000  # memories whose word rows a WordMatrix keeps (~0.3 kB each)
MAX_CACHED_ANSWERS = 256  # the last searches' similar-word scores a WordMatrix keeps (a question asked again)
MAX_CACHED_QUERY_WORDS = 10_000  # vectors of query words no memory has (1.5 kB each), kept in memory only
# the words of a memory that search compares: its first distinct ones. A long reply has hundreds; with all of
# them, similar words cost a search more than they bring, and the first 64 rank the same on both public
# benchmarks (docs/evaluation.md)
MAX_MEMORY_WORDS = 64
_STOP = frozenset(STOPWORDS)


def is_word(term: str) -> bool:
    """A term that gets a vector: letters only (no numbers, hashes or paths), 3-24 of them, not a stop word."""
    return MIN_CHARS <= len(term) <= MAX_CHARS and term.isalpha() and term not in _STOP


def same_stem(a: str, b: str) -> bool:
    """Whether two words are spellings of one: the shorter one, but for at most its last STEM_ENDING_CHARS
    letters, begins the longer, over at least STEM_MIN_CHARS letters ("fails~failure", "docs~documentation",
    "add~added"; not "add~available", "slow~fast")."""
    short, long = sorted((a, b), key=len)
    shared = 0
    for x, y in zip(short, long):
        if x != y:
            break
        shared += 1
    return shared >= max(STEM_MIN_CHARS, len(short) - STEM_ENDING_CHARS)


def text_words(text: str) -> list[str]:
    """The distinct words of a text that get vectors, in order of appearance."""
    return list(dict.fromkeys(t for t in terms(without_stamp(text)) if is_word(t)))


def memory_words(title: str, content: str) -> list[str]:
    """The distinct words of a memory that get vectors (its title's, then its content's)."""
    return list(dict.fromkeys([*text_words(title), *text_words(content)]))


def _unit() -> Any:
    import numpy as np

    # a numpy scalar: an int8 matrix's float32 copy times the Python float 1/127 took 20 times as long
    return np.float32(1.0 / SCALE)


def pack(vector: Any) -> bytes:
    import numpy as np

    return np.clip(np.rint(np.asarray(vector, dtype=np.float32) * SCALE), -127, 127).astype(np.int8).tobytes()


def unpack(blob: bytes) -> Any:
    import numpy as np

    vector = np.frombuffer(blob, dtype=np.int8).astype(np.float32)
    return vector / (float(np.linalg.norm(vector)) or 1.0)


class Vocabulary:
    """Words and their unit vectors as one matrix (row i is `words[i]`)."""

    def __init__(self, words: Sequence[str], matrix: Any) -> None:
        self.words = list(words)
        self.row = {w: i for i, w in enumerate(self.words)}
        self.matrix = matrix

    @classmethod
    def from_vectors(cls, vectors: Mapping[str, Any]) -> Vocabulary:
        import numpy as np

        return cls(list(vectors), np.asarray([vectors[w] for w in vectors], dtype=np.float32))

    @classmethod
    def from_blobs(cls, blobs: Mapping[str, bytes]) -> Vocabulary:
        """From stored (packed) vectors, in one go: unpacking them one by one cost ~5 us a word."""
        import numpy as np

        if not blobs:
            return cls([], np.zeros((0, 0), dtype=np.float32))
        matrix = np.frombuffer(b"".join(blobs.values()), dtype=np.int8).reshape(len(blobs), -1)
        return cls(list(blobs), matrix.astype(np.float32) * _unit())  # unit length, within 0.5%


def soft_scores(query: Sequence[str], query_vectors: Sequence[Any], idf: Sequence[float],
                candidates: Mapping[str, Sequence[str]], vocabulary: Vocabulary,
                similar_from: float = SIMILAR_FROM, shown_from: float = SHOWN_FROM) -> dict[str, tuple[float, str]]:
    """For each candidate with a similar word: sum over the query words of idf x the scaled similarity of its
    closest other word (0 below `similar_from`, 1 for the same meaning), and the pair that weighed most among
    those of one stem with a cosine from `shown_from` up, "config~configuration" ("" when there is none: nothing
    to name).

    query: the query words, one vector and one IDF each; candidates: memory id -> its words; vocabulary: the
    vectors of the candidates' words (a word without one is skipped)."""
    import numpy as np

    row_of = vocabulary.row
    rows = {memory_id: np.asarray([row_of[w] for w in ws if w in row_of], dtype=np.int64)
            for memory_id, ws in candidates.items()}
    lookup = WordRows(lambda unique: vocabulary.matrix[unique], vocabulary.words, row_of)
    return _scores(query, query_vectors, idf, rows, lookup, similar_from, shown_from)


class WordRows(NamedTuple):
    """How `_scores` reads the rows of words: vectors_of(rows) gives their unit vectors (float32), words[row] and
    row_of[word] name them."""
    vectors_of: Any
    words: Sequence[str]
    row_of: Mapping[str, int]


def _scores(query: Sequence[str], query_vectors: Sequence[Any], idf: Sequence[float], rows: Mapping[str, Any],
            lookup: WordRows, similar_from: float, shown_from: float = SHOWN_FROM) -> dict[str, tuple[float, str]]:
    """`soft_scores` on row indexes: rows maps a memory id to the rows of its words, `lookup` reads them."""
    import numpy as np

    vectors_of, words, row_of = lookup

    ids = [memory_id for memory_id, mine in rows.items() if len(mine)]
    if not query or not ids:
        return {}
    lengths = np.fromiter((len(rows[memory_id]) for memory_id in ids), dtype=np.int64, count=len(ids))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    unique, columns = np.unique(np.concatenate([rows[memory_id] for memory_id in ids]), return_inverse=True)
    matrix = vectors_of(unique)
    # one matrix-vector product per query word: a matrix-matrix product wakes OpenBLAS's threads, whose
    # spinning after it doubled the next query embedding's time on two cores
    similarity = np.stack([matrix @ np.asarray(v, dtype=np.float32) for v in query_vectors])
    for n, word in enumerate(query):  # the word itself is BM25's to count
        if (row := row_of.get(word)) is not None:
            at = int(np.searchsorted(unique, row))
            if at < len(unique) and unique[at] == row:
                similarity[n, at] = 0.0
    weights = np.asarray(idf, dtype=np.float32)[:, None]
    weighted = (np.clip((similarity - similar_from) / (1.0 - similar_from), 0.0, 1.0) * weights)[:, columns]
    best = np.maximum.reduceat(weighted, starts, axis=1)  # per query word and candidate: its closest word
    scores = best.sum(axis=0)
    # the pair to name of each candidate: among its pairs of one stem from shown_from up, its best query word, and
    # the first of its words that reaches it
    nameable = similarity >= shown_from
    for n, at in zip(*np.nonzero(nameable)):
        nameable[n, at] = same_stem(query[n], words[unique[at]])
    shown = np.where(nameable[:, columns], weighted, 0.0)
    best_shown = np.maximum.reduceat(shown, starts, axis=1)
    segment = np.repeat(np.arange(len(ids)), lengths)
    top_row = best_shown.argmax(axis=0)
    top = best_shown[top_row, np.arange(len(ids))]
    reaches = np.flatnonzero((shown[top_row[segment], np.arange(len(columns))] >= top[segment]) & (top[segment] > 0))
    _, first = np.unique(segment[reaches], return_index=True)
    pair_column = dict(zip(segment[reaches][first].tolist(), reaches[first].tolist()))
    return {ids[n]: (float(scores[n]), f"{query[top_row[n]]}~{words[unique[columns[pair_column[n]]]]}"
                     if n in pair_column else "")
            for n in np.flatnonzero(scores > 0).tolist()}


class WordMatrix:
    """The stored vectors of the words that searches have met, as the rows of one int8 matrix, and each
    searched memory's word rows: one per store (`Store.word_matrix`), shared by its threads.

    A search gathers its candidates' rows, rather than reading and unpacking every candidate's word vectors and
    splitting its words anew. Emptied when it holds MAX_CACHED words. A word the worker has not embedded yet is
    looked up again next time."""

    def __init__(self, max_words: int = MAX_CACHED) -> None:
        import threading

        self.max_words = max_words
        self._lock = threading.Lock()
        self.generation = 0  # bumped by each emptying: rows read before it are stale
        self._clear()

    def clear(self) -> None:
        """Forget every vector (the store's model changed: the worker embeds the words again)."""
        with self._lock:
            self._clear()

    def _clear(self) -> None:
        self.generation += 1
        self.row: dict[str, int] = {}
        self.words: list[str] = []
        self.matrix: Any = None  # int8, len(words) rows in use
        self.memory_rows: dict[str, tuple[str, Any]] = {}  # memory id -> (its stored words, their rows)
        self.answers: dict[tuple, dict[str, tuple[float, str]]] = {}  # the last searches' `soft_scores`

    def _rows(self, conn: Connection, words: Iterable[str]) -> dict[str, int]:
        """The rows of these words (a word without a stored vector is left out), reading the new ones."""
        import numpy as np

        words = list(dict.fromkeys(words))
        missing = [w for w in words if w not in self.row]
        if missing:
            found = list(word_vectors.stored(conn, missing))
            if len(self.words) + len(found) > self.max_words:
                self._clear()
                return self._rows(conn, words) if len(words) <= self.max_words else {}
            if found:
                new = np.frombuffer(b"".join(blob for _, blob in found), dtype=np.int8).reshape(len(found), -1)
                if self.matrix is not None and self.matrix.shape[1] != new.shape[1]:  # another model's
                    self._clear()
                    return self._rows(conn, words)
                used = len(self.words)
                if self.matrix is None:
                    self.matrix = np.zeros((max(1024, 2 * len(found)), new.shape[1]), dtype=np.int8)
                elif used + len(found) > len(self.matrix):
                    grown = np.zeros((max(2 * len(self.matrix), used + len(found)), new.shape[1]), dtype=np.int8)
                    grown[:used] = self.matrix[:used]
                    self.matrix = grown
                self.matrix[used:used + len(found)] = new
                for n, (word, _) in enumerate(found):
                    self.row[word] = used + n
                    self.words.append(word)
        return {w: self.row[w] for w in words if w in self.row}

    def vectors(self, conn: Connection, words: Iterable[str]) -> dict[str, Any]:
        """The unit vectors (float32) of these words that have a stored one."""
        with self._lock:
            rows = self._rows(conn, words)
            return {w: unpack(self.matrix[r].tobytes()) for w, r in rows.items()}

    def _memory_rows(self, conn: Connection, candidates: Mapping[str, str]) -> dict[str, Any]:
        """Each candidate's word rows (int32), from the cache unless its stored words changed."""
        import numpy as np

        generation = self.generation
        rows: dict[str, Any] = {}
        todo: dict[str, tuple[str, list[str]]] = {}
        for memory_id, stored in candidates.items():
            known = self.memory_rows.get(memory_id)
            if known is not None and known[0] == stored:
                rows[memory_id] = known[1]
            else:
                todo[memory_id] = (stored, searched_words(stored))
        if not todo:
            return rows
        row_of = self._rows(conn, [w for _, ws in todo.values() for w in ws])
        if self.generation != generation:  # emptied to make room: the cached rows are gone with it
            rows, todo = {}, {memory_id: (stored, searched_words(stored)) for memory_id, stored in candidates.items()}
            row_of = self._rows(conn, [w for _, ws in todo.values() for w in ws])
        for memory_id, (stored, ws) in todo.items():
            mine = np.asarray([row_of[w] for w in ws if w in row_of], dtype=np.int32)
            if len(mine) == len(ws):  # a word without a vector yet is looked up again next time
                self.memory_rows[memory_id] = (stored, mine)
            rows[memory_id] = mine
        return rows

    def soft_scores(self, conn: Connection, query: Sequence[str], query_vectors: Sequence[Any],
                    idf: Sequence[float], candidates: Mapping[str, str], similar_from: float = SIMILAR_FROM,
                    shown_from: float = SHOWN_FROM) -> dict[str, tuple[float, str]]:
        """`soft_scores` for candidates given as memory id -> `memories.words` (the first MAX_MEMORY_WORDS
        are compared), with the vectors read through this matrix."""
        import numpy as np

        with self._lock:
            if len(self.memory_rows) > MAX_CACHED_MEMORIES:
                self.memory_rows.clear()
            rows = self._memory_rows(conn, candidates)
            # the same question over the same memories, their words unchanged and each with its vector: the same
            # answer (words' vectors never change while the matrix lasts, and `generation` counts its emptyings)
            key = (self.generation, tuple(query), b"".join(np.asarray(v, dtype=np.float32).tobytes()
                                                            for v in query_vectors),
                   tuple(idf), frozenset(candidates.items()), similar_from, shown_from)
            complete = all(self.memory_rows.get(m, ("",))[0] == stored for m, stored in candidates.items())
            found = self.answers.get(key) if complete else None  # else a word may have got its vector since
            if found is None:
                matrix, words = self.matrix, self.words
                lookup = WordRows(lambda unique: matrix[unique].astype(np.float32) * _unit(), words, self.row)
                found = _scores(query, query_vectors, idf, rows, lookup, similar_from, shown_from)
                if complete:
                    if len(self.answers) >= MAX_CACHED_ANSWERS:
                        self.answers.pop(next(iter(self.answers)))
                    self.answers[key] = found
            return {memory_id: found[memory_id] for memory_id in rows if memory_id in found}  # `_scores`' order


def searched_words(stored: str) -> list[str]:
    """The words search compares of a memory, from its `memories.words`."""
    return stored.split(" ", MAX_MEMORY_WORDS)[:MAX_MEMORY_WORDS] if stored else []

