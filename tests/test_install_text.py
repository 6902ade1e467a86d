"""Issue 37.4: `agentmem install` / `uninstall` change a hand-formatted config file only where agentmem's entries are,
keep one backup per file per run in one folder the output names, and say where the memories stay."""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem_mcp.install import jsonedit, tomledit
from agentmem_mcp.install.install import apply, config_paths, masked, plan_install, plan_uninstall

COMMAND = "/opt/agentmem/bin/agentmem"

HAND_FORMATTED = """{
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": { "allow": [ "Bash(ls:*)",  "Bash(git status)" ],
                     "deny":  [] },
    "env": {"FOO":"1", "BAR": "2"},
    "hooks": {
        "PostToolUse": [ { "matcher": "Edit|Write",
                           "hooks": [ { "type": "command", "command": "ruff format" } ] } ]
    },
    "statusLine": {"type": "command", "command": "~/bin/status"}
}
"""

GEMINI_SETTINGS = """// my Gemini CLI settings
{
  "theme": "GitHub",  // the light one
  /* servers I use */
  "mcpServers": {
    "github": {"command": "npx", "args": ["-y", "gh-mcp"]}
  },
  "security": {"auth": {"selectedType": "gemini-api-key"}}
}
"""

CODEX_CONFIG = """# Codex, by hand
model = "gpt-5"   # keep
approval_policy = "on-request"

[mcp_servers.github]
command = "npx"
args = [
  "-y",     # quiet
  "gh-mcp",
]

[profiles.fast]
model = "o4-mini"
"""


@pytest.fixture(autouse=True)
def agentmem_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTMEM_HOME", str(tmp_path / "agentmem"))
    return tmp_path / "agentmem"


def only_inserted(before: str, after: str) -> str:
    """The text `after` adds to `before`; fails if any of `before` was changed or removed."""
    ops = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    changed = [(op, before[i1:i2]) for op, i1, i2, _, _ in ops if op in ("delete", "replace")]
    assert not changed, changed
    return "".join(after[j1:j2] for op, _, _, j1, j2 in ops if op == "insert")


@pytest.mark.parametrize("client", ["claude-code", "codex", "gemini"])
def test_install_only_adds_to_hand_formatted_files_and_uninstall_gives_them_back(tmp_path, client):
    home = tmp_path / "home"
    mcp_path, hooks_path = config_paths(client, "user", home=home)
    hooks_path.parent.mkdir(parents=True)
    mcp_path.parent.mkdir(parents=True, exist_ok=True)
    one_line = '{"numStartups":3,"mcpServers":{"x":{"command":"y"}}}'
    texts = {"claude-code": {hooks_path: HAND_FORMATTED, mcp_path: one_line},
             "codex": {hooks_path: HAND_FORMATTED, mcp_path: CODEX_CONFIG},
             "gemini": {mcp_path: GEMINI_SETTINGS}}[client]
    for path, text in texts.items():
        path.write_text(text)
    apply(plan_install(client, "user", home=home, command=COMMAND))
    for path, text in texts.items():
        added = only_inserted(text, path.read_text())
        assert "agentmem" in added
    if client != "codex":
        assert '"allow": [ "Bash(ls:*)",  "Bash(git status)" ]' in hooks_path.read_text() or client == "gemini"
    assert plan_install(client, "user", home=home, command=COMMAND).changes == []
    apply(plan_uninstall(client, "user", home=home))
    for path, text in texts.items():
        assert path.read_text() == text


def test_a_one_line_file_stays_one_line(tmp_path):
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    mcp = home / ".cursor" / "mcp.json"
    mcp.write_text('{"mcpServers":{"a":{"command":"x"}}}')
    apply(plan_install("cursor", "user", home=home, command=COMMAND))
    assert mcp.read_text() == ('{"mcpServers":{"a":{"command":"x"},"agentmem":{"command":"/opt/agentmem/bin/agentmem",'
                               '"args":["serve"]}}}')


def test_reinstall_with_a_new_command_changes_only_those_strings(tmp_path):
    home = tmp_path / "home"
    apply(plan_install("gemini", "user", home=home, command="/old/agentmem"))
    settings = config_paths("gemini", "user", home=home)[0]
    before = settings.read_text()
    apply(plan_install("gemini", "user", home=home, command="/new/agentmem"))
    after = settings.read_text()
    assert before.replace("/old/agentmem", "/new/agentmem") == after


def test_masked_keeps_the_layout_and_hides_other_servers_secrets():
    text = CODEX_CONFIG + '\n[mcp_servers.db]\ncommand = "db-mcp"\nenv = { PGPASSWORD = "hunter2-secret" }\n' \
        '\n[mcp_servers.db.env_http_headers]\nX_TOKEN = "abc"\n'
    shown = masked(text)
    assert "hunter2" not in shown and '"abc"' not in shown
    assert shown.splitlines()[:3] == text.splitlines()[:3]
    assert tomledit.loads(shown)["mcp_servers"]["db"]["env"] == "[hidden by agentmem]"
    gemini = GEMINI_SETTINGS.replace('"-y", "gh-mcp"]}', '"-y", "gh-mcp"], "env": {"GH_TOKEN": "ghp_x"}}')
    shown = masked(gemini)
    assert "ghp_x" not in shown and "// the light one" in shown
    assert jsonedit.loads(shown)["mcpServers"]["github"]["env"] == {"GH_TOKEN": "[hidden by agentmem]"}


def test_cli_names_the_backup_folder_and_uninstall_says_where_the_memories_are(tmp_path, agentmem_home):
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(CODEX_CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTMEM_", "CODEX_"))}
    env.update(HOME=str(home), AGENTMEM_HOME=str(agentmem_home))

    def run(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "agentmem_mcp", *args], env=env, capture_output=True,
                              text=True, timeout=60, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    out = run("install", "codex", "--command", COMMAND)
    folder = next(p for p in (agentmem_home / "backups").iterdir() if p.is_dir())
    assert f"backups of the files changed are in {folder}" in out
    assert "trust" in out and "restart Codex" in out
    assert (folder / str(home / ".codex" / "config.toml").lstrip("/")).read_text() == CODEX_CONFIG
    out = run("uninstall", "codex")
    assert f"stay in {agentmem_home}" in out and "agentmem purge --project" in out and "agentmem purge`" in out
    assert (home / ".codex" / "config.toml").read_text() == CODEX_CONFIG
