"""Fault injection: real `agentmem serve` processes (over MCP stdio), real hooks, a real home on disk.

    python scripts/faults.py [--only NAME ...] [--observations 500] [--model-path PATH] [--json OUT]

Each scenario gets a fresh home seeded with memories, one of them forgotten, then suffers its fault:

  kill9-save          serve killed -9 inside a memory_save's write transaction (pause point audit:save)
  kill9-index-commit  serve killed -9 with tantivy documents written but not committed (index-commit), after
                      a save and a forget were acknowledged
  kill9-worker-batch  serve killed -9 inside its worker's batch transaction, with hook observations claimed
  stale-lease         a worker lease and claimed observations left by a process that no longer exists
  index-deleted       the tantivy directory deleted under a running server, then a restart
  segment-corrupted   bytes overwritten in the middle of every tantivy segment file, then a restart
  term-dict-corrupted bytes inverted in the term dictionaries only: not noticed at open, found by a search
  disk-full           the home on a small tmpfs filled up: saves, searches and hooks while full, then space back
  db-locked           another process holds SQLite's write lock for 10 s: search, save and a hook meanwhile
  kill9-shared-save   the user's shared process, which serves the relayed session, killed -9 inside a save: the
                      pending call fails clearly, the session goes on in its own process, the next session recovers

The first nine run `serve` as the session's own server (AGENTMEM_SHARED_SERVER=0), so the process killed at a pause
point is the one the client started; the last runs the default, a relay to the user's shared process (relay.py).

and is then checked: the agent got a clear error or an answer, never a hang; the next server start recovers
(recovery time: its spawn to the first search that finds every kept memory); every acknowledged memory is
still there and found, no forgotten one comes back (SQLite, tantivy, search, memory_get); the outbox is
drained, `agentmem doctor` passes, `agentmem audit --verify` passes, files are 0600 and directories 0700,
and no process of the run listens on a socket. Kills use pause points (agentmem_mcp/pausepoint.py): the
process sleeps at a named place and the script kills it there. Exits 1 when a scenario fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from harness import MODEL_NAME, base_env, default_model, describe_machine, utc_now
from processes import (
    Serve,
    ToolFailure,
    final_checks,
    hook_output_problem,
    kill9,
    make_project,
    memory_content,
    network_listeners,
    post_tool_use,
    processes_of,
    run_hook,
    shared_pids,
)

from agentmem_mcp.config import load_settings
from agentmem_mcp.index.embedder import Embedder
from agentmem_mcp.store import Store

HANG = 30.0  # an answer slower than this counts as a hang
HOLD_LOCK = textwrap.dedent("""
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    conn.execute("ROLLBACK")
""")


class Failed(Exception):
    """A check of a scenario did not hold."""


def expect(condition: Any, message: str) -> None:
    if not condition:
        raise Failed(message)


@dataclass
class Ledger:
    """What the agent was told: memories it saved (and must keep) and memories it forgot (must stay gone)."""
    kept: dict[str, str] = field(default_factory=dict)
    forgotten: dict[str, str] = field(default_factory=dict)

    def forget(self, memory_id: str) -> None:
        self.forgotten[memory_id] = self.kept.pop(memory_id)


@dataclass
class Run:
    """One scenario's world: a home, a project, the environment of its processes, what it checked."""
    name: str
    root: Path
    model_path: Path
    embedder: Embedder
    home: Path = field(init=False)
    project: Path = field(init=False)
    ledger: Ledger = field(default_factory=Ledger)
    checked: list[str] = field(default_factory=list)
    listeners: list[str] = field(default_factory=list)
    recovery_s: float | None = None

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.project = make_project(self.root / "webapp")

    def env(self, **extra: str) -> dict[str, str]:
        return base_env(self.home, self.model_path, **extra)

    def note(self, text: str) -> None:
        self.checked.append(text)

    def serve(self, relay: bool = False, **extra: str) -> Serve:
        """`agentmem serve`: its own server, or with `relay` the default relay to the user's shared process."""
        if not relay:
            extra.setdefault("AGENTMEM_SHARED_SERVER", "0")
        return Serve(self.env(**extra), self.project, self.root / "serve-stderr.log")

    def paused_serve(self, point: str, relay: bool = False) -> tuple[Serve, Path]:
        marker = self.root / f"paused-{point.replace(':', '-')}"
        marker.unlink(missing_ok=True)
        return self.serve(relay, AGENTMEM_TEST_PAUSE_AT=point, AGENTMEM_TEST_PAUSE_FILE=str(marker)), marker

    def store(self) -> Store:
        settings = load_settings(env={}, home=self.home, embed_model_path=self.model_path)
        return Store.open(settings, project=str(self.project), embedder=self.embedder)

    def seed(self, count: int = 5) -> None:
        """Memories the agent saved, and one it forgot, written through the library before the fault."""
        rng = random.Random(self.name)
        with self.store() as store:
            for n in range(count + 1):
                content = memory_content(rng, n)
                self.ledger.kept[store.save(content, type="decision").id] = content
            gone = next(iter(self.ledger.kept))
            store.forget(ids=[gone], reason="fault test")
        self.ledger.forget(gone)

    def hooks(self, count: int, session: str) -> None:
        """`count` PostToolUse events through the real hook command; every run must be clean."""
        env = self.env()
        for i in range(count):
            code, out, err, _ = run_hook(env, "PostToolUse", post_tool_use(session, self.project, f"s9n{i:05d}", i),
                                         self.project)
            problem = hook_output_problem("PostToolUse", code, out, err)
            expect(problem is None, f"hook {i}: {problem}")

    def db(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.home / "agentmem.db", timeout=30)
        conn.row_factory = sqlite3.Row
        return conn

    def sample_listeners(self) -> None:
        self.listeners.extend(network_listeners(processes_of(self.home), self.home))


