"""Where a PostToolUse hook's time goes, step by step, in fresh processes.

    python scripts/profile_hook.py [--runs 20] [--json OUT]

Each run is a new interpreter that does what `agentmem hook PostToolUse` does (imports, settings, parsing,
project, redaction, SQLite) with a clock read between the steps; medians over the runs, in ms. Then the shell
wrapper: `sh hooks/run-hook.sh claude-code PostToolUse` (AGENTMEM_BIN set) against `agentmem hook PostToolUse`
itself, and bare `python -c pass`, interleaved. Run it with the interpreter of the install to profile.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import REPO, clean_env, describe_machine, utc_now, write_json

STEPS = r'''
import time
marks = [("start", time.perf_counter())]
def mark(name):
    marks.append((name, time.perf_counter()))
import re; mark("import re (the console script's)")
from agentmem_mcp.cli import app as cli; mark("import cli (json)")
from agentmem_mcp.capture import hook; mark("import capture.hook (pathlib)")
from agentmem_mcp.config import load_settings; mark("import config")
from agentmem_mcp.capture.events import decode_payload, parse_hook_event; mark("import capture.events")
import sys
raw = sys.stdin.buffer.read()
settings = load_settings(); mark("load_settings")
ev = parse_hook_event("claude-code", "PostToolUse", decode_payload(raw)); mark("parse the event")
from agentmem_mcp.db.connection import connect; mark("import db.connection (sqlean)")
from agentmem_mcp.db.migrations import migrate; mark("import db.migrations")
from agentmem_mcp.project import project_for; mark("import project")
from agentmem_mcp.capture.observations import ObservationStore, scrub; mark("import observations (redaction)")
project = project_for(ev.cwd); mark("project_for (git marker walk)")
scrubbed = scrub(ev, settings.max_output_chars); mark("scrub (redaction, regexes compiled on use)")
conn = connect(settings.database, busy_timeout_ms=3000, load_vec=False); mark("connect (no sqlite-vec)")
migrate(conn); mark("migrate (schema check)")
ObservationStore(conn).record(scrubbed, project); mark("record (one write transaction)")
(settings.home / "spool").is_dir(); mark("spool check")
import json, os
print(json.dumps([(b, (t1 - t0) * 1000) for (_, t0), (b, t1) in zip(marks, marks[1:])]))
sys.stdout.flush()
os._exit(0)
'''


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    from bench_hooks import agentmem_bin, payload_8k

    report: dict = {"date": utc_now(), "machine": describe_machine(),
                    "command": "python scripts/profile_hook.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                    "python": sys.executable}
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        (project / ".git").mkdir(parents=True)
        env = clean_env()
        env["AGENTMEM_HOME"] = str(home)
        hook = [*agentmem_bin(), "hook", "--client", "claude-code", "PostToolUse"]
        subprocess.run(hook, input=payload_8k(0, project), env=env, check=True)  # the database exists
        steps: dict[str, list[float]] = {}
        for n in range(args.runs):
            done = subprocess.run([sys.executable, "-c", STEPS], input=payload_8k(n, project), env=env,
                                  capture_output=True, check=True)
            for name, ms in json.loads(done.stdout):
                steps.setdefault(name, []).append(ms)
        report["steps_p50_ms"] = {name: round(statistics.median(values), 2) for name, values in steps.items()}
        report["steps_total_p50_ms"] = round(sum(report["steps_p50_ms"].values()), 1)
        wrapper_env = dict(env, AGENTMEM_BIN=hook[0]) if len(agentmem_bin()) == 1 else env
        commands = {"bare python -c pass": [sys.executable, "-c", "pass"], "agentmem hook PostToolUse": hook,
                    "sh hooks/run-hook.sh claude-code PostToolUse": ["sh", str(REPO / "hooks" / "run-hook.sh"),
                                                                     "claude-code", "PostToolUse"]}
        wall: dict[str, list[float]] = {name: [] for name in commands}
        for n in range(args.runs):
            for name, command in commands.items():
                started = time.perf_counter()
                subprocess.run(command, input=payload_8k(n, project), env=wrapper_env, capture_output=True,
                               check=True)
                wall[name].append((time.perf_counter() - started) * 1000)
        report["whole_process_p50_ms"] = {name: round(statistics.median(values), 1) for name, values in wall.items()}
    print(json.dumps(report, indent=2))
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
