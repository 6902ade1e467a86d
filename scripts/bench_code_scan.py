"""Benchmark the code scan alone (index/codes.py `CodeMatrix.nearest`), on one thread against split over the scan
threads, the same queries in turn (alternating which goes first), with and without a project filter.

    python scripts/bench_code_scan.py [--codes 1000000] [--queries 200] [--projects 20] [--json OUT]

The codes are random 384-bit codes held in memory (no database: this times the scan, not vec0's storage), spread
over `--projects` projects, 90% of them latest; each query asks for the 48 nearest latest codes (a save's
supersede check) or the 160 nearest (a search's vector retriever), of all projects or of one project and the
global memories. Reports p50/p95 per setting, their ratio, and whether both settings return the same ids.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from harness import describe_machine, rank_percentile, utc_now

from agentmem_mcp.index import codes

WORDS = 6  # 384 bits


def build(count: int, projects: int, seed: int) -> codes.CodeMatrix:
    rng = np.random.default_rng(seed)
    matrix = codes.CodeMatrix("bench", WORDS)
    raw = rng.integers(0, 2**63, size=(count, WORDS), dtype=np.int64).view(np.uint64)
    numbers = rng.integers(0, projects, size=count).astype(np.int32)
    matrix._set(np.arange(1, count + 1, dtype=np.int64), raw, numbers, rng.random(count) < 0.9)
    matrix.projects = {f"/project/{n}": n for n in range(projects - 1)} | {"": projects - 1}
    return matrix


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--codes", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    threads = codes.SCAN_THREADS
    results: dict = {"date": utc_now(), "machine": describe_machine(),
                     "command": "python scripts/bench_code_scan.py " + " ".join(argv if argv is not None
                                                                              else sys.argv[1:]),
                     "codes": args.codes, "scan_threads": threads, "cases": {}}
    matrix = build(args.codes, args.projects, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    queries = rng.integers(0, 2**63, size=(args.queries, WORDS), dtype=np.int64).view(np.uint64)
    cases = {"save: 48 nearest, one project": (48, ["/project/3", ""]),
             "save: 48 nearest, every project": (48, None),
             "search: 160 nearest, one project": (160, ["/project/3", ""])}
    settings = {"1 thread": 1, f"{threads} threads": threads}
    try:
        for case, (count, projects) in cases.items():
            timings: dict[str, list[float]] = {label: [] for label in settings}
            same = 0
            for n, query in enumerate(queries):
                order = list(settings.items())
                answers = {}
                for label, value in (order if n % 2 else order[::-1]):
                    codes.SCAN_THREADS = value
                    started = time.perf_counter()
                    answers[label] = matrix.nearest(query.tobytes(), count, projects, True)
                    timings[label].append((time.perf_counter() - started) * 1000)
                same += len({tuple(found) for found in answers.values()}) == 1
            row = {label: {"p50_ms": round(statistics.median(values), 2),
                           "p95_ms": round(rank_percentile(values, 0.95), 2)} for label, values in timings.items()}
            one, many = (statistics.median(timings[label]) for label in settings)
            row["p50 ratio, 1 thread / split"] = round(one / many, 2)
            row["same ids"] = f"{same} of {len(queries)}"
            results["cases"][case] = row
            print(f"{case}: " + "; ".join(f"{label} p50 {v['p50_ms']} / p95 {v['p95_ms']} ms"
                                          for label, v in row.items() if isinstance(v, dict))
                  + f"; ratio {row['p50 ratio, 1 thread / split']}; same ids {row['same ids']}", flush=True)
    finally:
        codes.SCAN_THREADS = threads
    results["machine_after"] = describe_machine()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
