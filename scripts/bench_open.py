"""What a process pays to open a store and answer its first searches, from a cold and a warm page cache.

    python scripts/bench_open.py HOME [--rounds 3] [--model-path PATH] [--json OUT]

HOME is an agentmem home (e.g. one `scripts/bench_core.py --store DIR` kept: DIR/<size>). Each round runs two
fresh processes in turn: the first after the home's own files were dropped from the OS page cache
(`posix_fadvise(POSIX_FADV_DONTNEED)` on each file of HOME, nothing else on the machine), the second right after
it (warm). Each process loads the model, opens the store (`Store.open`: migrations, the vector backfill's
checks, the indexes) and runs two searches; it reports the seconds of each step. A migration not yet applied to
HOME runs in the first process: its time shows as that process's open, which is reported apart.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from harness import REPO, clean_env, default_model, describe_machine, utc_now, write_json

QUERIES = ("how do we deploy the release pipeline", "which database migration failed last week")

CHILD = """
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
from agentmem_mcp.config import load_settings
from agentmem_mcp.index.embedder import Embedder
from agentmem_mcp.store import Store
home, model_path, queries = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
embedder = Embedder("sentence-transformers/all-MiniLM-L6-v2", model_path)
if not embedder.load():
    raise SystemExit(f"cannot load the model: {embedder.error}")
t1 = time.perf_counter()
with Store.open(load_settings(env={}, home=home, embed_model_path=model_path), embedder=embedder) as store:
    t2 = time.perf_counter()
    times = []
    for query in queries:
        started = time.perf_counter()
        store.search(query, limit=5)
        times.append(time.perf_counter() - started)
print(json.dumps({"model_s": t1 - t0, "open_s": t2 - t1, "first_search_s": times[0], "second_search_s": times[1]}))
"""


def evict(home: Path) -> int:
    """Drop the home's files from the page cache; how many files."""
    count = 0
    for root, _, files in os.walk(home):
        for name in files:
            try:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                count += 1
            finally:
                os.close(fd)
    return count


def one(home: Path, model_path: Path) -> dict[str, float]:
    env = clean_env()
    done = subprocess.run([sys.executable, "-c", CHILD, str(home), str(model_path), json.dumps(QUERIES)],
                          cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the measured process failed:\n{done.stderr[-2000:]}")
    return {k: round(v, 3) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("home", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model-path", type=Path,
                        default=default_model())
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    home = args.home.resolve()
    if not (home / "agentmem.db").is_file():
        raise SystemExit(f"no agentmem.db in {home}")
    if not args.model_path.exists():
        raise SystemExit(f"no embedding model at {args.model_path}: pass --model-path")
    report = {"date": utc_now(), "machine": describe_machine(),
              "command": "python scripts/bench_open.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "home": str(home), "rounds": []}
    for _ in range(args.rounds):
        evict(home)
        cold = one(home, args.model_path)
        warm = one(home, args.model_path)
        report["rounds"].append({"cold": cold, "warm": warm})
    medians = {}
    for state in ("cold", "warm"):
        for key in ("model_s", "open_s", "first_search_s", "second_search_s"):
            medians[f"{state}_{key}"] = round(statistics.median(r[state][key] for r in report["rounds"]), 3)
    report["medians"] = medians
    print(f"{report['date']} | {report['machine']}\n{report['command']}")
    print(" round | cold: open / first search / second | warm: open / first search / second  (s)")
    for n, r in enumerate(report["rounds"], start=1):
        c, w = r["cold"], r["warm"]
        print(f" {n:5d} | {c['open_s']:.2f} / {c['first_search_s']:.2f} / {c['second_search_s']:.3f}"
              f"          | {w['open_s']:.2f} / {w['first_search_s']:.2f} / {w['second_search_s']:.3f}")
    print(" median | " + ", ".join(f"{k} {v}" for k, v in medians.items()))
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
