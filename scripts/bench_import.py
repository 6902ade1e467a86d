"""How fast `agentmem import-history claude-code|cursor` imports: sessions per minute on this machine.

Copies the shared Claude Code transcripts (../shared/eval/transcripts/claude_code_spotter) COPIES times, each
copy under a new session id, into a temporary ~/.claude/projects, then times the real command twice: capture
only (--no-worker), and capture followed by the worker (compression, summaries, consolidation, vectors), and
a second run (which must add nothing). With --client cursor the same sessions are written as Cursor keeps
them (one workspace folder per project, the conversations in globalStorage/state.vscdb: a user bubble per
typed prompt, an agent bubble per reply and per tool call) and `import-history cursor` is timed instead.

Usage: python scripts/bench_import.py [--copies 10] [--client claude-code|cursor]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from harness import REPO, clean_env, default_model, utc_now

SHARED = REPO.parent / "shared"
TRANSCRIPTS = SHARED / "eval" / "transcripts" / "claude_code_spotter"
MODEL = default_model()


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


_CURSOR_TOOLS = {"Bash": "run_terminal_cmd", "Read": "read_file", "Edit": "edit_file", "MultiEdit": "edit_file",
                 "Write": "edit_file", "Grep": "grep_search", "Glob": "file_search"}


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def _bubbles(transcript: Path) -> tuple[str, list[dict]]:
    """A transcript's working directory and its records as Cursor bubbles."""
    cwd, bubbles, pending = "", [], {}
    for line in transcript.read_text(encoding="utf-8").split("\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("isSidechain"):
            continue
        cwd = cwd or (record.get("cwd") if isinstance(record.get("cwd"), str) else "")
        message = record.get("message") if isinstance(record.get("message"), dict) else {}
        content, at = message.get("content"), record.get("timestamp")
        if record.get("type") == "assistant" and isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    pending[block.get("id")] = block
            if _text(content).strip():
                bubbles.append({"type": 2, "text": _text(content), "createdAt": at})
        elif record.get("type") == "user" and isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            for block in content:
                use = pending.pop(block.get("tool_use_id"), None) if isinstance(block, dict) else None
                if use is None:
                    continue
                args = dict(use.get("input") or {})
                if "file_path" in args:
                    args["target_file"] = args.pop("file_path")
                bubbles.append({"type": 2, "text": "", "createdAt": at, "toolFormerData": {
                    "name": _CURSOR_TOOLS.get(use.get("name"), str(use.get("name"))), "rawArgs": json.dumps(args),
                    "result": json.dumps({"output": _text(block.get("content"))}),
                    "status": "error" if block.get("is_error") else "completed"}})
        elif record.get("type") == "user" and not record.get("isMeta") and _text(content).strip():
            bubbles.append({"type": 1, "text": _text(content), "createdAt": at})
    return cwd, bubbles


def make_cursor_history(user: Path, copies: int) -> int:
    """Cursor's User folder holding COPIES copies of each shared session as a conversation."""
    sources = sorted(p for p in TRANSCRIPTS.glob("*.jsonl") if p.name != "subagent.jsonl")
    store = user / "globalStorage" / "state.vscdb"
    store.parent.mkdir(parents=True)
    conn = sqlite3.connect(store)
    listed: dict[str, list[str]] = {}
    count = 0
    for table in ("ItemTable", "cursorDiskKV"):
        conn.execute(f"CREATE TABLE {table} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    for n in range(copies):
        for source in sources:
            cwd, bubbles = _bubbles(source)
            composer = str(uuid.UUID(int=n * 1000 + count + 1))
            headers = []
            for k, bubble in enumerate(bubbles):
                bubble_id = f"b{k}"
                headers.append({"bubbleId": bubble_id, "type": bubble["type"]})
                conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)",
                             (f"bubbleId:{composer}:{bubble_id}", json.dumps({**bubble, "bubbleId": bubble_id})))
            conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"composerData:{composer}", json.dumps(
                {"composerId": composer, "fullConversationHeadersOnly": headers})))
            listed.setdefault(cwd, []).append(composer)  # one project, as the claude-code copies are
            count += 1
    conn.commit()
    conn.close()
    for folder, composers in listed.items():
        workspace = user / "workspaceStorage" / hashlib.md5(folder.encode()).hexdigest()
        workspace.mkdir(parents=True)
        (workspace / "workspace.json").write_text(json.dumps({"folder": "file://" + folder}))
        conn = sqlite3.connect(workspace / "state.vscdb")
        conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        conn.execute("INSERT INTO ItemTable VALUES ('composer.composerData', ?)",
                     (json.dumps({"allComposers": [{"composerId": c} for c in composers]}),))
        conn.commit()
        conn.close()
    return count


def run(env: dict[str, str], client: str, *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "agentmem_mcp", "import-history", client, "--quiet", *args],
                          env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return time.perf_counter() - started, done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10, help="copies of the shared transcripts (default: 10)")
    parser.add_argument("--client", choices=("claude-code", "cursor"), default="claude-code",
                        help="whose history to import (default: claude-code)")
    args = parser.parse_args()
    if not TRANSCRIPTS.is_dir():
        raise SystemExit(f"the shared transcripts are missing at {TRANSCRIPTS}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.client == "cursor":
            root = Path(tmp) / "Cursor" / "User"
            sessions = make_cursor_history(root, args.copies)
        else:
            root = Path(tmp) / "projects"
            sessions = make_history(root, args.copies)
        base = clean_env()
        if MODEL.is_dir():
            base["AGENTMEM_EMBED_MODEL_PATH"] = str(MODEL)
        print(f"{utc_now()}, import-history {args.client}, {os.cpu_count()} "
              f"cores")
        for label, extra in (("capture only", ["--no-worker"]), ("capture + worker", [])):
            env = base | {"AGENTMEM_HOME": str(Path(tmp) / label.replace(" ", "-"))}
            seconds, out = run(env, args.client, "--root", str(root), *extra)
            print(f"{label:17} {sessions} sessions in {seconds:6.1f} s = {sessions / seconds * 60:7.0f} sessions/min")
            print("                  " + out.replace("\n", "\n                  "))
        again, out = run(env, args.client, "--root", str(root))
        print(f"{'second run':17} {again:6.1f} s: {out}")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
