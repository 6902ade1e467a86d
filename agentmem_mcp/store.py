"""The Python API: open a store, then save, search, get, history, forget, stats.

    from agentmem_mcp.store import Store
    with Store.open(project="/path/to/repo") as store:
        store.save("use pnpm to install dependencies", type="decision")
        result = store.search("how do we install deps?")

The CLI, the MCP server, the hooks and the worker all go through this object. It is the composition root:
it wires the parts (`parts.Parts`: the database, the memories table, the BM25 indexer, the vector backfill,
the embedder) and hands them to the operations, each in its own module.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any

from .config import Settings, load_settings
from .db import audit
from .db.connection import Connection, DatabaseError
from .db.database import Database
from .db.memories import Memories
from .index import expansion, words
from .index.backfill import VectorBackfill
from .index.document import memory_text  # noqa: F401 (scripts import it from here)
from .index.embedder import Embedder
from .index.fulltext import FulltextIndex
from .index.indexer import Indexer
from .models import Memory

log = logging.getLogger("agentmem")


class Store:
    """A memory store on one SQLite file and one tantivy index directory."""

    def __init__(self, settings: Settings, *, project: str | None = None, embedder: Embedder | None = None,
                 load_embedder: bool = True, sync_index: bool = False, index_in_background: bool = False,
                 workdir: str | None = None) -> None:
        self.settings = settings
        self.project = project
        self.workdir = workdir
        self.sync_index = sync_index
        self.word_matrix = words.WordMatrix()  # the word vectors searches have met (index/words.py)
        self.query_word_cache: dict[str, Any] = {}  # vectors of query words no memory has, embedded by search
        self.word_neighbours = expansion.WordNeighbours()  # the vocabulary, for query expansion (index/expansion.py)
        self.db = Database(settings.database, busy_timeout_ms=settings.busy_timeout_ms, home=settings.home)
        self.db_path = settings.database
        self.memories = Memories(self.db)
        self.indexer = Indexer(self.db, settings.fulltext_dir, sync=sync_index, erase=self._erase_forgotten)
        self.embedder = embedder or Embedder(settings.embed_model, settings.embed_model_path,
                                             enabled=settings.embeddings)
        self.backfill = VectorBackfill(self.db, self.embedder, self.word_matrix)
        self._pool: ThreadPoolExecutor | None = None
        if load_embedder:
            self.embedder.wait()
            if self.db.read_only is None:  # a read-only store searches the vectors it has
                self.prepare_vectors()
        try:
            self.indexer.start(in_background=index_in_background)
        except DatabaseError:  # a damaged database: the caller says so, in one line
            self.close()
            raise
        except Exception:  # e.g. a full disk: the outbox keeps the work, and the store still answers
            log.exception("could not update the BM25 index at open; the changes stay queued")

    @classmethod
    def open(cls, settings: Settings | None = None, *, project: str | None = None, load_embedder: bool = True,
             embedder: Embedder | None = None, sync_index: bool = False, index_in_background: bool = False,
             workdir: str | None = None, **overrides: Any) -> Store:
        """Open (creating if needed) the store described by settings (default: environment + config file).

        load_embedder=False returns at once and leaves the model to the caller (`embedder.load()` on a thread of
        its own, as the server does); until it is ready, saves store no vectors (they are added later) and search
        runs on BM25 + graph.
        sync_index=True updates the BM25 index inside every write instead of on a background thread.
        index_in_background=True (a long-running server) applies a big BM25 backlog found at open (a rebuild)
        on the indexer thread instead of before returning; search meanwhile uses what is indexed so far.
        workdir: the directory the caller works in, where a memory's files are looked for when search notes the
        stale ones (default: this process's current directory; a session of the shared process gives its own).
        """
        settings = settings or load_settings(**overrides)
        return cls(settings, project=project, embedder=embedder, load_embedder=load_embedder,
                   sync_index=sync_index, index_in_background=index_in_background, workdir=workdir)

    def _erase_forgotten(self, memories_deleted: bool) -> None:
        from .upkeep.maintenance import erase_forgotten

        erased = erase_forgotten(self, memories_deleted=memories_deleted)
        if erased.busy_readers:
            log.info("another process was reading: the WAL still holds forgotten pages until the next checkpoint")

    # the parts ---------------------------------------------------------------------------------

    @property
    def conn(self) -> Connection:
        """This thread's connection (sqlite connections are not shared between threads)."""
        return self.db.conn

    def transaction(self) -> AbstractContextManager[Connection]:
        """A write transaction on this thread's connection."""
        return self.db.transaction()

    @property
    def fulltext(self) -> FulltextIndex:
        """The BM25 index (tantivy)."""
        return self.indexer.fulltext

    @property
    def pool(self) -> ThreadPoolExecutor:
        """The threads search runs its retrievers on."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="agentmem-search")
        return self._pool

    @property
    def files_problem(self) -> str | None:
        """What changed under this process among the database's files (then it writes no more), or None."""
        return self.db.files_problem

    def now(self) -> float:
        """The clock operations read (tests and evaluations replace it)."""
        return time.time()

    def close(self) -> None:
        """Stop the indexer (applying what it can), the search threads, then the database."""
        self.indexer.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # the index and the vectors, for the CLI, the worker and maintenance --------------------------

    def erase_soon(self, memories_deleted: bool = True) -> None:
        """`Indexer.erase_soon`: after a forget, rebuild what still holds forgotten text."""
        self.indexer.erase_soon(memories_deleted)

    def drain_outbox(self, limit: int | None = None, stop: threading.Event | None = None) -> int:
        """`Indexer.drain`: apply pending index changes to tantivy."""
        return self.indexer.drain(limit, stop)

    def flush(self) -> int:
        """Apply every pending index change now."""
        return self.indexer.drain()

    def index_backlog(self) -> int:
        """Index changes not yet applied to BM25 (by any process)."""
        return self.indexer.backlog()

    def rebuilding(self) -> int:
        """The BM25 backlog while the indexer thread applies a big one (a rebuild), else 0."""
        return self.indexer.rebuilding()

    def prepare_vectors(self) -> None:
        """Once the model is ready: make sure the vector table matches it and embed what lacks vectors."""
        self.backfill.prepare()

    def ensure_vector_table(self, conn: Connection) -> bool:
        """`VectorBackfill.ensure_table`, inside the caller's transaction (the viewer's embedding uses it)."""
        return self.backfill.ensure_table(conn)

    def embed_pending(self, batch: int = 64, progress: Callable[[int, int], None] | None = None) -> int:
        """Give vectors to memories saved before the model was ready (or after a model change)."""
        return self.backfill.embed_pending(batch, progress)

    def add_sentence_pieces(self, limit: int = 500) -> int:
        """`VectorBackfill.add_sentence_pieces`: the worker's pass over memories without pieces."""
        return self.backfill.add_sentence_pieces(limit)

    def add_word_vectors(self, limit: int = 500) -> int:
        """`VectorBackfill.add_word_vectors`: the worker's pass over memories whose words are not counted."""
        return self.backfill.add_word_vectors(limit)

    # reading -----------------------------------------------------------------------------------

    def get(self, memory_id: str, *, within: Sequence[str | None] | None = None) -> Memory:
        """The whole memory; raises NotFound (`Memories.get`)."""
        return self.memories.get(memory_id, within=within)

    def walls(self) -> list[str | None]:
        """The projects an MCP tool of this store may read, supersede and forget: its own and the global ones."""
        return list(dict.fromkeys([self.project, None]))

    def history(self, memory_id: str, *, within: Sequence[str | None] | None = None) -> list[Memory]:
        """Every version of the memory's chain, oldest first (`within` as in `get`)."""
        return self.memories.history(memory_id, within=within)

    # the operations, each in its own module ----------------------------------------------------

    def save(self, request: Any, **options: Any):
        """Remember something: a `lifecycle.remember.SaveRequest`, or its content and fields as keywords."""
        from .lifecycle.remember import SaveRequest, save

        return save(self, _request(SaveRequest, request, options))

    def save_many(self, items: list[dict[str, Any]], **options: Any):
        """Save several memories in one batch; see `lifecycle.remember.save_many`."""
        from .lifecycle.remember import save_many

        return save_many(self, items, **options)

    def search(self, request: Any, **options: Any):
        """Find memories: a `models.SearchRequest`, or its query and fields as keywords."""
        from .models import SearchRequest
        from .recall.retrieval import search

        return search(self, _request(SearchRequest, request, options))

    def forget(self, request: Any = None, **options: Any):
        """Forget memories by ids, session or filter: a `lifecycle.forget.ForgetRequest`, or its fields as
        keywords."""
        from .lifecycle.forget import ForgetRequest, forget

        return forget(self, ForgetRequest(**options) if request is None else _request(ForgetRequest, request, options))

    def stats(self, **options: Any) -> dict[str, Any]:
        """What is in the store; see `stats.stats`."""
        from .upkeep.stats import stats

        return stats(self, **options)

    def audit(self, action: str, memory_id: str | None = None, project: str | None = None,
              detail: dict[str, Any] | None = None) -> None:
        """Append a row to the audit chain in its own transaction (`db.audit.append`)."""
        with self.transaction() as conn:
            audit.append(conn, action, memory_id, project, detail)


def _request(kind: type, request: Any, options: dict[str, Any]) -> Any:
    """`request` when it is already a `kind` (its fields are then in it, not in `options`), else a `kind` built of
    `request` (its first field) and `options`: the keyword form of the Python API."""
    if isinstance(request, kind):
        if options:
            raise TypeError(f"pass the {kind.__name__}'s fields in it, not beside it: {', '.join(options)}")
        return request
    return kind(request, **options)
