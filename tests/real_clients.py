"""The real Codex and Gemini CLI, from npm, for tests: installed once into `<repo>/.npm-clients`
(`$AGENTMEM_TEST_NPM_PREFIX` for another folder, e.g. a cache kept between CI runs; pinned versions,
the ones docs/install.md was checked against), run in a scratch HOME against a local stand-in for their model
API (`fake_models.py`), with agentmem installed by its own `agentmem install` command.

`client_bin(name)` installs the packages when they are missing (CI starts from a clean checkout) and skips the
test, outside CI, when npm is not there or cannot install them; in CI that is a failure.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
PREFIX = Path(os.environ.get("AGENTMEM_TEST_NPM_PREFIX") or REPO / ".npm-clients")  # a cache kept between CI runs
PACKAGES = {"codex": ("@openai/codex", "0.171.0"), "gemini": ("@google/gemini-cli", "0.61.0")}
AGENTMEM = Path(sys.executable).parent / "agentmem"


def _installed_version(package: str) -> str | None:
    try:
        return json.loads((PREFIX / "node_modules" / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def client_bin(name: str) -> Path:
    """The `codex` or `gemini` command of the pinned npm package, installed first if needed."""
    path = PREFIX / "node_modules" / ".bin" / name
    wanted = [f"{package}@{version}" for package, version in PACKAGES.values()
              if _installed_version(package) != version]
    if not wanted and path.exists():
        return path
    npm = shutil.which("npm")
    if npm is None:
        _unavailable(f"npm is not installed, so the real {name} client cannot be installed")
    PREFIX.mkdir(exist_ok=True)
    with open(PREFIX / ".install.lock", "w") as lock:  # test processes running at once install once
        fcntl.flock(lock, fcntl.LOCK_EX)
        wanted = [f"{package}@{version}" for package, version in PACKAGES.values()
                  if _installed_version(package) != version]
        if wanted:
            done = subprocess.run([npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund",
                                   "--loglevel=error", *wanted], capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                _unavailable(f"npm install {' '.join(wanted)} failed: {done.stderr[-500:]}")
    if not path.exists():
        _unavailable(f"npm installed {PACKAGES[name][0]} but {path} is missing")
    return path


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def client_env(home: Path, agentmem_home: Path, model_path: Path, **extra: str) -> dict[str, str]:
    """A clean environment for a client and the agentmem it runs: its own HOME and agentmem home."""
    path = os.pathsep.join([str(PREFIX / "node_modules" / ".bin"), str(AGENTMEM.parent), "/usr/local/bin",
                            "/usr/bin", "/bin"])
    env = {"HOME": str(home), "PATH": path, "LANG": "C.UTF-8", "AGENTMEM_HOME": str(agentmem_home),
           "AGENTMEM_EMBED_MODEL_PATH": str(model_path), "NO_COLOR": "1", "TERM": "dumb",
           "AGENTMEM_HOOK_STARTS_PROCESS": "0"}  # a hook records its event before it answers, and starts no process
    env.update(extra)
    return env


def agentmem(env: dict[str, str], *args: str, cwd: Path | None = None, stdin: str | None = None,
             timeout: float = 300) -> subprocess.CompletedProcess:
    """The real `agentmem` command."""
    return subprocess.run([str(AGENTMEM), *args], env=env, cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=timeout)


def codex_config(home: Path, model_url: str) -> None:
    """Point Codex at the stand-in model (a provider of its own, as a user would add one)."""
    folder = home / ".codex"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(
        '# my Codex settings\nmodel = "gpt-5.5"\nmodel_provider = "local"\n\n[model_providers.local]\n'
        f'name = "local"\nbase_url = "{model_url}/v1"\nwire_api = "responses"\n')


def run_codex(env: dict[str, str], cwd: Path, prompt: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """`codex exec PROMPT` in `cwd`. Codex runs only hooks the user trusted, and `codex exec` cannot ask:
    `--dangerously-bypass-hook-trust` stands for the user's trust here."""
    return subprocess.run([str(client_bin("codex")), "exec", "--skip-git-repo-check", "-s", "danger-full-access",
                           "--dangerously-bypass-hook-trust", prompt], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def gemini_settings(home: Path) -> None:
    """Gemini CLI with an API key (the stand-in's) and nothing else."""
    folder = home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text('{\n  // my Gemini CLI settings\n  "security": {"auth": {"selectedType": '
                                          '"gemini-api-key"}}\n}\n')


def gemini_env(env: dict[str, str], model_url: str) -> dict[str, str]:
    """Gemini CLI against the stand-in model, in a folder it trusts (it runs hooks only there)."""
    return {**env, "GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": model_url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true"}


def run_gemini(env: dict[str, str], cwd: Path, prompt: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """`gemini -p PROMPT` in `cwd`, with its tools approved (--yolo), on a fixed model (no routing calls)."""
    return subprocess.run([str(client_bin("gemini")), "-m", "gemini-2.5-pro", "--yolo", "-p", prompt], env=env,
                          cwd=cwd, capture_output=True, text=True, timeout=timeout)


def git_project(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    (path / "README.md").write_text("# demo\n")
    return path.resolve()


def rows(agentmem_home: Path, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    import sqlite3

    conn = sqlite3.connect(agentmem_home / "agentmem.db")
    conn.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in conn.execute(sql, args)]
    finally:
        conn.close()


def codex_schemas() -> dict[str, dict[str, Any]]:
    """The hook JSON schemas Codex's binary ships (`<event>.command.input` / `.output`), by title."""
    vendor = next((PREFIX / "node_modules" / "@openai").glob("codex-*/vendor/*/bin/codex"), None)
    if vendor is None:
        client_bin("codex")
        vendor = next((PREFIX / "node_modules" / "@openai").glob("codex-*/vendor/*/bin/codex"))
    data = vendor.read_bytes()
    decoder = json.JSONDecoder()
    found = {}
    for match in re.finditer(rb'\{\s*"\$schema"', data):
        try:
            schema, _ = decoder.raw_decode(data[match.start():match.start() + 200_000].decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(schema, dict) and isinstance(schema.get("title"), str):
            found[schema["title"]] = schema
    return found
