"""Server time of every page of `agentmem ui` on a store of 100,000 memories.

    python scripts/bench_ui.py                      # build a store in a temp dir, time each page 20 times
    python scripts/bench_ui.py --home DIR --runs 50 # build DIR once, reuse it on later runs

The store is bench_lifecycle.py's (memories inserted with SQL in batches, a realistic spread of tiers, types,
ages, use and superseded versions), indexed in BM25, with one audit row per memory (as many as 100,000 saves
leave) and 40 sessions replayed through the hook's own code (prompts, tool calls, stop), compressed and
summarised by the worker. The real `agentmem ui --no-browser` serves it; each page is fetched over loopback
HTTP with the session cookie, once to warm up, then --runs times; the time is from sending the request to the
last byte of the answer. Prints the median and p95 of each page, and of `context.session_context` called
in-process on the same store (what the Project knowledge page, and the SessionStart hook, wait for), then each
SQL statement that call runs (caught with sqlite's trace callback) with its best time of 5 and the index it uses.

    python scripts/bench_ui.py --home DIR --model MODEL_DIR   # then the search pages again, hybrid

With --model, the store's memories get vectors (once: hashed unit vectors, as bench_core.py's --synthetic-above,
since the model would need about an hour for 100,000 memories; the queries are embedded by the real model), and a
viewer with the model (reached through the shared embedding process, as in use) serves the search pages again.
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
from typing import Any

from bench_lifecycle import build
from bench_store import hashed_vectors
from harness import clean_env, describe_machine, utc_now

from agentmem_mcp.capture.hook import handle
from agentmem_mcp.config import load_settings
from agentmem_mcp.db import audit
from agentmem_mcp.db.memories import content_hash
from agentmem_mcp.recall.briefing import session_context
from agentmem_mcp.store import Store

SESSIONS = 40
PROJECT = "/home/dev/project-1"
SEARCHES = ["/search?q=decision+about+module_42", "/search?q=pytest+tests&project=" + PROJECT]


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


def vectorize(home: Path, model: Path) -> None:
    """Vectors, sentence pieces and word vectors for every memory (hashed: `bench_store.hashed_vectors`), once."""
    settings = load_settings(env={}, home=home, embed_model_path=model)
    with Store.open(settings, load_embedder=False) as store:
        if not store.conn.execute("SELECT 1 FROM memories WHERE embedding_model IS NULL LIMIT 1").fetchone():
            return
        started = time.perf_counter()
        if not store.embedder.load():
            raise SystemExit(f"the model at {model} does not load: {store.embedder.error}")
        store.embedder.embed = hashed_vectors
        store.prepare_vectors()
        while store.add_sentence_pieces():
            pass
        while store.add_word_vectors():
            pass
        print(f"vectors ready in {time.perf_counter() - started:.1f} s", flush=True)


ROOTS: dict[int, str] = {}


def start_viewer(env: dict[str, str]) -> tuple[subprocess.Popen, int, str]:
    """The real `agentmem ui --no-browser` (process, port, cookie) once it answers."""
    proc = subprocess.Popen([sys.executable, "-m", "agentmem_mcp", "ui", "--no-browser"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    match = re.search(r"http://127\.0\.0\.1:(\d+)(/[\w-]+)/search\?token=([\w-]+)", proc.stdout.readline())
    port = int(match.group(1))
    ROOTS[port] = match.group(2)  # this run's path: every address of the viewer starts with it
    cookie = f"agentmem_ui_{port}={match.group(3)}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if fetch(port, cookie, "/search")[0] == 200:
                return proc, port, cookie
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.terminate()
            raise SystemExit("the viewer did not answer in 120 s")
        time.sleep(0.5)


def time_pages(port: int, cookie: str, pages: list[str], runs: int, label: str = "") -> None:
    for path in pages:
        status, _ = fetch(port, cookie, path)
        if status != 200:
            raise SystemExit(f"{path}: HTTP {status}")
        times = sorted(fetch(port, cookie, path)[1] * 1000 for _ in range(runs))
        p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
        print(f"{(path + label)[:60]:60} {statistics.median(times):10.1f} {p95:8.1f}", flush=True)


def hybrid_searches(home: Path, model: Path, runs: int) -> None:
    """The search pages once the viewer searches with vectors (the shared embedding process's model)."""
    vectorize(home, model)
    env = clean_env()
    env.update(AGENTMEM_HOME=str(home), AGENTMEM_EMBED_MODEL_PATH=str(model))
    proc, port, cookie = start_viewer(env)
    try:
        deadline = time.monotonic() + 120
        while b'data-search="hybrid"' not in _body(port, cookie, "/health"):
            if time.monotonic() > deadline:
                raise SystemExit("the viewer did not reach the shared embedding model in 120 s")
            time.sleep(0.5)
        if b"(hybrid)" not in _body(port, cookie, SEARCHES[0]):
            raise SystemExit("the search page did not search with vectors")
        time_pages(port, cookie, SEARCHES, runs, " (hybrid)")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _body(port: int, cookie: str, path: str) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", ROOTS.get(port, "") + path, headers={"Cookie": cookie})
        return conn.getresponse().read()
    finally:
        conn.close()


def fetch(port: int, cookie: str, path: str) -> tuple[int, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        started = time.perf_counter()
        conn.request("GET", ROOTS.get(port, "") + path, headers={"Cookie": cookie})
        answer = conn.getresponse()
        answer.read()
        return answer.status, time.perf_counter() - started
    finally:
        conn.close()


def briefing_queries(conn: Any, budget: int) -> None:
    """Each statement `session_context` runs on `conn`, as sqlite ran it (parameters bound), timed alone."""
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        session_context(conn, PROJECT, budget)
    finally:
        conn.set_trace_callback(None)
    print("# the briefing's statements, each alone: best of 5 (ms), the end of its WHERE clause, its index")
    for sql in dict.fromkeys(statements):
        best = min(_timed(conn, sql) for _ in range(5))
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
        used = next((step.split(" USING ")[1] for step in plan if " USING " in step), "scan")
        where = " ".join(sql[sql.rfind(" WHERE ") + 7:].split())
        print(f"{best:8.1f}  …{where[-90:]}  [{used}]")


def _timed(conn: Any, sql: str) -> float:
    started = time.perf_counter()
    conn.execute(sql).fetchall()
    return (time.perf_counter() - started) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="store to build or reuse (default: a temporary directory)")
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--model", type=Path, help="a model folder: time the search pages again, with vectors")
    args = parser.parse_args(argv)
    tmp = None if args.home else tempfile.TemporaryDirectory(prefix="agentmem-bench-ui-")
    home = args.home or Path(tmp.name) / "home"
    started = time.perf_counter()
    fill(home, args.memories)
    print(f"store ready in {time.perf_counter() - started:.1f} s", flush=True)
    env = clean_env()
    env.update(AGENTMEM_HOME=str(home), AGENTMEM_EMBEDDINGS="0")
    proc, port, cookie = start_viewer(env)
    try:
        settings = load_settings(env={}, home=home, embeddings=False)
        with Store.open(settings, load_embedder=False) as store:
            memory_id = store.conn.execute("SELECT id FROM memories WHERE is_latest = 1 AND version = 2 "
                                           "LIMIT 1").fetchone()[0]
        pages = [*SEARCHES, "/memories",
                 "/memories?page=1000", f"/memory/{memory_id}", "/sessions", "/session/bench-7",
                 f"/knowledge?project={PROJECT}", f"/knowledge?project={PROJECT}&prompt=why+module_42+failed",
                 "/lifecycle", "/quarantine", "/audit", "/audit?page=500", "/health",
                 "/api/changes?observation=0&memory=0"]
        print(f"# bench_ui: {args.memories:,} memories, {SESSIONS} sessions, {args.runs} runs a page; "
              f"{utc_now()}; {describe_machine()}")
        print(f"{'page':60} {'median ms':>10} {'p95 ms':>8}")
        time_pages(port, cookie, pages, args.runs)
        with Store.open(settings, load_embedder=False) as store:  # what the knowledge page waits for
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                session_context(store.conn, PROJECT, settings.context_budget_tokens)
                times.append((time.perf_counter() - started) * 1000)
            print(f"{'(in-process) context.session_context, the briefing':60} {statistics.median(times):10.1f} "
                  f"{sorted(times)[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]:8.1f}")
            briefing_queries(store.conn, settings.context_budget_tokens)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    if args.model:
        hybrid_searches(home, args.model, args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
