"""One project, several agents: real Claude Code sessions replayed in turn as Claude Code, Codex and Gemini CLI
would have sent them, then asked what a new session is told.

    python scripts/eval_cross_client.py [--spec SPEC.json] [--project NAME ...] [--sessions N] [--json OUT]

For each project of the spec (eval_coding.py's format: ../shared/eval/coding/spec.json), its first N sessions
with a typed prompt (default 3) are replayed into one fresh agentmem home through the real hook command, session
i as client i mod 3: Claude Code (its transcript, as `coding_replay.replay_session` sends it), then Codex, then
Gemini CLI
(the same transcript translated to the JSON their hooks send: `tests/transcript_replay.py`), then
`agentmem worker --once`, then a new Claude Code session opens. The check: its briefing holds a session of every
client replayed, named with its client ("(Codex, 3h ago, ...)"). Reported per project: the clients replayed, the
clients the briefing names, and whether each replayed session shows (by its first prompt).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from coding_replay import Agentmem, ReplayDir, new_session, replay_session, session_directory  # noqa: E402
from eval_common import DEFAULT_MODEL_PATH, print_table, write_json  # noqa: E402
from harness import REPO, agentmem_bin, describe_machine
from live_processes import stop_shared_processes
from transcript_replay import claude_code_events, codex_events, gemini_events  # noqa: E402

from agentmem_mcp.capture.clients import NAMES  # noqa: E402

DEFAULT_SPEC = REPO / "../shared/eval/coding/spec.json"
ROTATION = ("claude-code", "codex", "gemini")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=DEFAULT_SPEC, help="the projects and their sessions")
    parser.add_argument("--project", action="append", default=[], help="only this project (repeatable)")
    parser.add_argument("--sessions", type=int, default=3, help="sessions replayed per project (default 3)")
    parser.add_argument("--model-path", type=Path, default=DEFAULT_MODEL_PATH, help="the embedding model's folder")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--show-briefing", action="store_true", help="print each project's briefing")
    return parser.parse_args(argv)


def send(product: Agentmem, client: str, event: str, payload: dict[str, Any], cwd: Path) -> None:
    """One hook event through the real command, as the client's hook configuration runs it."""
    done = subprocess.run([str(agentmem_bin()), "hook", "--client", client, event], input=json.dumps(payload).encode(),
                          env=product.env, cwd=cwd, capture_output=True, timeout=60)
    if done.returncode != 0 or done.stderr.strip():
        product.problems[f"{client} {event}"] += 1


def replay_as(product: Agentmem, replay: ReplayDir, transcript: Path, work: Path, client: str) -> str:
    """Replay one transcript as `client`'s hooks would have sent it; returns its session id."""
    cwd = replay.directory_for(session_directory(transcript))
    staged = work / "transcripts" / "staged" / f"{client}-{transcript.name}"
    staged.parent.mkdir(parents=True, exist_ok=True)
    staged.write_text(replay.rewrite(transcript.read_text(encoding="utf-8", errors="replace")), encoding="utf-8")
    events = codex_events(staged) if client == "codex" else gemini_events(staged)
    for event, payload in events:
        send(product, client, event, {**payload, "cwd": str(cwd)}, cwd)
    return events[0][1]["session_id"]


def typed(transcript: Path) -> bool:
    """Whether a session has a prompt the user typed (one that is only a slash command is left out of the check:
    the briefing may rightly leave it out whatever the client)."""
    return any(event == "UserPromptSubmit" for event, _ in claude_code_events(transcript))


def check_project(spec: dict[str, Any], spec_dir: Path, sessions: int, product: Agentmem,
                  work: Path) -> dict[str, Any]:
    replay = ReplayDir.create(work / "projects", spec["name"])
    replayed = []
    seen: set[str] = set()
    chosen = [relative for relative in spec["sessions"] if typed(spec_dir / relative)][:sessions]
    for n, relative in enumerate(chosen):
        client = ROTATION[n % len(ROTATION)]
        transcript = spec_dir / relative
        if client == "claude-code":
            session_id = replay_session(product, replay, transcript, work / "transcripts", seen).session_id
        else:
            session_id = replay_as(product, replay, transcript, work, client)
        replayed.append({"client": client, "file": relative, "session_id": session_id})
    return {"name": spec["name"], "replay": replay, "sessions": replayed}