def ids(found: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in found["hits"]]


async def wait_for(marker: Path, timeout: float = 60) -> int:
    """The pid a paused process wrote to its pause file."""
    with anyio.fail_after(timeout):
        while not marker.exists() or not marker.read_text():
            await anyio.sleep(0.02)
    return int(marker.read_text())


async def check_ledger(run: Run, serve: Serve) -> None:
    """Every kept memory answers memory_get and is found by search; no forgotten one does or is."""
    for memory_id, content in run.ledger.kept.items():
        try:
            await serve.call("memory_get", {"id": memory_id})
        except ToolFailure as exc:
            raise Failed(f"kept memory {memory_id} is lost: {exc}") from None
        found = await serve.call("memory_search", {"query": content, "limit": 5})
        expect(memory_id in ids(found), f"kept memory {memory_id} is not found by search ({found['mode']})")
    for memory_id, content in run.ledger.forgotten.items():
        try:
            await serve.call("memory_get", {"id": memory_id})
        except ToolFailure:
            pass
        else:
            raise Failed(f"forgotten memory {memory_id} came back")
        found = await serve.call("memory_search", {"query": content, "limit": 10,
                                                   "include_history": True})
        expect(memory_id not in ids(found), f"forgotten memory {memory_id} came back in search")


async def save_kept(run: Run, serve: Serve, seed: int) -> tuple[dict[str, Any], str]:
    """Save one more memory through the server and add it to the ledger of what must survive."""
    content = memory_content(random.Random(seed), seed * 100)
    saved = await serve.call("memory_save", {"content": content}, timeout=HANG)
    run.ledger.kept[saved["id"]] = content
    return saved, content


async def recover(run: Run, relay: bool = False, **extra: str) -> Serve:
    """Start a server after the fault and time it until a search finds every kept memory."""
    started = time.monotonic()
    serve = run.serve(relay, **extra)
    await serve.__aenter__()
    deadline = started + 120
    while True:
        try:
            await check_ledger(run, serve)
            break
        except Exception:
            if time.monotonic() > deadline:
                await close_dead(serve)
                raise
            await anyio.sleep(0.2)
    run.recovery_s = round(time.monotonic() - started, 2)
    run.sample_listeners()
    return serve


