"""The background worker end to end: real hooks, SQLite, tantivy, sqlite-vec and the real model."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import anyio
import pytest

from agentmem_mcp.capture.events import HookEvent
from agentmem_mcp.capture.hook import handle
from agentmem_mcp.capture.observations import ObservationStore
from agentmem_mcp.lifecycle.consolidate import error_signature, normalize_command
from agentmem_mcp.lifecycle.summarize import SUMMARY_MAX_CHARS
from agentmem_mcp.runtime import lease
from agentmem_mcp.runtime.serve_worker import serve_worker_loop
from agentmem_mcp.runtime.worker import ERASE_PRUNED_EVERY_SECONDS, MAX_ATTEMPTS, Worker, prune_observations
from agentmem_mcp.store import Store
from agentmem_mcp.upkeep.maintenance import doctor

from .conftest import SHARED, require_shared
from .transcript_replay import claude_code_events

TRANSCRIPT = SHARED / "eval/transcripts/claude_code_spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
DAY = 86400.0


class Agent:
    """Sends Claude Code hook payloads for one session through the real hook code path."""

    def __init__(self, env: dict[str, str], cwd: Path, session_id: str) -> None:
        self.env, self.cwd, self.session_id = env, str(cwd), session_id

    def send(self, name: str, **fields) -> None:
        payload = {"session_id": self.session_id, "cwd": self.cwd, "hook_event_name": name, **fields}
        handle("claude-code", name, json.dumps(payload).encode(), self.env)

    def start(self) -> Agent:
        self.send("SessionStart", source="startup")
        return self

    def prompt(self, text: str) -> None:
        self.send("UserPromptSubmit", prompt=text)

    def bash(self, command: str, output: str = "ok", failed: bool = False) -> None:
        if failed:
            self.send("PostToolUseFailure", tool_name="Bash", tool_input={"command": command},
                      error=f"Exit code 1\n{output}", is_interrupt=False)
        else:
            self.send("PostToolUse", tool_name="Bash", tool_input={"command": command},
                      tool_response={"stdout": output, "stderr": "", "interrupted": False})

    def edit(self, relative: str, old: str, new: str) -> None:
        path = f"{self.cwd}/{relative}"
        self.send("PostToolUse", tool_name="Edit", tool_input={"file_path": path, "old_string": old, "new_string": new},
                  tool_response={"filePath": path, "oldString": old, "newString": new})

    def stop(self) -> None:
        self.send("Stop", stop_hook_active=False)


@pytest.fixture
def env(home: Path, model_path: Path) -> dict[str, str]:
    return {"AGENTMEM_HOME": str(home), "AGENTMEM_EMBED_MODEL_PATH": str(model_path)}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    (path / ".git").mkdir(parents=True)
    return path


@pytest.fixture
def global_store(settings, embedder):
    with Store.open(settings, project=None, embedder=embedder) as opened:
        yield opened


def working_sources(store: Store) -> Counter:
    counts: Counter = Counter()
    for row in store.conn.execute("SELECT source_ids FROM memories WHERE tier = 'working'"):
        counts.update(json.loads(row[0]))
    return counts


# -- the shared transcript, replayed through the hooks -------------------------------------------------

def test_transcript_replay_is_compressed_summarised_and_searchable(env, global_store):
    path = require_shared(TRANSCRIPT, "the shared Claude Code transcript")
    for name, payload in claude_code_events(path):
        handle("claude-code", name, json.dumps(payload).encode(), env)
    store = global_store
    report = Worker(store, sweep=False).run_until_idle()
    statuses = dict(store.conn.execute("SELECT status, COUNT(*) FROM observations GROUP BY status").fetchall())
    assert set(statuses) == {"compressed"} and report.compressed == statuses["compressed"] > 100
    assert report.summaries == 1 and report.failed == 0

    sources = working_sources(store)
    meaningful = [row[0] for row in store.conn.execute(
        "SELECT id FROM observations WHERE kind != 'session' OR facts != '[]'")]
    assert all(sources[f"obs:{i}"] == 1 for i in meaningful)
    assert sum(sources.values()) == len(meaningful)

    session = store.conn.execute("SELECT * FROM sessions").fetchone()
    summary = store.get(session["summary_memory_id"])
    assert summary.tier == "episodic" and summary.type == "summary"
    assert summary.key == f"session-summary:{session['id']}"
    assert len(summary.content) < SUMMARY_MAX_CHARS
    assert "lib/spotter_web/live/session_live.ex" in summary.content
    assert "`mix test`" in summary.content and "410 tests, 0 failures" in summary.content
    assert summary.source_ids and all(s.startswith("obs:") for s in summary.source_ids)
    last = store.conn.execute("SELECT MAX(id) FROM observations").fetchone()[0]
    assert session["needs_summary"] == 0 and session["summarized_upto"] == last

    # the replayed session ran in a directory that is no repository here: its project is that directory
    assert summary.project == session["project"] == session["cwd"]
    found = store.search("what did we change in session_live.ex", project=summary.project)
    assert summary.id in [h.id for h in found.hits[:3]]  # beside the agent's own reports of the session
    working = store.search("edit session_live.ex", tiers=["working"], project=summary.project)
    assert working.hits and all(h.tier == "working" for h in working.hits)
    assert "session_live.ex" in working.hits[0].title

    # Vectors only where people search in their own words (worker.VECTOR_CHARS): prompts and failures get one,
    # reads and edits are marked "no vector by design" and are found through BM25 and the graph, as above.
    by_kind = {kind: models for kind, models in store.conn.execute(
        "SELECT o.kind, GROUP_CONCAT(DISTINCT COALESCE(m.embedding_model, 'NULL')) FROM observations o "
        "JOIN memories m ON m.tier = 'working' AND m.source_ids LIKE '%\"obs:' || o.id || '\"%' GROUP BY o.kind")}
    assert by_kind["prompt"] == store.embedder.model_id
    assert by_kind["file_read"] == "" and by_kind["file_edit"] == ""
    assert store.conn.execute("SELECT COUNT(*) FROM memories WHERE embedding_model IS NULL").fetchone()[0] == 0


def test_later_stop_folds_in_only_new_observations(env, repo, global_store, settings, embedder):
    agent = Agent(env, repo, "sess-incremental").start()
    agent.prompt("make the parser accept trailing commas")
    agent.edit("src/parser.py", "a", "b")
    agent.bash("pytest -q", "3 passed in 0.1s")
    agent.stop()
    with Store.open(settings, project=str(repo), embedder=embedder) as store:
        Worker(store, sweep=False).run_until_idle()
        first = store.conn.execute("SELECT * FROM sessions").fetchone()
        agent.edit("src/lexer.py", "c", "d")
        assert Worker(store, sweep=False).run_until_idle().summaries == 0  # no Stop yet: not re-summarised
        agent.stop()
        Worker(store, sweep=False).run_until_idle()
        second = store.conn.execute("SELECT * FROM sessions").fetchone()
        history = store.history(second["summary_memory_id"])
    assert second["summarized_upto"] > first["summarized_upto"]
    assert [m.version for m in history] == [1, 2] and history[0].id == first["summary_memory_id"]
    assert "src/parser.py" in history[1].content and "src/lexer.py" in history[1].content
    assert "src/lexer.py" not in history[0].content


# -- consolidation: workflows and bugs across sessions ---------------------------------------------------

def test_three_sessions_make_one_workflow_and_a_fourth_updates_its_sources(env, repo, settings, embedder):
    # the same form in two sessions (its output cut by `tail`, not hidden); a run of one test file is not the
    # project's test command and is not pooled with it
    commands = ["pytest -q", f"cd {repo} && pytest -q 2>&1 | tail -5", "pytest -q tests/test_api.py -x"]
    for n, command in enumerate(commands):
        agent = Agent(env, repo, f"sess-{n}").start()
        agent.prompt(f"fix issue number {n} in the api module")
        agent.bash(command, f"{n + 3} passed in 0.2s")
        agent.stop()
    with Store.open(settings, project=str(repo), embedder=embedder) as store:
        worker = Worker(store, sweep=False)
        worker.run_until_idle()
        rows = store.conn.execute("SELECT * FROM memories WHERE type = 'workflow'").fetchall()
        assert len(rows) == 1
        flow = store.get(rows[0]["id"])
        assert flow.key == "workflow:pytest -q" and flow.tier == "procedural" and flow.source == "consolidation"
        assert flow.confidence == 0.5 and flow.project == str(repo) and "`pytest -q`" in flow.title
        assert flow.content == "Run the tests: `pytest -q` — last run passed (4 passed in 0.2s); 2 runs in 2 sessions."
        summaries = {r[0] for r in store.conn.execute(
            "SELECT summary_memory_id FROM sessions WHERE id IN ('sess-0', 'sess-1')")}
        assert len([s for s in flow.source_ids if s.startswith("obs:")]) == 2
        assert {s for s in flow.source_ids if s.startswith("m_")} == summaries
        links = {r[0] for r in store.conn.execute(
            "SELECT dst_id FROM memory_links WHERE src_id = ? AND relation = 'derived_from'", (flow.id,))}
        assert links == summaries

        audit_rows = store.conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
        assert worker.run_until_idle().consolidated == 0  # nothing new: nothing written
        assert store.conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0] == audit_rows

        agent = Agent(env, repo, "sess-3").start()
        agent.bash("pytest -q", "7 passed in 0.2s")
        agent.stop()
        worker.run_until_idle()
        history = store.history(flow.id)  # the counts changed: version 2 of the same memory
        updated = history[-1]
        assert [m.version for m in history] == [1, 2] and history[0].id == flow.id
        assert "last run passed (7 passed in 0.2s); 3 runs in 3 sessions" in updated.content
        assert len([s for s in updated.source_ids if s.startswith("obs:")]) == 3
        assert len([s for s in updated.source_ids if s.startswith("m_")]) == 3
        hits = store.search("how do we run the tests")
        assert updated.id in [h.id for h in hits.hits]


def test_the_mcp_servers_two_sessions_called_are_learned_with_the_toolchain(env, repo, settings, embedder):
    for n in range(2):
        agent = Agent(env, repo, f"mcp-{n}").start()
        agent.send("PostToolUse", tool_name="mcp__byterover-mcp__retrieve-knowledge", tool_input={"query": "navbar"},
                   tool_response=[{"type": "text", "text": "no knowledge yet"}])
        agent.stop()
    with Store.open(settings, project=str(repo), embedder=embedder) as store:
        Worker(store, sweep=False).run_until_idle()
        toolchain = store.conn.execute("SELECT content FROM memories WHERE key = 'toolchain' AND is_latest = 1"
                                       ).fetchone()
    assert toolchain and "MCP servers the sessions used: byterover-mcp (retrieve-knowledge; 2 sessions)." in \
        toolchain[0]


def test_recurring_error_and_its_fix_become_a_bug_memory(env, repo, settings, embedder):
    error = "E   ImportError: cannot import name 'helper' from 'app.core'"
    for n in range(2):
        agent = Agent(env, repo, f"bug-{n}").start()
        agent.bash("pytest -q", f"{error}\n1 failed, {n} passed in 0.3s", failed=True)
        agent.edit("app/core.py", f"def helpr{n}():", f"def helper{n}():")
        agent.bash("pytest -q", f"{n + 4} passed in 0.2s")
        agent.stop()
    with Store.open(settings, project=str(repo), embedder=embedder) as store:
        Worker(store, sweep=False).run_until_idle()
        bugs = store.conn.execute("SELECT * FROM memories WHERE type = 'bug' AND is_latest = 1").fetchall()
        summary = store.conn.execute("SELECT content FROM memories WHERE type = 'summary'").fetchone()[0]
    assert len(bugs) == 1
    assert "cannot import name 'helper'" in bugs[0]["content"] and "core.py" in bugs[0]["content"]
    assert json.loads(bugs[0]["files"]) == ["app/core.py"]  # project-relative
    assert "Failed, then passed later in the session: `pytest -q`" in summary  # named as it ran


def test_command_normalisation_and_error_signatures():
    assert normalize_command("cd /x && mix test test/a_test.exs 2>&1 | tail -5") == "mix test"
    assert normalize_command("FOO=1 npm run build -- --prod") == "npm run build"
    assert normalize_command("python -m pytest -q tests/") == "python -m pytest"
    assert normalize_command("uv run pytest") == "uv run pytest"
    assert normalize_command("ls -la /tmp") is None and normalize_command("") is None
    assert error_signature("foo.py:12: Error 0xdeadbeef at 3") == error_signature("foo.py:99: Error 0xabc at 7")


# -- claims, failures, crashes --------------------------------------------------------------------------

def record(store: Store, n: int, *, session: str = "s1", tool: str = "Read", created_at: float | None = None,
           files: list[str] | None = None) -> list[int]:
    observations = ObservationStore(store.conn)
    ids = []
    for i in range(n):
        path = f"/repo/a/src/module_{session}_{i}.py"
        ev = HookEvent(client="claude-code", event="tool_use", raw_event="PostToolUse", session_id=session,
                       cwd="/repo/a", tool=tool, tool_input={"file_path": path}, tool_output=f"def f{i}():\n  pass",
                       files=files if files is not None else [path])
        ids.append(observations.record(ev, store.project, now=created_at))
    return ids


def test_claims_are_exclusive_and_an_expired_claim_is_taken_over_without_double_work(store):
    ids = record(store, 6)
    clock = [time.time()]
    store.now = lambda: clock[0]
    first, second = Worker(store, batch_size=4, sweep=False), Worker(store, batch_size=4, sweep=False)
    a, _ = first.claim()
    b, _ = second.claim()
    assert a == ids[:4] and b == ids[4:]
    clock[0] += 3600  # the first worker stalled past its claim
    c, _ = second.claim()
    assert c == ids[:4]
    assert second._compress(c) == 4 and second._compress(b) == 2
    assert first._compress(a) == 0  # its claim was taken over: it writes nothing
    assert set(working_sources(store).values()) == {1} and len(working_sources(store)) == 6


def test_a_claim_of_a_dead_process_is_taken_over_at_once(store):
    ids = record(store, 3)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    holder = f"{socket.gethostname()}:{dead.stdout.strip()}:feedface"
    with store.transaction() as tx:
        tx.execute("UPDATE observations SET claimed_by = ?, claimed_until = ?, attempts = 1",
                   (holder, time.time() + 600))
    claimed, _ = Worker(store, sweep=False).claim()
    assert claimed == ids


def test_an_item_that_keeps_failing_is_parked_reported_and_retried(store):
    good = record(store, 2)
    bad = record(store, 1, session="s2")[0]
    with store.transaction() as tx:
        tx.execute("UPDATE observations SET files = 'not json' WHERE id = ?", (bad,))
    clock = [time.time()]
    store.now = lambda: clock[0]
    worker = Worker(store, sweep=False)
    parked = 0
    for _ in range(MAX_ATTEMPTS + 1):
        parked += worker.compress_batch().failed
        clock[0] += 7200  # past any backoff
    row = store.conn.execute("SELECT status, attempts, error FROM observations WHERE id = ?", (bad,)).fetchone()
    assert parked == 1 and row["status"] == "failed" and row["attempts"] == MAX_ATTEMPTS and "JSON" in row["error"]
    assert all(store.conn.execute("SELECT status FROM observations WHERE id = ?", (i,)).fetchone()[0] == "compressed"
               for i in good)
    check = next(c for c in doctor(store) if c.name == "worker")
    assert not check.ok and "1 observations parked" in check.detail and "--retry-failed" in check.fix
    assert worker.retry_failed() == 1
    row = store.conn.execute("SELECT status, attempts FROM observations WHERE id = ?", (bad,)).fetchone()
    assert tuple(row) == ("pending", 0)


@pytest.mark.slow
def test_kill_9_mid_batch_loses_nothing_and_does_nothing_twice(settings, embedder, cli_env):
    total = 700
    with Store.open(settings, project="/repo/a", embedder=embedder) as store:
        for s in range(7):
            record(store, total // 7, session=f"k{s}")
    command = [sys.executable, "-m", "agentmem_mcp", "worker"]
    worker = subprocess.Popen([*command, "--forever"], env=cli_env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, start_new_session=True)
    try:
        with Store.open(settings, project=None, load_embedder=False) as watch:
            deadline = time.time() + 300
            while time.time() < deadline:
                done, in_flight = watch.conn.execute(
                    "SELECT SUM(status = 'compressed'), SUM(status = 'pending' AND claimed_by IS NOT NULL) "
                    "FROM observations").fetchone()
                if done and in_flight:
                    break
                assert worker.poll() is None, worker.stderr.read().decode()
                time.sleep(0.05)
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
            done, in_flight = watch.conn.execute(
                "SELECT SUM(status = 'compressed'), SUM(status = 'pending' AND claimed_by IS NOT NULL) "
                "FROM observations").fetchone()
        assert 0 < done < total and in_flight > 0  # killed with a batch claimed and unwritten
        rerun = subprocess.run([*command, "--once"], env=cli_env, capture_output=True, text=True, timeout=600)
        assert rerun.returncode == 0, rerun.stderr
        assert f"compressed {total - done}," in rerun.stdout
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
    with Store.open(settings, project=None, embedder=embedder) as store:
        statuses = dict(store.conn.execute("SELECT status, COUNT(*) FROM observations GROUP BY status").fetchall())
        assert statuses == {"compressed": total}
        sources = working_sources(store)
        assert len(sources) == total and set(sources.values()) == {1}
        saves = store.conn.execute("SELECT COUNT(*) FROM audit WHERE action = 'save' AND json_extract(detail, "
                                   "'$.tier') = 'working'").fetchone()[0]
        working = store.conn.execute("SELECT COUNT(*) FROM memories WHERE tier = 'working'").fetchone()[0]
        assert saves == total == working
        assert not store.conn.execute("SELECT COUNT(*) FROM index_outbox").fetchone()[0]
        assert store.fulltext.count() == total


# -- retention --------------------------------------------------------------------------------------------

def test_old_unimportant_observations_are_pruned_unless_a_memory_names_them(store):
    now = time.time()
    old_reads = record(store, 3, session="old", created_at=now - 40 * DAY)
    recent = record(store, 1, session="new", created_at=now - DAY)
    worker = Worker(store, sweep=False)
    while worker.compress_batch().claimed:
        pass
    kept_by = store.save("module_old_0 holds the fixture loader used by the API tests",
                         source_ids=[f"obs:{old_reads[0]}"])
    assert prune_observations(store, now=now) == 2
    left = {r[0] for r in store.conn.execute("SELECT id FROM observations")}
    assert left == {old_reads[0], *recent}
    assert len(working_sources(store)) == 2
    assert store.get(kept_by.id)
    pruned = store.conn.execute("SELECT COUNT(*) FROM audit WHERE action = 'prune'").fetchone()[0]
    assert pruned == 2


def test_pruned_working_memories_leave_the_bm25_segments_within_a_day(store):
    """Pruning deletes working memories; tantivy keeps a deleted document's terms in its segment until a merge, so
    the worker writes the index anew within ERASE_PRUNED_EVERY_SECONDS of a prune."""
    import tantivy

    from agentmem_mcp.index.tokenize import build_analyzer, index_text

    clock = [time.time()]
    store.now = lambda: clock[0]
    record(store, 3, session="old", created_at=clock[0] - 40 * DAY)
    record(store, 2, session="new", created_at=clock[0] - DAY)
    worker = Worker(store, sweep=False)
    while worker.compress_batch().claimed:
        pass
    store.drain_outbox()
    term = build_analyzer().analyze(index_text("module_old_1"))[-1]  # its joined form

    def segments_holding() -> int:
        return tantivy.Index.open(str(store.settings.fulltext_dir)).searcher().doc_freq("text", term)

    assert segments_holding() == 1
    worker.maintain()  # due: the prune deletes the old reads' working memories
    assert store.conn.execute("SELECT COUNT(*) FROM memories WHERE tier = 'working'").fetchone()[0] == 2
    assert segments_holding() == 1 and store.search("module_old_1").hits == []  # deleted, its terms still on disk
    clock[0] += 3600
    worker.maintain()
    assert segments_holding() == 1  # not yet a day
    clock[0] += ERASE_PRUNED_EVERY_SECONDS
    worker.maintain()
    store.indexer.close()
    assert segments_holding() == 0
    assert store.fulltext.count() == 2


def test_rewriting_the_index_keeps_every_document_searchable_meanwhile(store):
    saved = store.save_many([{"content": f"Deploy step {i} uses the heliotrope runner"} for i in range(1200)])
    store.drain_outbox()
    seen = []
    original = store.fulltext.rewrite

    def watched(docs):
        def counting():
            for n, doc in enumerate(docs):
                if n == 600:  # halfway: what a search in another thread or process reads
                    seen.append(len(store.fulltext.search("heliotrope", limit=5000)))
                yield doc
        return original(counting())

    store.fulltext.rewrite = watched
    store.forget(ids=[saved[0].id], reason="test")
    store.indexer.rewrite_all()
    assert seen == [1199] or seen == [1200]
    assert len(store.fulltext.search("heliotrope", limit=5000)) == 1199


# -- the lease and the loop inside `agentmem serve` --------------------------------------------------------

def test_the_lease_is_renewed_by_its_holder_and_taken_over_when_it_expires(store):
    conn = store.conn
    now = time.time()
    assert lease.acquire(conn, "a", ttl=30, now=now)
    assert not lease.acquire(conn, "b", ttl=30, now=now + 10)
    assert lease.acquire(conn, "a", ttl=30, now=now + 20)  # renewed until now + 50
    assert not lease.acquire(conn, "b", ttl=30, now=now + 45)
    assert lease.acquire(conn, "b", ttl=30, now=now + 51)
    lease.release(conn, "a")  # not the holder any more: no effect
    assert lease.current(conn, now=now + 52)[0] == "b"
    lease.release(conn, "b")
    assert lease.current(conn, now=now + 52) is None


def test_serve_worker_loop_works_while_holding_the_lease_and_stops_cleanly(store):
    record(store, 5)
    opened = store

    class State:
        def __init__(self) -> None:
            self.stopping = threading.Event()

        def store(self) -> Store:
            return opened

    state = State()

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(serve_worker_loop, state)
            with anyio.fail_after(120):
                while store.conn.execute("SELECT COUNT(*) FROM observations WHERE status = 'pending'").fetchone()[0]:
                    await anyio.sleep(0.2)
            holder = lease.current(store.conn)
            assert holder and holder[0].startswith(f"{socket.gethostname()}:{os.getpid()}:")
            state.stopping.set()

    anyio.run(main)
    assert lease.current(store.conn) is None  # released on the way out
    assert len(working_sources(store)) == 5


def test_worker_passes_give_memories_their_sentence_pieces(store):
    from agentmem_mcp.index.vectors import PIECE_INDEX

    for text in ("The mail queue retries failed jobs three times. After that a job lands in the dead-letter queue.",
                 "Invoices are rendered with WeasyPrint on the worker. The PDF is uploaded to the billing bucket.",
                 "Staging deploys run from the release branch. Production needs a tag signed by two maintainers."):
        store.save(text)
    report = Worker(store, sweep=False).run_until_idle()
    assert report.pieces == 3 and "pieces 3" in report.text()
    count = "SELECT COUNT(DISTINCT memory_id) FROM memory_chunks WHERE chunk_index >= ?"
    assert store.conn.execute(count, (PIECE_INDEX,)).fetchone()[0] == 3
    assert Worker(store, sweep=False).run_until_idle().pieces == 0


def test_the_model_is_not_given_the_same_words_twice(env, repo, settings, embedder):
    """A prompt's intent that is its title, a command repeated as "command: ...", a path whose file name the memory
    says already: each costs the model its tokens once, and the memories stay as searchable as before."""
    from agentmem_mcp.index.embedder import Embedder

    seen: list[str] = []

    class Recording(Embedder):
        def _embed_passages(self, texts):
            seen.extend(texts)
            return super()._embed_passages(texts)

    model = Recording(embedder.model_name, embedder.model_path)
    model._model, model.dimension = embedder._model, embedder.dimension
    model._loaded.set()
    error = "E   AssertionError: totals differ in test_invoice_rounding"
    for n in range(2):
        agent = Agent(env, repo, f"twice-{n}").start()
        agent.prompt("Make the invoice totals round half up and add a test for it.")
        agent.bash("make check-invoices", f"{error}\n1 failed, {n} passed in 0.3s", failed=True)
        agent.edit("billing/rounding/invoice_totals.py", f"return round(x, {n})", f"return round_half_up(x, {n})")
        agent.bash("make check-invoices", f"{n + 4} passed in 0.2s")
        agent.stop()
    with Store.open(settings, project=str(repo), embedder=model) as store:
        Worker(store, sweep=False).run_until_idle()
        bug = store.conn.execute("SELECT content, files FROM memories WHERE type = 'bug' AND is_latest = 1").fetchone()
        assert "invoice_totals.py" in bug["content"]
        assert json.loads(bug["files"]) == ["billing/rounding/invoice_totals.py"]
        found = store.search("the invoice rounding test that failed", limit=5)
        by_path = store.search("billing/rounding", limit=5)
    prompts = [t for t in seen if "round half up" in t]
    assert prompts and all(t.count("round half up") == 1 for t in prompts)  # no piece repeats the title either
    assert not any("command: make check-invoices" in t for t in seen)
    fixes = [t for t in seen if "totals differ" in t]  # the bug memory, which names invoice_totals.py
    assert fixes and all("invoice_totals.py" in t and "billing/rounding/" not in t for t in fixes)
    assert any(hit.type == "bug" for hit in found.hits)
    assert any("invoice_totals.py" in hit.snippet for hit in by_path.hits)  # BM25 keeps the path's folders


def test_code_edited_after_the_last_run_is_left_open_in_the_summary_and_the_briefing(env, repo, settings, embedder):
    from agentmem_mcp.recall.briefing import session_context

    agent = Agent(env, repo, "untried").start()
    agent.prompt("Make the exporter write CSV files with a header row.")
    agent.edit("app/export.py", "def export(rows):", "def export(rows, header=True):")
    agent.bash("pytest -q tests/test_export.py", "3 passed in 0.2s")  # what was edited so far has been run
    agent.edit("app/export_cli.py", "def main():", "def main(argv=None):")
    agent.edit("README.md", "Export", "Export with a header row")  # prose: no run would try it
    agent.bash("git status", "On branch main")  # looking is not running
    agent.stop()
    with Store.open(settings, project=str(repo), embedder=embedder) as store:
        Worker(store, sweep=False).run_until_idle()
        summary = store.conn.execute("SELECT content FROM memories WHERE type = 'summary'").fetchone()[0]
        briefing, _ = session_context(store.conn, str(repo), 1500)
    assert "Edited last, not run since: app/export_cli.py" in summary.splitlines()
    assert "Edited last and not run since: app/export_cli.py" in briefing
    assert "export.py," not in summary.split("not run since")[1] and "README" not in summary.split("not run since")[1]


def test_a_session_summary_says_where_the_work_was_pushed(env, repo, settings, embedder):
    agent = Agent(env, repo, "pushed").start()
    agent.prompt("Commit the exporter change and push it to GitHub.")
    agent.bash("git commit -am 'feat: CSV header row'", "[main 5c1b231] feat: CSV header row\n 1 file changed")
    agent.bash("git remote -v", "origin\tgit@github.com:acme/exporter.git (fetch)")
    agent.bash("cat notes/release.txt", "To github.com:acme/other.git\n   1111111..2222222  main -> main")  # only text
    agent.bash("git push", "To https://ci-bot:hunter22secret@github.com/acme/exporter.git\n"
               "   6eea407..5c1b231  main -> main")
    agent.bash("git push -u origin spike", "remote: \nTo github.com:acme/exporter.git\n"
               " * [new branch]      spike -> spike\nbranch 'spike' set up to track 'origin/spike'.")
    agent.stop()
    with Store.open(settings, project=str(repo), embedder=embedder) as store:
        Worker(store, sweep=False).run_until_idle()
        summary = store.conn.execute("SELECT content FROM memories WHERE type = 'summary'").fetchone()[0]
        found = store.search("was the work pushed, and where?", limit=5)
    pushed = next(line for line in summary.splitlines() if line.startswith("Pushed: "))
    assert pushed == ("Pushed: main to https://github.com/acme/exporter.git (6eea407..5c1b231); "
                      "spike to github.com:acme/exporter.git (new branch)")
    assert "acme/other" not in summary and "hunter22" not in summary
    assert any("5c1b231" in hit.snippet for hit in found.hits[:5])


def test_a_pass_applies_its_batches_to_bm25_in_one_commit(env, repo, global_store, monkeypatch):
    from agentmem_mcp.lifecycle import summarize

    agent = Agent(env, repo, "s-bm25").start()
    for n in range(35):
        agent.bash(f"pytest -q tests/test_case_{n}.py", output=f"{n} passed")
    store = global_store
    commits: list[int] = []
    apply = store.fulltext.apply

    def counted(upserts, deletes):
        upserts = list(upserts)
        commits.append(len(upserts))
        return apply(upserts, deletes)

    before_summaries: list[list[int]] = []
    summarize_due = summarize.summarize_due

    def summaries(*args, **kwargs):
        before_summaries.append(list(commits))
        return summarize_due(*args, **kwargs)

    monkeypatch.setattr(store.fulltext, "apply", counted)
    monkeypatch.setattr(summarize, "summarize_due", summaries)
    worker = Worker(store, batch_size=10, sweep=False)
    worker._last_maintenance = time.time()  # no upkeep in this pass
    report = worker.run_pass(consolidate_every=1e9)
    assert report.compressed == 36  # the session's start and its 35 commands, in 4 batches
    assert before_summaries == [[35]]  # one commit for the 4 batches' 35 memories (the start makes none), first
    assert [hit.title for hit in store.search("test_case_7", tiers=["working"], all_projects=True).hits][:1] == \
        ["Ran `pytest -q tests/test_case_7.py` (7 passed)"]
