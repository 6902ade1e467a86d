"""Homes, databases and folders that are not agentmem's (issue 36: 1, 12, 14, 15; issue 37: 6, 8).

Each test sets up the condition a user or another local user can create (a folder of the user's given as the index,
another program's SQLite file, a home another uid made, a planted symbolic link, a relative AGENTMEM_HOME, a full
or read-only disk) and goes through the real `agentmem` command or hook in a subprocess: see docs/security.md,
"Homes, databases and folders that are not ours".
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem_mcp.files import MARKER

OTHER_UID = 4242  # a uid no test process runs as
APPLICATION_ID = 0x616D656D  # agentmem's stamp (db/ownership.py), written out: the tests run against older code too


def agentmem(env: dict[str, str], *args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentmem_mcp", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=180, input=stdin)


def hook(env: dict[str, str], event: str, payload: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentmem_mcp", "hook", event], env=env, cwd=cwd,
                          input=json.dumps(payload), capture_output=True, text=True, timeout=60)


def prompt_event(project: Path, text: str, session: str = "s-1") -> dict:
    return {"session_id": session, "cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": text}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def application_id(database: Path) -> int:
    conn = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA application_id").fetchone()[0]
    finally:
        conn.close()


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


@pytest.fixture
def env(cli_env: dict[str, str]) -> dict[str, str]:
    return cli_env | {"AGENTMEM_EMBEDDINGS": "0"}


# 36.1: never delete what is not ours ---------------------------------------------------------------------------


def test_purge_never_deletes_an_index_folder_agentmem_did_not_make(env, home, project, tmp_path):
    """`AGENTMEM_INDEX_DIR=~/Documents agentmem purge --yes` deleted ~/Documents and everything in it."""
    documents = tmp_path / "Documents"
    (documents / "notes").mkdir(parents=True)
    (documents / "thesis.tex").write_text("chapter one")
    (documents / "notes" / "todo.txt").write_text("buy milk")
    before = tree(documents)
    assert agentmem(env, "save", "Use pnpm, not npm", cwd=project).returncode == 0
    done = agentmem(env | {"AGENTMEM_INDEX_DIR": str(documents)}, "purge", "--yes", cwd=project)
    assert tree(documents) == before
    assert done.returncode == 0, done.stderr
    assert f"left as it is: {documents}: not created by agentmem" in done.stdout
    assert not (home / "agentmem.db").exists()  # agentmem's own database went


def test_purge_leaves_the_users_own_logs_and_fulltext_folders(env, project, tmp_path):
    """AGENTMEM_HOME at a folder with the user's own logs/ and fulltext/: purge deleted both."""
    home = tmp_path / "mine"
    (home / "logs").mkdir(parents=True)
    (home / "fulltext").mkdir()
    (home / "logs" / "app.log").write_text("my application's log")
    (home / "fulltext" / "notes.txt").write_text("my notes")
    os.chmod(home, 0o700)
    env = env | {"AGENTMEM_HOME": str(home), "AGENTMEM_INDEX_DIR": str(tmp_path / "index")}
    assert agentmem(env, "save", "Use pnpm, not npm", cwd=project).returncode == 0
    hook(env, "UserPromptSubmit", prompt_event(project, "how do we install?"), project)
    (home / "logs" / "agentmem.log").write_text("what agentmem logged\n")  # agentmem's own file in the user's folder
    done = agentmem(env, "purge", "--yes", cwd=project)
    assert (home / "logs" / "app.log").read_text() == "my application's log"
    assert (home / "fulltext" / "notes.txt").read_text() == "my notes"
    assert done.returncode == 0, done.stderr
    assert not (home / "logs" / "agentmem.log").exists() and not (home / "agentmem.db").exists()
    assert not (tmp_path / "index").exists()  # the index folder agentmem made, emptied file by file, then removed
    assert "it holds what agentmem did not write (app.log)" in done.stdout


def test_purge_empties_its_own_index_folder_but_keeps_a_file_the_user_put_there(env, home, project):
    assert agentmem(env, "save", "Use pnpm, not npm", cwd=project).returncode == 0
    (home / "fulltext" / "README.txt").write_text("a note the user left here")
    done = agentmem(env, "purge", "--yes", cwd=project)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(home / "fulltext")) == [MARKER, "README.txt"]