def wait_gone(run: Run, timeout: float = 15) -> None:
    """Until no process of the run is left (the shared process leaves a few seconds after its last client)."""
    deadline = time.monotonic() + timeout
    while processes_of(run.home) and time.monotonic() < deadline:
        time.sleep(0.2)
    expect(not processes_of(run.home), "a process of the run is still alive")


def offline_checks(run: Run) -> None:
    """With every process gone: SQLite and tantivy agree with the ledger; audit, doctor and file modes."""
    from agentmem_mcp.index.fulltext import FulltextIndex

    wait_gone(run)
    with run.db() as conn:
        present = {r[0] for r in conn.execute("SELECT id FROM memories")}
        chunks = {r[0] for r in conn.execute("SELECT DISTINCT memory_id FROM memory_chunks")}
        outbox = conn.execute("SELECT COUNT(*) FROM index_outbox").fetchone()[0]
    conn.close()
    indexed = FulltextIndex(run.home / "fulltext").ids()
    kept, gone = set(run.ledger.kept), set(run.ledger.forgotten)
    expect(kept <= present, f"kept memories missing from SQLite: {sorted(kept - present)}")
    expect(kept <= indexed, f"kept memories missing from BM25: {sorted(kept - indexed)}")
    expect(not gone & (present | chunks | indexed), f"forgotten memories still stored: {sorted(gone & present)}")
    expect(outbox == 0, f"{outbox} index changes still queued")
    from agentmem_mcp.maintenance import doctor

    with run.store() as store:  # the doctor in-process, with the model already loaded: seconds saved per scenario
        checks = doctor(store)
    final = final_checks(run.env(), run.home, run.project, doctor=checks)
    expect(final["audit_ok"], f"audit chain: {final['audit']}")
    expect(not final["doctor_failures"], f"doctor: {final['doctor_failures']}")
    expect(not final["mode_problems"], f"file modes: {final['mode_problems'][:3]}")
    expect(not run.listeners, f"network listeners: {run.listeners[:3]}")
    run.note(f"after recovery: {len(kept)} kept memories in SQLite, BM25 and search; {len(gone)} forgotten "
             f"stay gone; outbox empty; {final['audit']}; doctor ok; files 0600/dirs 0700; no listener")


async def killed_call(serve: Serve, tool: str, arguments: dict[str, Any], marker: Path,
                      serving: int | None = None) -> tuple[float, str]:
    """Call `tool` on a server that pauses at a pause point, kill -9 the process serving the session there (the
    server, or `serving`: the shared process behind a relay), and return how long the agent's pending call took to
    fail and with what (a call that never fails is a hang)."""
    outcome: dict[str, Any] = {}

    async def calling() -> None:
        try:
            outcome["answer"] = await serve.call(tool, arguments, timeout=HANG)
        except Exception as exc:  # what the agent's client reports
            outcome["error"] = f"{type(exc).__name__}: {exc}"
        outcome["at"] = time.monotonic()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(calling)
        pid = await wait_for(marker)
        expect(pid == (serving or serve.pid), f"the paused process {pid} is not the server {serving or serve.pid}")
        killed_at = time.monotonic()
        kill9(pid)
    expect("error" in outcome, f"{tool} answered although the server was killed: {outcome}")
    expect("TimeoutError" not in outcome["error"], f"{tool} hung after the server was killed")
    return outcome["at"] - killed_at, outcome["error"]


async def close_dead(serve: Serve) -> None:
    """Close the client of a killed server (the SDK's shutdown is bounded by itself)."""
    await serve.__aexit__(None, None, None)


# -- the scenarios -------------------------------------------------------------------------------------------

