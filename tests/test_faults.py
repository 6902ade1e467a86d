"""Recovery from damaged derived data and from a database held locked by another process."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from agentmem_mcp.config import load_settings
from agentmem_mcp.db.connection import connect
from agentmem_mcp.store import Store

from .conftest import REPO


def ids(result) -> list[str]:
    return [hit.id for hit in result.hits]


@pytest.fixture
def seeded(settings, embedder):
    with Store.open(settings, project="/repo/a", embedder=embedder) as store:
        kept = store.save("the deploy script lives in scripts/deploy.sh and needs AWS_PROFILE")
        gone = store.save("database migrations used to run with flyway")
        store.forget(ids=[gone.id])
    return kept.id, gone.id


def damage_segments(path) -> None:
    for file in path.iterdir():
        if file.suffix in (".idx", ".term", ".store", ".pos", ".fieldnorm"):
            file.write_bytes(b"garbage" * 10)


@pytest.mark.parametrize("damage", ["deleted", "segments", "meta"])
def test_the_bm25_index_is_rebuilt_at_the_next_start(settings, embedder, seeded, damage):
    kept, gone = seeded
    directory = settings.fulltext_dir
    if damage == "deleted":
        shutil.rmtree(directory)
    elif damage == "segments":
        damage_segments(directory)
    else:
        (directory / "meta.json").write_text("{broken")
    with Store.open(settings, project="/repo/a", embedder=embedder) as store:
        assert ids(store.search("deploy script", retrievers=("bm25",))) == [kept]
        assert gone not in ids(store.search("flyway migrations", include_history=True))
        store.flush()
        assert store.fulltext.ids() == {kept}


def test_the_index_deleted_under_a_running_store(settings, embedder, seeded):
    # (Truncating segment files that this process has memory-mapped would kill it with SIGBUS; deleting
    # them, as a user cleaning up would, leaves the open files readable until the next start rebuilds.)
    kept, _ = seeded
    with Store.open(settings, project="/repo/a", embedder=embedder) as store:
        for attempt in range(10):  # tantivy's reader may drop its meta lock file in the directory meanwhile
            try:
                shutil.rmtree(settings.fulltext_dir)
                break
            except OSError:
                time.sleep(0.05 * (attempt + 1))
        assert ids(store.search("deploy script"))[0] == kept
    with Store.open(settings, project="/repo/a", embedder=embedder) as store:
        assert ids(store.search("deploy script", retrievers=("bm25",))) == [kept]


HOLD_LOCK = textwrap.dedent("""
    import sys, time, sqlean
    conn = sqlean.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    conn.execute("ROLLBACK")
""")


def test_a_save_waits_for_a_lock_held_by_another_process(settings, embedder, seeded):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(settings.database), "3"],
                              stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert holder.stdout.readline().strip() == "locked"
    with Store.open(settings, project="/repo/a", embedder=embedder, load_embedder=False) as store:
        started = time.monotonic()
        saved = store.save("the staging cluster is called blue-harbor")
        assert time.monotonic() - started >= 1.5
        assert store.get(saved.id)
    holder.wait(timeout=30)


def test_a_lock_held_past_the_timeout_is_a_clear_error(home, model_path, embedder, seeded):
    settings = load_settings(env={}, home=home, embed_model_path=model_path, busy_timeout_ms=1000)
    with Store.open(settings, project="/repo/a", embedder=embedder) as store:
        before = store.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(settings.database), "4"],
                                  stdout=subprocess.PIPE, text=True, cwd=REPO)
        assert holder.stdout.readline().strip() == "locked"
        from agentmem_mcp.models import StoreBusy

        with pytest.raises(StoreBusy) as error:
            store.save("the staging cluster is called blue-harbor")
        assert "locked" in str(error.value) and "retry" in str(error.value)
        holder.wait(timeout=30)
        assert store.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == before
        assert store.save("the staging cluster is called blue-harbor").action == "created"


def test_a_hook_facing_a_locked_database_spools_the_event_and_the_next_hook_moves_it(home, cli_env, tmp_path):
    from agentmem_mcp.capture.hook import HOOK_BUSY_TIMEOUT_MS

    from .secrets_corpus import SECRET_CASES

    secret = next(c for c in SECRET_CASES if c.kind == "github_token")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)

    def hook(command: str, output: str) -> subprocess.CompletedProcess:
        payload = {"session_id": "spool-1", "cwd": str(repo), "hook_event_name": "PostToolUse", "tool_name": "Bash",
                   "tool_input": {"command": command}, "tool_response": {"stdout": output}}
        return subprocess.run([sys.executable, "-m", "agentmem_mcp", "hook", "--client", "claude-code",
                               "PostToolUse"], input=json.dumps(payload).encode(), env=cli_env,
                              capture_output=True, timeout=60, cwd=REPO)

    assert hook("ls", "a b").returncode == 0  # creates the database
    database = load_settings(env={}, home=home).database
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(database), "8"], stdout=subprocess.PIPE,
                              text=True, cwd=REPO)
    assert holder.stdout.readline().strip() == "locked"
    started = time.monotonic()
    locked = hook("git push", secret.context)
    waited = time.monotonic() - started
    assert locked.returncode == 0 and locked.stdout == b"" and locked.stderr == b""
    assert HOOK_BUSY_TIMEOUT_MS / 1000 <= waited < HOOK_BUSY_TIMEOUT_MS / 1000 + 3  # never the client's 10 s
    spooled = list((home / "spool").glob("*.json"))
    assert len(spooled) == 1 and oct(spooled[0].stat().st_mode & 0o777) == "0o600"
    assert secret.secret not in spooled[0].read_text() and "git push" in spooled[0].read_text()
    holder.wait(timeout=30)

    assert hook("pytest -q", "3 passed").returncode == 0  # the next hook writes, then moves the spooled one
    conn = connect(database)
    commands = [json.loads(r[0])["command"] for r in conn.execute(
        "SELECT input FROM observations WHERE session_id = 'spool-1' ORDER BY id")]
    conn.close()
    assert sorted(commands) == ["git push", "ls", "pytest -q"]
    assert not list((home / "spool").iterdir())


def test_the_worker_moves_spooled_events_too(settings, embedder):
    from agentmem_mcp.capture.events import HookEvent
    from agentmem_mcp.capture.spool import spool_event
    from agentmem_mcp.runtime.worker import Worker

    ev = HookEvent(client="claude-code", event="tool_use", raw_event="PostToolUse", session_id="spool-2",
                   cwd="/repo/a", tool="Bash", tool_input={"command": "make build"}, tool_output="ok")
    spool_event(settings.home, ev, "/repo/a", now=1_700_000_000.0)
    (settings.home / "spool" / "broken.json").write_text("{not json")
    with Store.open(settings, project="/repo/a", embedder=embedder) as store:
        report = Worker(store, sweep=False).run_until_idle()
        row = store.conn.execute("SELECT tool, status, created_at FROM observations WHERE session_id = 'spool-2'"
                                 ).fetchone()
    assert report.compressed >= 1 and tuple(row) == ("Bash", "compressed", 1_700_000_000.0)
    assert sorted(p.name for p in (settings.home / "spool").iterdir()) == ["broken.bad"]
