"""Every SQL statement one scripted use of a store runs: for a refactor that must not change the SQL.

    python scripts/sql_statements.py > after.txt
    OTHER/.venv/bin/python scripts/sql_statements.py > before.txt && diff before.txt after.txt

In a fresh temporary home (the embedding model as configured, e.g. AGENTMEM_EMBED_MODEL_PATH): saves in two projects
and four sessions (a supersede, a global memory, a TTL), the vector passes, searches, the briefing, prompt recall,
stats, listing, team memory's local sharing (a team URL is set, never reached), export, forget by id, by filter and by
session, a dry-run sweep, two sweeps a year later, reindex, doctor, purge, and an import into a second home. Prints
every distinct statement SQLite ran on any connection (as traced, white space folded, literals as ?) with how many
times, then the totals on stderr."""

from __future__ import annotations

import io
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import harness  # noqa: F401  (this checkout's package first on the import path)
import sqlean

from agentmem_mcp.config import load_settings
from agentmem_mcp.lifecycle.forget import ForgetRequest, forget, forget_session
from agentmem_mcp.lifecycle.sweep import SweepRequest, maybe_sweep, sweep
from agentmem_mcp.recall.briefing import session_context
from agentmem_mcp.recall.context import prompt_context
from agentmem_mcp.store import Store
from agentmem_mcp.team import sync as team_sync
from agentmem_mcp.upkeep.housekeeping import list_memories, purge_project
from agentmem_mcp.upkeep.maintenance import doctor, reindex
from agentmem_mcp.upkeep.transfer import export, import_

LITERAL = re.compile(r"'(?:[^']|'')*'|\bX'[0-9A-Fa-f]*'|(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?\b")


def traced(seen: Counter) -> None:
    """Every connection sqlean opens from now on counts its statements in `seen`."""
    connect = sqlean.connect

    def traced_connect(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(lambda sql: seen.update([LITERAL.sub("?", " ".join(sql.split()))]))
        return conn

    sqlean.connect = traced_connect


def use(home: Path) -> None:
    """The scripted use (see the module's docstring)."""
    settings = load_settings(home=str(home), team_url="postgresql://nobody@127.0.0.1:1/none")
    P, Q = "/work/proj-a", "/work/proj-b"
    with Store.open(settings, project=P, sync_index=True) as store:
        ids = []
        for i in range(24):
            text = f"Fact number {i}: the build uses make target build{i % 5} with flag -j{i % 3}; see src/mod{i}.py"
            r = store.save(text,
                           title=f"build fact {i}", type=("fact", "decision", "workflow")[i % 3],
                           tier=("semantic", "procedural", "episodic")[i % 3], session_id=f"s{i % 4}",
                           project=P if i % 6 else None, importance=(i % 10) / 10, ttl_days=0.001 if i == 7 else None)
            ids.append(r.id)
        store.save("We use pnpm for installs in this repository, decided in review.", title="package manager",
                   type="decision", project=P, session_id="s1")
        store.save("We use yarn for installs in this repository, decided in review.", title="package manager",
                   type="decision", project=P, session_id="s2")
        store.save("Deploy with kubectl apply -f deploy/ on the staging cluster.", project=Q, session_id="s9")
        store.embed_pending()
        store.add_sentence_pieces()
        store.add_word_vectors()
        for q in ("how do I build", "package manager", "deploy staging", "src/mod3.py flag"):
            store.search(q)
        session_context(store.conn, P, 1500, now=store.now())
        prompt_context(store.conn, store.fulltext, "which make target builds?", P, budget_tokens=300, min_score=0.1)
        store.stats()
        store.stats(all_projects=True)
        list_memories(store.conn, project=P)
        store.get(ids[3])
        store.history(ids[3])
        team_sync.share(store, ids[1])
        team_sync.reconcile(store)
        team_sync.project_keys(store)
        out = io.StringIO()
        export(store, out)
        forget(store, ForgetRequest(ids=[ids[2]], reason="trace"))
        forget(store, ForgetRequest(type="workflow", dry_run=True))
        forget_session(store, "s3", "trace", within=[P, None])
        sweep(store, SweepRequest(dry_run=True, now=store.now() + 400 * 86400))
        sweep(store, SweepRequest(now=store.now() + 400 * 86400, max_deletions=3))
        maybe_sweep(store, now=store.now() + 800 * 86400)
        reindex(store)
        doctor(store)
        purge_project(store, Q)
    with Store.open(load_settings(home=str(home / "other")), project=P, sync_index=True) as other:
        import_(other, io.StringIO(out.getvalue()))


def main() -> int:
    seen: Counter = Counter()
    traced(seen)
    home = Path(tempfile.mkdtemp(prefix="agentmem-sql-"))
    try:
        use(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    for sql, n in sorted(seen.items()):
        print(n, sql)
    print(len(seen), "distinct statements", sum(seen.values()), "in all", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