async def kill9_save(run: Run) -> None:
    run.seed()
    serve, marker = run.paused_serve("audit:save")
    await serve.__aenter__()
    content = memory_content(random.Random(7), 700)
    waited, error = await killed_call(serve, "memory_save", {"content": content}, marker)
    await close_dead(serve)
    run.note(f"memory_save pending at kill -9: the client got '{error[:80]}' {waited:.2f} s after the kill")
    serve = await recover(run)
    try:
        found = await serve.call("memory_search", {"query": content, "limit": 3})
        half = [h["id"] for h in found["hits"] if h["id"] not in run.ledger.kept]
        expect(not half, f"the unacknowledged save is half there: {half}")
        with run.db() as conn:
            leftovers = conn.execute("SELECT COUNT(*) FROM memories WHERE content = ?", (content,)).fetchone()[0]
        expect(leftovers == 0, "the killed transaction left a row behind")
        run.note("the killed save left nothing (rolled back); a retry is an ordinary save")
        again = await serve.call("memory_save", {"content": content})
        expect(again["action"] == "created", f"retried save: {again}")
        run.ledger.kept[again["id"]] = content
        await check_ledger(run, serve)
    finally:
        await serve.__aexit__(None, None, None)
    offline_checks(run)


async def kill9_index_commit(run: Run) -> None:
    run.seed()
    serve, marker = run.paused_serve("index-commit")
    await serve.__aenter__()
    await save_kept(run, serve, 8)
    victim = next(iter(run.ledger.kept))
    gone = await serve.call("memory_forget", {"ids": [victim], "reason": "fault test"}, timeout=HANG)
    expect(victim in gone["ids"], f"forget did not forget: {gone}")
    run.ledger.forget(victim)
    pid = await wait_for(marker)
    expect(pid == serve.pid, "the index commit paused in another process")
    with run.db() as conn:
        queued = conn.execute("SELECT COUNT(*) FROM index_outbox").fetchone()[0]
    kill9(pid)
    await close_dead(serve)
    run.note(f"save and forget acknowledged, serve killed -9 inside the tantivy commit with {queued} index "
             "changes queued in the outbox")
    serve = await recover(run)
    await serve.__aexit__(None, None, None)
    offline_checks(run)


def observation_state(run: Run) -> dict[str, int]:
    with run.db() as conn:
        rows = dict(conn.execute("SELECT status, COUNT(*) FROM observations GROUP BY status").fetchall())
        rows["claimed"] = conn.execute("SELECT COUNT(*) FROM observations WHERE status = 'pending' AND "
                                       "claimed_by IS NOT NULL").fetchone()[0]
    return rows


def working_sources(run: Run) -> list[str]:
    with run.db() as conn:
        return [s for (ids_json,) in conn.execute("SELECT source_ids FROM memories WHERE tier = 'working'")
                for s in json.loads(ids_json) if s.startswith("obs:")]


async def worker_recovers(run: Run, count: int) -> None:
    """A fresh server's worker takes the batch over and compresses every observation exactly once."""
    started = time.monotonic()
    serve = await recover(run)
    try:
        with anyio.fail_after(120):
            while observation_state(run).get("compressed", 0) < count:
                await anyio.sleep(0.2)
        took = time.monotonic() - started
        await check_ledger(run, serve)
    finally:
        await serve.__aexit__(None, None, None)
    sources = working_sources(run)
    expect(len(sources) == len(set(sources)) == count, f"{len(sources)} working-memory sources for {count} "
           f"observations ({len(sources) - len(set(sources))} twice)")
    state = observation_state(run)
    expect(state == {"compressed": count, "claimed": 0}, f"observations: {state}")
    run.recovery_s = round(took, 2)
    run.note(f"the next server's worker took over at once and compressed all {count} observations exactly once "
             f"in {took:.1f} s")
    offline_checks(run)


