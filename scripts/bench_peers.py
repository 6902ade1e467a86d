"""agentmem beside its peers, on one machine, call by call: mcp-memory-service (PyPI) on the same model files, and
basic-memory (PyPI) in its text mode.

    python scripts/bench_peers.py [--sizes 1000,10000] [--searches 40] [--saves 20] [--mcp-runs 3]
                                  [--peer-python /usr/bin/python3.11] [--venv DIR] [--version 12.4.0] [--json OUT]

- Installs mcp-memory-service==VERSION from PyPI into its own venv (made with --peer-python once, then reused):
  its sqlite-vec backend needs an interpreter whose sqlite3 can load extensions (Debian's python3.11 can, a
  pyenv build often cannot). It runs on its ONNX path (MCP_MEMORY_USE_ONNX=1, MCP_MEMORY_ONNX_ALLOW_DOWNLOAD=0)
  with the same int8 all-MiniLM-L6-v2 files as agentmem, put where it looks for them in a temporary HOME.
- Each system runs in a driver process of its own (agentmem: this interpreter; the peer: its venv's), fed the
  same corpus (scripts/bench_core.py's generated memories, real model vectors in both, built through each one's
  batch write path) and then the same calls, alternated one by one (which system goes first alternates too);
  each call is timed inside its driver, so the pipes are not counted.
- Reported, per size: save p50/p95 (one memory, embedding included), search p50/p95 (10 results) of the bench's 15
  queries asked again and again (both systems keep the vectors of recent queries, so after the first round neither
  embeds them) and of as many queries never asked before (each embedded: `search_new_queries`), and recall@5
  of the 48 hand-written paraphrase pairs (scripts/data/paraphrase_pairs.json) saved among the corpus.
- Then the MCP servers over stdio (newline-delimited JSON-RPC, as a client sends it), spawned in turn: spawn to
  the `initialize` answer, `tools/call` search p50 once the model is loaded, and the server's RSS (for agentmem
  also the shared embedding process's, which several sessions share).
- basic-memory (--basic-memory-sizes, 1,000 by default: it writes a markdown note and indexes it per call, ~0.3 s)
  in a venv of its own (Python 3.12+, --bm-python), driven through its own MCP tool functions in one process
  (`write_note`, `search_notes`), as its CLI calls them; it searches by SQLite FTS here, its vector search needing
  a model it downloads from the Hugging Face Hub. Not in the MCP part.
Ratios are peer / agentmem (above 1: agentmem is faster or smaller).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_paraphrases import PARAPHRASES
from bench_store import NOUNS, QUERIES, memory_text
from harness import default_model, describe_machine, rss_mb, summary, utc_now, write_json
from peer_drivers import (
    BASIC_MEMORY,
    BASIC_MEMORY_DRIVER,
    PEER,
    PEER_DRIVER,
    Driver,
    agentmem_driver,
    basic_memory_env,
    basic_memory_python,
    peer_env,
    peer_venv,
)

BATCH = 200


def stats(values: list[float]) -> dict:
    return summary(values, digits=1, with_max=False)


def alternate(drivers: list[Driver], n: int, request) -> dict[str, list[dict]]:
    """Call every driver with request(i) for i < n, alternating which goes first."""
    answers: dict[str, list[dict]] = {d.name: [] for d in drivers}
    for i in range(n):
        for driver in drivers[i % len(drivers):] + drivers[:i % len(drivers)]:
            answers[driver.name].append(driver.call(**request(i)))
    return answers


def new_queries(count: int, seed: int) -> list[str]:
    """`count` queries neither system has seen (a bench query and a noun of the corpus): both embed each one, where
    the repeated QUERIES are answered from each one's cache of recent query vectors after their first round."""
    pool = [f"{query} {noun}" for query in QUERIES for noun in NOUNS]
    random.Random(seed).shuffle(pool)
    return pool[:count]


