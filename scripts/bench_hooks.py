"""Benchmark what the agent waits for: hook processes and server start-up.

    python scripts/bench_hooks.py [--runs 40] [--memories 10000] [--model PATH] [--baseline BIN] [--json OUT]

- PostToolUse hook, whole process, 8 kB payload, beside bare `python -c pass` on the same machine in the same
  run, as a live session runs it: the shared embedding process is running (a connected client stands in for
  `agentmem serve`), so the hook hands its event over `<home>/hooks.sock`. Three forms: `agentmem hook` (the
  console script; series `post_tool_use_8kb`), `<python> -c "from agentmem_mcp.capture.hook_client import run;
  run()" hook` (what `agentmem install` writes; `*_direct`), and the same with AGENTMEM_HOOK_HANDOFF=0 (the hook
  records the event itself, as when no shared process runs; `*_alone`); the console form again with a config.toml
  (AGENTMEM_CONFIG); and as the Claude Code plugin runs it, `sh hooks/run-hook.sh claude-code PostToolUse`, the
  wrapper finding the plugin's own environment (hooks/setup-env.sh; here a `ready` one made of this Python's
  environment) and running the same hook client (`*_plugin`: what the wrapper's check costs over `*_direct`);
- the same PostToolUse hook with no server running, in a second home that no client holds a process for (the
  first hook of a day, or hooks without a server): `*_no_server`, the hooks after the first, which find the
  process that first hook started in the background (capture/hook_start.py); `*_first_of_day`, the first itself:
  before each such call the process it started is stopped and its once-a-minute mark removed, and the call is
  followed (untimed) by a wait for the new process's socket, so that its start-up overlaps no other series;
  `*_first_of_day_recorded`: from that call's spawn until its observation is committed (the first hook of the day
  may answer before its event is recorded: capture/hook_client.py `detach`), not a cost the agent waits for;
- SessionStart hook with N memories in the project (context built and printed), direct and alone;
- UserPromptSubmit hook (BM25 search) with the same store, direct and alone;
- with --hold-db, a connection to the database stays open through the loop, as a running server's does;
- `agentmem serve`: spawn to the `initialize` response, and RSS once the embedding model has loaded (the
  server's, and the shared embedding process's when the server uses one).

--baseline BIN times another install's `agentmem hook` (e.g. a checkout of main in its own venv) in the same
loop, each of its calls right after the same calls of this one, so that load changes hit both alike; its `*_alone`
series (the hook recording the event itself, with the baseline's own code) compare with this install's, and its
`*_first_of_day` series (in a home of its own) with this install's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_store import build
from harness import (
    MODEL_NAME,
    REPO,
    children_cpu,
    clean_env,
    default_model,
    describe_machine,
    rss_mb,
    summary,
    utc_now,
    write_json,
)
from live_processes import shared_pids, stop, wait_gone
from processes import embedding_service_pid

import agentmem_mcp
from agentmem_mcp.config import load_settings
from agentmem_mcp.db.connection import connect
from agentmem_mcp.index.embedder import Embedder
from agentmem_mcp.install.install import HOOK_ENTRY
from agentmem_mcp.store import Store

PYTEST_LINE = "tests/test_api.py::test_case_{n} PASSED [ {p}%] in 0.0{n}s — checked response schema for /v1/items\n"


def agentmem_bin() -> list[str]:
    script = Path(sys.executable).with_name("agentmem")
    return [str(script)] if script.exists() else [sys.executable, "-m", "agentmem_mcp"]


def payload_8k(n: int, project: Path) -> bytes:
    lines, size = [], 0
    while size < 8000:
        line = PYTEST_LINE.format(n=len(lines) + n, p=len(lines) % 100)
        lines.append(line)
        size += len(line)
    return json.dumps({
        "session_id": "bench-session", "transcript_path": "/tmp/t.jsonl", "cwd": str(project),
        "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"toolu_{n}",
        "tool_input": {"command": f"pytest -q tests/test_api.py -k case_{n}", "description": "run tests"},
        "tool_response": {"stdout": "".join(lines), "stderr": "", "interrupted": False},
    }).encode()


def _children_cpu_ms() -> float:
    return children_cpu() * 1000


def timed(cmd: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes, float]:
    """Wall time of the whole process (ms), its stdout, and the CPU time it used (user + system, ms: less
    sensitive than wall time to other jobs on a busy machine)."""
    cpu = _children_cpu_ms()
    started = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, env=env, capture_output=True, check=False)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{cmd} failed: {done.stderr.decode()[-500:]}")
    return elapsed, done.stdout, _children_cpu_ms() - cpu


def stats(values: list[float]) -> dict:
    return summary(values, digits=1, with_max=False)


def bench_serve(env: dict[str, str], cwd: Path, runs: int) -> dict:
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    spawn_ms, rss, shared_mb = [], [], None
    for run in range(runs):
        started = time.perf_counter()
        proc = subprocess.Popen([*agentmem_bin(), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        proc.stdin.write(init.encode() + b"\n")
        proc.stdin.flush()
        proc.stdout.readline()
        spawn_ms.append((time.perf_counter() - started) * 1000)
        if run == runs - 1:
            proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            deadline = time.time() + 120
            request_id = 2
            while time.time() < deadline:
                call = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                        "params": {"name": "memory_search", "arguments": {"query": "tests"}}}
                proc.stdin.write(json.dumps(call).encode() + b"\n")
                proc.stdin.flush()
                answer = proc.stdout.readline().decode()
                request_id += 1
                if '\\"mode\\": \\"hybrid\\"' in answer or '"mode": "hybrid"' in answer:
                    break
                time.sleep(0.5)
            time.sleep(1.0)
            rss.append(rss_mb(proc.pid))
            service = embedding_service_pid(Path(env["AGENTMEM_HOME"]), Path(env["AGENTMEM_EMBED_MODEL_PATH"]))
            shared_mb = rss_mb(service) if service else None
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    return {"spawn_to_initialize": stats(spawn_ms), "rss_after_model_mb": round(rss[-1], 1) if rss else None,
            "shared_embedding_process_rss_mb": round(shared_mb, 1) if shared_mb else None}


def wait_recorded(database: Path, marker: str, started: float, timeout: float = 30.0) -> float:
    """ms from `started` (time.perf_counter) until an observation whose input holds `marker` is committed."""
    import sqlite3

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5) as conn:
                if conn.execute("SELECT 1 FROM observations WHERE input LIKE ?", (f"%{marker}%",)).fetchone():
                    return (time.perf_counter() - started) * 1000
        except sqlite3.Error:  # not made yet
            pass
        time.sleep(0.005)
    raise SystemExit(f"the first hook's event ({marker}) was not recorded")


def stop_hook_processes(home: Path) -> None:
    """Stop the shared processes serving `home` and forget when one was last started (a first hook of the day
    starts with none)."""
    for pid in shared_pids(home):
        stop(pid)
    (home / "hooks.start").unlink(missing_ok=True)


def wait_for_socket(path: Path, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.05)
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--memories", type=int, default=10000)
    parser.add_argument("--serve-runs", type=int, default=7)
    parser.add_argument("--model", type=Path, default=default_model())
    parser.add_argument("--baseline", type=Path, help="another install's agentmem executable, timed in turn")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--hold-db", action="store_true",
                        help="keep a connection to the database open during the loop, as a running `agentmem serve` "
                             "does (without one, closing a hook's connection checkpoints the WAL)")
    args = parser.parse_args(argv)
    results = {"date": utc_now(), "machine": describe_machine(),
               "command": "python scripts/bench_hooks.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        project.mkdir(parents=True)  # a real repository: SessionStart reads its `git status` (recall/git_state.py)
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        for n in range(200):
            (project / f"module_{n}.py").write_text(f"x = {n}\n")
        subprocess.run(["git", "-C", str(project), "-c", "user.name=b", "-c", "user.email=b@b", "add", "."], check=True)
        subprocess.run(["git", "-C", str(project), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"],
                       check=True)
        (project / "module_0.py").write_text("x = -1\n")  # one file changed, as a working tree usually has
        env = clean_env()
        env.update(AGENTMEM_HOME=str(home), AGENTMEM_EMBED_MODEL_PATH=str(args.model))
        embedder = Embedder(MODEL_NAME, args.model)
        embedder.load()
        settings = load_settings(env={}, home=home, embed_model_path=args.model)
        with Store.open(settings, project=str(project), embedder=embedder) as store:
            print(f"building {args.memories:,} memories", file=sys.stderr)
            build(store, args.memories, seed=7, synthetic_vectors=True)  # hooks never read vectors
            store.save("Run the API tests with pytest -q tests/test_api.py before pushing", type="workflow",
                       priority="P0")
            # the files the memories name exist, as in a real checkout: the briefing checks each one it shows
            for (files,) in store.conn.execute("SELECT DISTINCT files FROM memories WHERE files != '[]'"):
                for name in json.loads(files):
                    (project / name).parent.mkdir(parents=True, exist_ok=True)
                    (project / name).touch()

        config = Path(tmp) / "config.toml"
        config.write_text("max_output_chars = 12000\nprompt_budget_tokens = 300\n")
        config.chmod(0o600)
        with_config = dict(env, AGENTMEM_CONFIG=str(config))
        plugin_env = Path(tmp) / "data" / "agentmem-env" / agentmem_mcp.__version__  # as setup-env.sh leaves it
        plugin_env.mkdir(parents=True)
        (plugin_env / "venv").symlink_to(sys.prefix)
        (plugin_env / "ready").write_text(f"{sys.prefix}/bin/agentmem\n")
        as_plugin = dict(env, XDG_DATA_HOME=str(Path(tmp) / "data"), CLAUDE_PLUGIN_ROOT=str(REPO))
        wrapper = ["sh", str(REPO / "hooks" / "run-hook.sh"), "claude-code"]
        console = [*agentmem_bin(), "hook", "--client", "claude-code"]
        direct = [sys.executable, "-c", HOOK_ENTRY, "hook", "--client", "claude-code"]  # as `agentmem install` writes
        alone = dict(env, AGENTMEM_HOOK_HANDOFF="0")
        no_server_home = Path(tmp) / "home-no-server"
        no_server = dict(env, AGENTMEM_HOME=str(no_server_home))
        baseline = [str(args.baseline), "hook", "--client", "claude-code"] if args.baseline else None
        baseline_no_server_home = Path(tmp) / "home-no-server-baseline"
        baseline_no_server = dict(env, AGENTMEM_HOME=str(baseline_no_server_home))
        # the baseline recording each event itself, with its own code (handed over, the shared process running
        # is this install's, so the baseline's handed-over series time this install's code)
        baseline_alone = [str(args.baseline.parent / "python"), "-c", HOOK_ENTRY, "hook", "--client",
                          "claude-code"] if args.baseline else None
        series: dict[str, list[float]] = {}
        from agentmem_mcp.runtime.embed_service import connect_or_start

        shared = connect_or_start(home, MODEL_NAME, args.model, 600)  # stands in for a running `agentmem serve`
        results["shared_process_pid"] = shared.pid
        held = connect(settings.database, load_vec=False) if args.hold_db else None
        results["database_held_open"] = held is not None

        def run(name: str, cmd: list[str], stdin: bytes, run_env: dict[str, str]) -> bytes:
            elapsed, out, cpu = timed(cmd, stdin, run_env)
            series.setdefault(name, []).append(elapsed)
            series.setdefault(f"{name}_cpu", []).append(cpu)
            return out

        def first_of_day(name: str, cmd: list[str], day_home: Path, day_env: dict[str, str], n: int) -> None:
            stop_hook_processes(day_home)
            started = time.perf_counter()
            run(name, [*cmd, "PostToolUse"], payload_8k(n * 8 + 7, project), day_env)
            series.setdefault(f"{name}_recorded", []).append(
                wait_recorded(day_home / "agentmem.db", f"-k case_{n * 8 + 7}\"", started))
            if not wait_for_socket(day_home / "hooks.sock"):
                raise SystemExit("the first hook started no process that takes the next hooks")

        for n in range(args.runs):  # interleaved, so load changes hit every series alike
            run("bare_python", [sys.executable, "-c", "pass"], b"", env)
            start_payload = json.dumps({"session_id": f"s{n}", "cwd": str(project), "source": "startup",
                                        "hook_event_name": "SessionStart"}).encode()
            prompt_payload = json.dumps({"session_id": f"s{n}", "cwd": str(project), "hook_event_name":
                                         "UserPromptSubmit", "prompt": "how do I run the api tests?"}).encode()
            post = [payload_8k(n * 8 + k, project) for k in range(8)].__getitem__  # a new tool call every time
            run("post_tool_use_8kb", [*console, "PostToolUse"], post(0), env)
            run("post_tool_use_8kb_direct", [*direct, "PostToolUse"], post(1), env)
            run("post_tool_use_8kb_alone", [*direct, "PostToolUse"], post(2), alone)
            run("post_tool_use_8kb_plugin", [*wrapper, "PostToolUse"], post(5), as_plugin)
            if n:  # the first loop's first-of-day call has started the process these find
                run("post_tool_use_8kb_no_server", [*direct, "PostToolUse"], post(6), no_server)
            run("post_tool_use_8kb_with_config", [*console, "PostToolUse"], post(3), with_config)
            out = run("session_start_direct", [*direct, "SessionStart"], start_payload, env)
            if n == 0:
                results["session_start_context_chars"] = len(json.loads(out)["hookSpecificOutput"]["additionalContext"])
            run("session_start_alone", [*direct, "SessionStart"], start_payload, alone)
            run("user_prompt_submit_direct", [*direct, "UserPromptSubmit"], prompt_payload, env)
            run("user_prompt_submit_alone", [*direct, "UserPromptSubmit"], prompt_payload, alone)
            first_of_day("post_tool_use_8kb_first_of_day", direct, no_server_home, no_server, n)
            if baseline:
                first_of_day("baseline_post_tool_use_8kb_first_of_day", baseline_alone, baseline_no_server_home,
                             baseline_no_server, n)
            if baseline:
                run("baseline_post_tool_use_8kb", [*baseline, "PostToolUse"], post(4), env)
                out = run("baseline_session_start", [*baseline, "SessionStart"], start_payload, env)
                if n == 0:
                    results["baseline_session_start_context_chars"] = len(
                        json.loads(out)["hookSpecificOutput"]["additionalContext"])
                run("baseline_user_prompt_submit", [*baseline, "UserPromptSubmit"], prompt_payload, env)
                run("baseline_post_tool_use_8kb_alone", [*baseline_alone, "PostToolUse"], post(5), alone)
                run("baseline_session_start_alone", [*baseline_alone, "SessionStart"], start_payload, alone)
                run("baseline_user_prompt_submit_alone", [*baseline_alone, "UserPromptSubmit"], prompt_payload, alone)
        shared.close()
        if not wait_gone(shared.pid, 30.0):  # it leaves by itself once its last client has gone
            stop(shared.pid)
        results["no_server_process_rss_mb"] = [round(rss_mb(pid), 1) for pid in shared_pids(no_server_home)]
        stop_hook_processes(no_server_home)
        stop_hook_processes(baseline_no_server_home)
        if held is not None:
            held.close()
        for name, values in series.items():
            results[name] = {**stats(values), "memories": args.memories} if "session_start" in name else stats(values)
        bare, bare_cpu = results["bare_python"]["p50_ms"], results["bare_python_cpu"]["p50_ms"]
        for name in ("post_tool_use_8kb", "post_tool_use_8kb_direct", "post_tool_use_8kb_alone",
                     "post_tool_use_8kb_plugin", "post_tool_use_8kb_no_server", "post_tool_use_8kb_first_of_day",
                     "baseline_post_tool_use_8kb", "baseline_post_tool_use_8kb_first_of_day"):
            if name in results:
                results[f"{name}_minus_bare_p50_ms"] = round(results[name]["p50_ms"] - bare, 1)
                results[f"{name}_over_bare_p50"] = round(results[name]["p50_ms"] / bare, 2)
                results[f"{name}_minus_bare_cpu_p50_ms"] = round(results[f"{name}_cpu"]["p50_ms"] - bare_cpu, 1)
        results["plugin_wrapper_over_direct_p50_ms"] = round(
            results["post_tool_use_8kb_plugin"]["p50_ms"] - results["post_tool_use_8kb_direct"]["p50_ms"], 1)
        results["plugin_wrapper_over_direct_cpu_p50_ms"] = round(
            results["post_tool_use_8kb_plugin_cpu"]["p50_ms"] - results["post_tool_use_8kb_direct_cpu"]["p50_ms"], 1)
        results["serve"] = bench_serve(env, project, args.serve_runs) if args.serve_runs else None
    print(json.dumps(results, indent=2))
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