async def kill9_worker_batch(run: Run, observations: int) -> None:
    run.seed()
    run.hooks(observations, "fault-worker")
    serve, marker = run.paused_serve("audit:save")
    await serve.__aenter__()
    pid = await wait_for(marker)
    expect(pid == serve.pid, "the worker batch paused in another process")
    kill9(pid)
    await close_dead(serve)
    state = observation_state(run)
    expect(state.get("claimed") and not state.get("compressed"), f"not killed mid-batch: {state}")
    run.note(f"{observations} hook observations; serve killed -9 inside its worker's batch transaction with "
             f"{state['claimed']} observations claimed")
    await worker_recovers(run, observations)


async def stale_lease(run: Run, observations: int) -> None:
    run.seed()
    run.hooks(observations, "fault-lease")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    holder = f"{socket.gethostname()}:{dead.stdout.strip()}:deadbeef"
    with run.db() as conn:
        conn.execute("INSERT INTO leases (name, holder, expires_at) VALUES ('worker', ?, ?) ON CONFLICT (name) DO "
                     "UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at",
                     (holder, time.time() + 3600))
        conn.execute("UPDATE observations SET claimed_by = ?, claimed_until = ?, attempts = 1",
                     (holder, time.time() + 600))
    run.note(f"lease held for another hour by dead process {holder}, which also claimed all {observations} "
             "observations")
    await worker_recovers(run, observations)


async def index_deleted(run: Run) -> None:
    run.seed()
    serve = run.serve()
    await serve.__aenter__()
    try:
        await serve.wait_hybrid()
        shutil.rmtree(run.home / "fulltext")
        run.note("tantivy directory deleted under a running server")
        await check_ledger(run, serve)
        saved, content = await save_kept(run, serve, 9)
        found = await serve.call("memory_search", {"query": content, "limit": 3})
        expect(saved["id"] in ids(found), "a save after the deletion is not found")
        run.note("meanwhile search still answered and a new save was acknowledged and found")
    finally:
        await serve.__aexit__(None, None, None)
    serve = await recover(run)
    await serve.__aexit__(None, None, None)
    run.note("the next start rebuilt BM25 from SQLite")
    offline_checks(run)


async def segment_corrupted(run: Run) -> None:
    run.seed()
    damaged = 0
    for file in (run.home / "fulltext").iterdir():
        if file.suffix in (".idx", ".term", ".store", ".pos", ".fieldnorm", ".fast") and file.stat().st_size > 8:
            data = bytearray(file.read_bytes())
            middle = len(data) // 2
            data[middle:middle + 64] = os.urandom(min(64, len(data) - middle))
            file.write_bytes(bytes(data))
            damaged += 1
    expect(damaged, "no segment file to damage")
    run.note(f"random bytes written into the middle of {damaged} tantivy segment files")
    serve = await recover(run)
    await serve.__aexit__(None, None, None)
    offline_checks(run)


async def term_dict_corrupted(run: Run) -> None:
    run.seed()
    damaged = 0
    for file in (run.home / "fulltext").iterdir():
        if file.suffix == ".term":
            data = bytearray(file.read_bytes())
            middle = len(data) // 2
            data[middle:middle + 16] = bytes(b ^ 0xFF for b in data[middle:middle + 16])
            file.write_bytes(bytes(data))
            damaged += 1
    expect(damaged, "no term dictionary to damage")
    run.note(f"16 bytes inverted in the middle of {damaged} term dictionaries (tantivy opens them without "
             "complaint and panics at query time)")
    serve = await recover(run)
    try:
        with anyio.fail_after(60):
            while True:
                found = await serve.call("memory_search", {"query": next(iter(run.ledger.kept.values()))})
                if not any("bm25" in note for note in found["notes"]):
                    break
                await anyio.sleep(0.2)
    finally:
        await serve.__aexit__(None, None, None)
    run.note("the first failing BM25 search rebuilt the index from SQLite; later searches use BM25 again")
    offline_checks(run)


def mount_small_fs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
                          capture_output=True, text=True, check=False)
    return done.returncode == 0


def fill(path: Path) -> Path:
    """Fill the file system holding `path` until it refuses another byte."""
    filler = path / "filler"
    with open(filler, "wb", buffering=0) as out:
        for block in (1 << 20, 65536, 512):
            try:
                while out.write(b"\0" * block):
                    pass
            except OSError:
                pass
    return filler


