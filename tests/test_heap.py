"""The C heap of the long-lived processes (index/heap.py): at most two malloc arenas, unless the user says otherwise."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import REPO

ARENAS_AFTER_SIX_THREADS = """
import ctypes, sys, tempfile, threading
from agentmem_mcp.index.heap import limit_arenas
if sys.argv[1] == "limit":
    limit_arenas()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = libc.fopen.restype = ctypes.c_void_p
together = threading.Barrier(6)
def allocate():
    libc.malloc(1000)  # a thread's first malloc takes an arena: a new one while under the limit
    together.wait()
threads = [threading.Thread(target=allocate) for _ in range(6)]
[t.start() for t in threads]
[t.join() for t in threads]
with tempfile.NamedTemporaryFile(suffix=".xml") as out:
    report = ctypes.c_void_p(libc.fopen(out.name.encode(), b"w"))
    libc.malloc_info(0, report)
    libc.fclose(report)
    print(open(out.name).read().count("<heap nr="))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas")
def test_a_long_lived_process_keeps_two_malloc_arenas_unless_the_user_sets_their_number():
    """Each thread that allocates got an arena of its own (and kept its pages): `agentmem serve` and the shared
    embedding process keep two, for all their threads. MALLOC_ARENA_MAX, glibc's own setting, wins."""
    def arenas(mode: str, **env: str) -> int:
        environ = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
        done = subprocess.run([sys.executable, "-c", ARENAS_AFTER_SIX_THREADS, mode], cwd=REPO, timeout=60,
                              env={**environ, **env}, capture_output=True, text=True, check=True)
        return int(done.stdout)

    assert arenas("limit") == 2
    assert arenas("none") == 7  # the control: the main arena and one per thread
    assert arenas("limit", MALLOC_ARENA_MAX="4") == 4
