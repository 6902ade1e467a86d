"""BM25 over a tantivy index next to the database.

The index is derived data: SQLite is the truth, the outbox feeds this index, `agentmem reindex`
rebuilds it. tantivy allows one writer per index across processes, so writers are short-lived
(open, write, commit, release) and retried while another process holds the lock.
"""

from __future__ import annotations

import logging
import math
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import tantivy

from ..db.pausepoint import pause
from ..files import MARKER, ForeignFolderError, current_uid, ensure_private_dir, is_owned, write_marker
from .tokenize import ANALYZER_NAME, FUNCTION_WORDS, build_analyzer, index_text, terms

log = logging.getLogger("agentmem.fulltext")

SCHEMA_VERSION = "3"  # 3: episodic memories carry neighbouring-turn context (index/neighbours.py)
SCHEMA_MARKER = "agentmem-schema"
COMMON_MIN_DOCS = 1000  # `FulltextIndex.search`'s common_share applies from this many indexed memories
WIDE_FACTOR = 3  # hits a filtered search first asks of its terms alone, per hit wanted (`FulltextIndex.search`)
IDF_KEPT = 1024  # word lists whose IDFs an index keeps for its current commit (`FulltextIndex.word_idf`)
# What a tantivy index folder holds: segment files (<uuid>.<component>, deletes <uuid>.<opstamp>.del), its meta
# files and lock files; plus agentmem's schema marker and ownership marker. Nothing else is ever deleted.
_INDEX_FILE = re.compile(r"[0-9a-f]{32}(?:\.\d+)?\.(?:idx|pos|term|store|fast|fieldnorm|del)|meta\.json|"
                         r"\.managed\.json|\.tantivy-(?:meta|writer)\.lock|" + re.escape(SCHEMA_MARKER))


def is_index_file(name: str) -> bool:
    """Whether a file of this name in an index folder is one tantivy or agentmem writes there."""
    return _INDEX_FILE.fullmatch(name) is not None


_SEGMENT_FILE = re.compile(r"[0-9a-f]{32}(?:\.\d+)?\.(?:idx|pos|term|store|fast|fieldnorm|del)")


class IndexBusyError(RuntimeError):
    """Another process held the index writer for too long."""


class IndexDamagedError(RuntimeError):
    """The index's files were changed under this process (a segment file truncated in place) or tantivy found them
    damaged: the index must be rebuilt from SQLite before it is read again."""


@dataclass(frozen=True)
class FulltextDoc:
    id: str
    project: str | None
    tier: str
    type: str
    is_latest: bool
    text: str  # title, content, tags and files, already redacted


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("project", stored=False, tokenizer_name="raw")
    builder.add_text_field("tier", stored=False, tokenizer_name="raw")
    builder.add_text_field("type", stored=False, tokenizer_name="raw")
    builder.add_text_field("latest", stored=False, tokenizer_name="raw")
    builder.add_text_field("text", stored=False, tokenizer_name=ANALYZER_NAME)
    return builder.build()


def project_key(project: str | None) -> str:
    return project or ""


def needs_rebuild(marker: str) -> bool:
    """Whether an index whose schema marker reads `marker` must be rebuilt by this version. An older
    schema is rebuilt; a newer one (written by a newer agentmem running beside this one, say hooks
    updated before a long-running server) is used as it is: wiping it would only make the newer
    process rebuild it again, and so on in turn."""
    text = marker.strip()
    if text == SCHEMA_VERSION:
        return False
    if text.isdigit() and int(text) > int(SCHEMA_VERSION):
        log.warning("the BM25 index was written by a newer agentmem (schema %s, this one reads %s); "
                    "using it as it is", text, SCHEMA_VERSION)
        return False
    return True


def bm25_idf(total: int, df: int) -> float:
    """BM25's IDF of a term in `df` of `total` documents, as tantivy computes it."""
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


