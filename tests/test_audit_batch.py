"""The audit chain's head file during a worker pass: written once at its end, not after each of its commits
(one per observation), and still catching rows removed at the end once it is written."""

from __future__ import annotations

import json

from agentmem_mcp.db import audit
from agentmem_mcp.db.audit import head_path
from agentmem_mcp.store import Store


def head_seq(database) -> int:
    return json.loads(head_path(database).read_text())["seq"]


def test_a_batch_writes_the_head_once_at_its_end_and_verify_accepts_the_lag(settings):
    with Store.open(settings, project="/p") as store:
        store.save("The release train leaves on Thursdays")  # the first head: written at once
        database = settings.database
        first = head_seq(database)
        writes = []
        real = audit._write_private
        audit._write_private = lambda path, text, **kw: (writes.append(path), real(path, text, **kw))[1]
        try:
            with audit.batched():
                for n in range(5):
                    store.save(f"Staging deploy number {n} needs a ticket")
                assert head_seq(database) == first  # held back: a lower bound of the rows
                assert audit.verify(store.conn).ok
            last = store.conn.execute("SELECT MAX(seq) FROM audit").fetchone()[0]
            assert head_seq(database) == last > first
            assert [p for p in writes if "audit-head" in str(p)] and len(writes) == 1  # one write for the batch
        finally:
            audit._write_private = real
        assert audit.verify(store.conn).ok
        # rows removed at the end after the batch are caught as before
        store.conn.execute("DROP TRIGGER audit_no_delete")
        store.conn.execute("DELETE FROM audit WHERE seq = ?", (last,))
        verdict = audit.verify(store.conn)
        assert not verdict.ok and "rows at its end were removed" in verdict.problem
