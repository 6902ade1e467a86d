"""What forgetting for good costs: save and forget with SQLite's secure_delete on (agentmem's setting) and off,
and the erasure after an explicit forget (BM25 index rebuilt from SQLite, WAL checkpointed and truncated).

    python scripts/bench_erase.py [--memories 2000] [--forget 50] [--runs 5]

Each run builds a fresh store of `--memories` memories (no vectors: the cost measured is SQLite's and tantivy's),
then times `--forget` single saves, `--forget` forgets by id (SQLite; BM25 is updated by the indexer thread),
and one `erase_forgotten`. Runs alternate between
secure_delete ON and OFF; medians over the runs are printed (per operation, in ms).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_core import memory_text  # noqa: E402
from machine import describe_machine  # noqa: E402

from agentmem_mcp.config import load_settings  # noqa: E402
from agentmem_mcp.maintenance import erase_forgotten  # noqa: E402
from agentmem_mcp.models import NotFound  # noqa: E402
from agentmem_mcp.store import Store  # noqa: E402


def one_run(memories: int, forget: int, secure: bool, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="agentmem-erase-") as tmp:
        settings = load_settings(env={}, home=Path(tmp) / "home", embeddings=False)
        with Store.open(settings, project="/bench/project", load_embedder=False) as store:
            store.conn.execute(f"PRAGMA secure_delete = {'ON' if secure else 'OFF'}")
            for start in range(0, memories, 500):
                store.save_many([{"content": memory_text(rng, n)["content"]}
                                 for n in range(start, min(start + 500, memories))])
            began = time.perf_counter()
            saved = [store.save(f"Erase probe {seed}-{n}: " + memory_text(rng, memories + n)["content"]).id
                     for n in range(forget)]
            saved = list(dict.fromkeys(saved))  # a save may have superseded the one before it
            save_ms = (time.perf_counter() - began) * 1000 / forget
            began = time.perf_counter()
            for memory_id in saved:
                try:
                    store.forget(ids=[memory_id], reason="bench")
                except NotFound:  # a version of a memory already forgotten with its chain
                    pass
            forget_ms = (time.perf_counter() - began) * 1000 / len(saved)
            store.flush()
            began = time.perf_counter()
            erase_forgotten(store)
            erase_ms = (time.perf_counter() - began) * 1000
    return {"save": save_ms, "forget": forget_ms, "erase": erase_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--forget", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(describe_machine())
    results: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for run in range(args.runs):
        for secure in (True, False):
            results[secure].append(one_run(args.memories, args.forget, secure, run))
    print(f"{args.memories} memories, {args.forget} saves then {args.forget} forgets by id, {args.runs} runs each")
    for secure in (True, False):
        rows = results[secure]
        figures = ", ".join(f"{name} {statistics.median(r[name] for r in rows):.2f} ms" for name in rows[0])
        print(f"secure_delete {'ON ' if secure else 'OFF'}: {figures} (median; save and forget per call, erase once)")


if __name__ == "__main__":
    main()
