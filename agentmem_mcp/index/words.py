"""Similar words: a memory word close in meaning to a query word counts as part of a keyword match.

BM25 matches words themselves, so "Which cities has John been to?" scores nothing for "I was in Chicago, it
was awesome!", and the memory's one vector blurs "Chicago" with the rest of it. Each word of the store is
embedded once, on its own, by the background worker (`Store.add_word_vectors`, table `word_vectors`); the
model puts "cities" and "Chicago" at 0.56, "countries" and "England" at 0.64, "pets" and "dog" at 0.70,
"exercises" and "weekend" at 0.17. Search then gives every candidate, for each query word, the similarity of
its closest other word from SIMILAR_FROM up, scaled to 0..1 and weighted by the query word's BM25 IDF, and
adds `soft_match_weight` (0.5: at most half a keyword match per query word) times the sum to the candidate's
BM25 score (LoCoMo turn recall@10 +0.5, LongMemEval turn recall_all@5 +2.4: docs/evaluation.md).

Only candidates that BM25, the vectors or the graph found are rescored: the words reorder them, they do not
find new ones (in the evaluation, scoring every memory instead found nothing more). `uses` counts the
memories that have a word, so forgetting the last of them removes the word too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..db.connection import Connection
from .tokenize import STOPWORDS, terms, without_stamp

TABLE = "word_vectors"
SIMILAR_FROM = 0.4  # cosine of two words below which they are not similar at all
MIN_CHARS, MAX_CHARS = 3, 24
SCALE = 127.0  # vectors are stored as int8: 384 bytes a word, cosines off by about 0.005
MAX_CACHED = 100_000  # packed word vectors a process keeps (~0.4 kB each), emptied when full
MAX_CACHED_QUERY_WORDS = 10_000  # vectors of query words no memory has (1.5 kB each), kept in memory only
# the words of a memory that search compares: its first distinct ones. A long reply has hundreds; with all of
# them, similar words cost a search over 10 ms at p50 on LongMemEval with assistant turns stored, and the
# first 64 rank the same on both benchmarks (docs/evaluation.md)
MAX_MEMORY_WORDS = 64
_STOP = frozenset(STOPWORDS)


def is_word(term: str) -> bool:
    """A term that gets a vector: letters only (no numbers, hashes or paths), 3-24 of them, not a stop word."""
    return MIN_CHARS <= len(term) <= MAX_CHARS and term.isalpha() and term not in _STOP


def text_words(text: str) -> list[str]:
    """The distinct words of a text that get vectors, in order of appearance."""
    return list(dict.fromkeys(t for t in terms(without_stamp(text)) if is_word(t)))


def memory_words(title: str, content: str) -> list[str]:
    """The distinct words of a memory that get vectors (its title's, then its content's)."""
    return list(dict.fromkeys([*text_words(title), *text_words(content)]))


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
        return cls(list(blobs), matrix.astype(np.float32) * (1.0 / SCALE))  # unit length, within 0.5%


def soft_scores(query: Sequence[str], query_vectors: Sequence[Any], idf: Sequence[float],
                candidates: Mapping[str, Sequence[str]], vocabulary: Vocabulary,
                similar_from: float = SIMILAR_FROM) -> dict[str, tuple[float, str]]:
    """For each candidate with a similar word: sum over the query words of idf x the scaled similarity of its
    closest other word (0 below `similar_from`, 1 for the same meaning), and the closest pair, "cities~chicago".

    query: the query words, one vector and one IDF each; candidates: memory id -> its words; vocabulary: the
    vectors of the candidates' words (a word without one is skipped)."""
    import numpy as np

    row_of = vocabulary.row
    ids, starts, columns = [], [], []
    for memory_id, words in candidates.items():
        mine = [row_of[w] for w in words if w in row_of]
        if mine:
            ids.append(memory_id)
            starts.append(len(columns))
            columns.extend(mine)
    if not query or not columns:
        return {}
    # one matrix-vector product per query word: a matrix-matrix product wakes OpenBLAS's threads, whose
    # spinning after it doubled the next query embedding's time on two cores
    similarity = np.stack([vocabulary.matrix @ np.asarray(v, dtype=np.float32) for v in query_vectors])
    for row, word in enumerate(query):
        if word in row_of:  # the word itself is BM25's to count
            similarity[row, row_of[word]] = 0.0
    weights = np.asarray(idf, dtype=np.float32)[:, None]
    weighted = np.clip((similarity[:, columns] - similar_from) / (1.0 - similar_from), 0.0, 1.0) * weights
    best = np.maximum.reduceat(weighted, starts, axis=1)  # per query word and candidate: its closest word
    scores = best.sum(axis=0)
    # the closest pair of each candidate: its best query word, and the first of its words that reaches it
    segment = np.repeat(np.arange(len(starts)), np.diff([*starts, len(columns)]))
    top_row = best.argmax(axis=0)
    top = best[top_row, np.arange(len(starts))]
    reaches = np.flatnonzero(weighted[top_row[segment], np.arange(len(columns))] >= top[segment])
    _, first = np.unique(segment[reaches], return_index=True)
    pair_column = dict(zip(segment[reaches][first].tolist(), reaches[first].tolist()))
    return {ids[n]: (float(scores[n]), f"{query[top_row[n]]}~{vocabulary.words[columns[pair_column[n]]]}")
            for n in np.flatnonzero(scores > 0).tolist()}