def bench_size(size: int, args: argparse.Namespace, peer_python: Path, tmp: Path, base_env: dict[str, str],
               bm_python: Path | None = None) -> dict:
    rng = random.Random(size)
    corpus = [memory_text(rng, n) for n in range(size)]
    pairs = json.loads(PARAPHRASES.read_text())["pairs"]
    corpus += [{"content": p["memory"], "type": p["type"], "tags": []} for p in pairs]
    ours = Driver("agentmem", [sys.executable, __file__, "--driver", str(tmp / f"agentmem-home-{size}"),
                               "--model", str(args.model)], base_env, tmp / f"agentmem-{size}.log")
    peer = Driver(PEER, [str(peer_python), "-c", PEER_DRIVER], peer_env(base_env, tmp, args.model, str(size)),
                  tmp / f"peer-{size}.log")
    drivers = [ours, peer]
    if bm_python is not None:
        drivers.append(Driver(BASIC_MEMORY, [str(bm_python), "-c", BASIC_MEMORY_DRIVER],
                              basic_memory_env(base_env, tmp, str(size)), tmp / f"bm-{size}.log"))
    try:
        build_s = {}
        for driver in drivers:
            started = time.perf_counter()
            for start in range(0, len(corpus), BATCH):
                driver.call(op="build", items=corpus[start:start + BATCH], last=start + BATCH >= len(corpus))
            build_s[driver.name] = round(time.perf_counter() - started, 1)
            print(f"  {driver.name}: {len(corpus):,} memories built in {build_s[driver.name]} s", file=sys.stderr)
        searches = alternate(drivers, args.searches, lambda i: {"op": "search", "query": QUERIES[i % len(QUERIES)]})
        fresh = new_queries(args.searches, seed=size)
        new_searches = alternate(drivers, len(fresh), lambda i: {"op": "search", "query": fresh[i]})
        save_rng = random.Random(size + 1)
        saves = [memory_text(save_rng, 10_000_000 + i) for i in range(args.saves)]
        saved = alternate(drivers, args.saves, lambda i: {"op": "save", "item": saves[i]})
        found = alternate(drivers, len(pairs), lambda i: {"op": "search", "query": pairs[i]["query"]})
    finally:
        for driver in drivers:
            driver.close()
    row: dict = {"memories": len(corpus), "build_s": build_s}
    for name in (driver.name for driver in drivers):
        row[name] = {"search": stats([a["ms"] for a in searches[name]]),
                     "search_new_queries": stats([a["ms"] for a in new_searches[name]]),
                     "save": stats([a["ms"] for a in saved[name]]),
                     "paraphrase_recall@5": sum(pairs[i]["memory"] in a["contents"][:5]
                                                for i, a in enumerate(found[name])),
                     "paraphrase_pairs": len(pairs)}
    row["ratio_peer_over_agentmem"] = {
        what: round(row[peer.name][what]["p50_ms"] / row[ours.name][what]["p50_ms"], 2)
        for what in ("search", "search_new_queries", "save")}
    if bm_python is not None:
        row["ratio_basic_memory_over_agentmem"] = {
            what: round(row[BASIC_MEMORY][what]["p50_ms"] / row[ours.name][what]["p50_ms"], 2)
            for what in ("search", "search_new_queries", "save")}
    return row


def rpc(proc: subprocess.Popen, request: dict) -> dict:
    assert proc.stdin and proc.stdout
    proc.stdin.write((json.dumps(request) + "\n").encode())
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit("an MCP server closed its output")
        try:
            answer = json.loads(line)
        except ValueError:  # a server's stray print
            continue
        if isinstance(answer, dict) and answer.get("id") == request.get("id"):
            return answer


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench_peers", "version": "0"}}}