def claim_index_dir(path: Path) -> None:
    """Make sure `path` can serve as agentmem's index folder, which agentmem empties when it rebuilds the index.

    A missing folder is created 0700 with agentmem's marker. An existing folder is used when it carries that
    marker or the schema marker (an index an older agentmem made), or holds nothing but index files (an empty
    folder included); the marker is then written into it. A folder holding anything else, or holding a database
    (the home given as the index folder), raises ForeignFolderError with what to do, and nothing in it changes."""
    if not path.exists():
        ensure_private_dir(path)
        return
    names = set(os.listdir(path))
    if "agentmem.db" in names or any(n.endswith(".db") or n.endswith(".db-wal") for n in names):
        raise ForeignFolderError(
            f"the BM25 index folder {path} holds a database: it is a home, not an index folder, and agentmem deletes "
            "the files of its index folder when it rebuilds it. Set AGENTMEM_INDEX_DIR (or index_dir) to a new or "
            "empty folder, or unset it to use <home>/fulltext")
    foreign = sorted(n for n in names if n != MARKER and not _INDEX_FILE.fullmatch(n))
    if not (is_owned(path) or SCHEMA_MARKER in names) and foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise ForeignFolderError(
            f"the BM25 index folder {path} was not created by agentmem and holds other files ({shown}); agentmem "
            "deletes the files of its index folder when it rebuilds it, so it will not use this one. Set "
            "AGENTMEM_INDEX_DIR (or index_dir) to a new or empty folder, or unset it to use <home>/fulltext")
    if not is_owned(path):
        write_marker(path)