async def disk_full(run: Run) -> str | None:
    mount = run.root / "small-fs"
    if not mount_small_fs(mount, "24m"):
        return "cannot mount a size-limited tmpfs here (needs root); scenario not run"
    try:
        run.home = mount / "home"
        run.seed()
        serve = run.serve()
        await serve.__aenter__()
        try:
            await serve.wait_hybrid()
            filler = fill(mount)
            run.note(f"home on a 24 MB tmpfs, filled up ({filler.stat().st_size // 1024} KB of filler)")
            errors = []
            for n in range(40):  # a WAL with free pages may take a few small saves before the disk refuses
                content = memory_content(random.Random(n), 1000 + n) + " " + "padding words " * 400
                started = time.monotonic()
                try:
                    saved = await serve.call("memory_save", {"content": content}, timeout=HANG)
                    run.ledger.kept[saved["id"]] = content
                except ToolFailure as exc:
                    errors.append((time.monotonic() - started, str(exc)))
                    break
            expect(errors, "no save failed on a full disk")
            took, message = errors[0]
            expect(any(w in message.lower() for w in ("disk", "space", "full")),
                   f"the error does not say the disk is full: {message}")
            run.note(f"memory_save on the full disk: a tool error in {took:.2f} s: '{message[:140]}'")
            started = time.monotonic()
            found = await serve.call("memory_search", {"query": next(iter(run.ledger.kept.values()))}, timeout=HANG)
            run.note(f"memory_search on the full disk answered in {time.monotonic() - started:.2f} s "
                     f"({len(found['hits'])} hits)")
            started = time.monotonic()
            code, out, err, _ = run_hook(run.env(), "PostToolUse", post_tool_use("full", run.project, "s8n00001", 1),
                                         run.project)
            problem = hook_output_problem("PostToolUse", code, out, err)
            expect(problem is None, f"hook on the full disk: {problem}")
            told = json.loads(out).get("systemMessage", "") if out.strip() else ""
            expect("is full" in told, f"the hook on the full disk did not tell the user: {out[:200]!r}")
            run.note(f"a hook on the full disk exited 0 in {time.monotonic() - started:.2f} s and told the user "
                     "(its event is dropped: there is no room to keep it; doctor counts it)")
            filler.unlink()
            await save_kept(run, serve, 77)
            await check_ledger(run, serve)
            run.note("space back: the same server saved again and found every memory")
        finally:
            await serve.__aexit__(None, None, None)
        serve = await recover(run)
        await serve.__aexit__(None, None, None)
        offline_checks(run)
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)
    return None