def bench_mcp(args: argparse.Namespace, peer_python: Path, tmp: Path, base_env: dict[str, str]) -> dict:
    """Spawn -> initialize, alternated; then one session each: search calls once the model answers, and RSS."""
    ours_env = dict(base_env, AGENTMEM_HOME=str(tmp / "agentmem-mcp-home"), AGENTMEM_EMBED_MODEL_PATH=str(args.model),
                    AGENTMEM_SHARED_EMBEDDER="0")  # one session: its model in its own process, as the peer's
    agentmem = Path(sys.executable).with_name("agentmem")
    servers = {"agentmem": ([str(agentmem), "serve"] if agentmem.exists() else
                            [sys.executable, "-m", "agentmem_mcp", "serve"], ours_env),
               PEER: ([str(peer_python), "-m", "mcp_memory_service.server"],
                      peer_env(base_env, tmp, args.model, "mcp"))}
    tools = {"agentmem": ("memory_search", {"query": "how do we run the tests"}),
             PEER: ("memory_search", {"query": "how do we run the tests"})}
    spawn: dict[str, list[float]] = {name: [] for name in servers}
    search: dict[str, list[float]] = {name: [] for name in servers}
    rss: dict[str, float | None] = {}
    for run in range(args.mcp_runs):
        for name in (list(servers) if run % 2 == 0 else list(servers)[::-1]):
            command, env = servers[name]
            started = time.perf_counter()
            proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, env=env, cwd=tmp)
            try:
                rpc(proc, INIT)
                spawn[name].append((time.perf_counter() - started) * 1000)
                if run == args.mcp_runs - 1:
                    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
                    tool, arguments = tools[name]
                    for n in range(2, 2 + args.searches):  # the first calls wait for the model: keep the last half
                        call = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                                "params": {"name": tool, "arguments": arguments}}
                        t0 = time.perf_counter()
                        rpc(proc, call)
                        search[name].append((time.perf_counter() - t0) * 1000)
                        if n == 2:
                            time.sleep(5.0)  # let the model load in the background
                    rss[name] = rss_mb(proc.pid)
            finally:
                proc.stdin.close()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    return {"spawn_to_initialize": {name: stats(v) for name, v in spawn.items()},
            "search_after_model": {name: stats(v[len(v) // 2:]) for name, v in search.items() if v},
            "server_rss_mb": {name: round(v, 1) for name, v in rss.items() if v}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--searches", type=int, default=40)
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--mcp-runs", type=int, default=3)
    parser.add_argument("--peer-python", default="/usr/bin/python3.11")
    parser.add_argument("--basic-memory-sizes", default="1000",
                        help="sizes basic-memory joins (its writes take ~0.3 s a note); empty: never")
    parser.add_argument("--bm-python", default=shutil.which("python3.12") or "python3.12",
                        help="a Python 3.12+ for basic-memory's venv")
    parser.add_argument("--bm-venv", type=Path,
                        default=Path.home() / ".cache" / "agentmem-bench" / BASIC_MEMORY)
    parser.add_argument("--venv", type=Path, default=Path.home() / ".cache" / "agentmem-bench" / "mcp-memory-service")
    parser.add_argument("--version", default="12.4.0")
    parser.add_argument("--model", type=Path, default=default_model())
    parser.add_argument("--json", type=Path)
    parser.add_argument("--driver", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.model = args.model.resolve()  # the peer finds it through symbolic links made in another folder
    if args.driver:
        return agentmem_driver(args.driver, args.model)
    from agentmem_mcp.version import package_version

    peer_python = peer_venv(args)
    results: dict = {"date": utc_now(), "machine": describe_machine(),
                     "command": "python scripts/bench_peers.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                     "versions": {"agentmem": package_version(), PEER: args.version, BASIC_MEMORY: "latest on PyPI, "
                                  "text search (its vector search needs a model from the Hugging Face Hub)"},
                     "sizes": {}}
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTMEM_", "MCP_MEMORY_"))}
    tmp = Path(tempfile.mkdtemp(prefix="bench-peers-"))
    try:
        for size in [int(s) for s in args.sizes.split(",") if s]:
            print(f"{size:,} memories", file=sys.stderr)
            with_bm = str(size) in args.basic_memory_sizes.split(",")
            bm_python = basic_memory_python(args) if with_bm else None
            results["sizes"][size] = bench_size(size, args, peer_python, tmp, base_env, bm_python)
            print(json.dumps({size: results["sizes"][size]}, indent=1), flush=True)
        if args.mcp_runs:
            results["mcp"] = bench_mcp(args, peer_python, tmp, base_env)
            print(json.dumps(results["mcp"], indent=1), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
