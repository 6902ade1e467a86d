"""Replay real Claude Code sessions into agentmem, as Claude Code would have run its hooks, and ask it what a new
session is told. The pieces `eval_coding.py` is built on.

`Agentmem` runs the product the way a user's machine does: the hook as Claude Code's plugin runs it
(`sh hooks/run-hook.sh claude-code EVENT`, JSON on stdin), `agentmem worker --once`, `agentmem search --json`,
each a subprocess with one scratch home; `in_process=True` calls the same library entry points
(`capture.hook.handle`, `Worker.run_until_idle`, `Store.search`) in this process instead, which is faster and
less faithful (no process start, no fresh import per event).

`ReplayDir` is a project's fresh git repository (one commit of a README; a session that ran in another worktree of
the project gets a real `git worktree`). `replay_session` rewrites the transcript's own directories to the replay
directories, grows a copy of the transcript line by line as Claude Code wrote it (each hook's `transcript_path`
points to it), creates the files the session wrote or edited, and sends every hook event in order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness import base_env
from processes import agentmem, hook_output_problem, run_hook
from transcript_replay import claude_code_timeline, numbered_records  # noqa: E402

EDIT_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
GIT_IDENTITY = ["-c", "user.name=agentmem eval", "-c", "user.email=eval@agentmem.invalid", "-c", "commit.gpgsign=false"]


GIT_DATES = {"GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z"}


def git(cwd: Path, *args: str) -> None:
    """git with a fixed identity and commit dates, so a replay's commits have the same hashes in every run."""
    subprocess.run(["git", *GIT_IDENTITY, *args], cwd=cwd, check=True, capture_output=True, timeout=60,
                   env={**os.environ, **GIT_DATES})


class Agentmem:
    """The product as a new session meets it, against one home: hook, worker, search."""

    def __init__(self, home: Path, model_path: Path, in_process: bool = False) -> None:
        self.home = home
        self.model_path = model_path
        self.in_process = in_process
        self.env = base_env(home, model_path)
        self.problems: Counter[str] = Counter()
        self.examples: list[str] = []
        self.hook_ms: list[float] = []
        self.search_ms: list[float] = []
        self._stores: dict[str, Any] = {}
        self._embedder = None

    def hook(self, event: str, payload: dict[str, Any], cwd: Path) -> dict[str, Any] | None:
        """Send one event; returns the hook's JSON answer (None when it printed nothing)."""
        raw = json.dumps(payload, ensure_ascii=False).encode()
        if self.in_process:
            from agentmem_mcp.capture.hook import handle

            began = time.perf_counter()
            try:
                answer = handle("claude-code", event, raw, env=self.env)
            except Exception as exc:  # run_hook would log it and carry on: count it instead
                self._problem(event, f"{type(exc).__name__}: {exc}")
                answer = None
            self.hook_ms.append((time.perf_counter() - began) * 1000)
            return answer
        code, out, err, ms = run_hook(self.env, event, payload, cwd)
        self.hook_ms.append(ms)
        problem = hook_output_problem(event, code, out, err)
        if problem:
            self._problem(event, problem)
        try:
            return json.loads(out) if out.strip() else None
        except ValueError:
            return None

    def _problem(self, event: str, text: str) -> None:
        self.problems[event] += 1
        if len(self.examples) < 10:
            self.examples.append(f"{event}: {text[:300]}")

    def worker(self) -> list[str]:
        """Run the background work to completion (`agentmem worker --once` until a run does nothing)."""
        reports = []
        for _ in range(5):
            if self.in_process:
                from agentmem_mcp.runtime.worker import Worker
                from agentmem_mcp.store import Store

                with Store.open(self.settings(), project=None, embedder=self.embedder()) as store:
                    text = Worker(store, llm=None).run_until_idle().text()
            else:
                done = agentmem(self.env, "worker", "--once", timeout=3600)
                if done.returncode != 0:
                    raise SystemExit(f"agentmem worker --once failed ({done.returncode}): {done.stderr[-2000:]}")
                text = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
            reports.append(text)
            if text.startswith("compressed 0, summaries 0, consolidated 0"):
                break
        return reports

    def search(self, query: str, cwd: Path) -> list[dict[str, Any]]:
        """The hits of `agentmem search QUERY --json` run in `cwd` (the default limit, best first)."""
        began = time.perf_counter()
        if self.in_process:
            from agentmem_mcp.project import project_for

            project = project_for(cwd) or ""
            hits = self.store(project).search(query).to_dict()["hits"]
        else:
            done = agentmem(self.env, "search", query, "--json", cwd=cwd)
            if done.returncode != 0:
                raise SystemExit(f"agentmem search failed ({done.returncode}): {done.stderr[-2000:]}")
            hits = json.loads(done.stdout)["hits"]
        self.search_ms.append((time.perf_counter() - began) * 1000)
        return hits

    def rows(self, sql: str, args: list[Any]) -> list[dict[str, Any]]:
        """Rows of a read-only query on this home's database."""
        from agentmem_mcp.db.connection import connect

        conn = connect(self.settings().database, load_vec=False)
        try:
            return [dict(row) for row in conn.execute(sql, args)]
        finally:
            conn.close()

    def settings(self):
        from agentmem_mcp.config import load_settings

        return load_settings(env=self.env)

    def embedder(self):
        if self._embedder is None:
            from agentmem_mcp.index.embedder import Embedder

            settings = self.settings()
            self._embedder = Embedder(settings.embed_model, settings.embed_model_path)
            if not self._embedder.load():
                raise SystemExit(f"cannot load the embedding model from {self.model_path}: {self._embedder.error}")
        return self._embedder

    def store(self, project: str | None):
        """A store on this home for `project`, opened once (the in-process search's; also for reading rows)."""
        from agentmem_mcp.store import Store

        key = project or ""
        if key not in self._stores:
            self._stores[key] = Store.open(self.settings(), project=project, embedder=self.embedder())
        return self._stores[key]

    def close(self) -> None:
        from live_processes import stop_shared_processes

        for store in self._stores.values():
            store.close()
        self._stores.clear()
        stop_shared_processes(self.home)  # the one the replay's first hook started


