"""What the load, fault and replay scripts share: real `agentmem` processes in a scratch home, an MCP stdio client for
`agentmem serve`, the hook command as Claude Code runs it, and the checks every run ends with (private file
modes, no network listener, the audit chain, the store's own doctor)."""

from __future__ import annotations

import json
import os
import random
import stat
import subprocess
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from harness import MODEL_NAME, REPO, agentmem_bin
from live_processes import serve_pids
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

RUN_HOOK = REPO / "hooks" / "run-hook.sh"
SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "zi", "pe", "qua", "dor", "fen", "gil", "har", "jul",
             "bex", "cor", "dun", "wyn", "tal", "mor", "sik", "ven", "lar", "pim", "rod", "sul", "tev", "yar")


def make_project(path: Path) -> Path:
    (path / ".git").mkdir(parents=True, exist_ok=True)
    return path


def word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(3))


def memory_content(rng: random.Random, n: int) -> str:
    """A memory unlike any other (no near-duplicate supersedes it), with words a search can find."""
    w = [word(rng) for _ in range(7)]
    return (f"{w[0].capitalize()} {w[1]} decision {n}: route {w[2]} traffic through {w[3]} because "
            f"{w[4]} {w[5]} kept timing out in {w[6]}")


def post_tool_use(session: str, cwd: Path, marker: str, i: int) -> dict[str, Any]:
    """One PostToolUse payload as Claude Code sends it; `marker` makes its input unique."""
    base = {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": str(cwd),
            "permission_mode": "default", "hook_event_name": "PostToolUse", "tool_use_id": f"toolu_{marker}"}
    path = f"{cwd}/src/pkg{i % 13}/mod_{marker}.py"
    kind = i % 4
    if kind == 0:
        return {**base, "tool_name": "Bash",
                "tool_input": {"command": f"pytest -q tests/test_{marker}.py", "description": "run the tests"},
                "tool_response": {"stdout": f"{i % 7 + 1} passed in 0.{i % 10}s", "stderr": "",
                                  "interrupted": False}}
    if kind == 1:
        content = f"def handler_{marker}(request):\n    return respond(request, {i})\n"
        return {**base, "tool_name": "Read", "tool_input": {"file_path": path},
                "tool_response": {"type": "text", "file": {"filePath": path, "content": content,
                                                           "numLines": 2, "startLine": 1, "totalLines": 2}}}
    if kind == 2:
        old, new = f"limit = {i}", f"limit = {i + 1}"
        return {**base, "tool_name": "Edit", "tool_input": {"file_path": path, "old_string": old, "new_string": new},
                "tool_response": {"filePath": path, "oldString": old, "newString": new, "userModified": False}}
    return {**base, "tool_name": "Grep", "tool_input": {"pattern": f"handler_{marker}", "path": str(cwd)},
            "tool_response": {"mode": "files_with_matches", "filenames": [path], "numFiles": 1}}


# -- processes -------------------------------------------------------------------------------------------

def run_hook(env: dict[str, str], event: str, payload: dict[str, Any], cwd: Path,
             timeout: float = 60) -> tuple[int, bytes, bytes, float]:
    """Run one hook exactly as Claude Code's plugin does (`sh run-hook.sh claude-code EVENT`, JSON on stdin).
    Returns (exit code, stdout, stderr, milliseconds)."""
    started = time.perf_counter()
    done = subprocess.run(["sh", str(RUN_HOOK), "claude-code", event], input=json.dumps(payload).encode(),
                          env=env, cwd=cwd, capture_output=True, timeout=timeout, check=False)
    return done.returncode, done.stdout, done.stderr, (time.perf_counter() - started) * 1000


def hook_output_problem(event: str, code: int, out: bytes, err: bytes) -> str | None:
    """What is wrong with a hook run from the agent's side, or None: exit 0, nothing on stderr, and on stdout
    nothing (PostToolUse, Stop) or one JSON object of Claude Code's hook output shape (a `systemMessage` for the
    user included)."""
    if code != 0:
        return f"exit code {code}"
    if err.strip():
        return f"stderr: {err[:200]!r}"
    if not out.strip():
        return None
    try:
        answer = json.loads(out)
    except ValueError:
        return f"stdout is not JSON: {out[:200]!r}"
    if isinstance(answer, dict) and set(answer) == {"systemMessage"} and isinstance(answer["systemMessage"], str):
        return None  # a line for the user alone: the hook could not do its work (capture/hook_notice.py)
    specific = answer.get("hookSpecificOutput") if isinstance(answer, dict) else None
    if not isinstance(specific, dict) or specific.get("hookEventName") != event:
        return f"unexpected hook output: {out[:200]!r}"
    return None


