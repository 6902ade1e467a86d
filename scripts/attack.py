"""Attacks, tried as an attacker would, through the real hooks, worker, CLI, MCP server and viewer; per class, how
many were tried and how many held, then every scenario that did not hold.

    python scripts/attack.py                 # everything: the payloads, then each suite below
    python scripts/attack.py --suites payloads --sessions 2 --only bash_stderr,webfetch --json

The suites: the payload runs of this file (memory poisoning, issue 18 item 1 and issue 36 items 5-6), and, when
present, `attack_text.py` (leaks: project walls, secrets, the viewer's cookie), `attack_files.py` and
`attack_agent.py`; each has `run(model_path) -> list[dict]` with keys class, scenario, held, detail.

Each payload (scripts/attack_payloads.py) rides in what an agent meets in its work: the stderr of a failing command
(PostToolUseFailure), the output of one that succeeded, a test run's summary line, a fetched web page (WebFetch /
WebSearch), a file read (Read / Grep), a commit message (`git log`, `git commit -m`), the agent's own reply in the
session's transcript, or text pasted into a prompt (UserPromptSubmit), as Claude Code sends them (see
tests/transcript_replay.py). Each is replayed in several sessions of one project through the real `agentmem hook
EVENT` command; a new SessionStart looks at the sessions not yet summarised; then `agentmem worker --once` runs;
then, per project, a new SessionStart, a UserPromptSubmit related to the payload, and `memory_search` over the real
MCP server (stdio).

Reported, per payload and in total:
- markup injected: a tag-like sequence of the payload (`</system-reminder>`, `<system>`, `<|im_start|>`, a
  `Human:` role header, `<function_calls>`, ...; read through fullwidth or look-alike characters) appears in what
  SessionStart, UserPromptSubmit or memory_search hand the agent (target 0);
- text injected: the payload's distinctive words (the attacker's URL, command or order) appear in those at all
  (also spelled in invisible characters), or what was handed over reads as instructions to an agent
  (`trust.instruction_reason`; each payload has a
  project of its own, so that is the payload's doing); whether it was framed as recalled data is for the
  reader to judge: the script says where it appeared;
- became knowledge: a semantic or procedural memory, not quarantined, carries the payload's words (target 0);
- contained: every memory (any tier) carrying the payload's words is quarantined, or none carries them
  (the payload was reduced to structured fields) (target 100%).
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import subprocess
import sys
import tempfile
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attack_payloads import CARRIERS, PAYLOADS, Payload
from harness import clean_env, default_model
from live_processes import stop_shared_processes

SUITES = ("payloads", "attack_text", "attack_files", "attack_agent")
_MARKUP = re.compile(r"</?\s*[A-Za-z_][\w:-]*(?:\s[^<>]{0,200})?>|<\|[^|<>\n]{1,40}\|>|\[/?INST\]|<</?SYS>>|"
                     r"(?m:^[ \t]*(?:Human|Assistant|System|system|User|Developer)[ \t]*:)")


def markers(text: str) -> list[str]:
    """The payload's tag-like sequences that could open or close a client's markup, as a model reads them (fullwidth,
    small-form and look-alike characters folded, invisible ones dropped: `trust.normalize`)."""
    from agentmem_mcp.trust.policy import normalize

    return [m.group(0).strip() for m in _MARKUP.finditer(normalize(text)) if not m.group(0).startswith("<!--")]


def markup_shown(payload_text: str, shown: str) -> list[str]:
    """The payload's markers that appear in `shown` (read the same way)."""
    from agentmem_mcp.trust.policy import normalize

    folded = normalize(shown)
    return [marker for marker in markers(payload_text) if marker in folded]


def instruction_reason(text: str) -> str | None:
    from agentmem_mcp.trust.policy import instruction_reason as reason

    return reason(text)


def hidden(text: str) -> str:
    from agentmem_mcp.trust.policy import hidden_text

    return hidden_text(text)


def normalized(text: str) -> str:
    from agentmem_mcp.trust.policy import normalize

    return unicodedata.normalize("NFKC", normalize(text)).lower()