@dataclass
class ReplayDir:
    """One project's replay: a fresh git repository, and worktrees for sessions that ran in another one."""
    name: str
    root: Path
    original_root: str = ""
    mapping: dict[str, Path] = field(default_factory=dict)  # original directory -> replay directory
    written: dict[Path, str] = field(default_factory=dict)  # file the sessions wrote or edited -> last tool

    @classmethod
    def create(cls, parent: Path, name: str) -> ReplayDir:
        root = parent / name
        root.mkdir(parents=True)
        git(root, "init", "-q")
        (root / "README.md").write_text(f"# {name}\n\nReplay of recorded Claude Code sessions.\n", encoding="utf-8")
        git(root, "add", "README.md")
        git(root, "commit", "-qm", "README")
        return cls(name, root.resolve())

    def directory_for(self, original: str) -> Path:
        """Where a session whose transcript says `original` runs: the root for the project's first directory and
        anything under it, a new git worktree of the project for another checkout (e.g. spotter-dov)."""
        if not self.original_root:
            self.original_root = original.rstrip("/")
            self.mapping[self.original_root] = self.root
        for known, replay in self.mapping.items():
            if original == known or original.startswith(known + "/"):
                return replay / original[len(known):].lstrip("/") if original != known else replay
        tree = self.root.parent / f"{self.name}-worktrees" / (Path(original).name or "tree")
        tree.parent.mkdir(parents=True, exist_ok=True)
        git(self.root, "worktree", "add", "-q", "-b", f"replay-{tree.name}", str(tree))
        self.mapping[original.rstrip("/")] = tree.resolve()
        return tree.resolve()

    def rewrite(self, text: str) -> str:
        """The transcript text with every original directory replaced by its replay directory (longest first)."""
        for original in sorted(self.mapping, key=len, reverse=True):
            text = text.replace(original, str(self.mapping[original]))
        return text

    def project_id(self) -> str:
        """The project agentmem files these sessions under (the main git root)."""
        from agentmem_mcp.project import project_for

        return project_for(self.root) or str(self.root)

    def contains(self, path: Path) -> bool:
        roots = list(self.mapping.values()) or [self.root]
        return any(path == r or r in path.parents for r in roots) and ".git" not in path.parts


