"""Issue 21, CLI polish: help on every flag, `save --help`, `list`, `purge`, `reindex`'s last bar, and
`install` keeping the user's JSON, naming its backups and asking for a restart (the real command)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem_mcp.cli.app import build_parser

from .test_firsthour import agentmem


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "webapp"
    (path / ".git").mkdir(parents=True)
    return path


def test_every_flag_has_help():
    import argparse

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, command in commands.choices.items():
        for action in command._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            if not action.help:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, missing


def test_save_help_hides_internal_options(cli_env, tmp_path):
    shown = agentmem(cli_env, "save", "--help", cwd=tmp_path).stdout
    assert "--source" not in shown and "--tier" not in shown and "summary" not in shown
    flat = " ".join(shown.split())
    assert "--global save a global memory, true in every project" in flat, flat
    for flag in ("--title", "--type", "--priority", "--ttl-days", "--importance"):
        assert re.search(rf"{flag}\b[^\n]*\n?\s+\S", shown), flag


def test_list_filters_and_pages(cli_env, repo):
    topics = ["the queue worker retries failed jobs three times", "migrations run with alembic upgrade head",
              "the API answers in JSON with snake_case keys", "feature flags live in flags.yaml",
              "the frontend is built with vite and served from dist/"]
    for topic in topics:
        saved = agentmem(cli_env, "save", f"decision: {topic}", "--type", "decision", cwd=repo)
        assert saved.returncode == 0, saved.stderr
    agentmem(cli_env, "save", "the user prefers tabs over spaces in Makefiles", "--type", "preference",
             "--global", "--i-am-the-user", cwd=repo)
    first = agentmem(cli_env, "list", "--limit", "2", cwd=repo)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert len(lines) == 3 and lines[-1] == "-- 1-2 of 6 (page 1 of 3; --page 2 for more)", lines
    last = agentmem(cli_env, "list", "--limit", "2", "--page", "3", cwd=repo).stdout.splitlines()
    assert last[-1] == "-- 5-6 of 6 (page 3 of 3)"
    decisions = json.loads(agentmem(cli_env, "list", "--type", "decision", "--json", cwd=repo).stdout)
    assert decisions["total"] == 5 and {m["type"] for m in decisions["memories"]} == {"decision"}
    assert all(m["project"] == str(repo) for m in decisions["memories"])
    elsewhere = agentmem(cli_env, "list", cwd=repo.parent).stdout  # no project: the global memories
    assert "tabs over spaces" in elsewhere and "alembic" not in elsewhere
    assert "-- 1-1 of 1" in elsewhere
    assert "alembic" in agentmem(cli_env, "list", "--all-projects", cwd=repo.parent).stdout


def test_purge_one_project_then_everything(cli_env, repo, tmp_path):
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    agentmem(cli_env, "save", "webapp deploys with fly deploy from the main branch", cwd=repo)
    agentmem(cli_env, "save", "other runs its tests with tox", cwd=other)
    agentmem(cli_env, "save", "the user prefers short answers", "--global", "--i-am-the-user", cwd=repo)
    home = Path(cli_env["AGENTMEM_HOME"])
    (home / "config.toml").write_text("# the user's own file\n")

    refused = agentmem(cli_env, "purge", "--project", "--yes", cwd=repo)  # no terminal, no user flag: nothing
    assert refused.returncode == 2 and "nothing was changed" in refused.stderr
    assert "fly deploy" in agentmem(cli_env, "list", cwd=repo).stdout

    done = agentmem(cli_env, "purge", "--project", "--yes", "--i-am-the-user", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "forgot 1 memories" in done.stdout
    listed = agentmem(cli_env, "list", "--all-projects", cwd=repo).stdout
    assert "fly deploy" not in listed and "tox" in listed and "short answers" in listed

    everything = agentmem(cli_env, "purge", "--yes", "--i-am-the-user", cwd=repo)
    assert everything.returncode == 0, everything.stderr
    assert str(home / "agentmem.db") in everything.stdout
    assert not (home / "agentmem.db").exists() and not (home / "fulltext").exists()
    assert (home / "config.toml").read_text() == "# the user's own file\n"  # not agentmem's data
    again = agentmem(cli_env, "purge", "--yes", "--i-am-the-user", cwd=repo)
    assert again.returncode == 0 and "nothing to remove" in again.stdout


def test_reindex_ends_every_progress_bar_with_a_newline(cli_env, repo):
    for n in range(3):
        agentmem(cli_env, "save", f"fact {n}: the nightly job rebuilds the search index", cwd=repo)
    import os
    import pty

    main, terminal = pty.openpty()  # bars are drawn on a terminal (plain lines elsewhere: test_cli_output.py)
    try:
        done = subprocess.run([sys.executable, "-m", "agentmem_mcp", "reindex"], env=cli_env, cwd=repo,
                              stdout=subprocess.PIPE, stderr=terminal, timeout=300)
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal's other end is closed: all was read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(main)
    stderr = shown.decode().replace("\r\n", "\n")  # the terminal writes each newline as \r\n
    assert done.returncode == 0, stderr
    assert stderr.endswith("\n"), repr(stderr[-80:])
    bars = [line.split("\r")[-1] for line in stderr.split("\n")[:-1]]  # what a terminal shows
    assert bars and all(re.match(r"\w+\s+\[[#.]+\] \d+/\d+$", bar) for bar in bars), bars
    assert len({bar.split()[0] for bar in bars}) == len(bars)  # one line per stage


def test_install_keeps_compact_json_names_backups_and_asks_for_a_restart(cli_env, tmp_path):
    home = tmp_path / "user"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude.json").write_text('{"numStartups":3,"theme":"dark"}')
    (home / ".claude" / "settings.json").write_text('{\n    "model": "opus"\n}\n')
    env = cli_env | {"HOME": str(home)}
    done = agentmem(env, "install", "claude-code", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    compact = (home / ".claude.json").read_text()
    assert "\n" not in compact.strip() and '"numStartups":3' in compact and '"agentmem"' in compact
    settings = (home / ".claude" / "settings.json").read_text()
    assert settings.startswith('{\n    "model": "opus"')  # its 4-space indent kept
    (folder,) = [p for p in (Path(cli_env["AGENTMEM_HOME"]) / "backups").iterdir() if p.is_dir()]  # issue 37.4
    backups = sorted(str(p) for p in folder.rglob("*") if p.is_file() and p.name != ".agentmem-owned")
    assert len(backups) == 2 and not list(home.rglob("*agentmem-backup*"))
    out = done.stdout
    assert f"backups of the files changed are in {folder}" in out and all(b in out for b in backups)
    assert out.rstrip().endswith("restart Claude Code (quit it and start it again) to load agentmem")
    removed = agentmem(env, "uninstall", "claude-code", cwd=tmp_path)
    assert removed.returncode == 0 and "to drop agentmem" in removed.stdout
    assert f"stay in {cli_env['AGENTMEM_HOME']}" in removed.stdout and "agentmem purge" in removed.stdout
    assert json.loads((home / ".claude.json").read_text()) == {"numStartups": 3, "theme": "dark"}
    assert "\n" not in (home / ".claude.json").read_text().strip()


def test_a_stage_that_stops_short_still_ends_its_line(capsys):
    import io

    from agentmem_mcp.cli.app import _ProgressBars

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for stream in (Terminal(), None):  # redrawn bars on a terminal; plain lines elsewhere (stderr under pytest)
        bars = _ProgressBars(stream)
        bars("pieces", 1, 3)  # a stage whose work ran out before its total (nothing more needed it)
        bars("words", 2, 3)
        bars.close()
        shown = stream.getvalue() if stream else capsys.readouterr().err
        assert shown.endswith("2/3\n") and shown.count("\n") == 2, repr(shown)
        first = "pieces   [##########....................] 1/3" if stream else "pieces: 1/3"
        assert shown.split("\n")[0].endswith(first) and ("\r" in shown) == bool(stream), repr(shown)
