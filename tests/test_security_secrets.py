"""No secret left on disk (issue 18 item 7): the formats found stored raw, and deny-listed files read through a shell
or a search tool, through the real hooks, the CLI save, the worker and a search; then every byte under the home
(database, WAL, BM25 segments, spool, logs) is searched for the raw values."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem_mcp.capture.redact import (
    decodes_secrets,
    dumps_environment,
    makes_secrets,
    names_sensitive_file,
    without_sensitive_lines,
)

from .secrets_corpus import issue_18_cases, issue_36_cases, issue_36_tool_cases, tool_cases


def run(env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentmem_mcp", *args], env=env, cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=300)


def stored_bytes(home: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(home.rglob("*")) if path.is_file())


def test_no_raw_value_of_issue_18_reaches_any_file_under_the_home(cli_env, home, tmp_path):
    leak_through_every_path(cli_env, home, tmp_path, issue_18_cases(), tool_cases())


def test_no_raw_value_of_issue_36_reaches_any_file_under_the_home(cli_env, home, tmp_path):
    """Issue 36 item 10: a Twilio token beside its SID, OpenRouter keys, hex signing secrets and keys, ADMIN_PW /
    passwort / db_pw, passwords as command-line arguments, an Azure client secret, environment dumps; `.env-prod`,
    `.env~`, `.en?`, `.e*`, `.flaskenv`, `printenv`, `env | sort`, `docker compose config`, `kubectl get secret`,
    `print(os.environ)`, `openssl rand`: through the real hooks, CLI save, worker and search."""
    leak_through_every_path(cli_env, home, tmp_path, issue_36_cases(), issue_36_tool_cases())


def leak_through_every_path(cli_env, home, tmp_path, cases, tools) -> None:
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)

    def hook(event: str, payload: dict) -> None:
        payload = {"session_id": "leaky-1", "cwd": str(project), "hook_event_name": event} | payload
        done = run(cli_env, project, "hook", event, stdin=json.dumps(payload))
        assert done.returncode == 0 and done.stderr == "", done.stderr

    hook("SessionStart", {"source": "startup"})
    for n, case in enumerate(cases):
        hook("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": f"./show-config.sh {n}"},
                             "tool_response": {"stdout": case.context, "stderr": "", "interrupted": False}})
        hook("UserPromptSubmit", {"prompt": f"this failed, why?\n{case.context}"})
    for tool in tools:
        response = ({"stdout": tool.output, "stderr": "", "interrupted": False} if tool.tool == "Bash"
                    else {"mode": "content", "content": tool.output, "numLines": tool.output.count("\n")})
        hook("PostToolUse", {"tool_name": tool.tool, "tool_input": tool.tool_input, "tool_response": response})
    hook("Stop", {"stop_hook_active": False})
    hook("SessionEnd", {"reason": "exit"})
    for case in cases:
        saved = run(cli_env, project, "save", f"Config we use: {case.context}", "--source", "agent")
        assert saved.returncode == 0, saved.stderr
    worked = run(cli_env, project, "worker", "--once")
    assert worked.returncode == 0, worked.stderr
    found = run(cli_env, project, "search", "config key secret password", "--json")
    assert found.returncode == 0, found.stderr
    shown = found.stdout + worked.stdout + worked.stderr
    run(cli_env, project, "doctor")

    everything = stored_bytes(home)
    raw = [c.secret for c in cases] + [t.secret for t in tools]
    assert [s for s in raw if s.encode() in everything] == []
    assert [s for s in raw if s in shown] == []
    assert b"show-config.sh" in everything and b"[REDACTED:" in everything  # it was all recorded, but scrubbed


@pytest.mark.parametrize("command", [
    "cat .env", "head -n 5 config/.env.production", "grep KEY .env", "source .env", ". ./.env", "tail ~/.pgpass",
    "cat ~/.netrc", "less ~/.ssh/id_rsa", "xxd certs/server.pem", "export $(cat .env | xargs)",
    "docker compose --env-file .env.prod up", "awk -F= '{print $2}' secrets.yaml", "cat ~/.aws/credentials",
    "cat .env-prod", "cat .env~", "cat .en?", "head .e*", "cat .flaskenv", "cat config/.env.bak", "cat .[e]nv",
    "cat *.pem", "cat .*", "less deploy/.env_staging",
])
def test_shell_commands_reading_deny_listed_files(command):
    assert names_sensitive_file(command)


@pytest.mark.parametrize("command", [
    "cat .env.example", "ls -la", "git status", "pytest -q tests/test_env.py", "cat ~/.ssh/id_rsa.pub",
    "python manage.py migrate", "npm run build", "cat README.md", "grep -rn TODO *", "ls *.py", "cat .env-sample",
    "cat .env_example", "cat src/*.ts",
])
def test_ordinary_shell_commands(command):
    assert not names_sensitive_file(command)


@pytest.mark.parametrize(("command", "decodes"), [
    ("echo aGVsbG8= | base64 -d", True), ("base64 --decode blob.txt", True), ("base64 -D < x", True),
    ("openssl enc -aes-256-cbc -d -in s.enc", True), ("gpg --decrypt notes.gpg", True), ("sops -d prod.yaml", True),
    ("xxd -r -p dump.hex", True), ("base64 image.png", False), ("git diff --stat", False), ("make -d", False),
])
def test_decoding_commands(command, decodes):
    assert decodes_secrets(command) is decodes


@pytest.mark.parametrize(("command", "dumps"), [
    ("printenv", True), ("printenv STRIPE_KEY", True), ("env | sort", True), ("env", True), ("export -p", True),
    ("set", True), ("docker compose config", True), ("docker-compose -f prod.yml config", True),
    ("kubectl get secret shop -o yaml", True), ("kubectl -n prod get secrets -o json", True),
    ("python -c 'import os; print(os.environ)'", True), ("node -e 'console.log(process.env)'", True),
    ("cat /proc/self/environ", True), ("heroku config -a shop", True),
    ("env FOO=1 make test", False), ("/usr/bin/env python app.py", False), ("set -e; make", False),
    ("grep -rn os.environ src", False), ("docker compose up -d", False), ("kubectl get pods", False),
])
def test_commands_that_print_the_environment(command, dumps):
    assert dumps_environment(command) is dumps


@pytest.mark.parametrize(("command", "makes"), [
    ("openssl rand -hex 32", True), ("python -c 'import secrets; print(secrets.token_hex(32))'", True),
    ("head -c 32 /dev/urandom | base64", True), ("rails secret", True), ("wg genkey", True),
    ("sha256sum dist/*", False), ("git log -3", False), ("pytest -k random", False), ("openssl x509 -in c.pem", False),
])
def test_commands_that_make_a_secret(command, makes):
    assert makes_secrets(command) is makes


def test_search_lines_from_deny_listed_files_are_dropped():
    text = ("src/app.py:3:import os\nconfig/.env:3:API_KEY=abcd\n.env-4-OTHER=xy\n/home/u/.pgpass:1:h:5432:d:u:p\n"
            "README.md:12:see .env.example\n.env.example:1:API_KEY=\n")
    assert without_sensitive_lines(text).splitlines() == [
        "src/app.py:3:import os", "[a line of config/.env, not recorded]", "[a line of .env, not recorded]",
        "[a line of /home/u/.pgpass, not recorded]", "README.md:12:see .env.example", ".env.example:1:API_KEY="]
    assert without_sensitive_lines("no paths here: 3 passed") == "no paths here: 3 passed"
