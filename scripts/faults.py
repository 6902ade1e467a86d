"""Fault injection: real `agentmem serve` processes (over MCP stdio), real hooks, a real home on disk.

    python scripts/faults.py [--only NAME ...] [--observations 500] [--model-path PATH] [--json OUT]

Each scenario gets a fresh home seeded with memories, one of them forgotten, then suffers its fault:

  kill9-save          serve killed -9 inside a memory_save's write transaction (pause point audit:save)
  kill9-index-commit  serve killed -9 with tantivy documents written but not committed (index-commit), after
                      a save and a forget were acknowledged
  kill9-worker-batch  serve killed -9 inside its worker's batch transaction, with hook observations claimed
  stale-lease         a worker lease and claimed observations left by a process that no longer exists
  index-deleted       the tantivy directory deleted under a running server, then a restart
  segment-corrupted   bytes overwritten in the middle of every tantivy segment file, then a restart
  term-dict-corrupted bytes inverted in the term dictionaries only: not noticed at open, found by a search
  disk-full           the home on a small tmpfs filled up: saves, searches and hooks while full, then space back
  db-locked           another process holds SQLite's write lock for 10 s: search, save and a hook meanwhile
  kill9-shared-save   the user's shared process, which serves the relayed session, killed -9 inside a save: the
                      pending call fails clearly, the session goes on in its own process, the next session recovers

The first nine run `serve` as the session's own server (AGENTMEM_SHARED_SERVER=0), so the process killed at a pause
point is the one the client started; the last runs the default, a relay to the user's shared process (runtime/relay.py).

and is then checked: the agent got a clear error or an answer, never a hang; the next server start recovers
(recovery time: its spawn to the first search that finds every kept memory); every acknowledged memory is
still there and found, no forgotten one comes back (SQLite, tantivy, search, memory_get); the outbox is
drained, `agentmem doctor` passes, `agentmem audit --verify` passes, files are 0600 and directories 0700,
and no process of the run listens on a socket. Kills use pause points (agentmem_mcp/db/pausepoint.py): the
process sleeps at a named place and the script kills it there. Exits 1 when a scenario fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from fault_run import Run
from faults_kill import kill9_index_commit, kill9_save, kill9_shared_save, kill9_worker_batch, stale_lease
from faults_storage import db_locked, disk_full, index_deleted, segment_corrupted, term_dict_corrupted
from harness import MODEL_NAME, default_model, describe_machine, utc_now, write_json
from live_processes import kill9, processes_of

from agentmem_mcp.index.embedder import Embedder

# -- the scenarios -------------------------------------------------------------------------------------------


SCENARIOS: dict[str, Callable[..., Awaitable[str | None]]] = {
    "kill9-save": kill9_save,
    "kill9-index-commit": kill9_index_commit,
    "kill9-worker-batch": kill9_worker_batch,
    "stale-lease": stale_lease,
    "index-deleted": index_deleted,
    "segment-corrupted": segment_corrupted,
    "term-dict-corrupted": term_dict_corrupted,
    "disk-full": disk_full,
    "db-locked": db_locked,
    "kill9-shared-save": kill9_shared_save,
}


def run_scenario(name: str, root: Path, model_path: Path, embedder: Embedder, observations: int) -> dict[str, Any]:
    run = Run(name, root / name, model_path, embedder)
    started = time.monotonic()
    scenario = SCENARIOS[name]
    needs_count = name in ("kill9-worker-batch", "stale-lease")
    try:
        skipped = anyio.run(scenario, run, observations) if needs_count else anyio.run(scenario, run)
        status, error = ("SKIP", skipped) if skipped else ("PASS", None)
    except Exception as exc:
        status, error = "FAIL", f"{type(exc).__name__}: {exc}"
        if os.environ.get("FAULTS_TRACEBACK"):
            import traceback

            traceback.print_exc()
    finally:
        for pid in processes_of(run.home):
            kill9(pid)
    return {"scenario": name, "status": status, "error": error, "checked": run.checked,
            "recovery_s": run.recovery_s, "seconds": round(time.monotonic() - started, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=list(SCENARIOS), help="run only these scenarios")
    parser.add_argument("--observations", type=int, default=500,
                        help="hook events recorded before the worker scenarios")
    parser.add_argument("--model-path", type=Path,
                        default=default_model())
    parser.add_argument("--keep", action="store_true", help="keep the scenario homes")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    model_path = args.model_path.resolve()
    if not model_path.exists():
        raise SystemExit(f"no embedding model at {model_path}: pass --model-path")
    embedder = Embedder(MODEL_NAME, model_path)
    if not embedder.load():
        raise SystemExit(f"cannot load the embedding model: {embedder.error}")
    root = Path(tempfile.mkdtemp(prefix="agentmem-faults-"))
    report: dict[str, Any] = {
        "date": utc_now(), "machine": describe_machine(),
        "command": "python scripts/faults.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "scenarios": []}
    for name in args.only or SCENARIOS:
        result = run_scenario(name, root, model_path, embedder, args.observations)
        report["scenarios"].append(result)
        recovery = f", recovered in {result['recovery_s']} s" if result["recovery_s"] is not None else ""
        print(f"{result['status']} {name} ({result['seconds']} s{recovery})", file=sys.stderr)
        for line in result["checked"]:
            print(f"     - {line}", file=sys.stderr)
        if result["error"]:
            print(f"     ! {result['error']}", file=sys.stderr)
    report["ok"] = all(r["status"] != "FAIL" for r in report["scenarios"])
    print(json.dumps(report, indent=2))
    write_json(args.json, report)
    if report["ok"] and not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"homes kept in {root}", file=sys.stderr)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
