"""A save's BM25 supersede candidates with and without leaving out the words nearly every memory holds.

    python scripts/check_save_candidates.py --home /tmp/million/store/1000000 [--drafts 100] [--project P]
        [--share S]

On a store (a bench store of scripts/bench_core.py, or any home), generates drafts the way bench_core's timed saves
do (`memory_text`), validates each as a save would, and looks up its BM25 candidates (`remember._text_candidates`)
twice, in turn: with the words held by over `remember.COMMON_WORDS` of the indexed memories left out of the query
(what saves do) and with every word, or, with --share S, with the words held by over S of them left out. Reports how
many drafts get the same candidates in the same order, the share of the candidates both lookups find, and the CPU
time of each lookup (p50, this thread). Reads only: nothing is saved.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_core import memory_text  # noqa: E402
from machine import describe_machine  # noqa: E402

from agentmem_mcp.config import load_settings  # noqa: E402
from agentmem_mcp.lifecycle import remember  # noqa: E402
from agentmem_mcp.store import Store  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="the store's home (e.g. a bench_core --store size)")
    parser.add_argument("--drafts", type=int, default=100)
    parser.add_argument("--project", default="/bench/project")
    parser.add_argument("--share", type=float, default=None,
                        help="the other lookup leaves out the words over this share of memories hold (default: none)")
    args = parser.parse_args(argv)
    if not (args.home / "agentmem.db").is_file():
        parser.error(f"no agentmem.db in {args.home}")
    settings = load_settings(env={"AGENTMEM_EMBEDDINGS": "0"}, home=args.home)
    rng = random.Random(11)
    common = remember.COMMON_WORDS
    other = "every word" if args.share is None else f"without words over {args.share:g} of memories hold"
    same, shared, cpu = 0, [], {"without common words": [], other: []}
    with Store.open(settings, project=args.project) as store:
        total = store.fulltext._searcher().num_docs
        for n in range(args.drafts):
            item = memory_text(rng, 80_000_000 + 21 * n)
            draft = remember.SaveRequest(**{"project": None, **item}).draft(store.project, store.now())
            found = {}
            for label, share in (("without common words", common), (other, args.share)):
                remember.COMMON_WORDS = share
                started = time.thread_time()
                found[label] = remember._text_candidates(store, draft)
                cpu[label].append((time.thread_time() - started) * 1000)
            remember.COMMON_WORDS = common
            same += found["without common words"] == found[other]
            if found["without common words"]:
                shared.append(len(set(found["without common words"]) & set(found[other]))
                              / len(found["without common words"]))
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} | {describe_machine()}")
    print(f"python scripts/check_save_candidates.py {' '.join(sys.argv[1:])}")
    print(f"{total:,} indexed memories; {args.drafts} drafts: the same candidates in the same order for {same}; "
          f"candidates found by both: {statistics.mean(shared) if shared else 1:.2f} of the shipped lookup's (mean)")
    for label, values in cpu.items():
        print(f"  lookup {label}: CPU p50 {statistics.median(values):.2f} ms, p95 "
              f"{sorted(values)[int(0.95 * (len(values) - 1))]:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
