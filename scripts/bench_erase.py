"""What forgetting for good costs: save and forget with SQLite's secure_delete on (agentmem's setting) and off,
and the erasure after an explicit forget (BM25 index written anew from SQLite in one commit, WAL checkpointed and
truncated).

    python scripts/bench_erase.py [--memories 2000] [--forget 50] [--runs 5] [--vector-memories 300]
                                  [--model-path DIR]

Each run builds a fresh store of `--memories` memories (no vectors: the cost measured is SQLite's and tantivy's),
then times `--forget` single saves, `--forget` forgets by id (SQLite; BM25 is updated by the indexer thread),
and one `erase_forgotten`. Runs alternate between
secure_delete ON and OFF; medians over the runs are printed (per operation, in ms).

Then, once per run, the forgetting sweep: `--forget` memories whose time to live ran out among `--memories`, swept
and timed; then the erasure the sweep asked for (`Store.erase_soon`, which a server runs on its indexer thread),
timed as it runs.

With --model-path (the embedding model), a store of `--vector-memories` memories with real vectors: `--forget`
forgets by id timed, then an erasure, then every file under the home searched for each forgotten memory's float32
chunk vectors and sqlite-vec binary codes (what sqlite-vec's DELETE does to its chunk blobs).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from bench_store import memory_text
from harness import describe_machine

from agentmem_mcp.config import load_settings
from agentmem_mcp.lifecycle.sweep import SweepRequest, sweep
from agentmem_mcp.models import NotFound
from agentmem_mcp.store import Store
from agentmem_mcp.upkeep.maintenance import erase_forgotten


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


def sweep_run(memories: int, forget: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="agentmem-erase-") as tmp:
        settings = load_settings(env={}, home=Path(tmp) / "home", embeddings=False)
        with Store.open(settings, project="/bench/project", load_embedder=False) as store:
            items = [{"content": memory_text(rng, n)["content"]} for n in range(memories)]
            for n in rng.sample(range(memories), forget):
                items[n]["ttl_days"] = 1 / 86400
            for start in range(0, memories, 500):
                store.save_many(items[start:start + 500], supersede_check=False)
            store.flush()
            time.sleep(1.1)  # the time to live runs out
            store.sync_index = True  # the erasure runs in this thread, when the sweep asks for it
            began = time.perf_counter()
            report = sweep(store, SweepRequest(threshold=1.0))
            sweep_ms = (time.perf_counter() - began) * 1000
            assert len(report.expired) == forget, report.summary()
            store.sync_index = False
            began = time.perf_counter()
            erase_forgotten(store)
            erase_ms = (time.perf_counter() - began) * 1000
    return {"sweep and its erasure": sweep_ms, "an erasure alone": erase_ms}


def vector_run(model_path: Path, memories: int, forget: int, seed: int) -> dict[str, float]:
    from agentmem_mcp.index.embedder import Embedder

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="agentmem-erase-") as tmp:
        home = Path(tmp) / "home"
        settings = load_settings(env={}, home=home, embed_model_path=model_path)
        embedder = Embedder(settings.embed_model, model_path)
        assert embedder.load(), embedder.error
        with Store.open(settings, project="/bench/project", embedder=embedder) as store:
            saved = store.save_many([{"content": f"Vector probe {seed}-{n}: " + memory_text(rng, n)["content"]}
                                     for n in range(memories)], supersede_check=False)
            doomed = [result.id for result in rng.sample(saved, forget)]
            probes = [bytes(blob) for memory_id in doomed for row in store.conn.execute(
                "SELECT embedding, vec_quantize_binary(embedding) FROM memory_chunks WHERE memory_id = ?",
                (memory_id,)) for blob in (row[0][:64], row[1])]
            began = time.perf_counter()
            for memory_id in doomed:
                store.forget(ids=[memory_id], reason="bench")
            forget_ms = (time.perf_counter() - began) * 1000 / forget
            store.flush()
            erase_forgotten(store)
            files = [p.read_bytes() for p in home.rglob("*") if p.is_file()]
            left = sum(1 for probe in probes if any(probe in data for data in files))
    return {"forget by id with vectors": forget_ms, "vector blobs found after": float(left),
            "vector blobs looked for": float(len(probes))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--forget", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--vector-memories", type=int, default=300)
    parser.add_argument("--model-path", type=Path, help="the embedding model: also measure forgetting vectors")
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
    swept = [sweep_run(args.memories, args.forget, run) for run in range(args.runs)]
    print(f"sweep of {args.memories} memories, {args.forget} of them expired: " + ", ".join(
        f"{name} {statistics.median(r[name] for r in swept):.2f} ms" for name in swept[0]) + " (median)")
    if args.model_path:
        found = [vector_run(args.model_path, args.vector_memories, min(args.forget, args.vector_memories), run)
                 for run in range(args.runs)]
        print(f"{args.vector_memories} memories with vectors: forget by id with vectors "
              f"{statistics.median(r['forget by id with vectors'] for r in found):.2f} ms per call (median); "
              f"forgotten vector blobs still in a file: {sum(r['vector blobs found after'] for r in found):.0f} of "
              f"{sum(r['vector blobs looked for'] for r in found):.0f}")


if __name__ == "__main__":
    main()
