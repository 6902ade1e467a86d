"""The named operations of db/ on a real SQLite file: what each writes, and the bad input each refuses."""

from __future__ import annotations

import json

import pytest

from agentmem_mcp.db import links, memories, observations, sessions
from agentmem_mcp.db.database import Database

M1, M2, M3, M4 = (f"m_{n:016x}" for n in range(1, 5))


@pytest.fixture
def db(tmp_path):
    opened = Database(tmp_path / "agentmem.db", busy_timeout_ms=2000, home=tmp_path)
    yield opened
    opened.close()


def _memory(memory_id: str, **values) -> dict:
    row = {"id": memory_id, "project": "/p", "title": "t", "content": f"content of {memory_id}",
           "confidence": 0.8, "created_at": 1.0, "updated_at": 1.0, "root_id": memory_id,
           "content_hash": memories.content_hash(f"content of {memory_id}")}
    return {**row, **values}


def test_insert_refuses_unknown_columns_and_writes_nothing(db):
    with pytest.raises(ValueError, match="not columns of memories"), db.transaction() as conn:
        memories.insert(conn, _memory(M1, colour="red"))
    assert memories.total(db.conn) == 0
    with db.transaction() as conn:
        memories.insert(conn, _memory(M1))
    got = memories.Memories(db).get(M1)
    assert (got.strength, got.access_count, got.is_latest, got.tier) == (1.0, 0, True, "semantic")  # the defaults


def test_retire_and_access_and_sources(db):
    with db.transaction() as conn:
        memories.insert(conn, _memory(M1, valid_to=0.5))
        memories.insert(conn, _memory(M2))
        memories.retire(conn, M1, 9.0)
        memories.retire(conn, M2, 9.0)
        memories.record_access(conn, [(M2, 2.0, 0.9)], 5.0)
        memories.set_sources(conn, [(M2, ["obs:1", M1])])
    one, two = memories.Memories(db).get(M1), memories.Memories(db).get(M2)
    assert (one.is_latest, one.valid_to, one.updated_at) == (False, 0.5, 9.0)  # an earlier end is kept
    assert (two.valid_to, two.access_count, two.last_accessed_at, two.strength, two.confidence) == (9.0, 1, 5.0, 2.0,
                                                                                                     0.9)
    assert two.source_ids == ["obs:1", M1] and two.updated_at == 9.0  # sources alone do not touch updated_at


def test_decay_is_compare_and_set(db):
    with db.transaction() as conn:
        memories.insert(conn, _memory(M1))
        memories.insert(conn, _memory(M2))
    rowids = dict(db.conn.execute("SELECT id, rowid FROM memories").fetchall())
    with db.transaction() as conn:
        memories.record_access(conn, [(M2, 1.0, 0.95)], 2.0)  # used after the sweep read 0.8
        changed = memories.decay(conn, "confidence", [(0.7, rowids[M1], M1, 0.8),
                                                      (0.7, rowids[M2], M2, 0.8)])
    assert changed == 1
    assert [memories.Memories(db).get(m).confidence for m in (M1, M2)] == [0.7, 0.95]
    with pytest.raises(ValueError, match="confidence or strength"), db.transaction() as conn:
        memories.decay(conn, "importance", [])


def test_sessions_touch_keeps_project_and_end(db):
    with db.transaction() as conn:
        sessions.touch(conn, session_id="s1", project=None, client="claude-code", cwd="/p", now=1.0, ended=False,
                       needs_summary=False)
        sessions.touch(conn, session_id="s1", project="/p", client="claude-code", cwd="/p", now=2.0, ended=True,
                       needs_summary=True)
        sessions.touch(conn, session_id="s1", project="/q", client="claude-code", cwd="/p", now=3.0, ended=False,
                       needs_summary=False)
    row = db.conn.execute("SELECT * FROM sessions WHERE id = 's1'").fetchone()
    assert (row["project"], row["status"], row["ended_at"], row["last_event_at"], row["needs_summary"]) == (
        "/p", "ended", 2.0, 3.0, 1)
    assert sessions.count(db.conn, "/p") == 1 and sessions.known(db.conn, "s1") and not sessions.known(db.conn, "s2")
    with db.transaction() as conn:
        sessions.mark_summarized(conn, "s1", 7, needs_summary=False, summary_memory_id=None)
    assert sessions.summarized_upto(db.conn, "s1") == 7 and sessions.summarized_upto(db.conn, "s2") is None


def test_observations_count_a_repeat_and_go_with_their_session(db):
    event = {"session_id": "s1", "project": "/p", "client": "claude-code", "event": "tool_use", "tool": "Bash",
             "input": json.dumps({"command": "make"}), "output": "ok", "prompt": None, "files": "[]", "extra": "{}",
             "fingerprint": "f1"}
    with db.transaction() as conn:
        first = observations.add(conn, **event, now=1.0)
        again = observations.add(conn, **event, now=2.0)
        other = observations.add(conn, **{**event, "fingerprint": "f2"}, now=3.0)
    assert first == again != other
    assert db.conn.execute("SELECT count FROM observations WHERE id = ?", (first,)).fetchone()[0] == 2
    assert observations.count_of_session(db.conn, "s1") == 2 and observations.status_counts(db.conn, "/p") == {
        "pending": 2}
    with db.transaction() as conn:
        observations.delete_session(conn, "s1")
    assert observations.count_of_session(db.conn, "s1") == 0


def test_links_keep_derived_from(db):
    with db.transaction() as conn:
        for dst in (M2, M3):
            links.add_link(conn, M1, dst, "derived_from", 1.0)
        links.add_link(conn, M1, M4, "supersedes", 1.0)
        links.keep_derived_from(conn, M1, [M3])
    assert sorted(links.links_touching(db.conn, [M1])) == [(M1, M3), (M1, M4)]
    with db.transaction() as conn:
        links.keep_derived_from(conn, M1, [])
        links.link_entities(conn, M1, [("file", "a.py")])
    assert links.links_touching(db.conn, [M1]) == [(M1, M4)]
    assert links.entity_members(db.conn, links.entity_id(db.conn, "file", "a.py"), 10) == [M1]
