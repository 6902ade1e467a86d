"""Memory and search latency of several `agentmem serve` sessions: relayed to the shared process, servers sharing
its model, or servers with a model each.

    python scripts/bench_shared_model.py [--sessions 4] [--memories 2000] [--searches 30] [--rounds 2]
        [--modes relay,server] [--json OUT]

Starts N real `agentmem serve` over stdio with the MCP SDK's client (as N Claude Code sessions would, one after the
other, timing each spawn -> `initialize` answer), in one home on a store of M memories, waits until every one
searches with vectors, then runs searches round-robin through all of them (`memory_search`, p50 / p95 of the call as
the client sees it) and sums the memory of every agentmem process (the relays or servers and the shared process):
VmRSS from /proc/PID/status, and PSS from /proc/PID/smaps_rollup (shared library pages counted once), also given
per process. Modes alternate, round by round: `relay` (the default: each `serve` relays its session to the shared
process), `server` (AGENTMEM_SHARED_SERVER=0: each `serve` is a server, sharing the shared process's model) and
`own` (AGENTMEM_SHARED_SERVER=0 AGENTMEM_SHARED_EMBEDDER=0: a model in each server). In `relay` and `server` rounds
the shared process is killed halfway through the searches: every later search must still answer, with vectors
("hybrid"; a relay then serves its session itself; a search the kill cut is answered with an error, called again
and counted). On a checkout without relays, `relay` and `server` are the same.
The store's memories get hashed vectors (the model would take minutes to embed them); queries use the model.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from bench_store import QUERIES, build
from harness import MODEL_NAME, clean_env, default_model, describe_machine, percentile, rss_mb, utc_now, write_json
from live_processes import SHARED_PROCESS_MODULE, command_line, processes_of, shared_pids
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from processes import embedding_service_pid

from agentmem_mcp.config import load_settings
from agentmem_mcp.index.embedder import Embedder
from agentmem_mcp.store import Store


def agentmem_processes(home: Path) -> list[int]:
    """Every agentmem process started with AGENTMEM_HOME=home or serving it (`--home home`): servers, the shared
    process."""
    started = [pid for pid in processes_of(home) if any(b"agentmem" in part for part in command_line(pid) or [])]
    return sorted(set(started) | set(shared_pids(home)))


def memory_mb(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of a process, in MB."""
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    pss = int(next(line for line in rollup.splitlines() if line.startswith("Pss:")).split()[1])
    return rss_mb(pid), pss / 1024


def is_shared_process(pid: int) -> bool:
    return any(SHARED_PROCESS_MODULE in part for part in command_line(pid) or [])


MODE_ENV = {"relay": {}, "server": {"AGENTMEM_SHARED_SERVER": "0"},
            "own": {"AGENTMEM_SHARED_SERVER": "0", "AGENTMEM_SHARED_EMBEDDER": "0"}}


