"""What every fault scenario of faults.py shares: a run's home and ledger of what was acknowledged, the wait for a
server paused at a pause point, the restart that must recover, and the checks every scenario ends with."""

from __future__ import annotations

import json
import random
import sqlite3
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from harness import base_env
from live_processes import kill9, processes_of
from processes import (
    Serve,
    ToolFailure,
    final_checks,
    hook_output_problem,
    make_project,
    memory_content,
    network_listeners,
    post_tool_use,
    run_hook,
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
    from agentmem_mcp.upkeep.maintenance import doctor

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
