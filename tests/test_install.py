"""`agentmem install` / `uninstall` against a temporary home and project, and the plugin files."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

import agentmem_mcp
from agentmem_mcp.install import tomledit
from agentmem_mcp.install.install import (
    CLIENT_EVENTS,
    CLIENTS,
    InstallError,
    agentmem_command,
    apply,
    config_paths,
    plan_install,
    plan_uninstall,
)

REPO = Path(__file__).resolve().parent.parent
COMMAND = "/opt/agentmem/bin/agentmem"
CASES = [(client, scope) for client in CLIENTS for scope in ("user", "project")]


@pytest.fixture(autouse=True)
def agentmem_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Backups go to `<AGENTMEM_HOME>/backups`: a home of the test's own, outside the folders it snapshots."""
    home = tmp_path / "agentmem"
    monkeypatch.setenv("AGENTMEM_HOME", str(home))
    for name in ("CODEX_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    home, project = tmp_path / "t" / "home", tmp_path / "t" / "project"
    home.mkdir(parents=True)
    project.mkdir()
    return {"home": home, "project_dir": project}


def install(client: str, scope: str, dirs: dict[str, Path], command: str = COMMAND):
    return apply(plan_install(client, scope, command=command, **dirs))


def uninstall(client: str, scope: str, dirs: dict[str, Path]):
    return apply(plan_uninstall(client, scope, **dirs))


def load(path: Path) -> dict:
    if path.suffix == ".toml":
        return tomledit.loads(path.read_text())
    return json.loads(path.read_text())


def servers(config: dict) -> dict:
    """The MCP servers of a loaded config: `mcpServers` (JSON clients) or `mcp_servers` (Codex's TOML)."""
    return config.get("mcpServers", config.get("mcp_servers", {}))


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def our_commands(client: str, hooks_config: dict) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for event, items in hooks_config.get("hooks", {}).items():
        for item in items:
            for hook in item.get("hooks", [item]):
                if " hook --client " in hook.get("command", ""):
                    found.setdefault(event, []).append(hook["command"])
    return found


def existing_settings(client: str) -> tuple[dict, dict]:
    """Realistic configs that already hold other tools' servers, hooks and settings."""
    mcp = {
        "theme": "dark",
        "numStartups": 12,
        "mcpServers": {"github": {"type": "stdio", "command": "npx", "args": ["-y", "gh-mcp"]}},
    }
    if client in ("claude-code", "codex", "gemini"):
        hooks = {
            "$schema": "https://json.schemastore.org/claude-code-settings.json",
            "theme": "dark",
            "permissions": {"allow": ["Bash(ls:*)"]},
            "hooks": {
                "SessionStart": [{"hooks": [{"type": "command", "command": "echo hello"}]}],
                "PostToolUse": [
                    {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "ruff format", "timeout": 30}]}
                ],
                "Notification": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
            },
        }
    else:
        hooks = {
            "version": 1,
            "hooks": {
                "afterFileEdit": [{"command": "./scripts/format.sh"}],
                "stop": [{"command": "audit-log", "timeout": 5}],
                "beforeShellExecution": [{"command": "guard.sh"}],
            },
        }
    return mcp, hooks


CODEX_CONFIG = """model = "gpt-5"  # the default model
approval_policy = "on-request"

# servers
[mcp_servers.github]
command = "npx"
args = ["-y", "gh-mcp"]

[projects."/work/app"]
trust_level = "trusted"
"""


def write_existing(client: str, scope: str, dirs: dict[str, Path]) -> tuple[Path, Path, dict, dict]:
    """Existing config files with other tools' entries; for Gemini CLI, whose one file holds both, the two
    dicts are the same merged one."""
    mcp_path, hooks_path = config_paths(client, scope, **dirs)
    mcp, hooks = existing_settings(client)
    mcp_path.parent.mkdir(parents=True, exist_ok=True)
    hooks_path.parent.mkdir(parents=True, exist_ok=True)
    if client == "gemini":
        mcp = hooks = {**mcp, **hooks}
    if client == "codex":
        mcp_path.write_text(CODEX_CONFIG)
        mcp = tomledit.loads(CODEX_CONFIG)
        mcp["mcpServers"] = mcp["mcp_servers"]  # the checks below read either spelling
    else:
        mcp_path.write_text(json.dumps(mcp, indent=2) + "\n")
    hooks_path.write_text(json.dumps(hooks, indent=2) + "\n")
    return mcp_path, hooks_path, mcp, hooks


