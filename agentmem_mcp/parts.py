"""What an operation (remember, forget, search, the briefing, the worker's steps) is given: the parts of an
open store, wired once by `store.Store`. Operations depend on this interface, never on the Store, so the Store
can import them and nothing imports back up; a second backend provides the same parts."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .config import Settings
from .db.connection import Connection
from .db.database import Database
from .db.memories import Memories
from .index.backfill import VectorBackfill
from .index.embedder import Embedder
from .index.expansion import WordNeighbours
from .index.fulltext import FulltextIndex
from .index.indexer import Indexer
from .index.words import WordMatrix


class Parts(Protocol):
    """The repositories, indexes and settings of one open store.

    db: the SQLite file (a connection per thread); memories: the memories table read by id and chain;
    indexer: the BM25 index and its outbox (`fulltext` is its tantivy index); backfill: vectors added after
    saving; embedder: the model; word_matrix / query_word_cache: word vectors this process's searches met;
    word_neighbours: the store's vocabulary, for query expansion;
    pool: the threads search runs its retrievers on; project: the project the store was opened for; workdir: the
    directory its caller works in (None: this process's current directory)."""

    settings: Settings
    project: str | None
    workdir: str | None
    db: Database
    memories: Memories
    indexer: Indexer
    backfill: VectorBackfill
    embedder: Embedder
    word_matrix: WordMatrix
    query_word_cache: dict[str, Any]
    word_neighbours: WordNeighbours

    @property
    def conn(self) -> Connection: ...

    @property
    def fulltext(self) -> FulltextIndex: ...

    @property
    def pool(self) -> ThreadPoolExecutor: ...

    def transaction(self) -> AbstractContextManager[Connection]: ...

    def now(self) -> float: ...
