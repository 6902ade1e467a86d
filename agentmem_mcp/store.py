"""The Python API: open a store, then save, search, get, history, forget, stats.

    from agentmem_mcp.store import Store
    with Store.open(project="/path/to/repo") as store:
        store.save("use pnpm to install dependencies", type="decision")
        result = store.search("how do we install deps?")

The CLI, the MCP server, the hooks and the worker all go through this object.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .config import Settings, load_settings
from .db import audit
from .db.connection import (
    Connection,
    DatabaseError,
    FileWatch,
    checkpoint,
    connect,
    ensure_private_dir,
    make_private,
    watch_files,
    write_transaction,
)
from .db.migrations import migrate
from .index import neighbours, vectors, words
from .index.embedder import Embedder
from .index.fulltext import FulltextDoc, FulltextIndex, IndexBusyError, IndexDamagedError
from .index.neighbours import turn_contexts
from .models import Memory, NotFound, StoreDamaged, check_memory_id

log = logging.getLogger("agentmem")

OUTBOX_BATCH = 500
# The indexer waits this long after a write before it commits to tantivy, so a burst of saves makes one
# commit (each costs CPU and an fsync, and competes with the next save's embedding: saves back to back took
# 25.0 ms p50 with 0.05 s, 20.6 with 0.25 s, 18.4 with 1 s). Search finds queued memories meanwhile
# (the outbox scan), so nothing waits for the commit.
INDEX_DEBOUNCE_S = 0.5
HEAL_EVERY_S = 60.0
# A bigger outbox at open (a BM25 rebuild after an upgrade, or a deleted or damaged index: ~3,000-7,000
# memories/s) is applied on the indexer thread when the store is opened with index_in_background, so a
# long-running server answers at once (searching what is indexed so far, and saying so) instead of making its
# first tool call wait; and close() leaves at most this much for the next process to apply.
BIG_BACKLOG = 2000
# With no write for this long, the indexer thread checkpoints the WAL (and notices files changed under it); a
# checkpoint waits at most CHECKPOINT_BUSY_MS for other processes' readers, which holds off writers meanwhile.
IDLE_CHECKPOINT_S = 5.0
CHECKPOINT_BUSY_MS = 200
OPENING_CHARS = 48  # how much of a long first line `memory_text` repeats


def memory_text(title: str, content: str, tags: Iterable[str] = (), files: Iterable[str] = ()) -> str:
    """The text that BM25 indexes and the vectors embed: title (unless the body starts with it) + body + the
    tags and files the body does not name already. A title cut from a long first line ("…") is not a title
    but the opening: its first OPENING_CHARS are repeated, on purpose, to weigh the opening more (without
    it, LoCoMo turn recall@10 fell 1.5 points), and no more of it (each token costs the model time)."""
    if content.startswith(title):
        head = ""
    elif title.endswith("…") and content.startswith(title[:-1].rstrip()):
        cut = content[:OPENING_CHARS]
        head = (cut.rsplit(" ", 1)[0] if " " in cut and len(content) > OPENING_CHARS else cut) + "\n"
    else:
        head = f"{title}\n"
    extra = " ".join(dict.fromkeys(x for x in [*tags, *files] if x and x not in content))
    return f"{head}{content}" + (f"\n{extra}" if extra else "")


class Store:
    """A memory store on one SQLite file and one tantivy index directory."""

    def __init__(self, settings: Settings, *, project: str | None = None, embedder: Embedder | None = None,
                 load_embedder: bool = True, sync_index: bool = False, index_in_background: bool = False) -> None:
        self.settings = settings
        self.project = project
        self.sync_index = sync_index
        self._drain_lock = threading.Lock()
        self._index_wanted = threading.Event()
        self._catching_up = threading.Event()  # the indexer thread is applying a big backlog (a rebuild)
        self._indexer: threading.Thread | None = None
        self._closing = False
        self._closed = threading.Event()
        self._healed_at = float("-inf")
        self._erase_pending: bool | None = None  # an erasure asked for (`erase_soon`): whether memories went
        self._erase_lock = threading.Lock()
        self.word_matrix = words.WordMatrix()  # the word vectors searches have met (index/words.py)
        self.query_word_cache: dict[str, Any] = {}  # vectors of query words no memory has, embedded by search
        ensure_private_dir(settings.home)
        self.db_path = settings.database
        self._local = threading.local()
        self._connections: list[Connection] = []
        self._conn_lock = threading.Lock()
        self._watch: FileWatch | None = None
        migrate(self.conn)
        self._watch = FileWatch(self.db_path)  # the files as opened: a WAL deleted under us stops our writes
        watch_files(self.conn, self._watch)
        self.fulltext = self._open_fulltext()
        self.embedder = embedder or Embedder(settings.embed_model, settings.embed_model_path,
                                             enabled=settings.embeddings)
        self._pool: ThreadPoolExecutor | None = None
        if load_embedder:
            self.embedder.wait()
            self.prepare_vectors()
        try:
            if index_in_background and not sync_index:
                self.index_soon()  # the indexer thread also checkpoints when idle (_idle)
            if index_in_background and not sync_index and (backlog := self.index_backlog()) > BIG_BACKLOG:
                log.warning("BM25 index: %d changes to apply; applying them in the background (search uses "
                            "what is indexed so far meanwhile)", backlog)
                self._catching_up.set()
                self.index_soon()
            else:
                self.drain_outbox()
        except DatabaseError:  # a damaged database: the caller says so, in one line
            self.close()
            raise
        except Exception:  # e.g. a full disk: the outbox keeps the work, and the store still answers
            log.exception("could not update the BM25 index at open; the changes stay queued")

    def _open_fulltext(self) -> FulltextIndex:
        """Open the BM25 index; if it is missing, corrupt or empty while SQLite holds memories, rebuild it
        from SQLite (it is derived data) before answering anything."""
        try:
            index = FulltextIndex(self.settings.fulltext_dir)
            indexed = index.count()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # tantivy raises ValueError/OSError, or panics, on a damaged directory
            log.warning("BM25 index at %s is unreadable (%s); rebuilding it from SQLite",
                        self.settings.fulltext_dir, exc)
            FulltextIndex.wipe(self.settings.fulltext_dir)
            index = FulltextIndex(self.settings.fulltext_dir)
            indexed = 0
        stored = self.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        if indexed == 0 and stored:
            log.warning("BM25 index is empty but %d memories exist; rebuilding it", stored)
            self._queue_every_memory()
        return index

    def _queue_every_memory(self) -> None:
        with write_transaction(self.conn) as conn:
            conn.execute("DELETE FROM index_outbox")
            conn.execute("INSERT INTO index_outbox (memory_id, op, created_at) "
                         "SELECT id, 'upsert', ? FROM memories", (time.time(),))

    def reset_fulltext(self) -> None:
        """Empty the BM25 index (its segment files are deleted) and queue every memory to be indexed again, while
        no drain of the outbox runs in this process."""
        with self._drain_lock:
            self.fulltext.reset()
            self._queue_every_memory()

    def _rebuild_damaged(self, error: BaseException) -> None:
        """The index's files were damaged under this process (IndexDamagedError): empty the index, dropping every
        mapping of the old files, and queue every memory again (the caller holds the drain lock)."""
        log.warning("BM25 index damaged (%s); rebuilding it from SQLite", str(error)[:300])
        self.fulltext.reset()
        self._queue_every_memory()

    def heal_fulltext(self, error: BaseException) -> None:
        """A BM25 search failed: a segment damaged where opening the index does not look (a term dictionary)
        makes tantivy panic at query time. Rebuild the index from SQLite, at most once a minute."""
        damaged = isinstance(error, IndexDamagedError)  # seen before anything was read: rebuild, whenever
        if isinstance(error, IndexBusyError) or not damaged and time.monotonic() - self._healed_at < HEAL_EVERY_S:
            return
        if self._catching_up.is_set():  # a rebuild is under way: waiting for its lock would stall this search
            return
        self._healed_at = time.monotonic()
        try:
            with self._drain_lock:
                if damaged:
                    try:
                        self.fulltext.check_files()
                        return  # the indexer thread rebuilt it meanwhile
                    except IndexDamagedError:
                        pass
                    self._rebuild_damaged(error)
                else:
                    log.warning("BM25 search failed (%s: %s); rebuilding the index from SQLite",
                                type(error).__name__, str(error)[:300])
                    self.fulltext.reset()
                    self._queue_every_memory()
            if not self.sync_index:
                self._catching_up.set()  # searches meanwhile use what is indexed so far
            self.index_soon()
        except Exception:
            log.exception("could not rebuild the BM25 index; `agentmem reindex` rebuilds it")

    @classmethod
    def open(cls, settings: Settings | None = None, *, project: str | None = None, load_embedder: bool = True,
             embedder: Embedder | None = None, sync_index: bool = False, index_in_background: bool = False,
             **overrides: Any) -> Store:
        """Open (creating if needed) the store described by settings (default: environment + config file).

        load_embedder=False returns at once and leaves the model to `embedder.start_loading()`; until it is
        ready, saves store no vectors (they are added later) and search runs on BM25 + graph.
        sync_index=True updates the BM25 index inside every write instead of on a background thread.
        index_in_background=True (a long-running server) applies a big BM25 backlog found at open (a rebuild)
        on the indexer thread instead of before returning; search meanwhile uses what is indexed so far.
        """
        settings = settings or load_settings(**overrides)
        return cls(settings, project=project, embedder=embedder, load_embedder=load_embedder,
                   sync_index=sync_index, index_in_background=index_in_background)

    # connections -------------------------------------------------------------------------------

    @property
    def conn(self) -> Connection:
        """This thread's connection (sqlite connections are not shared between threads)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._watch is not None and self._connections:
                # a connection opened after the WAL was deleted would read the new, empty one: refuse instead
                self._watch.check(self._connections[0])
            conn = connect(self.db_path, busy_timeout_ms=self.settings.busy_timeout_ms)
            if self._watch is not None:
                watch_files(conn, self._watch)
            self._local.conn = conn
            with self._conn_lock:
                self._connections.append(conn)
        return conn

    def transaction(self):
        return write_transaction(self.conn)

    @property
    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="agentmem-search")
        return self._pool

    def close(self) -> None:
        self._closing = True
        self._closed.set()
        if self._indexer is not None:
            self._index_wanted.set()
            self._indexer.join(timeout=60)
            self._indexer = None
        if self._erase_pending is not None and (self._watch is None or self._watch.problem is None):
            try:
                self._run_erasure()  # forgotten text must not outlive the process that forgot it
            except Exception as exc:
                log.warning("could not erase what was forgotten from the index and the WAL: %s", exc)
        try:
            if self._watch is None or self._watch.problem is None:  # else it may write nothing
                self.drain_outbox(limit=BIG_BACKLOG)  # a bigger rest (a rebuild cut short) waits for the next one
        except DatabaseError as exc:  # a damaged database: the outbox keeps the work, the next command says so
            log.debug("could not update the BM25 index at close: %s", exc)
        except Exception:  # the outbox keeps what is not indexed; the next open drains it
            log.exception("could not update the BM25 index at close")
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._checkpoint(busy_timeout_ms=CHECKPOINT_BUSY_MS)
        last = self._last_connection()
        with self._conn_lock:
            for conn in self._connections:
                try:
                    conn.close()
                except Exception:  # closing from another thread is best effort
                    pass
            self._connections.clear()
        if last is not None:
            last.close()
        self._local = threading.local()
        make_private(self.db_path)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # vectors -----------------------------------------------------------------------------------

    def prepare_vectors(self) -> None:
        """Once the model is ready: make sure the vector table matches it and embed what lacks vectors."""
        if not self.embedder.ready:
            return
        with self.transaction() as conn:
            self.ensure_vector_table(conn)
        self.embed_pending()

    def ensure_vector_table(self, conn: Connection) -> bool:
        """`vectors.ensure_table` for this store's model (inside the caller's transaction); when it makes
        the table again, the word vectors this process's searches have met go with the stored ones."""
        made = vectors.ensure_table(conn, self.embedder.model_id, self.embedder.dimension or 384)
        if made:
            self.word_matrix.clear()  # words.reset emptied the table: another model's vectors
        return made

    def embed_pending(self, batch: int = 64, progress: Callable[[int, int], None] | None = None) -> int:
        """Give vectors to memories saved before the model was ready (or after a model change)."""
        if not self.embedder.ready:
            return 0
        model_id = self.embedder.model_id
        total = self.conn.execute("SELECT COUNT(*) FROM memories WHERE embedding_model IS NULL").fetchone()[0]
        done = 0
        while True:
            rows = self.conn.execute(
                "SELECT id, project, is_latest, title, content, tags, files FROM memories "
                "WHERE embedding_model IS NULL LIMIT ?", (batch,)).fetchall()
            if not rows:
                return done
            prepared = []
            for row in rows:
                memory = dict(row)
                chunks = vectors.chunk_text(memory_text(memory["title"], memory["content"],
                                                        json.loads(memory["tags"]), json.loads(memory["files"])))
                prepared.append((memory, chunks))
            flat = [chunk for _, chunks in prepared for chunk in chunks]
            embedded = self.embedder.embed(flat) or []
            with self.transaction() as conn:
                offset = 0
                for memory, chunks in prepared:
                    vecs = embedded[offset:offset + len(chunks)]
                    offset += len(chunks)
                    still_there = conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory["id"],)).fetchone()
                    if still_there is None:
                        continue
                    vectors.put(conn, memory["id"], memory["project"], bool(memory["is_latest"]), chunks, vecs)
                    conn.execute("UPDATE memories SET embedding_model = ? WHERE id = ?", (model_id, memory["id"]))
            done += len(rows)
            if progress:
                progress(done, total)

    def add_sentence_pieces(self, limit: int = 500) -> int:
        """Embed the sentence pieces (index/vectors.py) and the answer chunk (index/neighbours.py) of up to
        `limit` memories that have vectors but have not been looked at for them yet: saving does not wait for
        them, the worker's passes do this. Returns how many memories were looked at (0: none is left)."""
        if not self.embedder.ready:
            return 0
        rows = self.conn.execute(
            "SELECT id, title, content, tags, files, tier, type, session_id, created_at, source "
            "FROM memories INDEXED BY memories_pieces_todo "
            "WHERE embedding_model = ? AND pieces IS NULL LIMIT ?", (self.embedder.model_id, limit)).fetchall()
        if not rows:
            return 0
        # the rules' own knowledge (a command, a fix) is a sentence or two found by its words: no pieces
        found = [(r, vectors.summary_pieces(r["content"]) if r["type"] == "summary"
                  else [] if r["source"] == "consolidation" and r["tier"] != "episodic" else vectors.memory_pieces(
                      memory_text(r["title"], r["content"], json.loads(r["tags"]), json.loads(r["files"])),
                      r["content"]),
                  neighbours.answer_chunk(self.conn, r)) for r in rows]
        texts = [t for _, pieces, answer in found for t in (*pieces, *([answer] if answer else []))]
        embedded = self.embedder.embed(texts) if texts else []
        if embedded is None or len(embedded) != len(texts):  # the model failed: these wait for the next call
            return 0
        with self.transaction() as conn:
            offset = 0
            for row, pieces, answer in found:
                vecs = embedded[offset:offset + len(pieces)]
                answer_vector = embedded[offset + len(pieces)] if answer else None
                offset += len(pieces) + (1 if answer else 0)
                # a memory re-embedded or forgotten meanwhile is looked at again or not at all
                now = conn.execute("SELECT project, is_latest FROM memories WHERE id = ? AND embedding_model = ? "
                                   "AND pieces IS NULL", (row["id"], self.embedder.model_id)).fetchone()
                if now:
                    vectors.put_pieces(conn, row["id"], pieces, vecs)
                    vectors.put_answer(conn, row["id"], now["project"], bool(now["is_latest"]), answer,
                                       answer_vector)
        return len(rows)

    def add_word_vectors(self, limit: int = 500) -> int:
        """Embed the words (index/words.py) of up to `limit` memories that have vectors but whose words have not
        been counted yet, the new words only; the worker's passes do this. Returns how many memories were
        looked at (0: none is left)."""
        if not self.embedder.ready:
            return 0
        rows = self.conn.execute(
            "SELECT id, title, content FROM memories INDEXED BY memories_words_todo "
            "WHERE embedding_model = ? AND words IS NULL LIMIT ?", (self.embedder.model_id, limit)).fetchall()
        if not rows:
            return 0
        found = {r["id"]: words.memory_words(r["title"], r["content"]) for r in rows}
        every = list(dict.fromkeys(w for ws in found.values() for w in ws))
        stored = words.lookup(self.conn, every)
        new = [w for w in every if w not in stored]
        embedded = self.embedder.embed(new) if new else []
        if embedded is None or len(embedded) != len(new):  # the model failed: these wait for the next call
            return 0
        with self.transaction() as conn:
            # a memory re-embedded or forgotten meanwhile is looked at again or not at all
            marks = ",".join("?" * len(found))
            still = [row[0] for row in conn.execute(
                f"SELECT id FROM memories WHERE id IN ({marks}) AND embedding_model = ? AND words IS NULL",
                [*found, self.embedder.model_id])]
            uses: dict[str, int] = {}
            for memory_id in still:
                for word in found[memory_id]:
                    uses[word] = uses.get(word, 0) + 1
            words.add(conn, uses, dict(zip(new, embedded)))
            conn.executemany("UPDATE memories SET words = ? WHERE id = ?", [(" ".join(found[m]), m) for m in still])
        return len(rows)

    # the outbox: SQLite -> tantivy -------------------------------------------------------------

    def index_soon(self) -> None:
        """Ask for the outbox to be applied to BM25: now (sync_index) or on the indexer thread, which
        batches bursts of writes into one tantivy commit (a commit costs tens of milliseconds)."""
        if self.sync_index:
            self.drain_outbox()
            return
        if self._indexer is None:
            self._indexer = threading.Thread(target=self._index_loop, name="agentmem-indexer", daemon=True)
            self._indexer.start()
        self._index_wanted.set()

    def erase_soon(self, memories_deleted: bool = True) -> None:
        """After a forget: run `maintenance.erase_forgotten` (BM25 rebuilt, WAL truncated) on the indexer thread, so
        the caller does not wait for a rebuild (at once with sync_index; at the latest when the store closes)."""
        with self._erase_lock:
            self._erase_pending = bool(self._erase_pending) or memories_deleted
        if self.sync_index:
            self._run_erasure()
        else:
            self.index_soon()

    def _run_erasure(self) -> None:
        with self._erase_lock:
            memories_deleted, self._erase_pending = self._erase_pending, None
        if memories_deleted is None:
            return
        from .maintenance import erase_forgotten

        erased = erase_forgotten(self, memories_deleted=memories_deleted)
        if erased.busy_readers:
            log.info("another process was reading: the WAL still holds forgotten pages until the next checkpoint")

    def _checkpoint(self, busy_timeout_ms: int) -> bool:
        """Copy the WAL into the database file and empty it, waiting at most `busy_timeout_ms` for other
        processes; not when the files changed under this process (the watch refuses it). Never raises."""
        if self._watch is not None and self._watch.problem is not None:
            return False
        try:
            return checkpoint(self.conn, "TRUNCATE", busy_timeout_ms=busy_timeout_ms)
        except DatabaseError as exc:  # a damaged database: the commands say so, in their one line
            log.debug("could not checkpoint the database: %s", exc)
            return False

    @property
    def files_problem(self) -> str | None:
        """What changed under this process among the database's files (then it writes no more), or None."""
        return None if self._watch is None else self._watch.problem

    def _last_connection(self) -> Connection | None:
        """When the WAL was replaced under this process: a connection on the files as they are now, to be closed
        after this process's own. The last connection to close checkpoints the WAL and deletes it; closed last,
        that one checkpoints the current WAL (what other processes wrote since) instead of this process's
        unlinked one, and nothing they wrote is deleted with it."""
        if self.files_problem is None:
            return None
        try:
            return connect(self.db_path, busy_timeout_ms=CHECKPOINT_BUSY_MS, load_vec=False)
        except Exception as exc:
            log.warning("could not open the database to close it cleanly: %s", exc)
            return None

    def _idle(self) -> None:
        """No write for IDLE_CHECKPOINT_S: notice database files changed under this process (`FileWatch`, which
        logs it), and checkpoint a WAL that holds anything (any process's writes)."""
        if self._watch is None:
            return
        try:
            self._watch.check(self.conn)
        except StoreDamaged:
            return
        try:
            size = os.path.getsize(f"{self.db_path}-wal")
        except OSError:
            return
        if size:
            self._checkpoint(busy_timeout_ms=CHECKPOINT_BUSY_MS)

    def _index_loop(self) -> None:
        while not self._closing:
            self._index_wanted.wait(timeout=IDLE_CHECKPOINT_S)
            if self._closing:
                return
            if not self._index_wanted.is_set():
                self._idle()
                continue
            if not self._catching_up.is_set():
                self._closed.wait(INDEX_DEBOUNCE_S)  # close() cuts the wait short
            self._index_wanted.clear()
            try:
                self.drain_outbox(stop=self._closed)
                unfinished = self._catching_up.is_set() and self.index_backlog() > BIG_BACKLOG
                if not unfinished and not self._closing:
                    self._run_erasure()
            except StoreDamaged:  # the database's files changed under this process (logged once)
                return
            except Exception:
                log.exception("background BM25 indexing failed; the outbox keeps the work")
                unfinished = False  # searches go back to applying the outbox themselves
            if unfinished and not self._closing:  # another process held the index writer: go on after it
                self._index_wanted.set()
            else:
                self._catching_up.clear()

    def pending_index_ids(self, limit: int = 501) -> list[str]:
        """Memories written but not yet applied to BM25 (by any process)."""
        return [row[0] for row in self.conn.execute(
            "SELECT DISTINCT memory_id FROM index_outbox WHERE op = 'upsert' LIMIT ?", (limit,))]

    def flush(self) -> int:
        """Apply every pending index change now."""
        return self.drain_outbox()

    def index_backlog(self) -> int:
        """Index changes not yet applied to BM25 (by any process)."""
        return self.conn.execute("SELECT COUNT(*) FROM index_outbox").fetchone()[0]

    def rebuilding(self) -> int:
        """The BM25 backlog while the indexer thread applies a big one (a rebuild), else 0: search does not
        wait for it, and says how much is left."""
        if not self._catching_up.is_set():
            return 0
        backlog = self.index_backlog()
        return backlog if backlog > BIG_BACKLOG else 0

    def drain_outbox(self, limit: int | None = None, stop: threading.Event | None = None) -> int:
        """Apply pending index changes to tantivy, batch by batch, until `limit` rows are applied, the outbox
        is empty or `stop` is set. Safe to run from several processes (idempotent)."""
        with self._drain_lock:
            return self._drain(limit, stop)

    def _drain(self, limit: int | None, stop: threading.Event | None) -> int:
        applied = 0
        rebuilt = False
        while (limit is None or applied < limit) and not (stop is not None and stop.is_set()):
            rows = self.conn.execute(
                "SELECT seq, memory_id FROM index_outbox ORDER BY seq LIMIT ?", (OUTBOX_BATCH,)).fetchall()
            if not rows:
                break
            ids = list(dict.fromkeys(row[1] for row in rows))
            marks = ",".join("?" * len(ids))
            present = {row["id"]: row for row in self.conn.execute(
                f"SELECT id, project, tier, type, is_latest, title, content, tags, files, session_id, created_at "
                f"FROM memories WHERE id IN ({marks})", ids)}
            contexts = turn_contexts(self.conn, present.values())
            docs = [FulltextDoc(
                id=r["id"], project=r["project"], tier=r["tier"], type=r["type"], is_latest=bool(r["is_latest"]),
                text=memory_text(r["title"], r["content"], json.loads(r["tags"]), json.loads(r["files"]))
                + (f"\n{contexts[r['id']]}" if r["id"] in contexts else ""),
            ) for r in present.values()]
            try:
                self.fulltext.apply(docs, [i for i in ids if i not in present])
            except IndexBusyError as exc:
                log.warning("%s", exc)
                break
            except IndexDamagedError as exc:
                if rebuilt:  # damaged again right after a rebuild: leave the work queued
                    raise
                rebuilt = True
                self._rebuild_damaged(exc)
                continue
            seqs = [row[0] for row in rows]
            with self.transaction() as conn:
                conn.execute(f"DELETE FROM index_outbox WHERE seq IN ({','.join('?' * len(seqs))})", seqs)
            applied += len(rows)
        return applied

    # reading -----------------------------------------------------------------------------------

    def get(self, memory_id: str, *, within: Sequence[str | None] | None = None) -> Memory:
        """The whole memory; raises NotFound. within: the projects the caller may see (None: any); a memory
        of another project is not found, so a caller walled into a project learns nothing of the others."""
        check_memory_id(memory_id)
        row = self.conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None or within is not None and row["project"] not in within:
            raise NotFound(f"no memory {memory_id}" + (" in this project" if row is not None else "")
                           + ": it may have been forgotten; search again for current ids")
        return Memory.from_row(row)

    def walls(self) -> list[str | None]:
        """The projects an MCP tool of this store may read, supersede and forget: its own and the global ones."""
        return list(dict.fromkeys([self.project, None]))

    def history(self, memory_id: str, *, within: Sequence[str | None] | None = None) -> list[Memory]:
        """Every version of the memory's chain, oldest first (`within` as in `get`)."""
        memory = self.get(memory_id, within=within)
        rows = self.conn.execute("SELECT * FROM memories WHERE root_id = ? ORDER BY version", (memory.root_id,))
        return [Memory.from_row(row) for row in rows if within is None or row["project"] in within]

    def latest_version(self, memory_id: str) -> Memory:
        memory = self.get(memory_id)
        if memory.is_latest:
            return memory
        row = self.conn.execute("SELECT * FROM memories WHERE root_id = ? AND is_latest = 1",
                                (memory.root_id,)).fetchone()
        return Memory.from_row(row) if row else memory

    # the operations, each in its own module ----------------------------------------------------

    def save(self, content: str, **options: Any):
        """Remember something; see `lifecycle.remember.save` for the arguments."""
        from .lifecycle.remember import save

        return save(self, content, **options)

    def save_many(self, items: list[dict[str, Any]], **options: Any):
        """Save several memories in one batch; see `lifecycle.remember.save_many`."""
        from .lifecycle.remember import save_many

        return save_many(self, items, **options)

    def search(self, query: str, **options: Any):
        """Find memories; see `retrieval.search` for the arguments."""
        from .retrieval import search

        return search(self, query, **options)

    def forget(self, **options: Any):
        """Forget memories by ids, session or filter; see `lifecycle.forget.forget`."""
        from .lifecycle.forget import forget

        return forget(self, **options)

    def stats(self, **options: Any) -> dict[str, Any]:
        from .stats import stats

        return stats(self, **options)

    def audit(self, action: str, memory_id: str | None = None, project: str | None = None,
              detail: dict[str, Any] | None = None) -> None:
        with self.transaction() as conn:
            audit.append(conn, action, memory_id, project, detail)

    def now(self) -> float:
        return time.time()
