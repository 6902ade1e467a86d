"""Checking whether an unmarked home's database predates the stamps (`files._made_before_stamps`) while this process
has the same database open: the check must use the SQLite every other connection uses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

WHILE_READING = """
import os, sys, tempfile, threading
from pathlib import Path
import sqlean
from agentmem_mcp import files

database = os.path.join(tempfile.mkdtemp(), "agentmem.db")
conn = sqlean.connect(database, isolation_level=None, check_same_thread=False)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("PRAGMA wal_autocheckpoint=0")
conn.execute("CREATE TABLE t(x)")
for _ in range(60):  # a WAL of ~6,000 pages: its index in the -shm file takes two regions
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO t VALUES (randomblob(4000))", [()] * 100)
    conn.execute("COMMIT")
stop = threading.Event()

def read():
    while not stop.is_set():
        conn.execute("SELECT count(*) FROM t WHERE length(x) > 10").fetchone()

reader = threading.Thread(target=read)
reader.start()
for _ in range(300):
    assert files._made_before_stamps(Path(database)) is True
stop.set()
reader.join()
print("read throughout")
"""


def test_the_stamp_check_leaves_the_connections_of_this_process_readable():
    """Python's own sqlite3 is a second copy of SQLite: opening the database, it took the -shm file as nobody's (a
    process's own locks do not exclude each other) and truncated it while another thread read through it, which
    killed the process with SIGBUS (seen as a `Bus error` in the evaluation scripts, whose stores' homes are unmarked
    folders that an indexer thread's first connection checks)."""
    done = subprocess.run([sys.executable, "-c", WHILE_READING], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0 and "read throughout" in done.stdout, (done.returncode, done.stderr[-2000:])