def test_a_database_of_another_program_is_refused_and_left_untouched(env, home, project, tmp_path):
    """`AGENTMEM_DB=app.db` migrated the user's own SQLite file in place, and purge then deleted it."""
    app = tmp_path / "app.db"
    conn = sqlite3.connect(app)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users (name) VALUES ('ann')")
    conn.commit()
    conn.close()
    os.chmod(app, 0o644)
    before = app.read_bytes()
    env = env | {"AGENTMEM_DB": str(app)}
    answers = [agentmem(env, *args, cwd=project) for args in (("save", "Use pnpm, not npm"), ("stats",),
                                                                ("search", "pnpm"))]
    answer = hook(env, "UserPromptSubmit", prompt_event(project, "remember the deploy window"), project)
    assert app.read_bytes() == before and mode(app) == 0o644
    for done in answers:
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert f"the database {app} was not made by agentmem" in done.stderr and "AGENTMEM_DB" in done.stderr
    assert answer.returncode == 0 and "Traceback" not in answer.stderr
    done = agentmem(env, "purge", "--yes", cwd=project)
    assert done.returncode == 0 and "not a database agentmem made" in done.stdout
    assert app.read_bytes() == before and mode(app) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("app.db")) == ["app.db"]


def test_agentmem_stamps_its_databases_and_recognises_those_made_before(env, home, project):
    assert agentmem(env, "save", "Use pnpm, not npm", cwd=project).returncode == 0
    assert application_id(home / "agentmem.db") == APPLICATION_ID
    conn = sqlite3.connect(home / "agentmem.db")  # as an agentmem from before the stamp left it
    conn.execute("PRAGMA application_id = 0")
    conn.close()
    found = agentmem(env, "search", "pnpm", cwd=project)
    assert found.returncode == 0 and "pnpm" in found.stdout, found.stderr
    assert application_id(home / "agentmem.db") == APPLICATION_ID


def test_purge_takes_the_audit_files_so_a_new_store_starts_clean(env, home, project):
    """After purge, the old audit head stayed and doctor called the next store's first audit row tampered."""
    assert agentmem(env, "save", "Use pnpm, not npm", cwd=project).returncode == 0
    assert agentmem(env, "purge", "--yes", cwd=project).returncode == 0
    assert not list(home.glob("agentmem.db*"))
    assert agentmem(env, "save", "Use yarn, not npm", cwd=project).returncode == 0
    doctor = agentmem(env, "doctor", cwd=project)
    assert "FAIL audit chain" not in doctor.stdout, doctor.stdout


# 36.15: a relative AGENTMEM_HOME -------------------------------------------------------------------------------


def test_a_relative_home_is_taken_from_the_users_home_not_each_working_directory(env, project, tmp_path):
    """`AGENTMEM_HOME=agentmem-data` put a store inside every repository a hook or a command ran in."""
    user_home = tmp_path / "user"
    user_home.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = env | {"HOME": str(user_home), "AGENTMEM_HOME": "agentmem-data", "AGENTMEM_INDEX_DIR": "agentmem-index"}
    assert agentmem(env, "save", "Use pnpm, not npm", "--project", str(project), cwd=project).returncode == 0
    answer = hook(env, "UserPromptSubmit", prompt_event(project, "how do we install packages?"), project)
    assert answer.returncode == 0 and answer.stderr == ""
    found = agentmem(env, "search", "pnpm", "--project", str(project), cwd=elsewhere)
    assert found.returncode == 0 and "pnpm" in found.stdout, found.stderr
    assert sorted(os.listdir(project)) == [".git"] and os.listdir(elsewhere) == []
    data = user_home / "agentmem-data"
    assert (data / "agentmem.db").is_file() and (user_home / "agentmem-index" / "meta.json").is_file()
    conn = sqlite3.connect(data / "agentmem.db")
    try:
        assert conn.execute("SELECT count(*) FROM observations").fetchone()[0] == 1  # the hook's event, same store
    finally:
        conn.close()