class FulltextIndex:
    """A tantivy BM25 index of memories, keyed by memory id."""

    def __init__(self, path: Path, *, lock_timeout: float = 30.0) -> None:
        self.path = path
        self.lock_timeout = lock_timeout
        self._lock = threading.Lock()
        self._copy_of: Path | None = None
        self._open()

    @classmethod
    def private_copy(cls, path: Path) -> FulltextIndex:
        """The index at `path`, opened from a copy of its files in a new private temporary folder (0700): for a
        store that cannot write its index folder (a read-only filesystem), since tantivy locks a file there even to
        read. The copy is deleted at `close`; `path` is only read."""
        import shutil
        import tempfile

        copy = Path(tempfile.mkdtemp(prefix="agentmem-index-"))
        try:
            for entry in os.scandir(path) if path.is_dir() else ():
                if _INDEX_FILE.fullmatch(entry.name) and "lock" not in entry.name and entry.is_file(
                        follow_symlinks=False):
                    shutil.copyfile(entry.path, copy / entry.name)
            write_marker(copy)
            index = cls(copy)
        except BaseException:
            shutil.rmtree(copy, ignore_errors=True)  # the folder made just now, with what was copied into it
            raise
        index._copy_of = path
        return index

    def close(self) -> None:
        """Delete the private copy `private_copy` made (nothing else: an index in place has nothing to close)."""
        if self._copy_of is not None:
            import shutil

            self.index = None
            shutil.rmtree(self.path, ignore_errors=True)  # the temporary folder private_copy made
            self._copy_of = None

    def _open(self) -> None:
        claim_index_dir(self.path)
        marker = self.path / SCHEMA_MARKER
        if marker.exists() and needs_rebuild(marker.read_text()):
            self._wipe_dir()
        self._mapped: dict[str, tuple[int, int]] = {}
        self._note_files()
        self.index = tantivy.Index(_schema(), path=str(self.path), reuse=True)
        # tantivy's default reader reloads on a thread of its own when meta.json changes, reading segment files at
        # any moment, even ones truncated under it (SIGBUS); `_searcher` reloads instead, after `check_files`
        self.index.config_reader(reload_policy="Manual")
        self._meta_file = str(self.path / "meta.json")
        self._seen: tuple[int, int, int] | None = None
        self._idf: dict[tuple, dict[str, float]] = {}  # (commit, words) -> their IDF (`word_idf`)
        self.analyzer = build_analyzer()
        self._function_terms: frozenset[str] | None = None
        self.index.register_tokenizer(ANALYZER_NAME, self.analyzer)
        if not marker.exists():
            marker.write_text(SCHEMA_VERSION)
        self._make_private()

    def _note_files(self) -> None:
        """Remember the inode and size of every segment file now in the folder: the files tantivy may map into
        memory from here on (segment files never change once written)."""
        for entry in os.scandir(self.path):
            if _SEGMENT_FILE.fullmatch(entry.name) and entry.name not in self._mapped:
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                self._mapped[entry.name] = (st.st_ino, st.st_size)

    def check_files(self) -> None:
        """Raise IndexDamagedError if a segment file tantivy may have mapped was truncated in place since: reading
        the part of a mapping past the end of its file kills the process with SIGBUS, so this runs before every
        read and write of the index. A file deleted or replaced (a merge, another process's rebuild) is harmless:
        the mapping keeps the old file."""
        for name, (inode, size) in list(self._mapped.items()):
            try:
                st = os.stat(os.path.join(self.path, name))
            except FileNotFoundError:
                self._mapped.pop(name, None)  # another thread (a search, the indexer) may have dropped it first
                continue
            if st.st_ino == inode and st.st_size < size:
                raise IndexDamagedError(f"{name} in the BM25 index folder {self.path} shrank from {size:,} to "
                                        f"{st.st_size:,} bytes while the index was open")

    def _make_private(self) -> None:
        """tantivy creates its files with the process umask (often 0644): make them 0600 like the database."""
        for entry in os.scandir(self.path):
            if not _INDEX_FILE.fullmatch(entry.name):  # only the files tantivy and agentmem wrote
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != 0o600 and st.st_uid == current_uid():
                    os.chmod(entry.path, 0o600)
            except FileNotFoundError:  # merged away by another process meanwhile
                pass

    def _wipe_dir(self) -> None:
        self.wipe(self.path)

    @staticmethod
    def wipe(path: Path) -> None:
        """Empty an index folder: delete the index files in it (tantivy's and the schema marker), nothing else.
        A missing folder is created; a folder that is not agentmem's index raises ForeignFolderError and is left
        untouched (see `claim_index_dir`)."""
        claim_index_dir(path)
        for entry in os.scandir(path):
            if _INDEX_FILE.fullmatch(entry.name) and not entry.is_dir(follow_symlinks=False):
                try:
                    os.unlink(entry.path)
                except FileNotFoundError:
                    pass
            elif entry.name != MARKER:
                log.warning("%s in the BM25 index folder %s is not an index file; left as it is", entry.name, path)

    def _writer(self) -> tantivy.IndexWriter:
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.005
        while True:
            try:
                return self.index.writer(heap_size=15_000_000, num_threads=1)
            except ValueError as exc:
                if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                    if "lock" in str(exc).lower():
                        raise IndexBusyError(
                            f"the BM25 index at {self.path} stayed locked for {self.lock_timeout:.0f}s; "
                            "another agentmem process is writing. It will be retried.") from exc
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    def apply(self, upserts: Iterable[FulltextDoc], deletes: Iterable[str]) -> int:
        """Delete, then (re-)add documents, in one short-lived writer and one commit."""
        upserts = list(upserts)
        delete_ids = set(deletes) | {doc.id for doc in upserts}
        if not delete_ids:
            return 0

        def fill(writer: tantivy.IndexWriter) -> None:
            for memory_id in delete_ids:
                writer.delete_documents_by_term("id", memory_id)
            for doc in upserts:
                writer.add_document(_document(doc))

        with self._lock:
            self.check_files()
            self._commit(self._writer(), fill)
            self._note_files()
            self._make_private()
        return len(delete_ids)

    def rewrite(self, docs: Iterable[FulltextDoc]) -> int:
        """Replace every document of the index by `docs`, in one writer and one commit; returns how many were written.

        Searches keep reading the previous commit until the new one is in place (nothing is missing meanwhile, as it
        is between `reset` and the end of a rebuild), then the previous segments' files are deleted: terms that
        tantivy keeps for deleted documents until it merges their segment go with them."""
        written = 0

        def fill(writer: tantivy.IndexWriter) -> None:
            nonlocal written
            writer.delete_all_documents()
            for doc in docs:
                writer.add_document(_document(doc))
                written += 1

        with self._lock:
            self.check_files()
            writer = self._writer()
        try:
            self._commit(writer, fill, collect_garbage=True)  # searches go on meanwhile: the lock is not held
        finally:
            del writer
        with self._lock:
            self._note_files()
            self._make_private()
        return written

    def _commit(self, writer: tantivy.IndexWriter, fill: Callable[[tantivy.IndexWriter], None], *,
                collect_garbage: bool = False) -> None:
        """`fill` the writer, then commit (and delete the files no commit uses any more); on any error roll back, a
        file tantivy cannot read (e.g. "Footer magic byte mismatch") raising IndexDamagedError."""
        try:
            fill(writer)
            pause("index-commit")
            writer.commit()
            if collect_garbage:
                writer.garbage_collect_files()
            writer.wait_merging_threads()
        except ValueError as exc:
            _rollback(writer)
            raise IndexDamagedError(f"the BM25 index at {self.path} cannot be written: {exc}") from exc
        except BaseException:
            _rollback(writer)
            raise
        finally:
            del writer  # no frame of a traceback keeps the writer, and its lock on the index, alive

    def clear(self) -> None:
        with self._lock:
            self.check_files()
            writer = self._writer()
            writer.delete_all_documents()
            writer.commit()
            writer.wait_merging_threads()
            del writer
            self._make_private()

    def query_terms(self, text: str) -> list[str]:
        """The analysed (stemmed, stop-word free) terms of a query, without duplicates."""
        seen: dict[str, None] = {}
        for term in self.analyzer.analyze(" ".join(terms(text))):
            seen.setdefault(term, None)
        return list(seen)

    def search(self, text: str, *, projects: list[str | None] | None = None, latest_only: bool = True,
               tiers: list[str] | None = None, types: list[str] | None = None, limit: int = 50,
               admitted: Callable[[list[str]], set[str]] | None = None,
               common_share: float | None = None, boosts: Mapping[str, float] | None = None,
               ) -> list[tuple[str, float]]:
        """Memory ids and BM25 scores, best first. `projects=None` searches every project.

        boosts: more terms (analysed, index/expansion.py) searched beside the query's, each one's BM25 score
        multiplied by its boost.

        common_share: in an index of at least COMMON_MIN_DOCS memories, leave out the terms that more than this
        share of them hold (while another term is left): such a term weighs next to nothing in BM25 (over 90%:
        an IDF under 0.11, against 5-14 for a term of a few memories) and costs a walk of nearly every posting.

        admitted: given, a function telling which of some memory ids pass the same filters (read from SQLite,
        the truth): the query's terms are then first searched alone, which tantivy answers with block-max WAND
        (it skips the blocks of postings that cannot reach the top), for WIDE_FACTOR x `limit` hits, and those
        admitted are the answer when `limit` of them are, or when every match was read; otherwise the filters
        join the query (a filter clause makes tantivy score every matching document). Either way the answer is
        the best `limit` admitted matches, with the same scores (filters score nothing)."""
        query_terms = self.query_terms(text)
        if not query_terms:
            return []
        if common_share is not None:
            query_terms = self._specific(query_terms, common_share)
        schema = self.index.schema
        should = [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", t)) for t in query_terms]
        should += [(tantivy.Occur.Should, tantivy.Query.boost_query(tantivy.Query.term_query(schema, "text", t), boost))
                   for t, boost in (boosts or {}).items() if t not in query_terms and boost > 0]
        if admitted is not None:
            wide = limit * WIDE_FACTOR
            hits = self._top(tantivy.Query.boolean_query(should), wide)
            kept = admitted([memory_id for memory_id, _ in hits])
            found = [(memory_id, score) for memory_id, score in hits if memory_id in kept]
            if len(found) >= limit or len(hits) < wide:
                return found[:limit]
        filters = []
        if projects is not None:
            filters.append(tantivy.Query.term_set_query(schema, "project", [project_key(p) for p in projects]))
        if latest_only:
            filters.append(tantivy.Query.term_query(schema, "latest", "1"))
        if tiers:
            filters.append(tantivy.Query.term_set_query(schema, "tier", tiers))
        if types:
            filters.append(tantivy.Query.term_set_query(schema, "type", types))
        # filters select, they do not score: as plain Must clauses each added its own score (about 1) to every
        # hit, the same for all, which shrank the gap between strong and weak keyword matches once divided by
        # the best score in fusion
        clauses = [(tantivy.Occur.Must, tantivy.Query.boolean_query(should))]
        clauses += [(tantivy.Occur.Must, tantivy.Query.const_score_query(f, 0.0)) for f in filters]
        return self._top(tantivy.Query.boolean_query(clauses), limit)

    def _specific(self, query_terms: list[str], common_share: float) -> list[str]:
        """The terms held by at most `common_share` of the indexed memories (all of them in a small index, or
        when every term is that common)."""
        searcher = self._searcher()
        total = searcher.num_docs
        if total < COMMON_MIN_DOCS:
            return query_terms
        kept = [t for t in query_terms if searcher.doc_freq("text", t) <= common_share * total]
        return kept or query_terms

    def _top(self, query: tantivy.Query, limit: int) -> list[tuple[str, float]]:
        """The ids and scores of the query's best `limit` documents (no count: tantivy may skip what cannot rank)."""
        for attempt in range(2):
            try:
                searcher = self._searcher()
                result = searcher.search(query, limit=limit, count=False)
                return [(searcher.doc(address)["id"][0], float(score)) for score, address in result.hits]
            except ValueError as exc:  # a file of the commit read was removed by a newer one: read the newer one
                if "FileDoesNotExist" not in str(exc) or attempt:
                    raise
                self._seen = None
        return []

    def content_terms(self, query_terms: list[str]) -> list[str]:
        """The terms of a prompt that can say what it is about: not a function word of another language, not a
        lone letter, not a short bare number ("what's 17 times 23" is about nothing a memory holds)."""
        if self._function_terms is None:
            self._function_terms = frozenset(self.analyzer.analyze(" ".join(FUNCTION_WORDS))) | FUNCTION_WORDS
        return [t for t in query_terms if t not in self._function_terms
                and not (len(t) == 1 and t.isascii()) and not (t.isdigit() and len(t) < 4)]

    def term_weights(self, query_terms: list[str]) -> dict[str, float]:
        """Weight of each analysed term in 0.5..1: 0.5 + half its IDF relative to an unseen term's, so rare
        terms weigh more without common ones vanishing (in a small index every term is "common")."""
        searcher = self._searcher()
        total = max(searcher.num_docs, 1)
        unseen = bm25_idf(total, 0)
        return {t: 0.5 + 0.5 * bm25_idf(total, searcher.doc_freq("text", t)) / unseen for t in query_terms}

    def full_match_score(self, query_terms: list[str]) -> float:
        """BM25's score of a document of average length holding each term once: the sum of the terms' IDF
        (with tf 1 at the average length, BM25's term factor is 1)."""
        searcher = self._searcher()
        total = max(searcher.num_docs, 1)
        return sum(bm25_idf(total, searcher.doc_freq("text", t)) for t in query_terms)

    def word_idf(self, words: list[str]) -> dict[str, float]:
        """BM25's IDF of each word (as its analysed term; a stop word is left out). The IDFs of the last words
        asked are kept with the commit they were read from (a search asks for its query's twice)."""
        version = self.version()
        key = (version, tuple(words))
        if version is not None and version == self._seen and (kept := self._idf.get(key)) is not None:
            return dict(kept)
        searcher = self._searcher()
        out = {}
        for word in words:
            if analysed := self.analyzer.analyze(word):
                out[word] = bm25_idf(searcher.num_docs, searcher.doc_freq("text", analysed[0]))
        if version is not None and version == self._seen:  # else a commit came between: not kept
            if len(self._idf) >= IDF_KEPT:
                self._idf.clear()
            self._idf[key] = out
        return dict(out)

    def version(self) -> tuple[int, int, int] | None:
        """The index's commit as (inode, mtime, size) of meta.json, which every commit, from any process, replaces
        (None: it cannot be read)."""
        try:
            st = os.stat(self._meta_file)
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    def _searcher(self) -> tantivy.Searcher:
        """A searcher on the latest commit. Reloading costs ~1-8 ms, so it happens only when meta.json (which
        every commit, from any process, replaces) has changed since the last reload. Raises IndexDamagedError,
        before anything is read, if a mapped file was truncated (`check_files`)."""
        self.check_files()
        seen = self.version()
        if seen is None or seen != self._seen:
            self._note_files()
            for attempt in range(3):
                try:
                    self.index.reload()
                    break
                except ValueError as exc:  # another process's commit removed a file of the commit being opened
                    if "FileDoesNotExist" not in str(exc) or attempt == 2:
                        raise
                    time.sleep(0.05)
            self._seen = seen
        return self.index.searcher()

    def ids(self) -> set[str]:
        """Every memory id in the index (for consistency checks)."""
        searcher = self._searcher()
        total = searcher.num_docs
        if total == 0:
            return set()
        result = searcher.search(tantivy.Query.all_query(), limit=total, count=False)
        return {searcher.doc(address)["id"][0] for _, address in result.hits}

    def count(self) -> int:
        return self._searcher().num_docs

    def reset(self) -> None:
        """Delete the index files and start empty (used when they are damaged): the old index, and its mappings of
        the old files, are dropped."""
        with self._lock:
            self._wipe_dir()
            self._open()


def _document(doc: FulltextDoc) -> tantivy.Document:
    return tantivy.Document(id=doc.id, project=project_key(doc.project), tier=doc.tier, type=doc.type,
                            latest="1" if doc.is_latest else "0", text=index_text(doc.text))


def _rollback(writer: tantivy.IndexWriter) -> None:
    try:
        writer.rollback()
    except ValueError:  # the writer of a damaged index may fail to roll back too; it is dropped either way
        pass
