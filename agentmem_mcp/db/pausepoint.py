"""Pause points for fault tests (`scripts/faults.py`): kill a process at a known moment.

With AGENTMEM_TEST_PAUSE_AT=NAME in its environment, a process that reaches `pause("NAME")` writes its pid
to AGENTMEM_TEST_PAUSE_FILE (if set) and sleeps until it is killed. The points: `audit:<action>` (inside
the write transaction of a save, forget, ..., before it commits) and `index-commit` (tantivy documents
written, before the commit). Unset, a pause point costs one environment lookup.
"""

from __future__ import annotations

import os
import time

ENV_POINT = "AGENTMEM_TEST_PAUSE_AT"
ENV_FILE = "AGENTMEM_TEST_PAUSE_FILE"


def pause(point: str) -> None:
    if os.environ.get(ENV_POINT) != point:
        return
    marker = os.environ.get(ENV_FILE)
    if marker:
        with open(marker, "w", encoding="utf-8") as out:
            out.write(str(os.getpid()))
    while True:
        time.sleep(3600)
