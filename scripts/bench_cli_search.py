"""Wall time and peak memory of the `agentmem search` command, while an agent session runs (the user's shared process
holds the model: the command hands it the search, runtime/search_client.py) and while none does (the command loads the
model itself).

    python scripts/bench_cli_search.py [--memories 1000] [--searches 30] [--json OUT]

Fills a scratch home with M memories (hashed vectors for the corpus, as bench_core.py; queries use the real model),
then runs the real command (`python -m agentmem_mcp search QUERY`, a subprocess in the project's directory, its
output read) S times in each mode, taking the modes in turn run by run so that the machine's load falls on all:
`shared`, with one `agentmem serve` session open through the MCP SDK's stdio client (as Claude Code keeps one),
and `alone`, with AGENTMEM_SHARED_EMBEDDER=0 in the command's environment (the shared process then declines and
the command searches in its own process, as it does when no session runs). Reports p50 / p90 of the wall time and
the median peak RSS of the command's process (GNU time's, when /usr/bin/time is there). A third mode, `python`,
runs `python -c pass` in the same turn: the interpreter's own start, which no command can go below, on the machine
as loaded as it was for the others.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from bench_store import QUERIES, build
from harness import DEFAULT_MODEL, MODEL_NAME, clean_env, describe_machine, percentile, utc_now
from live_processes import processes_of
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from agentmem_mcp.config import load_settings
from agentmem_mcp.index.embedder import Embedder
from agentmem_mcp.store import Store


def run_search(env: dict[str, str], cwd: Path, query: str) -> tuple[float, float | None, dict]:
    """(wall seconds, peak RSS in MB, the JSON answer) of one `agentmem search --json` process. The peak RSS comes
    from GNU time (`/usr/bin/time -f %M`), whose child starts small: a child forked from this process would count
    this process's memory in its own peak (Linux keeps the larger of the two at exec). None without GNU time."""
    command = [sys.executable, "-m", "agentmem_mcp", "search", query, "--json"]
    timed = Path("/usr/bin/time").exists()
    if timed:
        command = ["/usr/bin/time", "-f", "peak-rss-kb %M", *command]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"agentmem search failed: {done.stderr[:500]}")
    peaks = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("peak-rss-kb ")]
    return elapsed, int(peaks[-1]) / 1024 if timed and peaks else None, json.loads(done.stdout)


async def measure(env: dict[str, str], repo: Path, searches: int) -> dict[str, list[tuple[float, float | None]]]:
    server = StdioServerParameters(command=sys.executable, args=["-m", "agentmem_mcp", "serve"], env=env,
                                   cwd=str(repo))
    runs: dict[str, list[tuple[float, float | None]]] = {"shared": [], "alone": [], "python": []}
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(240):  # the session's model is the shared process's: wait until it searches with it
            found = await session.call_tool("memory_search", {"query": "warm up"})
            if '"mode":"hybrid"' in found.content[0].text and (Path(env["AGENTMEM_HOME"]) / "search.sock").exists():
                break
            await anyio.sleep(0.5)
        else:
            raise SystemExit("the session never searched with vectors through the shared process")
        alone = dict(env, AGENTMEM_SHARED_EMBEDDER="0")
        for n in range(searches):
            query = QUERIES[n % len(QUERIES)]
            for mode in runs:
                if mode == "python":
                    started = time.perf_counter()
                    subprocess.run([sys.executable, "-c", "pass"], env=env, cwd=repo, check=True)
                    runs[mode].append((time.perf_counter() - started, None))
                    continue
                elapsed, rss, answer = await anyio.to_thread.run_sync(run_search, env if mode == "shared" else alone,
                                                                      repo, query)
                assert answer["mode"] == "hybrid", answer
                runs[mode].append((elapsed, rss))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--searches", type=int, default=30, help="runs of the command in each mode")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    machine = describe_machine()
    with tempfile.TemporaryDirectory(prefix="agentmem-bench-cli-") as scratch:
        home, repo = Path(scratch) / "home", Path(scratch) / "project"
        (repo / ".git").mkdir(parents=True)
        model = args.model.resolve()
        settings = load_settings(env={}, home=home, embed_model_path=model)
        embedder = Embedder(MODEL_NAME, model)
        if not embedder.load():
            raise SystemExit(f"the model cannot load: {embedder.error}")
        with Store.open(settings, project=str(repo), embedder=embedder) as store:
            build(store, args.memories, seed=7, synthetic_vectors=True)
        env = clean_env()
        env.update(AGENTMEM_HOME=str(home), AGENTMEM_EMBED_MODEL_PATH=str(model))
        runs = anyio.run(measure, env, repo, args.searches)
        deadline = time.monotonic() + 60  # the shared process leaves 5 s after the session: then the home can go
        while processes_of(home) and time.monotonic() < deadline:
            time.sleep(0.5)
    report = {"date": utc_now(), "machine": machine,
              "load_after": describe_machine().split("load average ")[-1], "memories": args.memories,
              "searches": args.searches,
              "command": "python scripts/bench_cli_search.py " + " ".join(sys.argv[1:])}
    for mode, values in runs.items():
        times = [t * 1000 for t, _ in values]
        report[mode] = {"p50_ms": round(percentile(times, 0.5), 1), "p90_ms": round(percentile(times, 0.9), 1),
                        "rss_mb": round(statistics.median(r for _, r in values), 1) if values[0][1] else None}
    report["python"].pop("rss_mb")
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
