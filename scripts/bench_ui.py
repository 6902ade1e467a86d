"""Server time of every page of `agentmem ui` on a store of 100,000 memories.

    python scripts/bench_ui.py                      # build a store in a temp dir, time each page 20 times
    python scripts/bench_ui.py --home DIR --runs 50 # build DIR once, reuse it on later runs

The store is bench_lifecycle.py's (memories inserted with SQL in batches, a realistic spread of tiers, types,
ages, use and superseded versions), indexed in BM25, with one audit row per memory (as many as 100,000 saves
leave) and 40 sessions replayed through the hook's own code (prompts, tool calls, stop), compressed and
summarised by the worker. The real `agentmem ui --no-browser` serves it; each page is fetched over loopback
HTTP with the session cookie, once to warm up, then --runs times; the time is from sending the request to the
last byte of the answer. Prints the median and p95 of each page, and of `context.session_context` called
in-process on the same store (what the Project knowledge page, and the SessionStart hook, wait for).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_lifecycle import build
from machine import describe_machine

from agentmem_mcp.capture.hook import handle
from agentmem_mcp.config import load_settings
from agentmem_mcp.context import session_context
from agentmem_mcp.db import audit
from agentmem_mcp.db.memories import content_hash
from agentmem_mcp.store import Store

SESSIONS = 40
PROJECT = "/home/dev/project-1"


def fill(home: Path, count: int) -> None:
    """bench_lifecycle's memories, then BM25, audit rows and replayed sessions (once per home: the worker's sweep
    after the sessions forgets expired memories, so the count alone does not say the home is ready)."""
    settings = load_settings(env={}, home=home, embeddings=False)
    if (home / "agentmem.db").exists():
        with Store.open(settings, load_embedder=False) as store:
            if store.conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] >= SESSIONS:
                print(f"reusing {home}", flush=True)
                return
    build(home, count)
    with Store.open(settings, load_embedder=False, sync_index=True) as store:
        store.flush()
        if store.conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] >= SESSIONS:
            return
        rows = store.conn.execute("SELECT id, content FROM memories WHERE is_latest = 1").fetchall()
        for start in range(0, len(rows), 10000):
            with store.transaction() as conn:  # real content hashes (bench_lifecycle's are placeholders)
                for memory_id, content in rows[start:start + 10000]:
                    conn.execute("UPDATE memories SET content_hash = ? WHERE id = ?", (content_hash(content),
                                                                                      memory_id))
                    audit.append(conn, "save", memory_id, PROJECT, {"source": "agent"})
    env = {"AGENTMEM_HOME": str(home), "AGENTMEM_EMBEDDINGS": "0"}

    def event(session: str, name: str, **fields: object) -> None:
        payload = {"session_id": session, "cwd": PROJECT, "hook_event_name": name, **fields}
        handle("claude-code", name, json.dumps(payload).encode(), env)
    for n in range(SESSIONS):
        session = f"bench-{n}"
        event(session, "SessionStart", source="startup")
        event(session, "UserPromptSubmit", prompt=f"fix the failing test in module_{n} and explain the decision")
        for step in range(8):
            event(session, "PostToolUse", tool_name="Bash",
                  tool_input={"command": f"pytest tests/test_module_{n}.py -k {step}"},
                  tool_response={"stdout": f"{step} passed", "stderr": "", "interrupted": False})
        event(session, "Stop")
    subprocess.run([sys.executable, "-m", "agentmem_mcp", "worker", "--once"], env={**os.environ, **env}, check=True,
                   capture_output=True)


def fetch(port: int, cookie: str, path: str) -> tuple[int, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        started = time.perf_counter()
        conn.request("GET", path, headers={"Cookie": cookie})
        answer = conn.getresponse()
        answer.read()
        return answer.status, time.perf_counter() - started
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="store to build or reuse (default: a temporary directory)")
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    tmp = None if args.home else tempfile.TemporaryDirectory(prefix="agentmem-bench-ui-")
    home = args.home or Path(tmp.name) / "home"
    started = time.perf_counter()
    fill(home, args.memories)
    print(f"store ready in {time.perf_counter() - started:.1f} s", flush=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env.update(AGENTMEM_HOME=str(home), AGENTMEM_EMBEDDINGS="0")
    proc = subprocess.Popen([sys.executable, "-m", "agentmem_mcp", "ui", "--no-browser"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        match = re.search(r"http://127\.0\.0\.1:(\d+)/search\?token=([\w-]+)", proc.stdout.readline())
        port, cookie = int(match.group(1)), f"agentmem_ui={match.group(2)}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if fetch(port, cookie, "/search")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("the viewer did not answer in 120 s")
            time.sleep(0.5)
        settings = load_settings(env={}, home=home, embeddings=False)
        with Store.open(settings, load_embedder=False) as store:
            memory_id = store.conn.execute("SELECT id FROM memories WHERE is_latest = 1 AND version = 2 "
                                           "LIMIT 1").fetchone()[0]
        pages = ["/search?q=decision+about+module_42", "/search?q=pytest+tests&project=" + PROJECT, "/memories",
                 "/memories?page=1000", f"/memory/{memory_id}", "/sessions", "/session/bench-7",
                 f"/knowledge?project={PROJECT}", f"/knowledge?project={PROJECT}&prompt=why+module_42+failed",
                 "/lifecycle", "/quarantine", "/audit", "/audit?page=500", "/health",
                 "/api/changes?observation=0&memory=0"]
        print(f"# bench_ui: {args.memories:,} memories, {SESSIONS} sessions, {args.runs} runs a page; "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {describe_machine()}")
        print(f"{'page':60} {'median ms':>10} {'p95 ms':>8}")
        for path in pages:
            status, _ = fetch(port, cookie, path)
            if status != 200:
                raise SystemExit(f"{path}: HTTP {status}")
            times = sorted(fetch(port, cookie, path)[1] * 1000 for _ in range(args.runs))
            p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
            print(f"{path[:60]:60} {statistics.median(times):10.1f} {p95:8.1f}", flush=True)
        with Store.open(settings, load_embedder=False) as store:  # what the knowledge page waits for
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                session_context(store.conn, PROJECT, settings.context_budget_tokens)
                times.append((time.perf_counter() - started) * 1000)
        print(f"{'(in-process) context.session_context, the briefing':60} {statistics.median(times):10.1f} "
              f"{sorted(times)[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]:8.1f}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