def judge(product: Agentmem, result: dict[str, Any], briefing: str) -> dict[str, Any]:
    """Which clients the briefing's sessions (the last session's handoff and the earlier sessions) are named with,
    and whether each replayed session shows (its summary's title)."""
    sessions = re.findall(r"## (?:Where the last session left off|Earlier sessions[^\n]*)\n(.*?)(?=\n## |\Z)", briefing,
                          re.DOTALL)
    recent = "\n".join(sessions)
    named = [client for client in ROTATION if f"({NAMES[client]}, " in recent]
    flat = " ".join(recent.split())
    for session in result["sessions"]:
        found = product.rows("SELECT m.title, m.content FROM sessions s JOIN memories m ON m.id = s.summary_memory_id "
                             "WHERE s.id = ?", [session["session_id"]])
        title = " ".join(found[0]["title"].removeprefix("Session: ").split())[:50] if found else ""
        session["summary_title"] = title
        # shown: its request, or the first statement of what came of it (a long request is not shown whole)
        lines = dict(line.split(": ", 1) for line in (found[0]["content"] if found else "").split("\n") if ": " in line)
        marks = [title[:40], *(asked[:40] for asked in re.split(r" · | / ", lines.get("Asked", ""))),
                 lines.get("Outcome (the agent's reports)", "").split(" · ")[0][:40]]
        session["shown"] = any(mark and " ".join(mark.split()) in flat for mark in marks)
    clients = sorted({s["client"] for s in result["sessions"]}, key=ROTATION.index)
    return {"name": result["name"], "clients": clients, "named": named, "sessions": result["sessions"],
            "one_briefing_holds_all": set(clients) <= set(named)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    spec_path = args.spec.resolve()
    if not spec_path.is_file():
        raise SystemExit(f"no spec at {spec_path}: pass --spec PATH (../shared/eval/coding/spec.json)")
    projects = [p for p in json.loads(spec_path.read_text(encoding="utf-8"))["projects"]
                if not args.project or p["name"] in args.project]
    if not projects:
        raise SystemExit(f"no such project in {spec_path}")
    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="agentmem-eval-cross-"))
    product = Agentmem(work / "home", args.model_path.resolve())
    try:
        results = [check_project(spec, spec_path.parent, args.sessions, product, work) for spec in projects]
        skipped = [r["name"] for r in results if len(r["sessions"]) < 2]  # one session with a typed prompt: no check
        results = [r for r in results if len(r["sessions"]) >= 2]
        product.worker()
        judged = []
        for result in results:
            briefing, _ = new_session(product, result["replay"].root, work / "transcripts")
            if args.show_briefing:
                print(f"## {result['name']}\n{briefing}\n", file=sys.stderr)
            judged.append({**judge(product, result, briefing), "briefing_chars": len(briefing)})
    finally:
        product.close()
        stop_shared_processes(work)  # the one the first hook started
        shutil.rmtree(work, ignore_errors=True)
    print(f"# One project, several agents ({len(judged)} projects)   machine: {describe_machine()}")
    print_table(("project", "clients replayed", "named in the briefing", "sessions shown", "all in one briefing"),
                [(j["name"], ", ".join(j["clients"]), ", ".join(j["named"]) or "-",
                  f"{sum(s['shown'] for s in j['sessions'])}/{len(j['sessions'])}",
                  "yes" if j["one_briefing_holds_all"] else "NO") for j in judged])
    if skipped:
        print(f"left out (fewer than two sessions with a typed prompt): {', '.join(skipped)}")
    passed = sum(j["one_briefing_holds_all"] for j in judged)
    print(f"{passed}/{len(judged)} projects: one briefing holds every client's sessions "
          f"({time.perf_counter() - began:.0f} s; hook problems: {dict(product.problems) or 'none'})")
    payload = {"evaluation": "cross-client", "spec": str(spec_path), "machine": describe_machine(),
               "command": sys.argv, "projects": judged, "passed": passed, "left_out": skipped,
               "hook_problems": dict(product.problems)}
    write_json(args.json, payload)
    return payload


if __name__ == "__main__":
    main()
