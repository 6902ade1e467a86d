"""Load test: concurrent hook processes while `agentmem serve` processes save and search and the worker runs.

    python scripts/stress.py [--events 10000] [--hook-procs 8] [--servers 2] [--home DIR] [--model-path PATH]
                             [--no-cli-worker] [--json OUT]

- `--hook-procs` streams, each one Claude Code session in one of two projects, run the real hook command as
  Claude Code's plugin does (`sh hooks/run-hook.sh claude-code EVENT`, the event JSON on stdin), one process
  per event, back to back: SessionStart, then its share of `--events` PostToolUse events (Bash, Read, Edit
  and Grep calls, each with a unique marker in its input), then Stop.
- Meanwhile `--servers` `agentmem serve` processes, driven through the MCP SDK's stdio client, alternate
  memory_save (distinct memories) and memory_search; the worker runs inside whichever server holds the
  lease, with `agentmem worker --forever` competing for it (unless --no-cli-worker).
- Then the worker drains the backlog, the servers stop, and the database is read: every event stored exactly
  once, compressed exactly once, every save present and found by BM25 and by vector search, no hook that
  exited non-zero, wrote to stderr or printed anything but valid hook output, no tool error, no network
  listener, private file modes, the audit chain and `agentmem doctor`. Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from harness import agentmem_bin, base_env, default_model, describe_machine, latency, utc_now
from live_processes import processes_of
from processes import (
    Serve,
    final_checks,
    hook_output_problem,
    make_project,
    memory_content,
    network_listeners,
    post_tool_use,
    run_hook,
    word,
)

MARKER = re.compile(r"s\d+n\d{5}")
CLAUDE_HOOK_TIMEOUT_MS = 10_000
QUERIES = ("how do we route traffic", "timing out", "decision about the gateway", "pytest failures",
           "which module handles", "edit of the handler", "grep for the marker")


@dataclass
class Tally:
    """What the agent side saw; appended to from several threads (list.append is atomic)."""
    hook_ms: list[float] = field(default_factory=list)
    hook_problems: list[str] = field(default_factory=list)
    slow_hooks: list[float] = field(default_factory=list)
    markers: list[str] = field(default_factory=list)
    save_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)
    saves: list[tuple[str, str, str]] = field(default_factory=list)  # id, action, content
    tool_errors: list[str] = field(default_factory=list)
    listeners: list[str] = field(default_factory=list)


def hook_stream(k: int, count: int, cwd: Path, env: dict[str, str], tally: Tally) -> None:
    session = f"stress-{k}-{os.getpid()}"

    def fire(event: str, payload: dict[str, Any]) -> None:
        code, out, err, ms = run_hook(env, event, payload, cwd)
        if event == "PostToolUse":
            tally.hook_ms.append(ms)
        if ms > CLAUDE_HOOK_TIMEOUT_MS:
            tally.slow_hooks.append(ms)
        problem = hook_output_problem(event, code, out, err)
        if problem:
            tally.hook_problems.append(f"{event} in {session}: {problem}")

    fire("SessionStart", {"session_id": session, "cwd": str(cwd), "hook_event_name": "SessionStart",
                          "source": "startup"})
    for i in range(count):
        marker = f"s{k}n{i:05d}"
        tally.markers.append(marker)
        fire("PostToolUse", post_tool_use(session, cwd, marker, i))
    fire("Stop", {"session_id": session, "cwd": str(cwd), "hook_event_name": "Stop", "stop_hook_active": False})


async def agent_loop(serve: Serve, n: int, pause: float, hooks_done: threading.Event, tally: Tally) -> None:
    """One agent session: save, search, a pause, save, search, ... until the hooks are done."""
    rng = random.Random(n)
    count = 0
    while not hooks_done.is_set():
        content = memory_content(rng, n * 100000 + count)
        count += 1
        for tool, arguments, times in (("memory_save", {"content": content, "type": "decision"}, tally.save_ms),
                                       ("memory_search", {"query": f"{rng.choice(QUERIES)} {word(rng)}"},
                                        tally.search_ms)):
            started = time.perf_counter()
            try:
                answer = await serve.call(tool, arguments, timeout=60)
            except Exception as exc:  # a tool error, a timeout, a lost connection: all count
                tally.tool_errors.append(f"{tool}: {type(exc).__name__}: {str(exc)[:300]}")
                continue
            times.append((time.perf_counter() - started) * 1000)
            if tool == "memory_save":
                tally.saves.append((answer["id"], answer["action"], content))
        await anyio.sleep(pause)


def sample_listeners(home: Path, stop: threading.Event, tally: Tally) -> None:
    while not stop.wait(1.0):
        tally.listeners.extend(network_listeners(processes_of(home), home))


def backlog(db: Path) -> dict[str, int]:
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        row = conn.execute(
            "SELECT (SELECT COUNT(*) FROM observations WHERE status = 'pending'), "
            "(SELECT COUNT(*) FROM observations WHERE status = 'compressed'), "
            "(SELECT COUNT(*) FROM index_outbox), "
            "(SELECT COUNT(*) FROM sessions WHERE needs_summary = 1)").fetchone()
    finally:
        conn.close()
    return dict(zip(("pending", "compressed", "outbox", "sessions_to_summarise"), row))


async def run_load(args: argparse.Namespace, home: Path, logs: Path, projects: list[Path], env: dict[str, str],
                   tally: Tally, timing: dict[str, float]) -> None:
    async with AsyncExitStack() as stack:
        serves = [await stack.enter_async_context(Serve(env, projects[n % len(projects)], logs / "serve-stderr.log"))
                  for n in range(args.servers)]
        for serve in serves:
            await serve.wait_hybrid()
        hooks_done = threading.Event()
        share = [args.events // args.hook_procs + (k < args.events % args.hook_procs) for k in range(args.hook_procs)]
        threads = [threading.Thread(target=hook_stream, args=(k, share[k], projects[k % len(projects)], env, tally))
                   for k in range(args.hook_procs)]
        stop_sampling = threading.Event()
        sampler = threading.Thread(target=sample_listeners, args=(home, stop_sampling, tally), daemon=True)
        sampler.start()
        started = time.monotonic()
        for thread in threads:
            thread.start()

        async def wait_hooks() -> None:
            for thread in threads:
                await anyio.to_thread.run_sync(thread.join)
            timing["hooks_s"] = time.monotonic() - started
            hooks_done.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(wait_hooks)
            for n, serve in enumerate(serves):
                tasks.start_soon(agent_loop, serve, n, args.agent_pause, hooks_done, tally)
        deadline = time.monotonic() + args.drain_timeout
        while time.monotonic() < deadline:
            left = backlog(home / "agentmem.db")
            if not left["pending"] and not left["outbox"] and not left["sessions_to_summarise"]:
                break
            await anyio.sleep(1.0)
        timing["drained_s"] = time.monotonic() - started
        stop_sampling.set()


def verify(home: Path, tally: Tally, model_path: Path) -> dict[str, Any]:
    from agentmem_mcp.config import load_settings
    from agentmem_mcp.store import Store

    checks: dict[str, Any] = {}
    settings = load_settings(env={}, home=home, embed_model_path=model_path)
    with Store.open(settings, project=None) as store:
        conn = store.conn
        rows = conn.execute("SELECT id, input, count, status FROM observations WHERE event = 'tool_use'").fetchall()
        stored: Counter = Counter()
        repeats = 0
        for row in rows:
            found = MARKER.findall(row["input"] or "")
            stored.update(set(found))
            repeats += row["count"] > 1
        sent = Counter(tally.markers)
        lost = [m for m in sent if stored[m] == 0]
        doubled = [m for m in sent if stored[m] > 1]
        checks["events"] = {"sent": len(tally.markers), "stored_rows": len(rows), "lost": len(lost),
                            "duplicated": len(doubled) + repeats, "examples": (lost + doubled)[:5],
                            "ok": len(rows) == len(sent) == sum(sent.values()) and not lost and not doubled
                            and not repeats}
        statuses = dict(conn.execute("SELECT status, COUNT(*) FROM observations GROUP BY status").fetchall())
        sources: Counter = Counter()
        for row in conn.execute("SELECT source_ids FROM memories WHERE tier = 'working'"):
            sources.update(s for s in json.loads(row[0]) if s.startswith("obs:"))
        meaningful = {f"obs:{r[0]}" for r in conn.execute(
            "SELECT id FROM observations WHERE status = 'compressed' AND (kind != 'session' OR facts != '[]')")}
        twice = [s for s, n in sources.items() if n > 1]
        missing = meaningful - set(sources)
        checks["worker"] = {"statuses": statuses, "working_memories": sum(sources.values()),
                            "missing": len(missing), "twice": len(twice),
                            "ok": set(statuses) == {"compressed"} and not missing and not twice}
        bad_saves, not_found = [], {"bm25": 0, "vector": 0}
        for memory_id, action, content in tally.saves:
            row = conn.execute("SELECT is_latest, content FROM memories WHERE id = ?", (memory_id,)).fetchone()
            if action != "created" or row is None or not row["is_latest"]:
                bad_saves.append(f"{memory_id} {action} {'missing' if row is None else 'present'}")
                continue
            for retriever in not_found:
                hits = store.search(content, all_projects=True, tiers=["semantic"], limit=10,
                                    retrievers=(retriever,), record_access=False).hits
                not_found[retriever] += memory_id not in [h.id for h in hits]
        checks["saves"] = {"saved": len(tally.saves), "bad": bad_saves[:5], "not_found": not_found,
                           "ok": bool(tally.saves) and not bad_saves and not any(not_found.values())}
    checks["hooks"] = {"problems": len(tally.hook_problems), "examples": tally.hook_problems[:5],
                       "over_claude_code_timeout": len(tally.slow_hooks),
                       "ok": not tally.hook_problems and not tally.slow_hooks}
    checks["tools"] = {"errors": len(tally.tool_errors), "examples": tally.tool_errors[:5],
                       "ok": not tally.tool_errors}
    checks["network"] = {"listeners": sorted(set(tally.listeners))[:10], "ok": not tally.listeners}
    return checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10000, help="PostToolUse events in all")
    parser.add_argument("--hook-procs", type=int, default=8, help="concurrent hook streams")
    parser.add_argument("--servers", type=int, default=2, help="`agentmem serve` processes")
    parser.add_argument("--home", type=Path, help="an empty directory for the agentmem home (default: a temporary one)")
    parser.add_argument("--model-path", type=Path,
                        default=default_model())
    parser.add_argument("--agent-pause", type=float, default=0.5,
                        help="seconds each server's agent waits between one save + search and the next")
    parser.add_argument("--no-cli-worker", action="store_true", help="do not run `agentmem worker --forever`")
    parser.add_argument("--drain-timeout", type=float, default=1800, help="seconds to wait for the worker")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    if not args.model_path.exists():
        raise SystemExit(f"no embedding model at {args.model_path}: pass --model-path")
    scratch = Path(tempfile.mkdtemp(prefix="agentmem-stress-"))
    home = args.home.resolve() if args.home else scratch / "home"
    projects = [make_project(scratch / "webapp"), make_project(scratch / "billing")]
    env = base_env(home, args.model_path.resolve())
    report: dict[str, Any] = {
        "date": utc_now(), "machine": describe_machine(),
        "command": "python scripts/stress.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "events": args.events, "hook_procs": args.hook_procs, "servers": args.servers,
        "cli_worker": not args.no_cli_worker}
    tally, timing = Tally(), {}
    worker = None
    try:
        subprocess.run([str(agentmem_bin()), "stats"], env=env, cwd=projects[0], capture_output=True, check=True)
        if not args.no_cli_worker:
            worker = subprocess.Popen([str(agentmem_bin()), "worker", "--forever"], env=env, cwd=projects[0],
                                      stdout=subprocess.DEVNULL, stderr=open(scratch / "worker-stderr.log", "w"))
        anyio.run(run_load, args, home, scratch, projects, env, tally, timing)
    finally:
        if worker is not None:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
    left = backlog(home / "agentmem.db")
    report["throughput"] = {
        "hook_phase_s": round(timing["hooks_s"], 1), "events_per_s": round(args.events / timing["hooks_s"], 1),
        "drained_after_s": round(timing["drained_s"], 1),
        "compressed_per_s": round(left["compressed"] / timing["drained_s"], 1), "backlog_left": left}
    report["hook_post_tool_use"] = latency(tally.hook_ms)
    report["memory_save"] = latency(tally.save_ms)
    report["memory_search"] = latency(tally.search_ms)
    checks = verify(home, tally, args.model_path.resolve())
    checks["drained"] = {"ok": not left["pending"] and not left["outbox"] and not left["sessions_to_summarise"],
                         **left}
    checks["final"] = final_checks(env, home, projects[0])
    report["checks"] = checks
    report["ok"] = all(check["ok"] for check in checks.values())
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    if report["ok"]:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        print(f"FAILED; logs kept in {scratch}", file=sys.stderr)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
