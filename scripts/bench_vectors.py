"""Benchmark the vector retriever's KNN alone on a KNN table of a million codes: vec0's exhaustive scan against
this process's copy of the codes (index/codes.py), one pass and two passes.

    python scripts/bench_vectors.py [--chunks 1000000] [--queries 60] [--dir DIR]

Builds (or, with --dir, reuses) a database holding only what `vectors.knn` reads: `memory_chunks` rows (one
chunk a memory, float32 vector) and their binary codes in the vec0 table, written with SQL in batches
(vec_quantize_binary in SQLite). The vectors are synthetic: random unit vectors, and a tenth of them in
tight groups of ten around a random centre (cosine ~0.8 to it), so that some queries have close neighbours.
Queries: half random unit vectors (no close neighbour: the binary codes' worst case), half near a group's
centre. For each query, every scan in turn (rotating which goes first): time, the share of vec0's top 60
memories it returns, and the share of the 60 nearest chunks by exact cosine (numpy over every vector) among
the candidates it re-scores. Also the copy's first load and the process's RSS before and after it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from harness import describe_machine, rss_mb, scratch_dir, summary, utc_now, write_json

from agentmem_mcp.db import vectors as vector_rows
from agentmem_mcp.db.connection import connect, write_transaction
from agentmem_mcp.db.migrations import migrate
from agentmem_mcp.index import codes, vectors

DIMENSION = 384
PROJECT = "/bench/project"
SCANS = ("vec0", "codes", "codes, one pass", "codes, two passes")
K = 60


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def corpus(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = unit(rng.standard_normal((count, DIMENSION), dtype=np.float32))
    grouped = count // 10 // 10 * 10
    centres = unit(rng.standard_normal((grouped // 10, DIMENSION), dtype=np.float32))
    around = np.repeat(centres, 10, axis=0) + 0.5 / np.sqrt(DIMENSION) * rng.standard_normal(
        (grouped, DIMENSION), dtype=np.float32) * 1.0
    matrix[:grouped] = unit(around)
    return matrix


def build(path: Path, count: int, seed: int, batch: int = 20000) -> None:
    conn = connect(path)
    migrate(conn)
    with write_transaction(conn):
        vector_rows.ensure_table(conn, "bench", DIMENSION)
    done = conn.execute("SELECT COUNT(*) FROM memory_chunks").fetchone()[0]
    if done >= count:
        conn.close()
        return
    matrix = corpus(count, seed)
    started = time.perf_counter()
    for start in range(done, count, batch):
        rows = [(f"m_{n:016x}", 0, f"chunk {n}", matrix[n].tobytes()) for n in range(start, min(count, start + batch))]
        with write_transaction(conn):
            first = conn.execute("SELECT COALESCE(MAX(id), 0) FROM memory_chunks").fetchone()[0]
            conn.executemany("INSERT INTO memory_chunks (memory_id, chunk_index, text, embedding) VALUES (?, ?, ?, ?)",
                             rows)
            conn.execute(f"INSERT INTO {vectors.TABLE} (chunk_id, project, latest, embedding) "
                         f"SELECT id, ?, 1, vec_quantize_binary(embedding) FROM memory_chunks WHERE id > ?",
                         (PROJECT, first))
        rate = (start + len(rows) - done) / (time.perf_counter() - started)
        print(f"  {start + len(rows):,}/{count:,} chunks ({rate:,.0f}/s)", file=sys.stderr, flush=True)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=60, help="queries in all (half random, half near a group)")
    parser.add_argument("--dir", type=Path, help="build the database here and keep it (default: a temporary one)")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    command = "python scripts/bench_vectors.py " + " ".join(argv if argv is not None else sys.argv[1:])
    results: dict = {"date": utc_now(), "machine": describe_machine(),
                     "command": command}
    with scratch_dir("agentmem-bench-vectors-", keep=args.dir) as home:
        path = home / f"vectors-{args.chunks}.db"
        started = time.perf_counter()
        build(path, args.chunks, args.seed)
        results["build_s"] = round(time.perf_counter() - started, 1)
        matrix = corpus(args.chunks, args.seed)
        ids = np.arange(1, args.chunks + 1)  # chunk ids in insertion order
        rng = np.random.default_rng(args.seed + 1)
        grouped = args.chunks // 10 // 10 * 10
        half = args.queries // 2
        near = matrix[rng.choice(grouped, size=args.queries - half, replace=False)]
        queries = list(unit(rng.standard_normal((half, DIMENSION), dtype=np.float32))) + list(unit(
            near + 0.3 / np.sqrt(DIMENSION) * rng.standard_normal(near.shape, dtype=np.float32)))
        conn = connect(path)
        before = rss_mb()
        started = time.perf_counter()
        assert codes.nearest(conn, vectors.TABLE, DIMENSION, bytes(DIMENSION // 8), 1, None, False) is not None
        results["copy_load_ms"] = round((time.perf_counter() - started) * 1000, 1)
        results["rss_mb_before_copy"], results["rss_mb_after_copy"] = round(before, 1), round(rss_mb(), 1)
        where = {"projects": [PROJECT, None], "latest_only": True}
        count = max(vectors.MIN_CANDIDATES, K * vectors.CANDIDATES_PER_RESULT)
        for label, chosen in (("random queries", queries[:half]), ("queries near a group", queries[half:])):
            timings = {scan: [] for scan in SCANS}
            found = dict.fromkeys(SCANS, 0)
            exact_in = dict.fromkeys(SCANS, 0)
            expected = 0
            for n, query in enumerate(chosen):
                exact = set(ids[np.argpartition(-(matrix @ query), K)[:K]].tolist())
                answers = {}
                for scan in SCANS[n % len(SCANS):] + SCANS[:n % len(SCANS)]:
                    started = time.perf_counter()
                    answers[scan] = vectors.knn(conn, query, k=K, scan=scan, **where)
                    timings[scan].append((time.perf_counter() - started) * 1000)
                    exact_in[scan] += len(exact & set(vectors.nearest_chunks(conn, query, count=count, scan=scan,
                                                                             **where)))
                reference = {m for m, _ in answers["vec0"]}
                expected += len(reference)
                for scan in SCANS:
                    found[scan] += len(reference & {m for m, _ in answers[scan]})
            results[label] = {scan: summary(timings[scan], with_max=False) | {
                "recall_of_vec0_top60": round(found[scan] / max(1, expected), 4),
                "exact_top60_in_candidates": round(exact_in[scan] / max(1, K * len(chosen)), 4)} for scan in SCANS}
        conn.close()
    print(json.dumps(results, indent=1))
    print(f"\n{results['date']} | {results['machine']}\n{results['command']}")
    print(f"{args.chunks:,} codes: the copy loaded in {results['copy_load_ms']} ms; RSS {results['rss_mb_before_copy']}"
          f" -> {results['rss_mb_after_copy']} MB")
    for label in ("random queries", "queries near a group"):
        for scan, row in results[label].items():
            print(f"{label:>21}, {scan:>17}: p50 {row['p50_ms']:>8} ms, p95 {row['p95_ms']:>8} ms, vec0's top 60: "
                  f"{row['recall_of_vec0_top60']:.1%}, exact top 60 in candidates: "
                  f"{row['exact_top60_in_candidates']:.1%}")
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
