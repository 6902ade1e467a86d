"""How fast `agentmem import-history claude-code` imports: sessions per minute on this machine.

Copies the shared Claude Code transcripts (../shared/eval/transcripts/claude_code_spotter) COPIES times, each
copy under a new session id, into a temporary ~/.claude/projects, then times the real command twice: capture
only (--no-worker), and capture followed by the worker (compression, summaries, consolidation, vectors).

Usage: python scripts/bench_import.py [--copies 10]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
TRANSCRIPTS = SHARED / "eval" / "transcripts" / "claude_code_spotter"
MODEL = SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8"


def make_history(root: Path, copies: int) -> int:
    sources = sorted(p for p in TRANSCRIPTS.glob("*.jsonl") if p.name != "subagent.jsonl")
    count = 0
    for n in range(copies):
        for source in sources:
            session = str(uuid.UUID(int=n * 1000 + count + 1))
            lines = []
            for line in source.read_text(encoding="utf-8").split("\n"):
                try:
                    record = json.loads(line)
                except ValueError:
                    lines.append(line)
                    continue
                if isinstance(record, dict) and "sessionId" in record:
                    record["sessionId"] = session
                lines.append(json.dumps(record, ensure_ascii=False))
            folder = root / f"-copy-{n}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{session}.jsonl").write_text("\n".join(lines), encoding="utf-8")
            count += 1
    return count


def run(env: dict[str, str], *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "agentmem_mcp", "import-history", "claude-code", "--quiet", *args],
                          env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return time.perf_counter() - started, done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10, help="copies of the shared transcripts (default: 10)")
    args = parser.parse_args()
    if not TRANSCRIPTS.is_dir():
        raise SystemExit(f"the shared transcripts are missing at {TRANSCRIPTS}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "projects"
        sessions = make_history(root, args.copies)
        base = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
        if MODEL.is_dir():
            base["AGENTMEM_EMBED_MODEL_PATH"] = str(MODEL)
        for label, extra in (("capture only", ["--no-worker"]), ("capture + worker", [])):
            env = base | {"AGENTMEM_HOME": str(Path(tmp) / label.replace(" ", "-"))}
            seconds, out = run(env, "--root", str(root), *extra)
            print(f"{label:17} {sessions} sessions in {seconds:6.1f} s = {sessions / seconds * 60:7.0f} sessions/min")
            print("                  " + out.replace("\n", "\n                  "))
        again, out = run(env, "--root", str(root))
        print(f"{'second run':17} {again:6.1f} s: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
