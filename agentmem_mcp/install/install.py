"""Write agentmem's MCP server entry and hooks into a client's config files, and take them out again.

`plan_install` / `plan_uninstall` read the client's config files and compute their new text without touching
anything (that is `--dry-run`); `apply` writes a plan: a copy of every file it changes first, all of one run in
one folder (`<AGENTMEM_HOME>/backups/<time>-<action>-<client>/`), then an atomic replace that keeps the file's
mode. Which files each client has, and what a client cannot do: `install/clients.py`.

What is ours: the MCP server named ``agentmem``, and every hook whose command runs agentmem's
``hook --client <client> <event>``. Everything else in the files (other servers, other hooks on the same events,
unrelated keys, comments) is left as it was, byte for byte: the new text is the old text with the smallest edits
(`jsonedit`, `tomledit`), so install twice changes nothing and uninstall gives back the original text.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import jsonedit, tomledit
from .clients import (
    CLIENT_EVENTS,
    CLIENTS,
    HOOK_TIMEOUT_SECONDS,
    NAMES,
    SCOPES,
    ConfigFiles,
    InstallError,
    config_files,
    hook_entry,
    notes,
    server_entry,
)
from .files import MASK, SERVER_NAME, backup_folder, masked, read_text, remove_if_empty, write_atomic
from .files import backup as backup_file

__all__ = ["CLIENTS", "CLIENT_EVENTS", "HOOK_ENTRY", "HOOK_TIMEOUT_SECONDS", "MASK", "NAMES", "SCOPES", "SERVER_NAME",
           "FileChange", "InstallError", "InstallPlan", "agentmem_command", "apply", "config_paths", "hook_command",
           "masked", "plan_install", "plan_uninstall"]

_OUR_HOOK = re.compile(r"\shook --client (claude-code|cursor|codex|gemini) [A-Za-z]+\s*$")

Config = dict[str, Any]


@dataclass
class FileChange:
    """One file's content before and after. ``before`` None: the file does not exist yet;
    ``after`` None: the file is removed. ``backup`` is filled in by `apply`."""

    path: Path
    before: str | None
    after: str | None
    backup: Path | None = None

    @property
    def verb(self) -> str:
        if self.before is None:
            return "create"
        return "delete" if self.after is None else "update"


@dataclass
class InstallPlan:
    """The file changes that install (or uninstall) agentmem for one client and scope."""

    client: str
    scope: str
    changes: list[FileChange]
    action: str = "install"
    notes: list[str] = field(default_factory=list)
    backup_folder: Path | None = None  # where `apply` copied the files it changed

    def describe(self) -> str:
        """A human-readable preview: one header per file and a unified diff of its content, with the values of
        other MCP servers' `env` and `headers` (and anything under a key that names a secret) masked."""
        lines = [f"agentmem {self.action} for {NAMES.get(self.client, self.client)} ({self.scope} scope)"]
        if not self.changes:
            lines.append("nothing to change: agentmem is " + (
                "already installed." if self.action == "install" else "not installed here."))
        for change in self.changes:
            header = f"{change.verb} {change.path}"
            if change.backup is not None:
                header += f" (backup: {change.backup})"
            lines.append(header)
            diff = difflib.unified_diff(
                masked(change.before).splitlines(), masked(change.after).splitlines(),
                fromfile="/dev/null" if change.before is None else str(change.path),
                tofile="/dev/null" if change.after is None else str(change.path),
                n=2, lineterm="")
            lines.extend("    " + line for line in diff)
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)


def agentmem_command() -> str:
    """The shell command that runs agentmem: the ``agentmem`` console script next to the running
    Python if it exists, else the one on PATH, else ``<python> -m agentmem_mcp``."""
    scripts = Path(sys.executable).parent
    for name in ("agentmem", "agentmem.exe"):
        if (scripts / name).is_file():
            return _join([str(scripts / name)])
    found = shutil.which("agentmem")
    if found:
        return _join([os.path.abspath(found)])
    return _join([sys.executable, "-m", "agentmem_mcp"])


