"""Search of two installs on one home, queries alternated: latency of each and whether they rank alike.

    python scripts/compare_search.py --home DIR --baseline-python OTHER/.venv/bin/python [--queries 400]

Each install's python runs a small search loop on the same home (opened for `--project`, access not recorded,
so neither writes); every query goes to both, in alternating order, so a load change hits both alike. For a
refactor that must not change behaviour: the top-5 ids and scores should agree on every query, and the
latencies within noise. The home must exist (e.g. one `scripts/bench_core.py` builds and keeps, or a copy of
a real one)."""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

LOOP = r'''
import json, sys, time
from agentmem_mcp.config import load_settings
from agentmem_mcp.store import Store
store = Store.open(load_settings(), project=sys.argv[1] or None)
print("ready", flush=True)
for line in sys.stdin:
    started = time.perf_counter()
    hits = store.search(line.strip(), record_access=False).hits[:5]
    print(json.dumps([(time.perf_counter() - started) * 1000, [[h.id, h.score] for h in hits]]), flush=True)
store.close()
'''
WORDS = ("deploy cluster redis port billing retries lint commit tests docker cache index search memory worker hook "
         "config release migration database schema").split()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--baseline-python", required=True, help="the other install's python")
    parser.add_argument("--project", default="/bench")
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    env = {**os.environ, "AGENTMEM_HOME": str(args.home)}
    loops = {}
    for name, python in (("baseline", args.baseline_python), ("this", sys.executable)):
        loops[name] = subprocess.Popen([python, "-c", LOOP, args.project], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True, env=env, cwd="/")
        if loops[name].stdout.readline().strip() != "ready":
            raise SystemExit(f"the {name} install did not open the home")
    rng = random.Random(7)
    times: dict[str, list[float]] = {name: [] for name in loops}
    alike = 0
    for n in range(args.queries):
        query = " ".join(rng.sample(WORDS, 3))
        ranked = {}
        for name in (("baseline", "this") if n % 2 == 0 else ("this", "baseline")):
            loops[name].stdin.write(query + "\n")
            loops[name].stdin.flush()
            elapsed, ranked[name] = json.loads(loops[name].stdout.readline())
            times[name].append(elapsed)
        alike += ranked["baseline"] == ranked["this"]
    for loop in loops.values():
        loop.stdin.close()
        loop.wait()
    for name, values in times.items():
        print(f"{name}: search p50 {percentile(values, 0.5):.2f} ms, p95 {percentile(values, 0.95):.2f} ms")
    print(f"same top-5 ids and scores: {alike} of {args.queries} queries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
