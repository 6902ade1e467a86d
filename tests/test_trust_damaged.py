"""A malformed database (issue 18 item 9): every command prints one clear line (no traceback), hooks keep their
events, and `agentmem doctor` finds the damage and offers recovery: `agentmem doctor --recover` copies what is
readable into a new file beside the damaged one (which is only read) and exports the memories. The real CLI and
hook command on a real home whose memories table has a damaged page."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import sqlean

from agentmem_mcp.config import load_settings
from agentmem_mcp.store import Store

MEMORIES = 400


def run(env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentmem_mcp", *args], env=env, cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=180)


def damage_a_memories_page(database: Path) -> None:
    """Overwrite the header of one leaf page of the memories table, in the middle of it, with garbage."""
    conn = sqlean.connect(str(database))
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    leaves = [row[0] for row in conn.execute(
        "SELECT pageno FROM dbstat WHERE name = 'memories' AND pagetype = 'leaf' ORDER BY pageno")]
    conn.close()
    assert len(leaves) > 4
    with open(database, "r+b") as file:
        file.seek((leaves[len(leaves) // 2] - 1) * page_size)
        file.write(b"\xff" * 12)


def test_a_malformed_database_gives_one_line_everywhere_and_doctor_recovers_it(cli_env, home, tmp_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    env = cli_env | {"AGENTMEM_EMBEDDINGS": "0"}
    settings = load_settings(env={}, home=home, embeddings=False)
    with Store.open(settings, project=str(project), load_embedder=False) as store:
        saved = store.save_many([{"content": f"Service number {n} is deployed from the runner called "
                                  f"{'abcdefghij'[n % 10]}{n} with a canary of {n % 7} percent and owner team {n}"}
                                 for n in range(MEMORIES)], supersede_check=False)
    first_id = saved[0].id
    database = home / "agentmem.db"
    damage_a_memories_page(database)
    export = tmp_path / "in.jsonl"
    export.write_text(json.dumps({"kind": "header", "format": "agentmem-export/1"}) + "\n")

    mine = "--i-am-the-user"  # the user's commands, as the user's script runs them (cli/confirm_user.py)
    commands = [["stats"], ["search", "runner canary"], ["list", "--all-projects"], ["get", first_id],
                ["save", "The staging cluster is blue-harbor"], ["forget", first_id, mine], ["export"],
                ["import", str(export), mine], ["reindex", "--quiet"], ["audit", "--verify"], ["worker", "--once"],
                ["quarantine", "list"], ["pin", first_id, mine], ["forget", "--strategy", "age", "--all-projects"]]
    failed = 0
    for command in commands:
        done = run(env, project, *command)
        assert "Traceback" not in done.stderr, (command, done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.startswith("agentmem:")]
        if done.returncode:
            failed += 1
            assert done.returncode in (2, 3) and len(lines) == 1, (command, done.stderr)
            assert "agentmem doctor" in lines[0] or "malformed" not in lines[0], (command, done.stderr)
    assert failed >= len(commands) // 2  # most commands read the damaged page

    prompt = {"session_id": "s-1", "cwd": str(project), "hook_event_name": "UserPromptSubmit",
              "prompt": "which runner deploys service 200?"}
    hooked = run(env, project, "hook", "UserPromptSubmit", stdin=json.dumps(prompt))
    assert hooked.returncode == 0 and hooked.stderr == ""

    doctor = run(env, project, "doctor")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stderr
    assert "FAIL database" in doctor.stdout and "malformed" in doctor.stdout and "--recover" in doctor.stdout

    damaged = hashlib.sha256(database.read_bytes()).hexdigest()
    recovered = run(env, project, "doctor", "--recover")
    assert recovered.returncode == 0, recovered.stderr
    assert hashlib.sha256(database.read_bytes()).hexdigest() == damaged  # the user's file was only read
    new_files = sorted(home.glob("agentmem.recovered-*.db"))
    assert len(new_files) == 1 and "integrity check: ok" in recovered.stdout, recovered.stdout
    new = new_files[0]
    assert (new.stat().st_mode & 0o777) == 0o600
    conn = sqlean.connect(str(new))
    count = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
    prompts = conn.execute("SELECT COUNT(*) FROM observations WHERE prompt LIKE '%service 200%'").fetchone()[0]
    conn.close()
    assert MEMORIES // 2 < count < MEMORIES + 1, recovered.stdout  # all but the damaged page's rows
    spooled = list((home / "spool").glob("*.json")) if (home / "spool").exists() else []
    assert prompts + len(spooled) == 1  # the hook's event was recorded (and recovered) or spooled

    # the recovered file works as a database, and the export imports into a new home
    new_env = env | {"AGENTMEM_DB": str(new)}
    assert run(new_env, project, "reindex", "--quiet").returncode == 0
    found = run(new_env, project, "search", "runner canary", "--all-projects")
    assert found.returncode == 0 and "Service number" in found.stdout, found.stderr
    exported = new.with_suffix(".jsonl")
    assert sum(1 for line in exported.read_text().splitlines() if '"kind": "memory"' in line) == count
    other = env | {"AGENTMEM_HOME": str(tmp_path / "other-home")}
    imported = run(other, project, "import", str(exported), "--i-am-the-user")
    assert imported.returncode == 0 and f"imported {count}" in imported.stdout, imported.stdout + imported.stderr


def test_a_database_whose_first_page_is_gone_is_refused_by_recover_in_one_line(cli_env, home, tmp_path):
    """Nothing can be copied from a file SQLite cannot open at all (its header and schema page overwritten):
    `doctor` says it is damaged, `doctor --recover` says so in one line, names SQLite's own `.recover`, writes no
    empty copy and leaves the file as it was."""
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    env = cli_env | {"AGENTMEM_EMBEDDINGS": "0"}
    assert run(env, project, "save", "The release train leaves on Thursdays").returncode == 0
    database = home / "agentmem.db"
    with open(database, "r+b") as file:
        file.write(b"\0" * 4096)
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    doctor = run(env, project, "doctor")
    assert "FAIL database" in doctor.stdout and "--recover" in doctor.stdout, doctor.stdout + doctor.stderr
    recovered = run(env, project, "doctor", "--recover")
    assert recovered.returncode == 2 and "Traceback" not in recovered.stderr, recovered.stderr
    assert len(recovered.stderr.strip().splitlines()) == 1
    assert "cannot be opened at all" in recovered.stderr and ".recover" in recovered.stderr
    assert not list(home.glob("agentmem.recovered-*"))
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before