# `python -c` puts the current directory, the agent's project, first on sys.path: it goes, or a `json.py` there
# would be imported in place of the standard library's
HOOK_ENTRY = ("import sys; sys.path[:1] = [p for p in sys.path[:1] if p]; "
              "from agentmem_mcp.capture.hook_client import run; run()")


def hook_command() -> str | None:
    """The hooks' command when agentmem is installed beside the running Python: that Python running
    `capture.hook_client` directly. A console script imports `re` and the CLI before anything else (~8 ms of a
    hook's CPU); the hook client imports almost nothing when the shared process takes the event. None otherwise."""
    scripts = Path(sys.executable).parent
    if not any((scripts / name).is_file() for name in ("agentmem", "agentmem.exe")):
        return None
    return _join([sys.executable, "-c", HOOK_ENTRY])


def plan_install(client: str, scope: str = "user", *, home: Path | None = None,
                 project_dir: Path | None = None, command: str | None = None) -> InstallPlan:
    """Compute the changes that register agentmem's MCP server and hooks with `client`.

    client: one of CLIENTS. scope: "user" (files in `home`, default the user's home) or "project" (files in
    `project_dir`, default the current directory). command: how the client should run agentmem (a shell
    command; default `agentmem_command()`). Nothing is written.
    """
    files = config_files(client, scope, home=home, project_dir=project_dir)
    parts = _split(command or agentmem_command())
    if not parts or "agentmem" not in " ".join(parts).lower():
        raise InstallError(f"The command {command!r} does not run agentmem; give the path of the "
                           "agentmem executable (or `python -m agentmem_mcp`).")
    entry = server_entry(client, parts)
    prefix = _join(parts) if command else (hook_command() or _join(parts))
    hooks = {event: hook_entry(client, event, f"{prefix} hook --client {client} {event}")
             for event in CLIENT_EVENTS[client]}

    def put_hooks(config: Config) -> None:
        _put_hooks(config, hooks, client, files.hooks)

    if files.mcp_is_toml:
        changes = [_plan_toml(files.mcp, entry), _plan_file(files.hooks, [put_hooks], client, removing=False)]
    else:
        changes = _plan_json(files, lambda config: _put_server(config, entry, files.mcp), put_hooks, client,
                             removing=False)
    return InstallPlan(client, scope, [c for c in changes if c], "install",
                       _plugin_notes(client, home) + notes(client, scope))


def plan_uninstall(client: str, scope: str = "user", *, home: Path | None = None,
                   project_dir: Path | None = None) -> InstallPlan:
    """Compute the changes that remove what `plan_install` added: the ``agentmem`` MCP server, our
    hooks, and the containers and files that are left empty. Nothing is written."""
    files = config_files(client, scope, home=home, project_dir=project_dir)
    if files.mcp_is_toml:
        changes = [_plan_toml(files.mcp, None), _plan_file(files.hooks, [_drop_hooks], client, removing=True)]
    else:
        changes = _plan_json(files, _drop_server, _drop_hooks, client, removing=True)
    return InstallPlan(client, scope, [c for c in changes if c], "uninstall")


def apply(plan: InstallPlan, backup_dir: Path | None = None) -> InstallPlan:
    """Write `plan`. Each file it updates is first copied into one folder for the run, under `backup_dir`
    (default `<AGENTMEM_HOME>/backups`), as its absolute path below that folder; then it is replaced atomically
    (keeping its mode). Files are created or removed as planned. Returns the plan with the backups filled in.
    Raises InstallError, before writing anything, if a file changed since the plan was made."""
    for change in plan.changes:
        if read_text(change.path) != change.before:
            raise InstallError(f"{change.path} changed since this plan was made; run the command again.")
    folder = None
    done = []
    for change in plan.changes:
        # A file is only removed when nothing but agentmem's entries was left in it: no backup needed.
        backup = None
        if change.verb == "update":
            folder = folder or backup_folder(backup_dir or default_backup_dir(), f"{plan.action}-{plan.client}")
            backup = backup_file(change.path, folder)
        if change.after is None:
            change.path.unlink()
            if change.path.parent.name in (".claude", ".cursor", ".codex", ".gemini"):
                remove_if_empty(change.path.parent)
        else:
            write_atomic(change.path, change.after)
        done.append(replace(change, backup=backup))
    return replace(plan, changes=done, backup_folder=folder)