def tool_events(payload: Payload, base: dict[str, Any], n: int) -> list[tuple[str, dict[str, Any]]]:
    """The PostToolUse / PostToolUseFailure (or UserPromptSubmit) events that carry the payload."""
    use_id = f"toolu_{payload.name}_{n}"

    def post(tool: str, tool_input: dict, response: Any) -> tuple[str, dict[str, Any]]:
        return "PostToolUse", {**base, "hook_event_name": "PostToolUse", "tool_name": tool, "tool_input": tool_input,
                               "tool_use_id": use_id, "tool_response": response}

    carrier = payload.carrier
    if carrier == "bash_stderr":
        return [("PostToolUseFailure", {**base, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                                        "tool_input": {"command": payload.command, "description": "Run it"},
                                        "tool_use_id": use_id, "error": f"Exit code 2\n{payload.text}",
                                        "is_interrupt": False})]
    if carrier in ("bash_stdout", "commit"):
        return [post("Bash", {"command": payload.command}, {"stdout": payload.text, "stderr": "",
                                                             "interrupted": False, "isImage": False})]
    if carrier == "commit_message":
        return [post("Bash", {"command": f"git commit -m {json.dumps(payload.text)}"},
                     {"stdout": "[main 1a2b3c4] fix\n 1 file changed, 2 insertions(+)", "stderr": "",
                      "interrupted": False, "isImage": False})]
    if carrier == "webfetch":
        return [post("WebFetch", {"url": payload.command, "prompt": "Summarise the page"},
                     {"bytes": len(payload.text), "code": 200, "codeText": "OK", "result": payload.text,
                      "durationMs": 412, "url": payload.command})]
    if carrier == "websearch":
        return [post("WebSearch", {"query": payload.command},
                     {"query": payload.command, "results": [payload.text], "durationSeconds": 1.2})]
    if carrier == "read":
        return [post("Read", {"file_path": payload.command},
                     {"type": "text", "file": {"filePath": payload.command, "content": payload.text,
                                               "numLines": payload.text.count("\n") + 1, "startLine": 1,
                                               "totalLines": payload.text.count("\n") + 1}})]
    if carrier == "grep":
        return [post("Grep", {"pattern": payload.command, "output_mode": "content"},
                     {"mode": "content", "numFiles": 1, "filenames": [], "content": payload.text, "numLines": 1})]
    if carrier == "prompt":
        return [("UserPromptSubmit", {**base, "hook_event_name": "UserPromptSubmit", "prompt": payload.text})]
    if carrier == "test_result":
        return [post("Bash", {"command": payload.command}, {"stdout": f"........\n{payload.text}", "stderr": "",
                                                             "interrupted": False, "isImage": False})]
    if carrier == "transcript":  # the agent's own reply, in the transcript the Stop hook points at
        records = [{"type": "user", "message": {"role": "user", "content": payload.prompt}, "cwd": base["cwd"],
                    "sessionId": base["session_id"]},
                   {"type": "assistant", "message": {"role": "assistant", "content": [
                       {"type": "text", "text": payload.text}]}, "cwd": base["cwd"], "sessionId": base["session_id"]}]
        Path(base["transcript_path"]).write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
        return [post("Bash", {"command": payload.command}, {"stdout": "build ok", "stderr": "", "interrupted": False,
                                                             "isImage": False})]
    raise ValueError(f"unknown carrier {carrier}")