async def run_round(mode: str, sessions: int, searches: int, env: dict[str, str], project: Path, home: Path,
                    model: Path, seed: int) -> dict:
    env = dict(env, **MODE_ENV[mode])
    params = StdioServerParameters(command=sys.executable, args=["-m", "agentmem_mcp", "serve"], env=env,
                                   cwd=str(project))
    rng = random.Random(seed)
    result: dict = {"mode": mode}
    async with AsyncExitStack() as stack:
        clients, init_ms = [], []
        started = time.perf_counter()
        for _ in range(sessions):
            spawned = time.perf_counter()
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            init_ms.append(round((time.perf_counter() - spawned) * 1000, 1))
            clients.append(session)
        result["init_ms"] = init_ms

        async def search(session: ClientSession, query: str) -> dict:
            answer = await session.call_tool("memory_search", {"query": query})
            if answer.is_error:
                raise RuntimeError(answer.content[0].text)
            return json.loads(answer.content[0].text)

        for session in clients:  # every session's model (or its link to the shared one) is ready
            while (await search(session, "warm up"))["mode"] != "hybrid":
                await anyio.sleep(0.25)
        result["all_hybrid_after_s"] = round(time.perf_counter() - started, 1)
        await anyio.sleep(1.0)
        pids = agentmem_processes(home)
        memory = [memory_mb(pid) for pid in pids]
        shared = [is_shared_process(pid) for pid in pids]
        result.update(processes=len(pids), rss_sum_mb=round(sum(m[0] for m in memory), 1),
                      pss_sum_mb=round(sum(m[1] for m in memory), 1),
                      rss_each_mb=sorted(round(m[0], 1) for m in memory),
                      rss_shared_process_mb=[round(m[0], 1) for m, s in zip(memory, shared) if s],
                      pss_shared_process_mb=[round(m[1], 1) for m, s in zip(memory, shared) if s],
                      rss_serve_mb=sorted(round(m[0], 1) for m, s in zip(memory, shared) if not s),
                      pss_serve_mb=sorted(round(m[1], 1) for m, s in zip(memory, shared) if not s))
        timings, modes, killed, cut = [], [], None, 0
        for n in range(searches * sessions):
            if mode != "own" and n == searches * sessions // 2:
                killed = embedding_service_pid(home, model)
                if killed is not None:
                    os.kill(killed, signal.SIGKILL)
            query = rng.choice(QUERIES)
            begin = time.perf_counter()
            try:
                found = await search(clients[n % sessions], query)
            except MCPError:  # cut by the kill (a relay answers a request in flight with an error): once more
                cut += 1
                found = await search(clients[n % sessions], query)
            timings.append((time.perf_counter() - begin) * 1000)
            modes.append(found["mode"])
        half = len(timings) // 2
        result["search_ms"] = {"n": len(timings), "p50": round(statistics.median(timings), 1),
                               "p95": round(percentile(timings, 0.95), 1)}
        result["search_first_half_ms"] = {"p50": round(statistics.median(timings[:half]), 1),
                                          "p95": round(percentile(timings[:half], 0.95), 1)}
        if mode != "own":
            after = timings[half:]
            result["killed_embedding_process"] = killed
            result["after_kill"] = {"searches": len(after), "answered": len(after), "cut_and_called_again": cut,
                                    "hybrid": sum(m == "hybrid" for m in modes[half:]),
                                    "first_ms": [round(t, 1) for t in after[:sessions + 2]],
                                    "max_ms": round(max(after), 1),
                                    "p50_ms": round(statistics.median(after), 1)}
            result["embedding_process_after"] = embedding_service_pid(home, model)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--searches", type=int, default=30, help="per session and round")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each mode, alternated")
    parser.add_argument("--modes", default="relay,server", help="comma-separated: relay, server, own")
    parser.add_argument("--model", type=Path, default=default_model())
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    report: dict = {"date": utc_now(), "machine": describe_machine(),
                    "command": "python scripts/bench_shared_model.py " + " ".join(argv if argv is not None
                                                                                 else sys.argv[1:]),
                    "rounds": []}
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        (project / ".git").mkdir(parents=True)
        env = clean_env()
        env.update(AGENTMEM_HOME=str(home), AGENTMEM_EMBED_MODEL_PATH=str(args.model))
        embedder = Embedder(MODEL_NAME, args.model)
        embedder.load()
        settings = load_settings(env={}, home=home, embed_model_path=args.model)
        with Store.open(settings, project=str(project), embedder=embedder) as store:
            print(f"building {args.memories:,} memories", file=sys.stderr)
            build(store, args.memories, seed=7, synthetic_vectors=True)
        del embedder
        modes = args.modes.split(",")
        for n in range(args.rounds):
            for mode in modes if n % 2 == 0 else modes[::-1]:
                print(f"round {n + 1}: {mode}", file=sys.stderr, flush=True)
                outcome = anyio.run(run_round, mode, args.sessions, args.searches, env, project, home, args.model,
                                    n)
                print(json.dumps(outcome), file=sys.stderr, flush=True)
                report["rounds"].append(outcome)
                deadline = time.time() + 30  # the embedding process leaves once its servers have gone
                while agentmem_processes(home) and time.time() < deadline:
                    time.sleep(0.5)
    by_mode = {mode: [r for r in report["rounds"] if r["mode"] == mode] for mode in modes}
    report["summary"] = {mode: {"rss_sum_mb": [r["rss_sum_mb"] for r in rounds],
                                "pss_sum_mb": [r["pss_sum_mb"] for r in rounds],
                                "rss_shared_process_mb": [r["rss_shared_process_mb"] for r in rounds],
                                "rss_serve_mb": [r["rss_serve_mb"] for r in rounds],
                                "init_ms": [r["init_ms"] for r in rounds],
                                "search_p50_ms": [r["search_ms"]["p50"] for r in rounds],
                                "search_p95_ms": [r["search_ms"]["p95"] for r in rounds],
                                "search_p95_first_half_ms": [r["search_first_half_ms"]["p95"] for r in rounds]}
                         for mode, rounds in by_mode.items()}
    print(json.dumps(report, indent=2))
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