async def db_locked(run: Run) -> None:
    run.seed()
    serve = run.serve()
    await serve.__aenter__()
    holder = None
    try:
        await serve.wait_hybrid()
        holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(run.home / "agentmem.db"), "10"],
                                  stdout=subprocess.PIPE, text=True)
        expect(holder.stdout.readline().strip() == "locked", "the lock holder did not start")
        locked_at = time.monotonic()
        run.note("another process holds SQLite's write lock (BEGIN IMMEDIATE) for 10 s")
        query = next(iter(run.ledger.kept.values()))
        started = time.monotonic()
        found = await serve.call("memory_search", {"query": query}, timeout=HANG)
        took = time.monotonic() - started
        expect(took < 2.0, f"memory_search waited {took:.1f} s for the lock")
        run.note(f"memory_search answered in {took:.2f} s while locked ({len(found['hits'])} hits)")
        outcomes: dict[str, Any] = {}

        async def save() -> None:
            content = memory_content(random.Random(11), 1100)
            started = time.monotonic()
            try:
                saved = await serve.call("memory_save", {"content": content}, timeout=HANG)
                run.ledger.kept[saved["id"]] = content
                outcomes["save"] = f"saved after {time.monotonic() - started:.1f} s"
            except ToolFailure as exc:
                outcomes["save"] = f"tool error after {time.monotonic() - started:.1f} s: '{str(exc)[:120]}'"
                expect("locked" in str(exc), f"unclear error: {exc}")

        def hook() -> None:
            code, out, err, ms = run_hook(run.env(), "PostToolUse", post_tool_use("locked", run.project, "s7n00001",
                                                                                  1), run.project)
            outcomes["hook"] = (ms, hook_output_problem("PostToolUse", code, out, err))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(save)
            tasks.start_soon(anyio.to_thread.run_sync, hook)
        expect(time.monotonic() - locked_at < 20, "the save or the hook was not bounded by the busy timeout")
        run.note(f"memory_save during the lock: {outcomes['save']}")
        ms, problem = outcomes["hook"]
        expect(problem is None, f"the hook during the lock: {problem}")
        expect(ms < 10_000, f"the hook took {ms / 1000:.1f} s: Claude Code would have killed it at 10 s")
        with run.db() as conn:
            stored = conn.execute("SELECT COUNT(*) FROM observations WHERE session_id = 'locked'").fetchone()[0]
        spool = run.home / "spool"  # a worker pass may hold it claimed (renamed) while it waits for the lock
        spooled = sum(n.endswith(".json") or ".json.draining-" in n for n in os.listdir(spool)) if spool.is_dir() else 0
        expect(stored + spooled == 1, f"the hook's event is neither stored nor spooled ({stored}, {spooled}; spool: "
               f"{sorted(os.listdir(spool)) if spool.is_dir() else 'none'})")
        run.note(f"a hook during the lock exited 0 silently in {ms / 1000:.1f} s; its event was "
                 f"{'stored' if stored else 'spooled (scrubbed, 0600) for later'}")
        holder.wait(timeout=30)
        code, out, err, ms = run_hook(run.env(), "PostToolUse", post_tool_use("locked", run.project, "s7n00002", 2),
                                      run.project)
        expect(hook_output_problem("PostToolUse", code, out, err) is None, "the hook after the lock failed")
        # the next hook moves the spooled event, unless a worker pass holds it claimed just then (its write can
        # fail once more as the lock goes, and it puts the file back): then the next pass moves it
        waited = time.monotonic()
        while True:
            with run.db() as conn:
                stored = conn.execute("SELECT COUNT(*) FROM observations WHERE session_id = 'locked'").fetchone()[0]
            left = sorted(os.listdir(spool)) if spool.is_dir() else []
            if (stored == 2 and not left) or time.monotonic() - waited > 20:
                break
            await anyio.sleep(0.2)
        expect(stored == 2 and not left,
               f"after the lock the next hook left {stored} of 2 events stored and the spool not empty ({left})")
        took = time.monotonic() - waited
        run.note("after the lock: 2 of 2 events stored and the spool empty, "
                 + ("at once (the next hook stored its event and moved the spooled one)" if took < 0.1 else
                    f"{took:.1f} s after the next hook (a worker pass moved the spooled one)"))
        await save_kept(run, serve, 12)
        await check_ledger(run, serve)
        run.note("after the lock: saves work and every memory is found")
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
        await serve.__aexit__(None, None, None)
    serve = await recover(run)
    await serve.__aexit__(None, None, None)
    offline_checks(run)


