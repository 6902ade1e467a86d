"""The background worker: compress observations, summarise sessions, consolidate knowledge, prune.

It runs inside whichever `agentmem serve` holds the worker lease (runtime/serve_worker.py), and on demand as
`agentmem worker --once | --forever` (`run_cli`). Work is claimed idempotently: a batch of pending
observations is claimed (claimed_by / claimed_until, attempts + 1) in one BEGIN IMMEDIATE transaction,
and its results (the compressed columns and one working-tier memory per observation) commit in one
transaction with the "compressed" marks, only for rows the worker still holds. A worker that dies
mid-batch loses nothing: its claim expires (at once, on the same host, when its process is gone) and
the batch is claimed again. An observation that keeps failing is parked as `failed` after
MAX_ATTEMPTS (`agentmem doctor` reports them; `agentmem worker --retry-failed` resets them).
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..capture.compress import CompressedObservation, compress
from ..db import audit, memories, memory_reads, meta, observations
from ..db.connection import is_damage
from ..lifecycle import consolidate, summarize
from ..lifecycle.consolidate import prepare_saves, write_saves
from ..lifecycle.llm import LLM, need, need_text, need_unit
from . import lease

if TYPE_CHECKING:
    from ..db.connection import Connection
    from ..store import Store

log = logging.getLogger("agentmem.worker")

BATCH_SIZE = 128
CLAIM_SECONDS = 120.0
MAX_ATTEMPTS = 5
RETENTION_DAYS = 30
PRUNE_BELOW_IMPORTANCE = 0.5
PRUNE_EVERY_SECONDS = 3600.0
# Pruned working memories leave their words in the BM25 segments until the index is written anew (what a forget
# does at once): at most this long after a prune, which bounds the rewrite's cost to one a day.
ERASE_PRUNED_EVERY_SECONDS = 86400.0
MAINTENANCE_EVERY_SECONDS = 60.0
CONSOLIDATE_EVERY_SECONDS = 600.0  # a project's mining reads all its observations: not after every batch
PASS_SECONDS = 10.0
# Which working memories get a vector, and of how much of their text (the model's cost grows with the
# text: ~0.3 ms per token on two cores). Words people later search with in their own phrasing: a prompt's
# intent, an error and what failed, a web search. Reads, edits, listings and ordinary commands are found
# by path, identifier and command (BM25 and the entity graph), and each session's summary, which names
# them, has a vector of its own.
VECTOR_CHARS = {"prompt": 200, "error": 120, "web": 120}
VECTOR_CHARS_FAILED = 120  # the title: the command and its first error line
WORKING_CONTENT_CHARS = 2000
MAX_WORKING_SOURCES = 200
LLM_COMPRESS_BATCH = 20
COMPRESS_SYSTEM = """You compress a coding agent's tool calls into records for its long-term memory. For each
observation give a precise title (at most 100 characters) saying what was done to what, up to 5 short facts worth
remembering (errors, results, decisions), and an importance from 0 to 1 (0.1 routine reads, 0.5 edits and
prompts, 0.8 errors and decisions). Return {"observations": [{"id": 1, "title": "...", "facts": ["..."],
"importance": 0.5}]}"""


@dataclass
class Report:
    """What a worker run did."""
    compressed: int = 0
    summaries: int = 0
    consolidated: int = 0
    pruned: int = 0
    failed: int = 0
    claimed: int = 0
    pieces: int = 0  # memories looked at for sentence pieces (Store.add_sentence_pieces)
    words: int = 0  # memories whose words were embedded (Store.add_word_vectors)

    def add(self, other: Report) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)

    @property
    def busy(self) -> bool:
        return bool(self.claimed or self.summaries or self.consolidated or self.pruned or self.pieces or self.words)

    def text(self) -> str:
        return (f"compressed {self.compressed}, summaries {self.summaries}, consolidated {self.consolidated}, "
                f"pruned {self.pruned}, failed {self.failed}" + (f", pieces {self.pieces}" if self.pieces else "")
                + (f", words {self.words}" if self.words else ""))


def backoff_seconds(attempts: int) -> float:
    """How long a failed item waits before its next attempt: 10 s, 20 s, 40 s, ... at most an hour."""
    return min(10.0 * 2 ** max(attempts - 1, 0), 3600.0)


class Worker:
    """One process's worker: `run_pass` does a slice of every kind of work; `run_until_idle` all of it."""

    def __init__(self, store: Store, *, holder: str | None = None, llm: LLM | None = None,
                 batch_size: int = BATCH_SIZE, sweep: bool = True) -> None:
        self.store = store
        self.holder = holder or lease.new_holder()
        self.llm = llm
        self.batch_size = batch_size
        self.sweep = sweep
        self._last_maintenance = 0.0
        self._consolidated_at: dict[str | None, float] = {}
        self._team_last: dict[str, float] = {}

    # one pass ------------------------------------------------------------------------------------

    def run_pass(self, *, seconds: float = PASS_SECONDS, should_stop: Callable[[], bool] = lambda: False,
                 consolidate_every: float = CONSOLIDATE_EVERY_SECONDS) -> Report:
        """Compress batches for up to `seconds`, then (once the backlog is gone) summarise due sessions,
        consolidate projects that changed (each at most every `consolidate_every` seconds) and do the
        periodic upkeep."""
        with audit.batched():  # the audit head is written once per pass, not once per observation
            return self._run_pass(seconds, should_stop, consolidate_every)

    def _run_pass(self, seconds: float, should_stop: Callable[[], bool], consolidate_every: float) -> Report:
        report = Report()
        deadline = time.monotonic() + seconds
        self.drain_spool()
        while not should_stop():
            batch = self.compress_batch(drain=False)
            report.add(batch)
            if not batch.claimed or time.monotonic() >= deadline:
                break
        if report.compressed:  # one BM25 commit for the pass's batches (a commit costs ~0.1 s of tantivy's time)
            self.store.drain_outbox()
        if should_stop() or (report.claimed and time.monotonic() >= deadline):
            return report  # a backlog remains: summaries and consolidation wait until it is compressed
        report.summaries += summarize.summarize_due(self.store, llm=self.llm)
        report.consolidated += self.consolidate(every=consolidate_every)
        report.pieces += self.store.add_sentence_pieces()
        report.words += self.store.add_word_vectors()
        if self.store.settings.team_url:  # team memory: publish the outbox, pull the team's changes
            from ..team.sync import worker_step

            worker_step(self.store, self._team_last)
        if time.time() - self._last_maintenance >= MAINTENANCE_EVERY_SECONDS:
            self._last_maintenance = time.time()
            report.pruned += self.maintain()
        return report

    def drain_spool(self) -> int:
        """Move events that hooks spooled (database locked or full at the time) into observations."""
        from ..capture.observations import ObservationStore
        from ..capture.spool import drain_spool

        try:
            return drain_spool(self.store.settings.home, ObservationStore(self.store.conn))
        except Exception as exc:  # still locked or full: the files wait for the next pass
            log.warning("spooled hook events not moved yet: %s", exc)
            return 0

    def run_until_idle(self) -> Report:
        """Pass after pass until nothing is left to do, then the upkeep (prune, sweep, vectors, index)."""
        total = Report()
        self._last_maintenance = time.time()  # the upkeep runs once, at the end
        while True:
            report = self.run_pass(seconds=60.0, consolidate_every=0.0)
            total.add(report)
            if not report.busy:
                break
        total.pruned += self.maintain(force=True)
        return total

    # compression ---------------------------------------------------------------------------------

    def claim(self) -> tuple[list[int], int]:
        """Claim up to batch_size pending observations; returns (ids, how many were parked as failed)."""
        now = self.store.now()
        with self.store.transaction() as tx:
            for holder in observations.other_claimants(tx, self.holder, now):
                if lease.holder_alive(holder) is False:
                    observations.release_claims_of(tx, holder)
            parked = observations.park_exhausted(tx, MAX_ATTEMPTS, now)
            ids = observations.claim(tx, self.holder, now + CLAIM_SECONDS, now, self.batch_size)
        return ids, parked

    def compress_batch(self, *, drain: bool = True) -> Report:
        """Claim a batch and compress it; a batch that fails is retried one observation at a time. drain: apply the
        batch's memories to BM25 now (a pass applies its batches' together, once)."""
        ids, parked = self.claim()
        report = Report(claimed=len(ids), failed=parked)
        if not ids:
            return report
        try:
            report.compressed += self._compress(ids)
        except Exception as exc:
            if is_damage(exc):  # not this batch's fault: the pass stops, its loop says it once
                raise
            log.warning("compressing a batch of %d failed (%s: %s); retrying one by one", len(ids),
                        type(exc).__name__, exc)
            for obs_id in ids:
                try:
                    report.compressed += self._compress([obs_id])
                except Exception as one:
                    if is_damage(one):
                        raise
                    log.exception("observation %d could not be compressed", obs_id)
                    report.failed += self._fail(obs_id, one)
        if drain and report.compressed:
            self.store.drain_outbox()
        return report

    def _compress(self, ids: list[int]) -> int:
        rows = observations.claimed_rows(self.store.conn, ids, self.holder)
        results = {row["id"]: _compress_row(row) for row in rows}
        if self.llm is not None:
            self._refine(rows, results)
        saving = [row for row in rows if results[row["id"]].kind != "session" or results[row["id"]].facts]
        prepared = prepare_saves(self.store, [_working_memory(row, results[row["id"]]) for row in saving])
        now = self.store.now()
        with self.store.transaction() as tx:
            owned = observations.still_claimed(tx, ids, self.holder)
            plans = [p if row["id"] in owned else None for row, p in zip(saving, prepared)]
            for row, result in zip(saving, write_saves(tx, self.store, plans)):
                if result is not None and result.action == "duplicate":
                    _add_working_source(tx, result.id, row["id"])
            observations.mark_compressed(tx, [(obs_id, c) for obs_id, c in results.items() if obs_id in owned],
                                         self.holder, now)
        return len(owned & set(results))

    def _fail(self, obs_id: int, exc: BaseException) -> int:
        """Release a failed observation for a later attempt, or park it; returns 1 if parked."""
        now = self.store.now()
        with self.store.transaction() as tx:
            parked = observations.fail(tx, obs_id, self.holder, f"{type(exc).__name__}: {exc}", MAX_ATTEMPTS, now,
                                       backoff_seconds)
        return parked or 0

    def _refine(self, rows: list[Any], results: dict[int, CompressedObservation]) -> None:
        """With an LLM: better titles, facts and importance, a batch per call; the rules' result otherwise."""
        for start in range(0, len(rows), LLM_COMPRESS_BATCH):
            chunk = rows[start:start + LLM_COMPRESS_BATCH]
            ids = {row["id"] for row in chunk}
            prompt = "\n".join(json.dumps({
                "id": row["id"], "event": row["event"], "tool": row["tool"], "input": (row["input"] or "")[:400],
                "output": (row["output"] or "")[:600], "prompt": (row["prompt"] or "")[:400],
                "rules_title": results[row["id"]].title}, ensure_ascii=False) for row in chunk)

            def validate(answer: Any, ids: set[int] = ids) -> dict[int, tuple[str, list[str], float]]:
                found = {}
                for item in need(need(answer, dict, "the answer").get("observations"), list, "observations"):
                    item = need(item, dict, "an observation")
                    if item.get("id") not in ids:
                        raise ValueError("an observation id that was not asked about")
                    facts = [need_text(f, "a fact", 240) for f in need(item.get("facts", []), list, "facts")[:8]]
                    found[item["id"]] = (need_text(item.get("title"), "title", 120, 3), facts,
                                         need_unit(item.get("importance"), "importance"))
                if not found:
                    raise ValueError("no observation in the answer")
                return found

            answer = self.llm.ask_json("compress", COMPRESS_SYSTEM, prompt, validate, max_tokens=250 * len(chunk))
            for obs_id, (title, facts, importance) in (answer or {}).items():
                result = results[obs_id]
                result.title, result.facts, result.importance = title, facts, importance

    def retry_failed(self) -> int:
        """Give every parked observation a fresh set of attempts; returns how many."""
        with self.store.transaction() as tx:
            return observations.retry_failed(tx)

    # consolidation and upkeep --------------------------------------------------------------------

    def consolidate(self, *, every: float = 0.0) -> int:
        """Consolidate each project whose observations or summaries changed; returns memories written."""
        written = 0
        for project, mark in consolidate.dirty_projects(self.store.conn):
            if time.monotonic() - self._consolidated_at.get(project, -every) < every:
                continue
            self._consolidated_at[project] = time.monotonic()
            try:
                written += consolidate.consolidate_project(self.store, project)
                if self.llm is not None:
                    written += summarize.merge_summaries(self.store, project, self.llm)
                    written += summarize.reflect(self.store, project, self.llm)
            except Exception:  # one project's failure must not stop the others; it is tried again next pass
                log.exception("consolidating project %s failed", project)
                continue
            consolidate.set_mark(self.store, meta.consolidated(project), mark)
        return written

    def maintain(self, *, force: bool = False) -> int:
        """Prune old observations (hourly), run the forgetting sweep when due, embed what lacks vectors and
        flush the index outbox. Returns how many observations were pruned."""
        pruned = 0
        last = meta.get(self.store.conn, meta.LAST_PRUNE)
        now = self.store.now()
        if force or last is None or now - last >= PRUNE_EVERY_SECONDS:
            pruned = prune_observations(self.store, now=now)
            consolidate.set_mark(self.store, meta.LAST_PRUNE, now)
        since = meta.get(self.store.conn, meta.PRUNED_UNERASED)
        if since is not None and (force or now - since >= ERASE_PRUNED_EVERY_SECONDS):
            with self.store.transaction() as tx:
                meta.delete(tx, meta.PRUNED_UNERASED)
            self.store.erase_soon()
        if self.sweep:
            from ..lifecycle.sweep import maybe_sweep

            maybe_sweep(self.store)
        self.store.embed_pending()
        self.store.drain_outbox()
        return pruned


