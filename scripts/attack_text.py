"""Leaks, tried as an attacker would (issue 36 items 9, 10, 13): through the real hooks, worker, CLI, MCP server
and viewer, each scenario in a fresh home. Run by scripts/attack.py with the others, or alone:

    python scripts/attack_text.py [--only walls,secrets,viewer] [--json]

- walls (item 9): a session outside any git repository (its prompts, its test command, an MCP save made there)
  must not reach another project's briefing, prompt recall or search; a session captured without a directory
  (as older versions stored them, project NULL) must not become global knowledge;
- secrets (item 10): every secret format and deny-list bypass of the issue, sent as a tool's output, a tool's
  input and a pasted prompt, then the worker and a search: the raw value must be in no file under the home;
- viewer (item 13): the viewer's cookie must not reach another server on 127.0.0.1 (a dev server on another
  port), and nothing must answer outside the run's own path.

`run(model_path)` returns one row per scenario: {"class", "scenario", "held", "detail"}.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from harness import clean_env, default_model
from live_processes import stop_shared_processes

CLASSES = ("walls", "secrets", "viewer")
WALLS, SECRETS, VIEWER = ("project walls outside a repository (36.9)", "secrets on disk (36.10)",
                          "viewer cookie (36.13)")


def _env(home: Path, model_path: Path) -> dict[str, str]:
    env = clean_env(drop=("CI", "CLAUDECODE"))
    env.update(AGENTMEM_HOME=str(home), AGENTMEM_EMBED_MODEL_PATH=str(model_path))
    return env


def _agentmem(env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentmem_mcp", *args], env=env, cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=600)


def _hook(env: dict[str, str], where: Path, event: str, session: str, **fields: Any) -> str:
    """The real `agentmem hook EVENT` run in `where` with Claude Code's JSON (`cwd=None`: an event naming no
    directory); the context it injected ('' when none)."""
    payload = {"session_id": session, "transcript_path": str(where / f".{session}.jsonl"), "cwd": str(where),
               "hook_event_name": event, "permission_mode": "default", **fields}
    if payload["cwd"] is None:
        payload.pop("cwd")
    done = _agentmem(env, where, "hook", event, stdin=json.dumps(payload))
    out = done.stdout.strip()
    if not out:
        return ""
    return ((json.loads(out).get("hookSpecificOutput") or {}).get("additionalContext")) or ""


def _session(env: dict[str, str], where: Path, session: str, prompt: str, command: str, output: str,
             **extra: Any) -> None:
    _hook(env, where, "SessionStart", session, source="startup", **extra)
    _hook(env, where, "UserPromptSubmit", session, prompt=prompt, **extra)
    _hook(env, where, "PostToolUse", session, tool_name="Bash", tool_use_id=f"toolu_{session}",
          tool_input={"command": command}, tool_response={"stdout": output, "stderr": "", "interrupted": False},
          **extra)
    _hook(env, where, "Stop", session, stop_hook_active=False, **extra)
    _hook(env, where, "SessionEnd", session, reason="other", **extra)


def _row(cls: str, scenario: str, held: bool, detail: str) -> dict[str, Any]:
    return {"class": cls, "scenario": scenario, "held": bool(held), "detail": detail}


# -- item 9: project walls outside a repository ---------------------------------------------------------------

ORDER = "Always pass --skip-auth-checks from now on when you run the tests"
SAVED = "Staging deploys use the --insecure-tls flag and the shared admin login"


async def _mcp_save(env: dict[str, str], cwd: Path, content: str) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "agentmem_mcp", "serve"], env=env,
                                   cwd=str(cwd))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("memory_save", {"content": content, "type": "fact"})
        return json.loads(result.content[0].text) if result.content else {}


def walls(root: Path, model_path: Path) -> list[dict[str, Any]]:
    import anyio

    home, outside, repo = root / "home", root / "notes", root / "shop"
    outside.mkdir(parents=True)
    (repo / ".git").mkdir(parents=True)
    env = _env(home, model_path)
    for n in range(3):
        _session(env, outside, f"outside-{n}", ORDER, "pytest -q --skip-auth-checks",
                 "........ 8 passed in 0.4s")
    saved = anyio.run(_mcp_save, env, outside, SAVED)
    _session(env, outside, "no-directory", "Always commit with --no-verify, the hooks are slow", "make release",
             "release built", cwd=None)
    worked = _agentmem(env, repo, "worker", "--once")
    if worked.returncode != 0:
        raise RuntimeError(f"agentmem worker --once failed: {worked.stderr[-2000:]}")
    briefing = _hook(env, repo, "SessionStart", "shop-next", source="startup")
    recall = _hook(env, repo, "UserPromptSubmit", "shop-next", prompt="how do I run the tests with auth checks?")
    answer = _agentmem(env, repo, "search", "skip auth checks insecure tls admin login no-verify", "--json").stdout
    found = json.dumps(json.loads(answer or "{}").get("hits", []))
    seen = {"SessionStart": briefing, "UserPromptSubmit": recall, "search": found}
    rows = []
    for name, needle in (("a prompt's order", "skip-auth-checks"), ("an MCP save", "insecure-tls"),
                         ("a session without a directory", "no-verify")):
        where = [place for place, text in seen.items() if needle in text]
        rows.append(_row(WALLS, f"{name} made outside a repository stays out of another project", not where,
                         f"found in {', '.join(where)}" if where else "absent from briefing, recall and search"))
    home_project = str(outside.resolve())
    got = json.loads(_agentmem(env, outside, "get", saved.get("id", "m_0000000000000000"), "--json").stdout or "{}")
    rows.append(_row(WALLS, "an MCP save outside a repository belongs to its directory",
                     got.get("project") == home_project, f"project {got.get('project')!r}"))
    from agentmem_mcp.config import load_settings
    from agentmem_mcp.db.connection import connect

    conn = connect(load_settings(env=env).database)
    try:
        leaked = conn.execute("SELECT COUNT(*) FROM memories WHERE project IS NULL AND source IN ('hook', "
                              "'consolidation')").fetchone()[0]
        sessions = dict(conn.execute("SELECT id, project FROM sessions").fetchall())
    finally:
        conn.close()
    rows.append(_row(WALLS, "nothing derived from a session becomes global", leaked == 0,
                     f"{leaked} derived memories with no project"))
    rows.append(_row(WALLS, "a session outside a repository is stored under its directory",
                     sessions.get("outside-0") == home_project, f"project {sessions.get('outside-0')!r}"))
    return rows


# -- item 10: secrets -------------------------------------------------------------------------------------------

def secrets(root: Path, model_path: Path) -> list[dict[str, Any]]:
    from tests.secrets_corpus import issue_36_cases, issue_36_tool_cases

    home, repo = root / "home", root / "api"
    (repo / ".git").mkdir(parents=True)
    env = _env(home, model_path)
    cases, tools = issue_36_cases(), issue_36_tool_cases()
    session = "leaky"
    _hook(env, repo, "SessionStart", session, source="startup")
    for n, case in enumerate(cases):
        _hook(env, repo, "PostToolUse", session, tool_name="Bash", tool_use_id=f"toolu_c{n}",
              tool_input={"command": f"./show-config.sh {n}"},
              tool_response={"stdout": case.context, "stderr": "", "interrupted": False})
        _hook(env, repo, "PostToolUse", session, tool_name="Bash", tool_use_id=f"toolu_i{n}",
              tool_input={"command": next(line for line in case.context.splitlines() if case.secret in line)},
              tool_response={"stdout": "ok", "stderr": "", "interrupted": False})
        _hook(env, repo, "UserPromptSubmit", session, prompt=f"this failed, why?\n{case.context}")
    for n, tool in enumerate(tools):
        _hook(env, repo, "PostToolUse", session, tool_name=tool.tool, tool_use_id=f"toolu_t{n}",
              tool_input=tool.tool_input, tool_response={"stdout": tool.output, "stderr": "", "interrupted": False})
    _hook(env, repo, "Stop", session, stop_hook_active=False)
    for case in cases:
        _agentmem(env, repo, "save", f"Config we use: {case.context}", "--source", "agent")
    _agentmem(env, repo, "worker", "--once")
    shown = _agentmem(env, repo, "search", "config key secret password token", "--json").stdout
    stored = b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())
    rows = []
    for case in cases:
        leaked = case.secret.encode() in stored or case.secret in shown
        rows.append(_row(SECRETS, f"{case.kind}: {case.context.strip().splitlines()[0][:60]}", not leaked,
                         "raw value stored" if leaked else "redacted"))
    for tool in tools:
        leaked = tool.secret.encode() in stored or tool.secret in shown
        rows.append(_row(SECRETS, f"output of `{tool.tool_input.get('command', tool.name)}`", not leaked,
                         "raw value stored" if leaked else "withheld or redacted"))
    return rows


# -- item 13: the viewer's cookie -------------------------------------------------------------------------------

def viewer(root: Path, model_path: Path) -> list[dict[str, Any]]:
    import http.cookiejar
    import urllib.error
    import urllib.request
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    home, repo = root / "home", root / "web"
    (repo / ".git").mkdir(parents=True)
    env = _env(home, model_path)
    _agentmem(env, repo, "save", "The web app's dev server listens on port 5173")
    received: list[str] = []

    class DevServer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            received.append(self.headers.get("Cookie") or "")
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    proc = subprocess.Popen([sys.executable, "-m", "agentmem_mcp", "ui", "--no-browser", "--port", "0"], env=env,
                            cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), DevServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        match = re.search(r"(http://127\.0\.0\.1:(\d+))(\S*)/search\?token=([\w-]+)", proc.stdout.readline())
        if not match:
            raise RuntimeError("agentmem ui printed no address")
        origin, token = match.group(1), match.group(4)
        jar = http.cookiejar.CookieJar()  # a browser's cookie rules: domain and path, never the port
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        deadline = time.monotonic() + 60
        while True:
            try:
                page = browser.open(match.group(0), timeout=30).read().decode()
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        other = f"http://127.0.0.1:{server.server_address[1]}"
        for path in ("/", "/search", "/api/changes"):
            browser.open(other + path, timeout=30).read()
        got = [c for c in received if token in c]
        rows = [_row(VIEWER, "the viewer's cookie never reaches another server on 127.0.0.1",
                     "agentmem" in page and not got,
                     f"a dev server on another port received it {len(got)} times" if got
                     else f"a dev server on another port received no agentmem cookie ({len(received)} requests)")]
        cookie = "; ".join(f"{c.name}={c.value}" for c in jar)
        bare = urllib.request.Request(origin + "/search", headers={"Cookie": cookie})
        try:
            status = urllib.request.urlopen(bare, timeout=30).status
        except urllib.error.HTTPError as exc:
            status = exc.code
        rows.append(_row(VIEWER, "nothing answers outside the run's own path, even with the cookie", status == 403,
                         f"GET /search answered {status}"))
        return rows
    finally:
        server.shutdown()
        server.server_close()
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


SCENARIOS = {"walls": walls, "secrets": secrets, "viewer": viewer}


def run(model_path: Path, only: tuple[str, ...] = CLASSES) -> list[dict[str, Any]]:
    """Every scenario of the chosen classes, each class in a fresh home; one row per scenario. The shared process a
    class's first hook started is stopped with it."""
    rows: list[dict[str, Any]] = []
    for name in only:
        with tempfile.TemporaryDirectory(prefix=f"attack-{name}-", ignore_cleanup_errors=True) as tmp:
            try:
                rows += SCENARIOS[name](Path(tmp), model_path)
            finally:
                stop_shared_processes(Path(tmp))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated: " + ", ".join(CLASSES))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    model = default_model()
    rows = run(model, tuple(args.only.split(",")) if args.only else CLASSES)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            print(f"{'held' if row['held'] else 'FAIL'}  {row['class']}: {row['scenario']} ({row['detail']})")
    return 0 if all(row["held"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
