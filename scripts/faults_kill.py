"""The fault scenarios that kill a process: serve killed -9 inside a save, between an index write and its commit,
inside its worker's batch; a lease left by a dead process; the shared process killed inside a relayed save."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time

import anyio
from fault_run import (
    HANG,
    Run,
    check_ledger,
    close_dead,
    expect,
    ids,
    killed_call,
    observation_state,
    offline_checks,
    recover,
    save_kept,
    wait_for,
    wait_gone,
    worker_recovers,
)
from live_processes import kill9, shared_pids
from processes import memory_content


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
