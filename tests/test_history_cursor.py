"""Issue 21, bring your history from Cursor: `agentmem import-history cursor` reads real SQLite `state.vscdb`
files laid out as Cursor keeps them (a workspace folder naming its project, the global store holding the
conversations), through the real CLI in a subprocess: redacted, summarised from the agent's replies,
idempotent, robust to values of unknown shapes, and without writing a byte to Cursor's folders."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from agentmem_mcp.capture import cursor_log
from agentmem_mcp.capture.cursor_log import folder_of_uri, read_logged_turns
from agentmem_mcp.capture.turns import read_turns

from .test_firsthour import agentmem

SECRET = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
LOGIN_TOKEN = "cursor-login-" + "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
PROJECT = "/home/dev/projects/shop"
SHOP, LEGACY, NOWHERE, BROKEN, EMPTY = ("c0ffee00-0000-4000-8000-00000000000" + str(n) for n in range(1, 6))
REPORT = ("Done: the cart total now rounds each line to cents before summing, so 3 x 0.10 is 0.30 and not "
          "0.30000000000000004. I changed lib/cart.py (the line_total helper) and added a regression test in "
          "tests/test_cart.py; the whole suite passes (14 passed). The checkout page still formats prices itself, "
          "which is left for later.")


def _kv_db(path: Path, rows: dict[str, object], items: dict[str, object] | None = None) -> sqlite3.Connection:
    """A state.vscdb with Cursor's two tables; values are stored as JSON text (a str value as it is)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    for table in ("ItemTable", "cursorDiskKV"):
        conn.execute(f"CREATE TABLE {table} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    for table, values in (("cursorDiskKV", rows), ("ItemTable", items or {})):
        for key, value in values.items():
            text = value if isinstance(value, str) else json.dumps(value)
            conn.execute(f"INSERT INTO {table} VALUES (?, ?)", (key, text.encode()))
    conn.commit()
    return conn


def _bubble(kind: int, bubble_id: str, at: str, text: str = "", **more: object) -> dict:
    return {"_v": 3, "type": kind, "bubbleId": bubble_id, "text": text, "createdAt": at, **more}


def _tool(name: str, args: dict, result: object, status: str = "completed") -> dict:
    return {"name": name, "rawArgs": json.dumps(args), "result": json.dumps(result), "status": status}


@pytest.fixture
def cursor_user(tmp_path: Path) -> tuple[Path, list[sqlite3.Connection]]:
    """Cursor's User folder: one workspace (the shop project) listing two conversations, the global store
    with those, one naming no folder, one broken value, one empty chat; its write-ahead log kept open."""
    user = tmp_path / "Cursor" / "User"
    workspace = user / "workspaceStorage" / "5d41402abc4b2a76b9719d911017c592"
    workspace.mkdir(parents=True)
    (workspace / "workspace.json").write_text(json.dumps({"folder": "file://" + PROJECT}))
    listed = {"allComposers": [{"composerId": SHOP, "type": "head"}, {"composerId": LEGACY}]}
    local = _kv_db(workspace / "state.vscdb", {}, {"composer.composerData": listed,
                                                    "cursorAuth/accessToken": LOGIN_TOKEN})
    turns = [
        _bubble(1, "b1", "2025-11-03T09:00:00.000Z", f"the cart total is wrong for 3 items at 0.10, fix it "
                f"(the CI token is {SECRET})"),
        _bubble(2, "b2", "2025-11-03T09:00:20.000Z", "I'll look at how the cart sums its lines."),
        _bubble(2, "b3", "2025-11-03T09:00:30.000Z",
                toolFormerData=_tool("read_file", {"target_file": f"{PROJECT}/lib/cart.py"},
                                     {"contents": "def line_total(item):\n    return item.price * item.qty\n"})),
        _bubble(2, "b4", "2025-11-03T09:01:00.000Z",
                toolFormerData=_tool("edit_file", {"target_file": f"{PROJECT}/lib/cart.py",
                                                   "code_edit": "return round(item.price * item.qty, 2)"},
                                     {"diff": "+    return round(item.price * item.qty, 2)"})),
        _bubble(2, "b5", "2025-11-03T09:01:30.000Z",
                toolFormerData=_tool("run_terminal_cmd", {"command": "python -m pytest -q tests/test_cart.py"},
                                     {"output": "E   ModuleNotFoundError: No module named 'cart'\n1 error",
                                      "exitCode": 1})),
        _bubble(2, "b5b", "2025-11-03T09:01:40.000Z",
                toolFormerData=_tool("edit_file", {"target_file": f"{PROJECT}/tests/conftest.py"},
                                     {"error": "the model's edit could not be applied"}, status="error")),
        _bubble(2, "b6", "2025-11-03T09:02:00.000Z",
                toolFormerData=_tool("run_terminal_command_v2", {"command": "python -m pytest -q"},
                                     {"output": "14 passed in 0.31s", "exitCode": 0})),
        _bubble(2, "b7", "2025-11-03T09:02:30.000Z", REPORT),
        _bubble(1, "b8", "2025-11-03T09:05:00.000Z", "always run the tests with python -m pytest in this repo"),
        _bubble(2, "b9", "2025-11-03T09:05:10.000Z", "Noted: I'll run the suite with python -m pytest."),
        {"_v": 3, "type": 7, "bubbleId": "b10"},  # a kind of bubble this reader does not know
    ]
    headers = [{"bubbleId": b["bubbleId"], "type": b["type"]} for b in turns] + [
        {"bubbleId": "nothing", "type": 2}, {"bubbleId": "gone", "type": 2}]
    rows: dict[str, object] = {
        f"composerData:{SHOP}": {"_v": 10, "composerId": SHOP, "name": "cart rounding", "createdAt": 1762160400000,
                                 "lastUpdatedAt": 1762160710000, "fullConversationHeadersOnly": headers,
                                 "blobEncryptionKey": LOGIN_TOKEN},
        **{f"bubbleId:{SHOP}:{b['bubbleId']}": b for b in turns},
        f"bubbleId:{SHOP}:nothing": "null",
        f"composerData:{LEGACY}": {"composerId": LEGACY, "createdAt": 1761000000000, "conversation": [
            {"type": 1, "bubbleId": "l1", "text": "how do I start the dev server?"},
            {"type": 2, "bubbleId": "l2",
             "text": "Run `make dev` from the repository root; it serves the shop on port 8000."},
        ]},
        f"composerData:{NOWHERE}": {"composerId": NOWHERE, "createdAt": 1761000000000, "conversation": [
            {"type": 1, "bubbleId": "n1", "text": "a question asked in a window with no folder open"}]},
        f"composerData:{BROKEN}": "{not json",
        f"composerData:{EMPTY}": {"composerId": EMPTY, "createdAt": 1762000000000, "fullConversationHeadersOnly": []},
    }
    store = _kv_db(user / "globalStorage" / "state.vscdb", rows, {"cursorAuth/refreshToken": LOGIN_TOKEN})
    store.execute("INSERT INTO ItemTable VALUES ('some.setting', 'x')")  # uncheckpointed: Cursor is "running"
    store.commit()
    assert (user / "globalStorage" / "state.vscdb-wal").exists()
    local.close()
    yield user, [store]
    store.close()


def _fingerprint(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _memories(env: dict[str, str], cwd: Path) -> list[dict]:
    out = agentmem(env, "export", "--all-projects", cwd=cwd)
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return [r for r in records if r.get("kind") == "memory"]


def test_import_cursor_history(cli_env, tmp_path, cursor_user):
    user, _ = cursor_user
    before = _fingerprint(user)
    scratch = tmp_path / "tmp"  # where the private copy of the log goes, while Cursor "runs"
    scratch.mkdir()
    first = agentmem(dict(cli_env, TMPDIR=str(scratch)), "import-history", "cursor", "--root", str(user),
                     cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "Traceback" not in first.stderr
    assert first.stderr.rstrip().endswith("sessions: 2/2"), first.stderr  # plain lines: stderr is not a terminal
    assert "imported 2 sessions" in first.stdout and "1 empty" in first.stdout, first.stdout
    assert ("left out: 1 conversations of an unknown shape, 1 conversations with no project folder, "
            "3 unreadable messages") in first.stdout, first.stdout
    assert "summaries" in first.stdout, first.stdout
    assert _fingerprint(user) == before  # nothing written into Cursor's folders, the log left as it was
    assert not [p for p in scratch.iterdir() if p.name.startswith("agentmem-cursor-")]  # the copy is gone

    home = Path(cli_env["AGENTMEM_HOME"])
    stored = b"".join(p.read_bytes() for p in home.glob("agentmem.db*"))
    assert SECRET.encode() not in stored and LOGIN_TOKEN.encode() not in stored
    assert b"a window with no folder open" not in stored  # never a memory of every project

    stats = json.loads(agentmem(cli_env, "stats", "--all-projects", "--json", cwd=tmp_path).stdout)
    assert stats["sessions"] == 2, stats
    memories = _memories(cli_env, tmp_path)
    assert memories and all(m["project"] == PROJECT for m in memories), [m["project"] for m in memories]
    episodic = [m for m in memories if m["tier"] == "episodic"]
    assert episodic and all(1.76e9 < m["created_at"] < 1.7625e9 for m in episodic)  # when it happened
    text = "\n".join(m["content"] for m in memories)
    assert "rounds each line to cents" in text  # the agent's report, read from Cursor's store by the summariser
    assert "python -m pytest" in text  # the tool calls were captured and the command learned
    assert "make dev" in text  # the older, inline conversation
    assert "could not be applied" in text  # a failed tool call, as Cursor's postToolUseFailure hook reports it

    again = agentmem(cli_env, "import-history", "cursor", "--root", str(user), cwd=tmp_path)
    assert again.returncode == 0 and "imported 0 sessions (0 events); 2 already in agentmem" in again.stdout
    assert json.loads(agentmem(cli_env, "stats", "--all-projects", "--json", cwd=tmp_path).stdout) == stats
    assert len(_memories(cli_env, tmp_path)) == len(memories)


def test_import_cursor_filters_and_mistakes(cli_env, tmp_path, cursor_user):
    user, _ = cursor_user
    later = agentmem(cli_env, "import-history", "cursor", "--root", str(user), "--since", "2025-11-01",
                     "--no-worker", "--quiet", cwd=tmp_path)
    assert later.returncode == 0 and "imported 1 sessions" in later.stdout and later.stderr == "", later
    elsewhere = agentmem(cli_env, "import-history", "cursor", "--root", str(user), "--project",
                         str(tmp_path / "another"), cwd=tmp_path)
    assert elsewhere.returncode == 0 and elsewhere.stdout.startswith("no conversations to import"), elsewhere
    shop = agentmem(cli_env, "import-history", "cursor", "--root", str(user), "--project", PROJECT, "--no-worker",
                    "--quiet", cwd=tmp_path)
    assert shop.returncode == 0 and "imported 1 sessions" in shop.stdout and "1 already" in shop.stdout, shop
    missing = agentmem(cli_env, "import-history", "cursor", "--root", str(tmp_path / "none"), cwd=tmp_path)
    assert missing.returncode == 2 and "no Cursor history" in missing.stderr and "Traceback" not in missing.stderr
    garbage = tmp_path / "garbage" / "User"
    (garbage / "globalStorage").mkdir(parents=True)
    (garbage / "globalStorage" / "state.vscdb").write_bytes(b"not a database at all" * 100)
    bad = agentmem(cli_env, "import-history", "cursor", "--root", str(garbage), cwd=tmp_path)
    assert bad.returncode == 0 and "1 state.vscdb files that could not be read" in bad.stdout, bad
    assert "Traceback" not in bad.stderr


def test_a_gone_cursor_log_gives_no_turns(tmp_path):
    gone = "cursor-composer:db=" + str(tmp_path / "missing.vscdb") + "&composer=x"
    assert read_turns(gone) == [] and read_logged_turns("cursor-composer:") == []
    assert folder_of_uri("file:///c%3A/Users/dev/app") == "c:/Users/dev/app"
    assert folder_of_uri("vscode-remote://ssh-remote%2Bbox/srv/app/") == "/srv/app"
    assert folder_of_uri(42) is None and folder_of_uri("relative/path") is None


def test_a_running_cursors_log_is_copied_once_while_it_does_not_change(cursor_user):
    user, (store,) = cursor_user
    db = user / "globalStorage" / "state.vscdb"
    first = cursor_log._snapshot(db)
    assert cursor_log._snapshot(db) == first and first.parent.stat().st_mode & 0o777 == 0o700
    pointer = cursor_log.log_pointer(cursor_log.Conversation(composer_id=SHOP, db=db, folder=PROJECT))
    turns = read_turns(pointer)
    assert [t.prompt[:20] for t in turns] == ["the cart total is wr", "always run the tests"]
    assert "[REDACTED" in turns[0].prompt and turns[0].replies[-1].startswith("Done: the cart total")
    assert cursor_log._snapshot(db) == first  # the summariser read the same copy
    store.execute("INSERT INTO ItemTable VALUES ('another.setting', 'y')")
    store.commit()
    second = cursor_log._snapshot(db)
    assert second != first and not first.parent.exists()  # Cursor wrote: a new copy replaces the old one


def test_the_history_is_listed_first_and_each_conversation_read_when_it_is_imported(cursor_user):
    from agentmem_mcp.history.cursor import read_history

    user, _ = cursor_user
    history = read_history(user)
    assert sorted(c.composer_id for c in history.conversations) == [SHOP, LEGACY]
    assert all(not c.messages and not c.loaded for c in history.conversations)  # nothing held in memory yet
    assert history.empty == 1 and history.left_out["conversations with no project folder"] == 1
    shop = next(c for c in history.conversations if c.composer_id == SHOP)
    cursor_log.load_messages(shop)
    assert shop.size == 13 and len(shop.messages) == 10 and shop.unreadable == 3
    assert [m.tool.name for m in shop.messages if m.tool][-1] == "run_terminal_command_v2"

    huge = cursor_log._message(_bubble(2, "h", "2025-11-03T09:00:00Z", toolFormerData=_tool(
        "read_file", {"target_file": "big.log"}, {"contents": "x" * 2_000_000})))
    assert len(huge.tool.result) < cursor_log.MAX_TEXT_CHARS + 100 and "chars cut" in huge.tool.result
