"""Spawn -> `initialize` answer of `agentmem serve`, as a client sees it, for one or more installs measured in turn.

    python scripts/bench_spawn.py --python A/bin/python [--python B/bin/python ...] [--starts 10] [--json OUT]

For each start and each interpreter in turn (so that the machine's load falls on all alike): a cold session (a fresh
home: nothing of agentmem runs; with relays, the shared process starts too), then, while it is open, a warm one (a
second session on the same home), each timed from the spawn of `python -m agentmem_mcp serve` with the MCP SDK's
client to the answer to `initialize`. Reports p50 / p95 / min of each, per interpreter. AGENTMEM_EMBED_MODEL_PATH must
name the local model (the model loads, as in use, though no search waits for it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from harness import clean_env, utc_now, write_json
from live_processes import shared_pids
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def _wait_gone(home: Path, timeout: float = 30.0) -> None:
    """Until no process serves `home` any more (a shared process leaves 5 s after its last session)."""
    deadline = time.monotonic() + timeout
    while shared_pids(home) and time.monotonic() < deadline:
        time.sleep(0.25)


async def _cold_and_warm(python: str, home: Path, project: Path) -> tuple[float, float]:
    env = clean_env()
    env.update(AGENTMEM_HOME=str(home), AGENTMEM_EMBED_MODEL_PATH=os.environ["AGENTMEM_EMBED_MODEL_PATH"])
    params = StdioServerParameters(command=python, args=["-m", "agentmem_mcp", "serve"], env=env, cwd=str(project))
    times = []
    spawned = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as cold:
        await cold.initialize()
        times.append((time.perf_counter() - spawned) * 1000)
        spawned = time.perf_counter()
        async with stdio_client(params) as (read2, write2), ClientSession(read2, write2) as warm:
            await warm.initialize()
            times.append((time.perf_counter() - spawned) * 1000)
    return times[0], times[1]


def _summary(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"n": len(values), "p50": round(statistics.median(values), 1),
            "p95": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 1),
            "min": round(ordered[0], 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", action="append", required=True, help="an interpreter with agentmem installed")
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    found: dict[str, dict[str, list[float]]] = {p: {"cold": [], "warm": []} for p in args.python}
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        (project / ".git").mkdir(parents=True)
        for n in range(args.starts):
            for python in args.python:
                home = Path(tmp) / f"home-{n}-{args.python.index(python)}"
                cold, warm = anyio.run(_cold_and_warm, python, home, project)
                found[python]["cold"].append(cold)
                found[python]["warm"].append(warm)
                print(f"{python}: cold {cold:.0f} ms, warm {warm:.0f} ms", file=sys.stderr, flush=True)
                _wait_gone(home)
    report = {"date": utc_now(),
              "results": {p: {kind: _summary(v) for kind, v in kinds.items()} for p, kinds in found.items()},
              "raw_ms": found}
    print(json.dumps(report, indent=2))
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