def _compress_row(row: Any) -> CompressedObservation:
    try:
        extra = json.loads(row["extra"] or "{}")
    except ValueError:
        extra = {}
    extra = {**(extra if isinstance(extra, dict) else {}), "cwd": row["session_cwd"]}
    return compress(row["event"], row["tool"], row["input"], row["output"], row["prompt"], extra)


def vector_text(result: CompressedObservation) -> str | None:
    """What of a working memory to embed, or None for no vector (policy: see VECTOR_CHARS): its title and the facts
    the title does not already say (a prompt's intent that is its first line, a command's "command: ..." are left
    out: they would cost the model their tokens again and add nothing to the vector)."""
    limit = VECTOR_CHARS_FAILED if result.is_error else VECTOR_CHARS.get(result.kind)
    if not limit:
        return None
    title = " ".join(result.title.casefold().split())
    return "\n".join([result.title, *(f for f in result.facts if not _told_by(title, f))])[:limit]


def _told_by(title: str, fact: str) -> bool:
    """Whether a fact, less its "label: ", says nothing the (case-folded) title does not."""
    label, sep, value = fact.partition(": ")
    text = value if sep and " " not in label else fact
    text = " ".join(text.casefold().split())
    return len(text) >= 8 and text in title


def _working_memory(row: Any, result: CompressedObservation) -> dict[str, Any]:
    files = list(dict.fromkeys([*result.files, *json.loads(row["files"] or "[]")]))[:50]
    content = "\n".join([result.title, *result.facts])[:WORKING_CONTENT_CHARS]
    return {"content": content, "title": result.title, "vector_text": vector_text(result),
            "tier": "working", "type": "context", "source": "hook", "project": row["project"],
            "session_id": row["session_id"], "files": files, "importance": result.importance,
            "source_ids": [f"obs:{row['id']}"], "created_at": row["created_at"]}