def config_paths(client: str, scope: str, *, home: Path | None = None,
                 project_dir: Path | None = None) -> tuple[Path, Path]:
    """The (MCP config, hooks config) files of `client` for `scope` (the same file twice for Gemini CLI)."""
    files = config_files(client, scope, home=home, project_dir=project_dir)
    return files.mcp, files.hooks


def default_backup_dir() -> Path:
    """`<AGENTMEM_HOME>/backups` (the default home when config.toml cannot be read)."""
    from ..config import ConfigError, default_home, load_settings

    try:
        return load_settings(on_warning=lambda _: None).home / "backups"
    except ConfigError:
        home = os.environ.get("AGENTMEM_HOME")
        return (Path(home).expanduser() if home else default_home()) / "backups"


def _put_server(config: Config, entry: Config, path: Path) -> None:
    servers = _section(config, "mcpServers", path)
    current = servers.get(SERVER_NAME)
    merged = dict(current) if isinstance(current, dict) else {}
    merged.pop("url", None)  # a stdio entry replaces an older remote one; env and other keys stay
    merged.update(entry)
    servers[SERVER_NAME] = merged


def _put_hooks(config: Config, entries: dict[str, Config], client: str, path: Path) -> None:
    if client == "cursor" and "hooks" not in config:
        config.setdefault("version", 1)
    section = _section(config, "hooks", path)
    for event, entry in entries.items():
        items = section.setdefault(event, [])
        if not isinstance(items, list):
            raise InstallError(f'{path}: hooks "{event}" should be a JSON array; fix it, then run again.')
        ours = [hook for hook in _hook_dicts(items) if _is_ours(hook)]
        wanted = entry["hooks"][0]["command"] if "hooks" in entry else entry["command"]
        if len(ours) == 1 and ours[0].get("command") == wanted:
            continue  # already there (possibly with the user's own tweaks, e.g. a longer timeout)
        section[event] = _without_ours(items) + [entry]


def _drop_server(config: Config) -> None:
    servers = config.get("mcpServers")
    if isinstance(servers, dict) and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        if not servers:
            del config["mcpServers"]


def _drop_hooks(config: Config) -> None:
    section = config.get("hooks")
    if not isinstance(section, dict):
        return
    changed = False
    for event, items in list(section.items()):
        if not isinstance(items, list):
            continue
        kept = _without_ours(items)
        if kept != items:
            changed = True
            if kept:
                section[event] = kept
            else:
                del section[event]
    if changed and not section:
        del config["hooks"]


def _is_ours(hook: Any) -> bool:
    command = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(command, str) and "agentmem" in command.lower() and bool(_OUR_HOOK.search(command))


def _hook_dicts(items: list[Any]) -> Iterator[Any]:
    """Every hook in an event's list: Claude Code, Codex and Gemini CLI nest them in matcher groups, Cursor
    does not."""
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("hooks"), list):
            yield from item["hooks"]
        else:
            yield item


def _without_ours(items: list[Any]) -> list[Any]:
    kept = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("hooks"), list):
            inner = [hook for hook in item["hooks"] if not _is_ours(hook)]
            if len(inner) == len(item["hooks"]):
                kept.append(item)
            elif inner:
                kept.append({**item, "hooks": inner})
        elif not _is_ours(item):
            kept.append(item)
    return kept