async def kill9_shared_save(run: Run) -> None:
    run.seed()
    serve, marker = run.paused_serve("audit:save", relay=True)
    await serve.__aenter__()
    try:
        shared = shared_pids(run.home)
        expect(len(shared) == 1 and serve.pid not in shared, f"not one shared process behind the relay: {shared}")
        content = memory_content(random.Random(13), 1300)
        waited, error = await killed_call(serve, "memory_save", {"content": content}, marker, serving=shared[0])
        expect("shared process stopped" in error, f"unclear error for the agent: {error}")
        run.note(f"memory_save pending when the shared process was killed -9: the client got '{error[:90]}' "
                 f"{waited:.2f} s after the kill")
        found = await serve.call("memory_search", {"query": content, "limit": 3}, timeout=HANG)
        expect(not [h for h in ids(found) if h not in run.ledger.kept], "the unacknowledged save is half there")
        await check_ledger(run, serve)
        run.note("the same session went on in its own process: every kept memory found, the killed save absent")
    finally:
        await serve.__aexit__(None, None, None)
    # the session's own server started a shared process for its model, with this session's environment (the pause
    # point too): it leaves seconds after its last client, and the next session must not find it
    await anyio.to_thread.run_sync(wait_gone, run)
    serve = await recover(run, relay=True)
    try:
        expect(len(shared_pids(run.home)) == 1, "the next session is not served by a new shared process")
        await save_kept(run, serve, 14)
        await check_ledger(run, serve)
        run.note("the next session started a new shared process; a save through it is kept and found")
    finally:
        await serve.__aexit__(None, None, None)
    offline_checks(run)


SCENARIOS: dict[str, Callable[..., Awaitable[str | None]]] = {
    "kill9-save": kill9_save,
    "kill9-index-commit": kill9_index_commit,
    "kill9-worker-batch": kill9_worker_batch,
    "stale-lease": stale_lease,
    "index-deleted": index_deleted,
    "segment-corrupted": segment_corrupted,
    "term-dict-corrupted": term_dict_corrupted,
    "disk-full": disk_full,
    "db-locked": db_locked,
    "kill9-shared-save": kill9_shared_save,
}


def run_scenario(name: str, root: Path, model_path: Path, embedder: Embedder, observations: int) -> dict[str, Any]:
    run = Run(name, root / name, model_path, embedder)
    started = time.monotonic()
    scenario = SCENARIOS[name]
    needs_count = name in ("kill9-worker-batch", "stale-lease")
    try:
        skipped = anyio.run(scenario, run, observations) if needs_count else anyio.run(scenario, run)
        status, error = ("SKIP", skipped) if skipped else ("PASS", None)
    except Exception as exc:
        status, error = "FAIL", f"{type(exc).__name__}: {exc}"
        if os.environ.get("FAULTS_TRACEBACK"):
            import traceback

            traceback.print_exc()
    finally:
        for pid in processes_of(run.home):
            kill9(pid)
    return {"scenario": name, "status": status, "error": error, "checked": run.checked,
            "recovery_s": run.recovery_s, "seconds": round(time.monotonic() - started, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=list(SCENARIOS), help="run only these scenarios")
    parser.add_argument("--observations", type=int, default=500,
                        help="hook events recorded before the worker scenarios")
    parser.add_argument("--model-path", type=Path,
                        default=default_model())
    parser.add_argument("--keep", action="store_true", help="keep the scenario homes")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    model_path = args.model_path.resolve()
    if not model_path.exists():
        raise SystemExit(f"no embedding model at {model_path}: pass --model-path")
    embedder = Embedder(MODEL_NAME, model_path)
    if not embedder.load():
        raise SystemExit(f"cannot load the embedding model: {embedder.error}")
    root = Path(tempfile.mkdtemp(prefix="agentmem-faults-"))
    report: dict[str, Any] = {
        "date": utc_now(), "machine": describe_machine(),
        "command": "python scripts/faults.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "scenarios": []}
    for name in args.only or SCENARIOS:
        result = run_scenario(name, root, model_path, embedder, args.observations)
        report["scenarios"].append(result)
        recovery = f", recovered in {result['recovery_s']} s" if result["recovery_s"] is not None else ""
        print(f"{result['status']} {name} ({result['seconds']} s{recovery})", file=sys.stderr)
        for line in result["checked"]:
            print(f"     - {line}", file=sys.stderr)
        if result["error"]:
            print(f"     ! {result['error']}", file=sys.stderr)
    report["ok"] = all(r["status"] != "FAIL" for r in report["scenarios"])
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    if report["ok"] and not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"homes kept in {root}", file=sys.stderr)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