def _add_working_source(conn: Connection, memory_id: str, obs_id: int) -> None:
    """The same event text seen again: the existing working memory lists this observation too."""
    row = memory_reads.row_by_id(conn, memory_id, "tier, source_ids")
    if row is None or row["tier"] != "working":
        return
    sources = json.loads(row["source_ids"])
    if f"obs:{obs_id}" not in sources and len(sources) < MAX_WORKING_SOURCES:
        memories.set_sources(conn, [(memory_id, [*sources, f"obs:{obs_id}"])])


def prune_observations(store: Store, *, now: float | None = None, days: float = RETENTION_DAYS,
                       below: float = PRUNE_BELOW_IMPORTANCE) -> int:
    """Delete compressed observations older than `days` with importance under `below`, with their working
    memories, except those a summary or another derived memory names as a source."""
    from ..lifecycle.forget import delete_memories

    now = store.now() if now is None else now
    conn = store.conn
    cutoff = now - days * 86400
    old = observations.prunable(conn, cutoff, below)
    if not old:
        return 0
    kept = memory_reads.observations_named(conn)
    doomed = [i for i in old if f"obs:{i}" not in kept]
    gone = {f"obs:{i}" for i in doomed}
    delete, trim = [], []
    for start in range(0, len(doomed), 500):
        names = [f"obs:{i}" for i in doomed[start:start + 500]]
        for row in memory_reads.working_naming(conn, names):
            left = [s for s in json.loads(row["source_ids"]) if s not in gone]
            if left:
                trim.append((row["id"], left))
            else:
                delete.append(row)
    delete = list({row["id"]: row for row in delete}.values())
    if delete:
        delete_memories(store, delete, f"its observation was pruned (older than {days:g} days, low importance)",
                        now, action="prune")
    with store.transaction() as tx:
        if delete and meta.get(tx, meta.PRUNED_UNERASED) is None:
            meta.put(tx, meta.PRUNED_UNERASED, now)
        memories.set_sources(tx, trim)
        observations.delete(tx, doomed)
        meta.delete_summary_states_before(tx, cutoff)
    return len(doomed)