def session_directory(path: Path) -> str:
    """The directory most of the session's records ran in."""
    counts = Counter(r.get("cwd") for _, r in numbered_records(path)
                     if isinstance(r.get("cwd"), str) and not r.get("isSidechain"))
    return counts.most_common(1)[0][0] if counts else ""


def materialise(replay: ReplayDir, event: str, payload: dict[str, Any]) -> None:
    """Make the file a successful Write / Edit left behind exist in the replay directory (a Write with its
    content; an edit only ensures the file exists), so later checks meet real files."""
    if event != "PostToolUse" or payload.get("tool_name") not in EDIT_TOOLS:
        return
    tool_input = payload.get("tool_input") or {}
    raw = tool_input.get(EDIT_TOOLS[payload["tool_name"]])
    if not isinstance(raw, str) or not raw.startswith("/"):
        return
    path = Path(raw)
    try:
        path = path.resolve()
    except (OSError, RuntimeError):
        return
    if not replay.contains(path):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if payload["tool_name"] == "Write" and isinstance(tool_input.get("content"), str):
        path.write_text(tool_input["content"], encoding="utf-8")
    elif not path.exists():
        path.touch()
    replay.written[path] = payload["tool_name"]


@dataclass
class SessionReplay:
    session_id: str
    events: Counter[str]
    seconds: float


def replay_session(product: Agentmem, replay: ReplayDir, transcript: Path, transcripts_dir: Path,
                   seen_uuids: set[str]) -> SessionReplay:
    """Send one recorded session through the hooks, in order, from its replay directory."""
    began = time.perf_counter()
    cwd = replay.directory_for(session_directory(transcript))
    lines = replay.rewrite(transcript.read_text(encoding="utf-8", errors="replace")).split("\n")
    staged = transcripts_dir / "staged" / transcript.name
    staged.parent.mkdir(parents=True, exist_ok=True)
    staged.write_text("\n".join(lines), encoding="utf-8")
    timeline = claude_code_timeline(staged, seen_uuids)
    session_id = next((p["session_id"] for _, _, p in timeline if p.get("session_id")), "") or str(uuid.uuid4())
    live = transcripts_dir / "live" / f"{session_id}.jsonl"
    live.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    events: Counter[str] = Counter()
    with live.open("w", encoding="utf-8") as out:
        for upto, event, payload in timeline:
            if upto > written:
                out.write("".join(line + "\n" for line in lines[written:upto]))
                out.flush()
                written = upto
            payload = {**payload, "transcript_path": str(live), "cwd": str(cwd)}
            materialise(replay, event, payload)
            product.hook(event, payload, cwd)
            events[event] += 1
    return SessionReplay(session_id, events, time.perf_counter() - began)


def new_session(product: Agentmem, cwd: Path, transcripts_dir: Path) -> tuple[str, Callable[[str], str]]:
    """Open a new session in `cwd` (SessionStart, source "startup"); returns what it injected (the briefing)
    and a function that sends one UserPromptSubmit in that session and returns what the hook injected."""
    session_id = str(uuid.uuid4())
    transcript = transcripts_dir / "live" / f"{session_id}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.touch()
    base = {"session_id": session_id, "transcript_path": str(transcript), "cwd": str(cwd),
            "permission_mode": "default"}
    answer = product.hook("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"}, cwd)

    def prompt(text: str) -> str:
        return injected(product.hook("UserPromptSubmit", {**base, "hook_event_name": "UserPromptSubmit",
                                                          "prompt": text}, cwd))

    return injected(answer), prompt


def injected(answer: dict[str, Any] | None) -> str:
    """The additionalContext of a Claude Code hook answer ('' when there is none)."""
    specific = answer.get("hookSpecificOutput") if isinstance(answer, dict) else None
    context = specific.get("additionalContext") if isinstance(specific, dict) else None
    return context if isinstance(context, str) else ""