@pytest.mark.parametrize(("client", "scope"), CASES)
def test_install_into_empty_home_creates_our_entries(client, scope, dirs):
    plan = install(client, scope, dirs)
    mcp_path, hooks_path = config_paths(client, scope, **dirs)
    assert {c.path for c in plan.changes} == {mcp_path, hooks_path}
    assert all(c.backup is None for c in plan.changes)

    server = servers(load(mcp_path))["agentmem"]
    assert server["command"] == COMMAND and server["args"] == ["serve"]
    assert (server.get("type") == "stdio") is (client == "claude-code")

    hooks = load(hooks_path)
    commands = our_commands(client, hooks)
    assert set(commands) == set(CLIENT_EVENTS[client])
    for event, cmds in commands.items():
        assert cmds == [f"{COMMAND} hook --client {client} {event}"]
    if client == "cursor":
        assert hooks["version"] == 1
        assert all(item["timeout"] == 10 for items in hooks["hooks"].values() for item in items)
    else:
        assert ("matcher" in hooks["hooks"][CLIENT_EVENTS[client][2]][0]) is (client == "claude-code")
        timeouts = {event: h["timeout"] for event, groups in hooks["hooks"].items() for g in groups
                    for h in g["hooks"] if h["type"] == "command"}
        expected = {"claude-code": 10, "codex": 10, "gemini": 10_000}[client]  # Gemini CLI counts milliseconds
        assert timeouts == {event: 3 if (client, event) == ("codex", "SessionEnd") else expected
                            for event in CLIENT_EVENTS[client]}
    if client != "codex":
        assert mcp_path.read_text().startswith('{\n  "')  # 2-space indent


@pytest.mark.parametrize(("client", "scope"), CASES)
def test_install_keeps_existing_servers_hooks_and_keys(client, scope, dirs):
    mcp_path, hooks_path, mcp, hooks = write_existing(client, scope, dirs)
    install(client, scope, dirs)

    new_mcp = load(mcp_path)
    if client == "codex":
        assert new_mcp["model"] == "gpt-5" and new_mcp["projects"] == mcp["projects"]
    else:
        assert new_mcp["theme"] == "dark" and new_mcp["numStartups"] == 12
    assert servers(new_mcp)["github"] == mcp["mcpServers"]["github"]
    assert "agentmem" in servers(new_mcp)

    new_hooks = load(hooks_path)
    for key, value in hooks.items():
        if key not in ("hooks", "mcpServers"):
            assert new_hooks[key] == value
    for event, items in hooks["hooks"].items():
        assert new_hooks["hooks"][event][: len(items)] == items  # other tools' hooks untouched, first
    assert set(our_commands(client, new_hooks)) == set(CLIENT_EVENTS[client])


@pytest.mark.parametrize(("client", "scope"), CASES)
def test_second_install_is_a_no_op(client, scope, dirs):
    write_existing(client, scope, dirs)
    first = install(client, scope, dirs)
    assert all(c.backup is not None and c.backup.exists() for c in first.changes)
    before = snapshot(dirs["home"].parent)

    again = plan_install(client, scope, command=COMMAND, **dirs)
    assert again.changes == []
    assert "already installed" in again.describe()
    assert apply(again).changes == []
    assert snapshot(dirs["home"].parent) == before  # no write, no new backup


@pytest.mark.parametrize(("client", "scope"), CASES)
def test_uninstall_restores_existing_files(client, scope, dirs):
    mcp_path, hooks_path, mcp, hooks = write_existing(client, scope, dirs)
    originals = {path: path.read_bytes() for path in (mcp_path, hooks_path)}
    install(client, scope, dirs)
    plan = uninstall(client, scope, dirs)
    assert {c.path for c in plan.changes} == {mcp_path, hooks_path}
    assert {path: path.read_bytes() for path in originals} == originals  # the very same text
    assert plan_uninstall(client, scope, **dirs).changes == []


@pytest.mark.parametrize(("client", "scope"), CASES)
def test_uninstall_removes_files_install_created(client, scope, dirs):
    install(client, scope, dirs)
    plan = uninstall(client, scope, dirs)
    assert all(c.after is None for c in plan.changes)
    for path in config_paths(client, scope, **dirs):
        assert not path.exists()
    leftovers = [p for p in dirs["home"].parent.rglob("*") if p.is_file() or p.name in (".codex", ".gemini")]
    assert leftovers == []


