"""The fault scenarios that damage storage: the tantivy index deleted, its segments or term dictionaries corrupted,
the disk full, SQLite's write lock held by another process."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from fault_run import (
    HANG,
    HOLD_LOCK,
    Run,
    check_ledger,
    expect,
    ids,
    offline_checks,
    recover,
    save_kept,
)
from processes import (
    ToolFailure,
    hook_output_problem,
    memory_content,
    post_tool_use,
    run_hook,
)


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