# -- running it -----------------------------------------------------------------------------------

def run_cli(args: Any) -> int:
    """`agentmem worker [--once | --forever] [--retry-failed]`."""
    from ..logs import setup_logging
    from ..store import Store

    store = Store.open(project=None, index_in_background=bool(getattr(args, "forever", False)))  # idle checkpoints
    setup_logging(store.settings)
    with store:
        worker = Worker(store, llm=LLM.from_store(store))
        if getattr(args, "retry_failed", False):
            print(f"reset {worker.retry_failed()} failed observations for another try")
        if getattr(args, "forever", False):
            return _forever(store, worker)
        print(worker.run_until_idle().text())
    return 0


def _forever(store: Store, worker: Worker) -> int:
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    keeper = lease.LeaseKeeper(lambda: store.conn, worker.holder).start()
    idle = lease.IDLE_SLEEP[0]
    try:
        while not stop.is_set():
            if keeper.held.wait(timeout=1.0) and not stop.is_set():
                report = worker.run_pass(should_stop=lambda: stop.is_set() or not keeper.held.is_set())
                if report.busy:
                    print(report.text(), flush=True)
                idle = lease.IDLE_SLEEP[0] if report.busy else min(idle * 2, lease.IDLE_SLEEP[1])
                stop.wait(idle if not report.busy else 0)
    finally:
        keeper.stop()
    return 0
