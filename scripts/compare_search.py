"""Search of two installs on one home, queries alternated: latency of each and whether they rank alike.

    python scripts/compare_search.py --home DIR --baseline-python OTHER/.venv/bin/python [--queries 400]
    python scripts/compare_search.py --home DIR --baseline-python OTHER/.venv/bin/python --exact [--rounds 2]

Each install's python runs a small search loop on the same home (opened for `--project`, access not recorded,
so neither writes); every query goes to both, in alternating order, so a load change hits both alike. For a
refactor that must not change behaviour: the top-5 ids and scores should agree on every query, and the
latencies within noise. The home must exist (e.g. one `scripts/bench_core.py` builds and keeps, or a copy of
a real one).

--exact: for a change that must not change any answer. Each install searches its own copy of the home with the
accesses recorded (as an agent's searches are: each changes the next one's ranking) on the same clock (a second
a search), the same queries in the same order (the bench's 15, the 48 paraphrase questions, then `--queries` of
three random words, all asked `--rounds` times, so the second round finds the query vectors cached), and every
hit must agree: id, title, score, snippet and `why`."""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
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
EXACT_LOOP = r'''
import json, sys, time
from agentmem_mcp.config import load_settings
from agentmem_mcp.store import Store
store = Store.open(load_settings(), project=sys.argv[1] or None)
clock = [float(sys.argv[2])]
store.now = lambda: clock[0]  # the same clock in both installs: retention is a function of time
print("ready", flush=True)
for line in sys.stdin:
    clock[0] += 1.0
    started = time.perf_counter()
    hits = store.search(line.strip(), limit=10).hits
    elapsed = (time.perf_counter() - started) * 1000
    print(json.dumps([elapsed, [[h.id, h.title, h.score, h.snippet, h.why] for h in hits]]), flush=True)
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
    parser.add_argument("--exact", action="store_true", help="every hit's id, title, score, snippet and why, "
                        "accesses recorded, each install on its own copy of the home")
    parser.add_argument("--rounds", type=int, default=2, help="with --exact: times each query is asked")
    args = parser.parse_args()
    if args.exact:
        return exact(args)
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


def exact(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from bench_paraphrases import PARAPHRASES
    from bench_store import QUERIES

    rng = random.Random(7)
    questions = [pair["query"] for pair in json.loads(PARAPHRASES.read_text())["pairs"]]
    asked = [*QUERIES, *questions, *(" ".join(rng.sample(WORDS, 3)) for _ in range(args.queries))] * args.rounds
    start = time.time()
    with tempfile.TemporaryDirectory() as scratch:
        loops = {}
        for name, python in (("baseline", args.baseline_python), ("this", sys.executable)):
            home = Path(scratch) / name
            shutil.copytree(args.home, home)
            loops[name] = subprocess.Popen([python, "-c", EXACT_LOOP, args.project, str(start)], stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, text=True, cwd="/",
                                           env={**os.environ, "AGENTMEM_HOME": str(home)})
            if loops[name].stdout.readline().strip() != "ready":
                raise SystemExit(f"the {name} install did not open the home")
        times: dict[str, list[float]] = {name: [] for name in loops}
        differ = []
        for n, query in enumerate(asked):
            answers = {}
            for name in (("baseline", "this") if n % 2 == 0 else ("this", "baseline")):
                loops[name].stdin.write(query + "\n")
                loops[name].stdin.flush()
                elapsed, answers[name] = json.loads(loops[name].stdout.readline())
                times[name].append(elapsed)
            if answers["baseline"] != answers["this"]:
                differ.append((n, query, answers))
        for loop in loops.values():
            loop.stdin.close()
            loop.wait()
    once = len(asked) // args.rounds
    for name, values in times.items():
        again = values[once:]
        print(f"{name}: search p50 {percentile(values, 0.5):.2f} ms, p95 {percentile(values, 0.95):.2f} ms; "
              + (f"asked before (query vector cached) p50 {percentile(again, 0.5):.2f} ms, p95 "
                 f"{percentile(again, 0.95):.2f} ms" if again else ""))
    print(f"same hits (id, title, score, snippet, why): {len(asked) - len(differ)} of {len(asked)} searches")
    for n, query, answers in differ[:5]:
        pairs = [(rank, a, b) for rank, (a, b) in enumerate(zip(answers["baseline"], answers["this"])) if a != b]
        print(f"  #{n} {query!r}: {len(answers['baseline'])} against {len(answers['this'])} hits; first differing "
              f"rank {pairs[0][0] if pairs else min(len(answers['baseline']), len(answers['this']))}")
        for _, a, b in pairs[:2]:
            print(f"    baseline {a}\n    this     {b}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