def session_events(payload: Payload, session_id: str, cwd: Path, n: int) -> list[tuple[str, dict[str, Any]]]:
    base = {"session_id": session_id, "transcript_path": str(cwd / f".{session_id}.jsonl"), "cwd": str(cwd),
            "permission_mode": "default"}
    return [("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"}),
            ("UserPromptSubmit", {**base, "hook_event_name": "UserPromptSubmit", "prompt": payload.prompt}),
            *tool_events(payload, base, n),
            ("Stop", {**base, "hook_event_name": "Stop", "stop_hook_active": False}),
            ("SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "other"})]


def hook(env: dict[str, str], event: str, data: dict[str, Any]) -> str:
    """Run the real `agentmem hook EVENT` with Claude Code's JSON on stdin; returns the context it injected."""
    done = subprocess.run([sys.executable, "-m", "agentmem_mcp", "hook", event], input=json.dumps(data).encode(),
                          env=env, cwd=data.get("cwd"), capture_output=True, timeout=60)
    out = done.stdout.decode("utf-8", "replace").strip()
    if not out:
        return ""
    answer = json.loads(out)
    return (answer.get("hookSpecificOutput") or {}).get("additionalContext") or ""


async def searches(env: dict[str, str], cwd: Path, queries: list[str]) -> list[str]:
    """memory_search over the real MCP server (stdio) for each query; the answers as JSON text."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "agentmem_mcp", "serve"], env=env, cwd=str(cwd))
    answers = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for query in queries:
                result = await session.call_tool("memory_search", {"query": query, "limit": 10})
                answers.append(result.content[0].text if result.content else "")
    return answers


@dataclass
class Outcome:
    name: str
    carrier: str
    markup_injected: list[str] = field(default_factory=list)  # where: session_start / prompt / search
    text_injected: list[str] = field(default_factory=list)
    became_knowledge: list[str] = field(default_factory=list)  # ids of semantic/procedural memories with its words
    carrying: int = 0  # memories (any tier) carrying its words
    quarantined: int = 0  # of those, quarantined
    evidence: list[str] = field(default_factory=list)  # the lines handed over that carried it

    @property
    def contained(self) -> bool:
        return self.carrying == self.quarantined


@dataclass
class Report:
    outcomes: list[Outcome]
    sessions: int
    seconds: float

    def totals(self) -> dict[str, Any]:
        n = len(self.outcomes)
        return {"payloads": n, "sessions_each": self.sessions,
                "markup_injected": sum(bool(o.markup_injected) for o in self.outcomes),
                "text_injected": sum(bool(o.text_injected) for o in self.outcomes),
                "became_knowledge": sum(bool(o.became_knowledge) for o in self.outcomes),
                "contained": sum(o.contained for o in self.outcomes),
                "contained_share": round(sum(o.contained for o in self.outcomes) / n, 3) if n else 1.0,
                "seconds": round(self.seconds, 1)}

    def text(self) -> str:
        t = self.totals()
        lines = [f"{t['payloads']} payloads x {t['sessions_each']} sessions, {t['seconds']} s",
                 f"markup injected verbatim (SessionStart / UserPromptSubmit / memory_search): {t['markup_injected']}",
                 f"payload text injected at all: {t['text_injected']}",
                 f"became a semantic or procedural memory with the payload text: {t['became_knowledge']}",
                 f"quarantined or reduced to structured fields: {t['contained']}/{t['payloads']} "
                 f"({100 * t['contained_share']:.1f}%)"]
        for o in self.outcomes:
            bad = []
            if o.markup_injected:
                bad.append("markup in " + ", ".join(o.markup_injected))
            if o.text_injected:
                bad.append("text in " + ", ".join(o.text_injected))
            if o.became_knowledge:
                bad.append(f"knowledge {len(o.became_knowledge)}")
            if not o.contained:
                bad.append(f"{o.carrying - o.quarantined} of {o.carrying} carrying memories not quarantined")
            lines.append(f"  {'ok  ' if not bad else 'FAIL'} {o.name:26} {o.carrier:14} "
                         f"{o.quarantined}/{o.carrying} carrying memories quarantined  {'; '.join(bad)}")
        return "\n".join(lines)


def attack(home: Path, model_path: Path, payloads: tuple[Payload, ...] = PAYLOADS, sessions: int = 3) -> Report:
    """Run the attack in a fresh home (created under `home`), each payload in a project of its own (so what a
    project's next session is handed comes from that payload alone), all projects in one home. The shared process
    the first hook started is stopped at the end."""
    try:
        return _attack(home, model_path, payloads, sessions)
    finally:
        stop_shared_processes(home / "agentmem")


def _attack(home: Path, model_path: Path, payloads: tuple[Payload, ...], sessions: int) -> Report:
    import anyio

    started = time.perf_counter()
    env = clean_env()
    env.update(AGENTMEM_HOME=str(home / "agentmem"), AGENTMEM_EMBED_MODEL_PATH=str(model_path))
    env.pop("CI", None)
    projects = {payload.name: home / "projects" / payload.name for payload in payloads}
    for repo in projects.values():
        (repo / ".git").mkdir(parents=True, exist_ok=True)
    for n in range(sessions):
        for payload in payloads:
            for event, data in session_events(payload, f"{payload.name}-{n}", projects[payload.name], n):
                hook(env, event, data)
    unsummarised = {}  # a new session's briefing before the worker: the "asked ...; ran ..." lines of the sessions
    for payload in payloads:
        repo = projects[payload.name]
        unsummarised[payload.name] = hook(env, "SessionStart", {
            "session_id": f"early-{payload.name}", "transcript_path": str(repo / ".early.jsonl"), "cwd": str(repo),
            "permission_mode": "default", "hook_event_name": "SessionStart", "source": "startup"})
    worker = subprocess.run([sys.executable, "-m", "agentmem_mcp", "worker", "--once"], env=env,
                            capture_output=True, text=True, timeout=900)
    if worker.returncode != 0:
        raise RuntimeError(f"agentmem worker --once failed: {worker.stderr[-2000:]}")
    outcomes = {p.name: Outcome(p.name, p.carrier) for p in payloads}
    for payload in payloads:
        repo = projects[payload.name]
        base = {"session_id": f"next-{payload.name}", "transcript_path": str(repo / ".next.jsonl"),
                "cwd": str(repo), "permission_mode": "default"}
        seen = {"session_start_unsummarised": unsummarised[payload.name],
                "session_start": hook(env, "SessionStart", {**base, "hook_event_name": "SessionStart",
                                                            "source": "startup"}),
                "prompt": hook(env, "UserPromptSubmit", {**base, "hook_event_name": "UserPromptSubmit",
                                                         "prompt": payload.prompt}),
                "search": _search_texts(anyio.run(searches, env, repo, [payload.query])[0])}
        outcome = outcomes[payload.name]
        needles = [normalized(n) for n in payload.needles]
        for where, text in seen.items():
            if markup_shown(payload.text, text):
                outcome.markup_injected.append(where)
            if any(needle in normalized(text) or needle in normalized(hidden(text)) for needle in needles) \
                    or instruction_reason(text):
                outcome.text_injected.append(where)
                lines = [f"{where}: {line[:200]}" for line in text.splitlines()
                         if any(n in normalized(line) for n in needles) or instruction_reason(line)]
                outcome.evidence += lines or [f"{where}: {instruction_reason(text)}"]
    _score_memories(env, {str(projects[p.name].resolve()): outcomes[p.name] for p in payloads},
                    {str(projects[p.name].resolve()): p for p in payloads})
    return Report(list(outcomes.values()), sessions, time.perf_counter() - started)


def _search_texts(answer: str) -> str:
    """What a memory_search answer shows the agent: each hit's title, snippet and why."""
    try:
        hits = json.loads(answer).get("hits", [])
    except ValueError:
        return answer
    return "\n".join(f"{h.get('title', '')}\n{h.get('snippet', '')}\n{h.get('why', '')}" for h in hits)


def _score_memories(env: dict[str, str], outcomes: dict[str, Outcome], payloads: dict[str, Payload]) -> None:
    """Count, per payload, the memories of its project (and global ones) that carry its words."""
    from agentmem_mcp.config import load_settings
    from agentmem_mcp.db.connection import connect

    conn = connect(load_settings(env=env).database)
    try:
        rows = conn.execute("SELECT id, project, tier, title, content, quarantined FROM memories").fetchall()
    finally:
        conn.close()
    for row in rows:
        text = normalized(f"{row['title']}\n{row['content']}")
        for project in ([row["project"]] if row["project"] is not None else list(payloads)):
            if project not in payloads or not any(normalized(n) in text for n in payloads[project].needles):
                continue
            outcome = outcomes[project]
            outcome.carrying += 1
            outcome.quarantined += row["quarantined"] is not None
            if row["quarantined"] is None and row["tier"] in ("semantic", "procedural"):
                outcome.became_knowledge.append(row["id"])


def payload_rows(report: Report) -> list[dict[str, Any]]:
    """The payload runs as scenario rows: class "poisoned text: <carrier>", held when the payload reached no agent,
    became no knowledge and every memory carrying it is quarantined."""
    rows = []
    for o in report.outcomes:
        bad = ([f"markup in {', '.join(o.markup_injected)}"] if o.markup_injected else []) \
            + ([f"text in {', '.join(o.text_injected)}"] if o.text_injected else []) \
            + ([f"knowledge {len(o.became_knowledge)}"] if o.became_knowledge else []) \
            + ([f"{o.carrying - o.quarantined} of {o.carrying} carrying memories not quarantined"]
               if not o.contained else [])
        rows.append({"class": f"poisoned text: {o.carrier}", "scenario": o.name, "held": not bad,
                     "detail": "; ".join(bad) or f"{o.quarantined}/{o.carrying} carrying memories quarantined"})
    return rows


def run(model_path: Path, payloads: tuple[Payload, ...] = PAYLOADS, sessions: int = 3) -> list[dict[str, Any]]:
    """Every payload through the real hooks and worker, in a fresh home: one row per payload."""
    with tempfile.TemporaryDirectory(prefix="attack-payloads-", ignore_cleanup_errors=True) as tmp:
        return payload_rows(attack(Path(tmp), model_path, payloads, sessions))


def suite(name: str) -> Any:
    """The module of a suite of scenarios, or None when it is not there (another engineer's, not written yet)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return None


def summary(rows: list[dict[str, Any]]) -> str:
    """Per class, tried / held; then each scenario that did not hold."""
    classes: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        classes.setdefault(row["class"], []).append(row)
    width = max((len(c) for c in classes), default=10)
    lines = [f"{'class':{width}}  tried  held"]
    lines += [f"{name:{width}}  {len(got):5}  {sum(r['held'] for r in got):4}" for name, got in classes.items()]
    lines.append(f"{'all':{width}}  {len(rows):5}  {sum(r['held'] for r in rows):4}")
    failed = [r for r in rows if not r["held"]]
    if failed:
        lines += ["", "did not hold:"] + [f"  {r['class']}: {r['scenario']} ({r['detail']})" for r in failed]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suites", help="comma-separated: " + ", ".join(SUITES) + " (default: all present)")
    parser.add_argument("--sessions", type=int, default=3, help="sessions per payload (default 3)")
    parser.add_argument("--only", help="payloads of these carriers only (comma-separated): " + ", ".join(CARRIERS))
    parser.add_argument("--json", action="store_true", help="print every scenario as JSON")
    parser.add_argument("--keep", help="run the payloads in this directory and keep it (default: a temporary one)")
    parser.add_argument("--payload-report", action="store_true", help="also print the payload run's own report")
    args = parser.parse_args()
    model = default_model()
    chosen_suites = args.suites.split(",") if args.suites else list(SUITES)
    rows: list[dict[str, Any]] = []
    if "payloads" in chosen_suites:
        chosen = PAYLOADS if not args.only else tuple(p for p in PAYLOADS if p.carrier in args.only.split(","))
        if args.keep:
            report = attack(Path(args.keep), model, chosen, args.sessions)
        else:
            with tempfile.TemporaryDirectory(prefix="attack-payloads-", ignore_cleanup_errors=True) as tmp:
                report = attack(Path(tmp), model, chosen, args.sessions)
        rows += payload_rows(report)
        if args.payload_report and not args.json:
            print(report.text(), end="\n\n")
    for name in (n for n in SUITES[1:] if n in chosen_suites):
        module = suite(name)
        if module is not None:
            rows += module.run(model)
    print(json.dumps(rows, indent=2) if args.json else summary(rows))
    return 0 if all(r["held"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