def _section(config: Config, key: str, path: Path) -> Config:
    value = config.setdefault(key, {})
    if not isinstance(value, dict):
        raise InstallError(f'{path}: "{key}" should be a JSON object; fix it, then run again.')
    return value


def _plan_json(files: ConfigFiles, server: Callable[[Config], None], hooks: Callable[[Config], None], client: str, *,
               removing: bool) -> list[FileChange | None]:
    if files.mcp == files.hooks:  # Gemini CLI: one settings.json holds both
        return [_plan_file(files.mcp, [server, hooks], client, removing=removing)]
    return [_plan_file(files.mcp, [server], client, removing=removing),
            _plan_file(files.hooks, [hooks], client, removing=removing)]


def _plan_file(path: Path, edits: list[Callable[[Config], None]], client: str, *,
               removing: bool) -> FileChange | None:
    before = read_text(path)
    config = _parse(path, before)
    updated = copy.deepcopy(config)
    for edit in edits:
        edit(updated)
    if updated == config:
        return None
    if removing and updated in ({}, {"version": 1} if client == "cursor" else {}):
        return FileChange(path, before, None)
    if before is None or not before.strip():
        return FileChange(path, before, json.dumps(updated, indent=2, ensure_ascii=False) + "\n")
    try:
        return FileChange(path, before, jsonedit.patch(before, updated))
    except ValueError as exc:  # never the user's file: it parsed
        raise InstallError(f"{path} could not be edited in place ({exc}); agentmem left it untouched. Please "
                           "report this, and add agentmem's entries by hand (docs/install.md).") from None


def _plan_toml(path: Path, entry: Config | None) -> FileChange | None:
    """The change to Codex's config.toml: our `[mcp_servers.agentmem]` table set to `entry`, or removed (None)."""
    before = read_text(path)
    text = before or ""
    table = ("mcp_servers", SERVER_NAME)
    try:
        if entry is not None:
            after = tomledit.set_table(text, table, {k: v for k, v in entry.items() if k != "type"}, drop=("url",))
        else:
            after = tomledit.remove_table(text, table)
    except tomledit.TomlSyntaxError as exc:
        raise InstallError(f"{path} is not valid TOML ({exc}). agentmem left it untouched: fix that file (or move "
                           "it away), then run the command again.") from None
    except tomledit.TomlEditError as exc:
        raise InstallError(f"{path}: {exc}. agentmem left it untouched.") from None
    if after == text:
        return None
    if entry is None and not after.strip():
        return FileChange(path, before, None)
    return FileChange(path, before, after)


def _parse(path: Path, text: str | None) -> Config:
    if text is None or not text.strip():
        return {}
    try:
        config = jsonedit.loads(text)
    except json.JSONDecodeError as e:
        raise InstallError(
            f"{path} is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}). agentmem left "
            "it untouched: fix that file (or move it away), then run the command again.") from None
    if not isinstance(config, dict):
        raise InstallError(f"{path} should hold a JSON object; fix that file, then run the command again.")
    return config


def _plugin_notes(client: str, home: Path | None) -> list[str]:
    if client != "claude-code":
        return []
    settings = (Path(home) if home is not None else Path.home()) / ".claude" / "settings.json"
    try:
        enabled = json.loads(settings.read_text(encoding="utf-8-sig")).get("enabledPlugins") or {}
    except (OSError, ValueError, AttributeError):
        return []
    if isinstance(enabled, dict) and any(k.startswith("agentmem@") and v for k, v in enabled.items()):
        return [("the agentmem Claude Code plugin is enabled too; its hooks and MCP server would run "
                 "twice. Use one route: disable the plugin or run `agentmem uninstall claude-code`.")]
    return []


def _split(command: str) -> list[str]:
    if os.name == "nt":
        return [part.strip('"') for part in shlex.split(command, posix=False)]
    return shlex.split(command)


def _join(parts: list[str]) -> str:
    return subprocess.list2cmdline(parts) if os.name == "nt" else shlex.join(parts)
