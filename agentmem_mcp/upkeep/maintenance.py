"""Rebuilding derived data (`agentmem reindex`) and health checks (`agentmem doctor`)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..db import memories as memory_rows
from ..db import memory_reads, meta, observations
from ..db.audit import check_triggers, head_path, key_path, verify

if TYPE_CHECKING:
    from ..parts import Parts

Progress = Callable[[str, int, int], None]


def rebuild_bm25(store: Parts, progress: Progress | None = None) -> int:
    """Empty the BM25 index folder (its segment files are deleted) and index every memory again from SQLite;
    returns how many memories there are."""
    total = memory_rows.total(store.conn)
    store.indexer.reset()
    done = 0
    while True:
        applied = store.indexer.drain(limit=500)
        if not applied:
            break
        done = min(total, done + applied)
        if progress:
            progress("bm25", done, total)
    return total


@dataclass
class Erasure:
    """What `erase_forgotten` did: whether the BM25 index was rebuilt and whether the WAL was emptied."""

    index_rebuilt: bool
    wal_emptied: bool
    busy_readers: bool


def erase_forgotten(store: Parts, memories_deleted: bool = True, attempts: int = 20) -> Erasure:
    """After a forget: leave no copy of the forgotten text on disk.

    SQLite already zeroed the deleted rows (secure_delete is on for every connection). What remains is (1) the BM25
    index, where tantivy keeps a deleted document's terms in its segment until a merge, so the index is written anew
    from SQLite in one commit and the old segment files are deleted (when memories were deleted; searches read the
    old commit until the new one is in place, `Indexer.rewrite_all`); and (2) the
    WAL, which holds the pages as they were before the delete until a checkpoint, so it is checkpointed and
    truncated to zero bytes, retried while another process is reading (busy_readers: it still was)."""
    import time

    store.indexer.drain()
    if memories_deleted:
        store.indexer.rewrite_all()
    emptied = busy = False
    for attempt in range(attempts):
        busy_flag, _, _ = store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy_flag:
            emptied = True
            break
        busy = True
        time.sleep(min(0.05 * (attempt + 1), 0.5))
    return Erasure(memories_deleted, emptied, busy and not emptied)


def reindex(store: Parts, progress: Progress | None = None) -> dict[str, int]:
    """Rebuild the BM25 index and every vector from SQLite, the source of truth."""
    total = rebuild_bm25(store, progress)
    embedded = 0
    if store.embedder.ready:
        with store.transaction() as tx:
            meta.delete(tx, meta.EMBEDDING_MODEL)
            store.backfill.ensure_table(tx)
        embedded = store.backfill.embed_pending(progress=(lambda d, t: progress("vectors", d, t)) if progress else None)
        looked = 0
        while step := store.backfill.add_sentence_pieces():  # what the worker would do next, done now
            looked = min(total, looked + step)
            if progress:
                progress("pieces", looked, total)
        looked = 0
        while step := store.backfill.add_word_vectors():
            looked = min(total, looked + step)
            if progress:
                progress("words", looked, total)
    return {"memories": total, "indexed": store.fulltext.count(), "embedded": embedded}


def database_error_line(exc: BaseException) -> str:
    """The one line a command prints when SQLite cannot use the database: what failed and what to do."""
    text = str(exc)
    if "disk I/O error" in text:
        return (f"the memory database could not be read ({text}): its write-ahead log (agentmem.db-wal) may have been "
                "deleted, replaced or cut short while an agentmem process had it open. Nothing was changed. A running "
                "agentmem server notices a deleted or replaced log and saves what it holds within seconds: retry in a "
                "moment, and restart the MCP server; `agentmem doctor` checks the database and offers recovery. Hooks "
                "keep their events in the spool meanwhile")
    return (f"the memory database cannot be used ({text}). Nothing was changed. Keep a copy of the home folder, then "
            "run `agentmem doctor`: if the database is damaged, `agentmem doctor --recover` copies what is readable "
            "into a new file beside it. Hooks keep their events in the spool meanwhile")


def recover_database(database: Any) -> str:
    """`agentmem doctor --recover`: what is readable of `database` copied into a new file beside it (the damaged
    one is only read), and what to do next."""
    from ..db.connection import DatabaseError
    from ..db.recovery import check, describe_holder, holder, recover
    from ..models import AgentmemError

    if (pid := holder(database)) is not None and (problem := check(database)) is not None:
        raise AgentmemError(
            f"{database} cannot be read now ({problem}) while {describe_holder(pid)} has it open: its write-ahead log "
            "was probably cut short, deleted or replaced under that process, so what is damaged cannot be told yet, "
            "and a copy made now would hold what that process's stale view of the log says. Nothing was written. "
            "Close the coding agents (and stop that process if it stays), then run `agentmem doctor` again")
    try:
        report = recover(database)
    except DatabaseError as exc:
        if not database.is_file():
            raise
        raise AgentmemError(
            f"{database} cannot be opened at all ({exc}): its first page, which holds the schema, is damaged, so "
            "agentmem can copy nothing from it; it was only read. Keep a copy of the home folder: SQLite's own "
            f"`sqlite3 {database} .recover` may still find rows in it. To start again, stop agentmem (close the "
            f"coding agents) and move {database.name} aside with its -wal and -shm files; an export made earlier "
            "goes back in with `agentmem import FILE`") from exc
    problem = check(report.database)
    return (f"{report.describe()}.\nThe new file's integrity check: {problem or 'ok'}. {database} was only read. To "
            "use the new file: stop agentmem (close the coding agents), move the damaged file aside with its -wal and "
            f"-shm files, rename {report.database.name} to {database.name} (and its .audit-key and .audit-head "
            "files likewise), then run `agentmem reindex`; or import the export into a new home with `agentmem "
            f"import {report.export}`")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mode(path: Any) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


def doctor(store: Parts) -> list[Check]:
    conn = store.conn
    checks: list[Check] = []
    version = conn.execute("SELECT vec_version()").fetchone()[0]
    checks.append(Check("sqlite-vec", True, f"loaded {version}"))
    embedder = store.embedder
    if embedder.ready:
        checks.append(Check("embedding model", True, f"{embedder.model_id} ({embedder.dimension} dims)"))
    else:
        checks.append(Check("embedding model", False, embedder.status,
                            "set AGENTMEM_EMBED_MODEL_PATH to a local model folder, or let fastembed download "
                            "the model once with network access; search still works on BM25 + graph"))
    latest = memory_reads.all_ids(conn)
    indexed = store.fulltext.ids()
    missing, stale = latest - indexed, indexed - latest
    backlog = store.indexer.backlog()
    checks.append(Check(
        "bm25 index", not missing and not stale,
        f"{len(indexed)} documents for {len(latest)} memories; {len(missing)} missing, {len(stale)} stale, "
        f"{backlog} queued", "" if not missing and not stale else "run `agentmem reindex`"))
    unembedded = memory_rows.unembedded(conn)
    checks.append(Check("vectors", unembedded == 0 or not embedder.ready,
                        f"{unembedded} memories without vectors",
                        "run `agentmem reindex` (or keep the server running: it embeds them)" if unembedded else ""))
    home_mode = _mode(store.settings.home)
    db_mode = _mode(store.db.path)
    audit_files = [p for p in (key_path(store.db.path), head_path(store.db.path)) if _mode(p) not in (None, 0o600)]
    private = home_mode == 0o700 and db_mode == 0o600 and not audit_files
    fix = [f"chmod 700 {store.settings.home}", f"chmod 600 {store.db.path}*"]
    checks.append(Check("file permissions", private,
                        f"home {oct(home_mode or 0)}, database {oct(db_mode or 0)}"
                        + "".join(f", {p.name} {oct(_mode(p) or 0)}" for p in audit_files),
                        "" if private else " && ".join(fix)))
    verdict = verify(conn)
    checks.append(Check("audit chain", verdict.ok, verdict.describe() if verdict.ok else
                        f"{verdict.rows} rows; {verdict.describe()}",
                        "" if verdict.ok else "the database was changed outside agentmem: keep a copy of the home "
                        "for investigation, check the memories named (`agentmem get ID`) and forget what you did "
                        "not write"))
    if len(verdict.memory_problems) > 1:
        checks[-1].detail += f" (and {len(verdict.memory_problems) - 1} more memories)"
    broken = check_triggers(conn)
    checks.append(Check("audit triggers", not broken, "; ".join(broken) or "the audit log is append-only",
                        "" if not broken else "the triggers were dropped outside agentmem: keep a copy of the home "
                        "for investigation; `agentmem audit --verify` says what else changed"))
    checks += storage_checks(store)
    failed = observations.failed_count(conn)
    checks.append(Check("worker", failed == 0, f"{failed} observations parked as failed",
                        "see the log under the home directory; `agentmem worker --retry-failed` retries them"
                        if failed else ""))
    if store.settings.team_url:  # team memory (docs/team.md): the server, its password hidden
        from ..team.health import team_check

        checks.append(Check(*team_check(store)))
    return checks


LOW_DISK_BYTES = 16 << 20  # below this much free space, a burst of hook events (or a save) may not fit


def storage_checks(store: Parts) -> list[Check]:
    """Whether the home can be written (a read-only one is opened read-only), has room, and whether hooks lost
    events (`capture.hook_notice` counts them, outside the home) or left some in the spool."""
    import shutil
    import time

    from ..capture.hook_notice import last_failure
    from ..capture.spool import pending

    home = store.settings.home
    checks = [Check("writable", store.db.read_only is None, store.db.read_only or f"{home} can be written",
                    "" if store.db.read_only is None else "see above: until then, searches work and nothing is kept")]
    free = shutil.disk_usage(home).free
    checks.append(Check("disk space", free >= LOW_DISK_BYTES, f"{free / (1 << 20):,.0f} MB free where {home} is",
                        "" if free >= LOW_DISK_BYTES else "free some space: hooks lose events on a full disk"))
    failure = last_failure(home)
    waiting = len(pending(home))
    detail = f"{waiting} events waiting in {home / 'spool'} for the next hook or the worker" if waiting else ""
    if failure is None:
        checks.append(Check("hook events", True, detail or "none lost"))
        return checks
    since = time.strftime("%Y-%m-%d %H:%M", time.localtime(failure.get("first_at", 0)))
    lost = int(failure.get("lost", 0))
    what = f"{lost} events lost since {since}" if lost else f"hooks could not work since {since}"
    still = not (checks[0].ok and checks[1].ok)  # the home still cannot be written, or has no room
    recorded = observations.last_recorded_at(store.conn) or 0.0
    again = " (recorded again since)" if recorded > failure.get("last_at", 0) else ""
    checks.append(Check("hook events", not still, f"{what}: {failure.get('message', '')}{again}"
                        + (f"; {detail}" if detail else ""),
                        "fix the cause above; the hooks tell the user once per session meanwhile" if still else ""))
    return checks
