"""The `word_vectors` table: one int8-packed vector per word of the store (index/words.py packs them and compares
them) and how many memories have the word (`uses`), so forgetting the last of them removes the word too. The
only module that writes its SQL, and the reads index/words.py makes of it. Writes run inside the caller's
transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from . import memories
from .connection import Connection, marks

TABLE = "word_vectors"


def stored(conn: Connection, words: Sequence[str]) -> Iterable[tuple[str, bytes]]:
    """(word, packed vector) of those of these words that have one."""
    for start in range(0, len(words), 500):
        batch = list(words[start:start + 500])
        yield from conn.execute(f"SELECT word, vector FROM {TABLE} WHERE word IN ({marks(batch)})", batch)


def count(conn: Connection) -> int:
    """How many words have a vector."""
    return conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]


def words(conn: Connection) -> list[str]:
    """Every word that has a vector."""
    return [row[0] for row in conn.execute(f"SELECT word FROM {TABLE}")]


def most_used(conn: Connection, limit: int) -> dict[str, bytes]:
    """The `limit` words most memories have, and their packed vectors."""
    return dict(conn.execute(f"SELECT word, vector FROM {TABLE} ORDER BY uses DESC, word LIMIT ?", (limit,)).fetchall())


def lookup(conn: Connection, words: Iterable[str]) -> dict[str, bytes]:
    """The stored (packed) vectors of these words (a word without one is left out)."""
    return dict(stored(conn, list(dict.fromkeys(words))))


def add(conn: Connection, uses: Mapping[str, int], new_vectors: Mapping[str, bytes]) -> None:
    """Count more memories for these words; a word not stored yet is stored with its packed vector from
    `new_vectors` (a word without one there is skipped)."""
    conn.executemany(f"UPDATE {TABLE} SET uses = uses + ? WHERE word = ?",
                     [(n, w) for w, n in uses.items() if w not in new_vectors])
    conn.executemany(f"INSERT INTO {TABLE} (word, uses, vector) VALUES (?, ?, ?) "
                     f"ON CONFLICT(word) DO UPDATE SET uses = uses + excluded.uses",
                     [(w, uses[w], blob) for w, blob in new_vectors.items() if w in uses])


def release(conn: Connection, memory_ids: Sequence[str]) -> None:
    """Before these memories are deleted: count them out of their words, and drop the words no memory has."""
    if not memory_ids:
        return
    counts: dict[str, int] = {}
    for text in memories.words_by_id(conn, memory_ids).values():
        for word in text.split():
            counts[word] = counts.get(word, 0) + 1
    conn.executemany(f"UPDATE {TABLE} SET uses = uses - ? WHERE word = ?", [(n, w) for w, n in counts.items()])
    conn.executemany(f"DELETE FROM {TABLE} WHERE word = ? AND uses <= 0", [(w,) for w in counts])


def reset(conn: Connection) -> None:
    """Forget every word vector (the embedding model changed): the worker embeds the words again."""
    conn.execute(f"DELETE FROM {TABLE}")
    memories.unword_all(conn)