@pytest.mark.parametrize(("client", "scope"), CASES)
def test_invalid_json_raises_and_leaves_file_untouched(client, scope, dirs):
    mcp_path, hooks_path = config_paths(client, scope, **dirs)
    hooks_path.parent.mkdir(parents=True, exist_ok=True)
    hooks_path.write_text('{"hooks": {,}\n')
    if client == "codex":
        mcp_path.write_text('model = "o3"\n')
    before = snapshot(dirs["home"].parent)
    for planner in (
        lambda: plan_install(client, scope, command=COMMAND, **dirs),
        lambda: plan_uninstall(client, scope, **dirs),
    ):
        with pytest.raises(InstallError) as err:
            planner()
        assert str(hooks_path) in str(err.value) and "fix" in str(err.value)
    assert snapshot(dirs["home"].parent) == before


@pytest.mark.parametrize(("client", "scope"), CASES)
def test_dry_run_writes_nothing(client, scope, dirs):
    write_existing(client, scope, dirs)
    before = snapshot(dirs["home"].parent)
    plan = plan_install(client, scope, command=COMMAND, **dirs)
    text = plan.describe()
    assert snapshot(dirs["home"].parent) == before
    for change in plan.changes:
        assert f"update {change.path}" in text
    assert f"{COMMAND} hook --client {client}" in text
    assert "+" in text and "agentmem" in text


def test_backups_hold_the_original_content(dirs, agentmem_home):
    """Issue 37.4: one backup per file per run, all in one private folder under the home, none beside the files."""
    mcp_path, hooks_path, _, _ = write_existing("claude-code", "user", dirs)
    originals = {p: p.read_bytes() for p in (mcp_path, hooks_path)}
    plan = install("claude-code", "user", dirs)
    assert plan.backup_folder is not None and plan.backup_folder.parent == agentmem_home / "backups"
    assert re.fullmatch(r"\d{8}-\d{6}-install-claude-code", plan.backup_folder.name)
    for change in plan.changes:
        assert change.backup == plan.backup_folder / str(change.path).lstrip("/")
        assert change.backup.read_bytes() == originals[change.path]
        assert stat.S_IMODE(change.backup.stat().st_mode) == 0o600
    assert stat.S_IMODE(plan.backup_folder.stat().st_mode) == 0o700
    assert "backup:" in plan.describe()
    uninstall("claude-code", "user", dirs)
    runs = sorted(p for p in (agentmem_home / "backups").iterdir() if p.is_dir())
    assert [r.name.split("-", 2)[2] for r in runs] == ["install-claude-code", "uninstall-claude-code"]
    copies = [p for p in (agentmem_home / "backups").rglob("*") if p.is_file() and p.name != ".agentmem-owned"]
    assert len(copies) == 4  # two files, two runs
    assert not [p for p in dirs["home"].rglob("*agentmem-backup*")]


def test_reinstall_with_a_new_command_replaces_ours(dirs):
    install("cursor", "user", dirs, command="/old/venv/bin/agentmem")
    install("cursor", "user", dirs, command="/new/venv/bin/agentmem")
    mcp_path, hooks_path = config_paths("cursor", "user", **dirs)
    commands = our_commands("cursor", load(hooks_path))
    assert all(cmds == [f"/new/venv/bin/agentmem hook --client cursor {e}"] for e, cmds in commands.items())
    assert load(mcp_path)["mcpServers"]["agentmem"]["command"] == "/new/venv/bin/agentmem"


def test_install_keeps_user_additions_to_our_server_entry(dirs):
    install("claude-code", "user", dirs)
    mcp_path, _ = config_paths("claude-code", "user", **dirs)
    config = load(mcp_path)
    config["mcpServers"]["agentmem"]["env"] = {"AGENTMEM_HOME": "/data/mem"}
    mcp_path.write_text(json.dumps(config, indent=2))
    assert plan_install("claude-code", "user", command=COMMAND, **dirs).changes == []
    install("claude-code", "user", dirs, command="/elsewhere/agentmem")
    assert load(mcp_path)["mcpServers"]["agentmem"]["env"] == {"AGENTMEM_HOME": "/data/mem"}


