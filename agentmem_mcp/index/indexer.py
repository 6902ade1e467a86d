"""SQLite -> tantivy: the BM25 index kept in step with the memories table through `index_outbox`.

Writers queue memories in their transaction (`db/index_outbox.py`); the indexer applies the queue to tantivy,
now (`sync`) or on its own thread, which batches bursts of writes into one tantivy commit and, when idle,
lets the database checkpoint its WAL. A missing, empty or damaged index is rebuilt from SQLite (it is
derived data). After a forget, the erasure (BM25 rebuilt, WAL truncated) also runs on this thread.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable

from ..db import index_outbox, memories, memory_reads
from ..db.connection import DatabaseError, is_damage
from ..db.database import Database
from ..models import StoreDamaged
from .document import memory_text
from .fulltext import FulltextDoc, FulltextIndex, IndexBusyError, IndexDamagedError
from .neighbours import turn_contexts

log = logging.getLogger("agentmem")

DOC_COLUMNS = "id, project, tier, type, is_latest, title, content, tags, files, session_id, created_at"

OUTBOX_BATCH = 500
# The indexer waits this long after a write before it commits to tantivy, so a burst of saves makes one
# commit (each costs CPU and an fsync, and competes with the next save's embedding: saves back to back are
# faster with a longer wait, docs/benchmarks.md). Search finds queued memories meanwhile
# (the outbox scan), so nothing waits for the commit.
INDEX_DEBOUNCE_S = 0.5
HEAL_EVERY_S = 60.0
# A bigger outbox at open (a BM25 rebuild after an upgrade, or a deleted or damaged index: ~3,000-7,000
# memories/s) is applied on the indexer thread when the store is opened with index_in_background, so a
# long-running server answers at once (searching what is indexed so far, and saying so) instead of making its
# first tool call wait; and close() leaves at most this much for the next process to apply.
BIG_BACKLOG = 2000
# With no write for this long, the indexer thread checkpoints the WAL (and notices files changed under it).
IDLE_CHECKPOINT_S = 5.0


class Indexer:
    """The BM25 index of one database (`fulltext`), and what keeps it in step: the outbox drain and its thread.

    erase: called with whether memories were deleted, after a forget (`erase_soon`); it rebuilds what still
    holds forgotten text (maintenance.erase_forgotten, wired by the Store)."""

    def __init__(self, db: Database, fulltext_dir: str, *, sync: bool = False,
                 erase: Callable[[bool], object] | None = None) -> None:
        self.db = db
        self.fulltext_dir = fulltext_dir
        self.sync = sync
        self.erase = erase
        self._drain_lock = threading.Lock()
        self._wanted = threading.Event()
        self._catching_up = threading.Event()  # the indexer thread is applying a big backlog (a rebuild)
        self._thread: threading.Thread | None = None
        self._closing = False
        self._closed = threading.Event()
        self._healed_at = float("-inf")
        self._said_damaged = False
        self._erase_pending: bool | None = None  # an erasure asked for (`erase_soon`): whether memories went
        self._erase_lock = threading.Lock()
        self._erasing = threading.RLock()  # held while an erasure runs, on whichever thread
        self.fulltext = self._open_fulltext()

    def _open_fulltext(self) -> FulltextIndex:
        """Open the BM25 index; if it is missing, corrupt or empty while SQLite holds memories, rebuild it
        from SQLite (it is derived data) before answering anything."""
        if self.db.read_only is not None:  # tantivy must lock a file in the index folder even to read it
            return FulltextIndex.private_copy(self.fulltext_dir)
        try:
            index = FulltextIndex(self.fulltext_dir)
            indexed = index.count()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # tantivy raises ValueError/OSError, or panics, on a damaged directory
            log.warning("BM25 index at %s is unreadable (%s); rebuilding it from SQLite", self.fulltext_dir, exc)
            FulltextIndex.wipe(self.fulltext_dir)
            index = FulltextIndex(self.fulltext_dir)
            indexed = 0
        stored = memories.total(self.db.conn)
        if indexed == 0 and stored:
            log.warning("BM25 index is empty but %d memories exist; rebuilding it", stored)
            self._queue_every_memory()
        return index

    def start(self, *, in_background: bool) -> None:
        """At open: apply the outbox now, or (in_background, a long-running server) start the thread, which
        applies a big backlog (a rebuild) while searches use what is indexed so far."""
        if in_background and not self.sync:
            self.index_soon()  # the indexer thread also checkpoints when idle
        if in_background and not self.sync and (backlog := self.backlog()) > BIG_BACKLOG:
            log.warning("BM25 index: %d changes to apply; applying them in the background (search uses "
                        "what is indexed so far meanwhile)", backlog)
            self._catching_up.set()
            self.index_soon()
        else:
            self.drain()

    def _queue_every_memory(self) -> None:
        if self.db.read_only is not None:  # a read-only store searches what is indexed; nothing can be queued
            return
        with self.db.transaction() as conn:
            index_outbox.queue_every_memory(conn, time.time())

    def reset(self) -> None:
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

    def heal(self, error: BaseException) -> None:
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
            if not self.sync:
                self._catching_up.set()  # searches meanwhile use what is indexed so far
            self.index_soon()
        except Exception:
            log.exception("could not rebuild the BM25 index; `agentmem reindex` rebuilds it")

    def index_soon(self) -> None:
        """Ask for the outbox to be applied to BM25: now (sync) or on the indexer thread, which batches bursts
        of writes into one tantivy commit (a commit costs tens of milliseconds)."""
        if self.sync:
            self.drain()
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="agentmem-indexer", daemon=True)
            self._thread.start()
        self._wanted.set()

    def index_later(self) -> None:
        """Ask the indexer thread to apply the outbox, without waiting and without writing anything here (what
        a search calls: a synchronous indexer applies it at its next write or when the store closes)."""
        if not self.sync:
            self.index_soon()

    def erase_soon(self, memories_deleted: bool = True) -> None:
        """After a forget: run the erasure on the indexer thread, so the caller does not wait for a rebuild (at
        once when sync; at the latest when the store closes)."""
        with self._erase_lock:
            self._erase_pending = bool(self._erase_pending) or memories_deleted
        if self.sync:
            self._run_erasure()
        else:
            self.index_soon()

    def _run_erasure(self) -> None:
        with self._erasing:
            with self._erase_lock:
                memories_deleted, self._erase_pending = self._erase_pending, None
            if memories_deleted is None or self.erase is None:
                return
            self.erase(memories_deleted)

    def settle(self) -> None:
        """Apply the outbox and run a pending erasure in this thread, now; an erasure the indexer thread has
        begun is waited for. What a caller that must not overlap that work calls (a benchmark timing the sweep
        after a sweep that removed memories)."""
        self.drain()
        self._run_erasure()

    def _loop(self) -> None:
        while not self._closing:
            self._wanted.wait(timeout=IDLE_CHECKPOINT_S)
            if self._closing:
                return
            if not self._wanted.is_set():
                self.db.idle()
                continue
            if not self._catching_up.is_set():
                self._closed.wait(INDEX_DEBOUNCE_S)  # close() cuts the wait short
            self._wanted.clear()
            try:
                self.drain(stop=self._closed)
                unfinished = self._catching_up.is_set() and self.backlog() > BIG_BACKLOG
                if not unfinished and not self._closing:
                    self._run_erasure()
            except StoreDamaged:  # the database's files changed under this process (logged once)
                return
            except DatabaseError as exc:
                if not is_damage(exc):
                    log.exception("background BM25 indexing failed; the outbox keeps the work")
                elif not self._said_damaged:  # a damaged database: one line, once (doctor says what to do)
                    log.error("background BM25 indexing stopped: the memory database cannot be read (%s); run "
                              "`agentmem doctor`", exc)
                    self._said_damaged = True
                unfinished = False
            except Exception:
                log.exception("background BM25 indexing failed; the outbox keeps the work")
                unfinished = False  # searches go back to applying the outbox themselves
            if unfinished and not self._closing:  # another process held the index writer: go on after it
                self._wanted.set()
            else:
                self._catching_up.clear()

    def pending_ids(self, limit: int = 501) -> list[str]:
        """Memories written but not yet applied to BM25 (by any process)."""
        return index_outbox.pending_upserts(self.db.conn, limit)

    def backlog(self) -> int:
        """Index changes not yet applied to BM25 (by any process)."""
        return index_outbox.backlog(self.db.conn)

    def rebuilding(self) -> int:
        """The BM25 backlog while the indexer thread applies a big one (a rebuild), else 0: search does not
        wait for it, and says how much is left."""
        if not self._catching_up.is_set():
            return 0
        backlog = self.backlog()
        return backlog if backlog > BIG_BACKLOG else 0

    def drain(self, limit: int | None = None, stop: threading.Event | None = None) -> int:
        """Apply pending index changes to tantivy, batch by batch, until `limit` rows are applied, the outbox
        is empty or `stop` is set. Safe to run from several processes (idempotent)."""
        if self.db.read_only is not None:  # nothing can be taken off the outbox: search scans it instead
            return 0
        with self._drain_lock:
            return self._drain(limit, stop)

    def _drain(self, limit: int | None, stop: threading.Event | None) -> int:
        applied = 0
        rebuilt = False
        while (limit is None or applied < limit) and not (stop is not None and stop.is_set()):
            conn = self.db.conn
            rows = index_outbox.next_batch(conn, OUTBOX_BATCH)
            if not rows:
                break
            ids = list(dict.fromkeys(memory_id for _, memory_id in rows))
            present = {row["id"]: row for row in memories.by_ids(conn, ids, DOC_COLUMNS)}
            docs = _documents(conn, list(present.values()))
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
            with self.db.transaction() as write:
                index_outbox.remove(write, [seq for seq, _ in rows])
            applied += len(rows)
        return applied

    def rewrite_all(self, page: int = OUTBOX_BATCH) -> int:
        """Write the whole BM25 index anew from SQLite in one tantivy commit (`FulltextIndex.rewrite`): searches read
        the previous commit until then, and the previous segments, with the terms of documents deleted from them,
        are deleted after it. Changes queued meanwhile stay queued and are applied after it. Returns how many
        memories were written."""
        with self._drain_lock:
            conn = self.db.conn
            through = index_outbox.last_seq(conn)

            def every_document():
                after = 0
                while True:
                    rows = memory_reads.after_rowid(conn, DOC_COLUMNS, after, page)
                    if not rows:
                        return
                    after = rows[-1]["rowid"]
                    yield from _documents(conn, rows)

            written = self.fulltext.rewrite(every_document())
            with self.db.transaction() as write:
                index_outbox.remove_through(write, through)
            return written

    def close(self) -> None:
        """Stop the thread, run a pending erasure (forgotten text must not outlive the process that forgot it),
        and apply at most BIG_BACKLOG more changes (a bigger rest, a rebuild cut short, waits for the next
        process)."""
        self._closing = True
        self._closed.set()
        if self._thread is not None:
            self._wanted.set()
            self._thread.join(timeout=60)
            self._thread = None
        if self._erase_pending is not None and self.db.files_problem is None:
            try:
                self._run_erasure()
            except Exception as exc:
                log.warning("could not erase what was forgotten from the index and the WAL: %s", exc)
        try:
            if self.db.files_problem is None:  # else it may write nothing
                self.drain(limit=BIG_BACKLOG)
        except DatabaseError as exc:  # a damaged database: the outbox keeps the work, the next command says so
            log.debug("could not update the BM25 index at close: %s", exc)
        except Exception:  # the outbox keeps what is not indexed; the next open drains it
            log.exception("could not update the BM25 index at close")
        self.fulltext.close()


def _documents(conn, rows: list) -> list[FulltextDoc]:
    """The BM25 documents of memory rows (DOC_COLUMNS)."""
    contexts = turn_contexts(conn, rows)
    return [FulltextDoc(
        id=r["id"], project=r["project"], tier=r["tier"], type=r["type"], is_latest=bool(r["is_latest"]),
        text=memory_text(r["title"], r["content"], json.loads(r["tags"]), json.loads(r["files"]))
        + (f"\n{contexts[r['id']]}" if r["id"] in contexts else ""),
    ) for r in rows]