# the table ---------------------------------------------------------------------------------------

def _stored(conn: Connection, words: Sequence[str]) -> Iterable[tuple[str, bytes]]:
    for start in range(0, len(words), 500):
        batch = list(words[start:start + 500])
        marks = ",".join("?" * len(batch))
        yield from conn.execute(f"SELECT word, vector FROM {TABLE} WHERE word IN ({marks})", batch)


def searched_words(stored: str) -> list[str]:
    """The words search compares of a memory, from its `memories.words`."""
    return stored.split(" ", MAX_MEMORY_WORDS)[:MAX_MEMORY_WORDS] if stored else []


def lookup(conn: Connection, words: Iterable[str], cache: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """The stored (packed) vectors of these words (a word without one is left out), through `cache`."""
    cache = {} if cache is None else cache
    if len(cache) > MAX_CACHED:
        cache.clear()
    words = list(dict.fromkeys(words))
    out = {w: cache[w] for w in words if w in cache}
    for word, blob in _stored(conn, [w for w in words if w not in out]):
        out[word] = cache[word] = blob
    return out


def add(conn: Connection, uses: Mapping[str, int], new_vectors: Mapping[str, Any]) -> None:
    """Count more memories for these words (inside the caller's transaction); a word not stored yet is
    stored with its vector from `new_vectors` (a word without one there is skipped)."""
    conn.executemany(f"UPDATE {TABLE} SET uses = uses + ? WHERE word = ?",
                     [(n, w) for w, n in uses.items() if w not in new_vectors])
    conn.executemany(f"INSERT INTO {TABLE} (word, uses, vector) VALUES (?, ?, ?) "
                     f"ON CONFLICT(word) DO UPDATE SET uses = uses + excluded.uses",
                     [(w, uses[w], pack(v)) for w, v in new_vectors.items() if w in uses])


def release(conn: Connection, memory_ids: Sequence[str]) -> None:
    """Before these memories are deleted: count them out of their words, and drop the words no memory has."""
    if not memory_ids:
        return
    marks = ",".join("?" * len(memory_ids))
    counts: dict[str, int] = {}
    for (text,) in conn.execute(f"SELECT words FROM memories WHERE id IN ({marks}) AND words IS NOT NULL",
                                list(memory_ids)):
        for word in text.split():
            counts[word] = counts.get(word, 0) + 1
    conn.executemany(f"UPDATE {TABLE} SET uses = uses - ? WHERE word = ?", [(n, w) for w, n in counts.items()])
    conn.executemany(f"DELETE FROM {TABLE} WHERE word = ? AND uses <= 0", [(w,) for w in counts])


def reset(conn: Connection) -> None:
    """Forget every word vector (the embedding model changed): the worker embeds the words again."""
    conn.execute(f"DELETE FROM {TABLE}")
    conn.execute("UPDATE memories SET words = NULL WHERE words IS NOT NULL")