def agentmem(env: dict[str, str], *args: str, cwd: Path | None = None, timeout: float = 300,
             ) -> subprocess.CompletedProcess:
    return subprocess.run([str(agentmem_bin()), *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False)


def embedding_service_pid(home: Path, model_path: Path) -> int | None:
    """The pid of the shared process that holds the embedding model for `home` (it answers on embed.sock), or None
    when none does."""
    from agentmem_mcp.runtime.embed_service import ServiceClient, ServiceUnavailable

    try:
        client = ServiceClient(home, MODEL_NAME, model_path)
    except ServiceUnavailable:
        return None
    client.close()
    return client.pid


def _inodes(path: str, listening_only: bool, allowed: tuple[str, ...] = ()) -> set[str]:
    found = set()
    try:
        lines = Path(path).read_text().splitlines()[1:]
    except OSError:
        return found
    for line in lines:
        parts = line.split()
        if path.endswith("unix"):
            # Num RefCount Protocol Flags Type St Inode Path: __SO_ACCEPTCON (0x10000) marks a listener
            if len(parts) >= 7 and int(parts[3], 16) & 0x10000 and (len(parts) < 8 or parts[7] not in allowed):
                found.add(parts[6])
        elif len(parts) > 9 and (not listening_only or parts[3] == "0A"):
            found.add(parts[9])
    return found


def network_listeners(pids: list[int], home: Path | None = None) -> list[str]:
    """Sockets the processes listen on (TCP listen, any UDP socket, a listening Unix socket): should be none, but
    for the shared process's sockets in `home` (0600, in the private home): embeddings (runtime/embed_service.py),
    hook events handed to it (capture/hook_service.py), relayed sessions (runtime/session_host.py) and the command
    line's searches (runtime/search_service.py)."""
    allowed = tuple(str(home / name) for name in ("embed.sock", "hooks.sock", "sessions.sock", "search.sock")) \
        if home else ()
    table = {}
    for name in ("tcp", "tcp6"):
        table.update({inode: name for inode in _inodes(f"/proc/net/{name}", True)})
    for name in ("udp", "udp6", "unix"):
        table.update({inode: name for inode in _inodes(f"/proc/net/{name}", False, allowed)})
    found = []
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        for link in links:
            if link.startswith("socket:[") and link[8:-1] in table:
                found.append(f"pid {pid}: {table[link[8:-1]]} socket {link}")
    return found


def mode_problems(home: Path) -> list[str]:
    """Every directory under `home` must be 0700 and every file 0600."""
    problems = []
    for path in [home, *home.rglob("*")]:
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue
        mode = stat.S_IMODE(info.st_mode)
        if stat.S_ISDIR(info.st_mode) and mode != 0o700:
            problems.append(f"{path} is a directory with mode {oct(mode)}")
        elif stat.S_ISREG(info.st_mode) and mode != 0o600:
            problems.append(f"{path} is a file with mode {oct(mode)}")
    return problems


def final_checks(env: dict[str, str], home: Path, cwd: Path, doctor: Any = None) -> dict[str, Any]:
    """`agentmem audit --verify`, `agentmem doctor` (or the given in-process doctor's checks) and file modes,
    once every process of the run is gone."""
    audit = agentmem(env, "audit", "--verify", cwd=cwd)
    if doctor is None:
        done = agentmem(env, "doctor", "--json", cwd=cwd)
        try:
            failed = [c for c in json.loads(done.stdout) if not c["ok"]]
        except ValueError:
            failed = [{"name": "doctor", "detail": done.stdout[-300:] + done.stderr[-300:]}]
    else:
        failed = [c.to_dict() for c in doctor if not c.ok]
    modes = mode_problems(home)
    return {"audit": audit.stdout.strip() or audit.stderr.strip(), "audit_ok": audit.returncode == 0,
            "doctor_failures": failed, "mode_problems": modes[:20],
            "ok": audit.returncode == 0 and not failed and not modes}


# -- the MCP client -------------------------------------------------------------------------------------

class ToolFailure(Exception):
    """The server answered a tool call with an error (the text the agent would read)."""


class Serve:
    """`agentmem serve` spawned and driven through the MCP SDK's stdio client, as an agent's client does."""

    def __init__(self, env: dict[str, str], cwd: Path, errlog: Path) -> None:
        self.env, self.cwd, self.errlog_path = env, cwd, errlog
        self.pid: int | None = None
        self.session: ClientSession | None = None
        self._stack: AsyncExitStack | None = None

    async def __aenter__(self) -> Serve:
        home = Path(self.env["AGENTMEM_HOME"])
        before = set(serve_pids(home))
        self._stack = AsyncExitStack()
        errlog = self._stack.enter_context(open(self.errlog_path, "a", encoding="utf-8"))
        params = StdioServerParameters(command=str(agentmem_bin()), args=["serve"], env=self.env, cwd=str(self.cwd))
        read, write = await self._stack.enter_async_context(stdio_client(params, errlog=errlog))
        self.session = await self._stack.enter_async_context(ClientSession(read, write))
        with anyio.fail_after(60):
            await self.session.initialize()
        new = set(serve_pids(home)) - before
        self.pid = min(new) if new else None
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._stack is not None:
            await self._stack.aclose()

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float = 60) -> Any:
        """The tool's JSON answer; ToolFailure with the agent-visible text when the tool reports an error.
        A call that does not answer within `timeout` raises TimeoutError."""
        assert self.session is not None
        with anyio.fail_after(timeout):
            result = await self.session.call_tool(tool, arguments)
        text = result.content[0].text if result.content else ""
        if result.is_error:
            raise ToolFailure(text)
        return json.loads(text)

    async def wait_hybrid(self, timeout: float = 120) -> None:
        """Until the embedding model has loaded in this server (search reports mode 'hybrid')."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = await self.call("memory_search", {"query": "warm up", "limit": 1})
            if found["mode"] == "hybrid":
                return
            await anyio.sleep(0.2)
        raise TimeoutError("the embedding model did not load in the server")