def test_python_module_command_is_split_and_recognised(dirs):
    command = "'/opt/my python/bin/python3' -m agentmem_mcp"
    install("claude-code", "project", dirs, command=command)
    mcp_path, hooks_path = config_paths("claude-code", "project", **dirs)
    server = load(mcp_path)["mcpServers"]["agentmem"]
    assert server["command"] == "/opt/my python/bin/python3"
    assert server["args"] == ["-m", "agentmem_mcp", "serve"]
    assert our_commands("claude-code", load(hooks_path))["Stop"] == [f"{command} hook --client claude-code Stop"]
    assert plan_install("claude-code", "project", command=command, **dirs).changes == []
    uninstall("claude-code", "project", dirs)
    assert not mcp_path.exists() and not hooks_path.exists()


def test_file_mode_is_kept(dirs):
    mcp_path, hooks_path, _, _ = write_existing("claude-code", "user", dirs)
    mcp_path.chmod(0o600)
    hooks_path.chmod(0o640)
    install("claude-code", "user", dirs)
    assert stat.S_IMODE(mcp_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(hooks_path.stat().st_mode) == 0o640


def test_symlinked_config_stays_a_symlink(dirs, tmp_path):
    dotfiles = tmp_path / "dotfiles" / "settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"theme": "light"}\n')
    link = dirs["home"] / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(dotfiles)
    install("claude-code", "user", dirs)
    assert link.is_symlink()
    assert load(dotfiles)["theme"] == "light" and "hooks" in load(dotfiles)


def test_four_space_indent_is_kept(dirs):
    mcp_path, _ = config_paths("cursor", "user", **dirs)
    mcp_path.parent.mkdir(parents=True)
    mcp_path.write_text(json.dumps({"mcpServers": {}}, indent=4) + "\n")
    install("cursor", "user", dirs)
    assert '\n    "mcpServers": {\n        "agentmem"' in mcp_path.read_text()


def test_apply_refuses_a_file_changed_since_the_plan(dirs):
    mcp_path, _, _, _ = write_existing("cursor", "project", dirs)
    plan = plan_install("cursor", "project", command=COMMAND, **dirs)
    mcp_path.write_text('{"mcpServers": {}}')
    with pytest.raises(InstallError, match="changed since"):
        apply(plan)
    assert mcp_path.read_text() == '{"mcpServers": {}}'


def test_wrong_shapes_and_names_are_errors(dirs):
    with pytest.raises(InstallError, match="claude-code, cursor"):
        plan_install("vscode", command=COMMAND, **dirs)
    with pytest.raises(InstallError, match="user, project"):
        plan_install("cursor", "global", command=COMMAND, **dirs)
    with pytest.raises(InstallError, match="does not run agentmem"):
        plan_install("cursor", command="/usr/bin/true", **dirs)
    _, hooks_path = config_paths("claude-code", "user", **dirs)
    hooks_path.parent.mkdir(parents=True)
    hooks_path.write_text('{"hooks": []}')
    with pytest.raises(InstallError, match='"hooks" should be a JSON object'):
        plan_install("claude-code", command=COMMAND, **dirs)


def test_enabled_plugin_is_noted(dirs):
    _, hooks_path = config_paths("claude-code", "user", **dirs)
    hooks_path.parent.mkdir(parents=True)
    hooks_path.write_text('{"enabledPlugins": {"agentmem@agentmem": true}}')
    plan = plan_install("claude-code", command=COMMAND, **dirs)
    assert plan.notes and "plugin" in plan.describe()


def test_agentmem_command_points_at_something_runnable():
    command = agentmem_command()
    first = command.split()[0].strip("'\"")
    assert os.path.isabs(first)
    assert "agentmem" in command


def test_a_default_install_runs_hooks_through_the_hook_client_and_they_record(dirs, tmp_path):
    """And a hook whose package is gone (a venv rebuilt for another Python) exits 1, which no client reads as
    blocking the agent (Claude Code blocks on 2, which a missing script file would give)."""
    import shlex
    import sys

    if not (Path(sys.executable).parent / "agentmem").is_file():
        pytest.skip("agentmem is not installed beside this interpreter")
    apply(plan_install("claude-code", "user", **dirs))
    hooks_path = config_paths("claude-code", "user", home=dirs["home"])[1]
    [command] = our_commands("claude-code", load(hooks_path))["PostToolUse"]
    argv = shlex.split(command)
    assert argv[:2] == [sys.executable, "-c"] and "from agentmem_mcp.capture.hook_client import run" in argv[2]
    assert argv[3:] == ["hook", "--client", "claude-code", "PostToolUse"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env.update(AGENTMEM_HOME=str(tmp_path / "agentmem-home"), AGENTMEM_HOOK_STARTS_PROCESS="0")
    payload = {"session_id": "s1", "cwd": str(dirs["project_dir"]), "hook_event_name": "PostToolUse",
               "tool_name": "Bash", "tool_input": {"command": "make lint"}, "tool_response": {"stdout": "ok"}}
    (dirs["project_dir"] / "json.py").write_text("raise SystemExit(3)\n")  # the agent's project is the cwd
    done = subprocess.run(argv, input=json.dumps(payload).encode(), env=env, capture_output=True, timeout=60,
                          cwd=dirs["project_dir"])
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    import sqlite3

    with sqlite3.connect(tmp_path / "agentmem-home" / "agentmem.db") as conn:
        assert conn.execute("SELECT tool, input FROM observations").fetchall() == [("Bash", '{"command": "make lint"}')]
    without_package = [argv[0], "-S", *argv[1:]]  # -S: no site-packages, as if the package were gone
    gone = subprocess.run(without_package, input=b"{}", env=env, capture_output=True, timeout=60, cwd=tmp_path)
    assert gone.returncode == 1 and b"No module named 'agentmem_mcp'" in gone.stderr
    apply(plan_uninstall("claude-code", "user", **dirs))  # and uninstall knows it for ours
    assert not hooks_path.exists() or our_commands("claude-code", load(hooks_path)) == {}


# --- plugin and hook files -------------------------------------------------------------------------


def test_plugin_hooks_file_runs_the_script_for_every_event():
    hooks = load(REPO / "hooks" / "hooks.json")["hooks"]
    assert set(hooks) == set(CLIENT_EVENTS["claude-code"])
    for event, groups in hooks.items():
        (hook,) = [h for g in groups for h in g["hooks"]]
        assert hook["type"] == "command" and hook["timeout"] <= 30
        assert hook["command"].endswith(f'/hooks/run-hook.sh" claude-code {event}')
        script = hook["command"].split('"')[1].replace("${CLAUDE_PLUGIN_ROOT}", str(REPO))
        assert Path(script).is_file()
    assert hooks["PostToolUse"][0]["matcher"] == "*"


def test_cursor_template_covers_every_event():
    template = load(REPO / "hooks" / "cursor-hooks.json")
    assert template["version"] == 1
    assert set(template["hooks"]) == set(CLIENT_EVENTS["cursor"])
    for event, (entry,) in template["hooks"].items():
        assert entry["command"].endswith(f"/hooks/run-hook.sh cursor {event}")


@pytest.mark.parametrize(("client", "template"), [("codex", "codex-hooks.json"), ("gemini", "gemini-settings.json")])
def test_codex_and_gemini_templates_cover_every_event(client, template):
    hooks = load(REPO / "hooks" / template)["hooks"]
    assert set(hooks) == set(CLIENT_EVENTS[client])
    for event, (group,) in hooks.items():
        (hook,) = group["hooks"]
        assert hook["command"].endswith(f"/hooks/run-hook.sh {client} {event}") and hook["type"] == "command"


def test_plugin_manifest_and_marketplace():
    plugin = load(REPO / ".claude-plugin" / "plugin.json")
    assert plugin["name"] == "agentmem" and plugin["version"] == agentmem_mcp.__version__
    assert "hooks" not in plugin  # hooks/hooks.json is loaded by convention; naming it loads it twice
    marketplace = load(REPO / ".claude-plugin" / "marketplace.json")
    assert marketplace["owner"]["name"]
    (entry,) = marketplace["plugins"]
    assert entry["name"] == "agentmem"
    assert (REPO / entry["source"] / ".claude-plugin" / "plugin.json").is_file()
    server = plugin["mcpServers"]["agentmem"]  # in the manifest: a .mcp.json at the root is the checkout's own
    assert server["command"] == "sh" and server["args"] == ["${CLAUDE_PLUGIN_ROOT}/hooks/run-server.sh"]
    assert not (REPO / ".mcp.json").exists()
    assert (REPO / "hooks" / "README.md").is_file()


def test_plugin_server_launcher_finds_agentmem_off_the_path(tmp_path):
    """As a plugin, the server starts without agentmem on the PATH (AGENTMEM_BIN, as for the hooks), and says
    what to do when agentmem is nowhere and cannot be set up (tests/test_plugin.py: the setup itself)."""
    launcher = REPO / "hooks" / "run-server.sh"
    fake = tmp_path / "agentmem"
    fake.write_text("#!/bin/sh\necho \"started: $*\"\n")
    fake.chmod(0o755)
    bare = {"PATH": "/nonexistent", "HOME": str(tmp_path), "AGENTMEM_BIN": str(fake)}
    found = subprocess.run(["/bin/sh", str(launcher)], env=bare, capture_output=True, text=True, timeout=30)
    assert found.returncode == 0 and found.stdout.strip() == "started: serve"
    missing = subprocess.run(["/bin/sh", str(launcher)], env={"PATH": "/nonexistent", "HOME": str(tmp_path)},
                             capture_output=True, text=True, timeout=30)
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert missing.stderr.startswith("agentmem: cannot set up its environment") and missing.stderr.count("\n") == 1


def _run_hook(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["sh", str(REPO / "hooks" / "run-hook.sh"), *args],
        input=b'{"session_id": "s1"}',
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=30,
        check=False,
    )


def test_run_hook_without_agentmem_exits_zero(tmp_path):
    assert os.access(REPO / "hooks" / "run-hook.sh", os.X_OK)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONNOUSERSITE": "1"}
    result = _run_hook(["claude-code", "PostToolUse"], env, tmp_path)  # not a session's start: nothing is set up
    assert result.returncode == 0, result.stderr
    assert result.stdout == b""
    cursor = _run_hook(["cursor", "beforeSubmitPrompt"], env, tmp_path)
    assert cursor.returncode == 0 and json.loads(cursor.stdout) == {"continue": True}
    assert _run_hook([], env, tmp_path).returncode == 0


def test_run_hook_execs_agentmem_bin_with_stdin(tmp_path):
    fake = tmp_path / "agentmem"
    fake.write_text('#!/bin/sh\necho "$@" > "$0.args"\ncat > "$0.stdin"\n')
    fake.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "AGENTMEM_BIN": str(fake)}
    result = _run_hook(["cursor", "afterFileEdit"], env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "agentmem.args").read_text().strip() == "hook --client cursor afterFileEdit"
    assert json.loads((tmp_path / "agentmem.stdin").read_text()) == {"session_id": "s1"}


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_run_hook_finds_agentmem_on_path(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "agentmem"
    fake.write_text('#!/bin/sh\necho "$@"\n')
    fake.chmod(0o755)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    result = _run_hook(["claude-code", "Stop"], env, tmp_path)
    assert result.stdout.decode().strip() == "hook --client claude-code Stop"


@pytest.mark.parametrize("dry_run", [True, False])
def test_install_output_masks_other_servers_secrets(tmp_path, dry_run):
    """Issue 18.13: `agentmem install` (and `--dry-run`) printed ~/.claude.json whole, other servers' API keys too."""
    import subprocess
    import sys

    from .secrets_corpus import r

    key, token, oauth = "sk-live-" + r("abcdef0123456789", 32), r("ABCDEFGHJKLMNPQRSTUVWXYZ23456789", 40), "tok" + r(
        "abcdefghijkmnpqrstuvwxyz0123456789", 30)
    home = tmp_path / "user"
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps({
        "numStartups": 3, "oauthAccount": {"accessToken": oauth},
        "mcpServers": {"search": {"command": "npx", "args": ["-y", "search-mcp"], "env": {"SEARCH_KEY": key}},
                       "crm": {"type": "http", "url": "https://crm.example.com/mcp",
                               "headers": {"X-Crm-Auth": token}}},
        "projects": {"/work/app": {"mcpServers": {"db": {"command": "db-mcp", "env": {"PGPASSWORD": token}}}}},
    }) + "\n")  # on one line: a diff of the raw text showed all of it
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")} | {"HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "agentmem_mcp", "install", "claude-code", "--command", COMMAND,
                           *(["--dry-run"] if dry_run else [])], env=env, capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shown = done.stdout + done.stderr
    assert key not in shown and token not in shown and oauth not in shown
    assert f"{COMMAND} hook" in shown
    from agentmem_mcp.install.install import MASK, masked

    whole = masked((home / ".claude.json").read_text())  # what any preview of the file shows
    assert key not in whole and token not in whole and oauth not in whole
    assert json.loads(whole)["mcpServers"]["search"]["env"] == {"SEARCH_KEY": MASK}
    assert json.loads(whole)["mcpServers"]["crm"]["url"] == "https://crm.example.com/mcp"
    written = load(home / ".claude.json")
    if not dry_run:  # the file itself keeps the real values
        assert written["mcpServers"]["search"]["env"]["SEARCH_KEY"] == key
        assert written["projects"]["/work/app"]["mcpServers"]["db"]["env"]["PGPASSWORD"] == token
