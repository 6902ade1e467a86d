"""The background worker inside `agentmem serve`: works while this server holds the worker lease.

Every server keeps trying for the lease (`lease.LeaseKeeper`), but one holds it at a time: the worker itself
(runtime/worker.py: compression, summaries, consolidation, the sweep, ~2 MB of a server's memory once imported) is
imported by the server that holds it, when it first does, so four sessions import it once, not four times.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

log = logging.getLogger("agentmem.worker")


def _worker(store: Any, holder: str) -> Any:
    from ..lifecycle.llm import LLM
    from .worker import Worker

    return Worker(store, holder=holder, llm=LLM.from_store(store))


async def serve_worker_loop(state: Any) -> None:
    """Work while this server holds the lease; never raises.

    `state` is the server's AppState (`.store()` opens the store, `.stopping` is a threading.Event)."""
    import anyio

    from ..db.connection import is_damage
    from ..models import StoreDamaged
    from . import lease

    keeper: lease.LeaseKeeper | None = None
    try:
        store = await anyio.to_thread.run_sync(state.store)
        keeper = lease.LeaseKeeper(lambda: store.conn).start()
        await anyio.to_thread.run_sync(keeper.tried.wait, 5.0)  # else the first pass would wait a renewal
        worker: Any = None

        def stopped() -> bool:
            return state.stopping.is_set() or not keeper.held.is_set()

        idle = lease.IDLE_SLEEP[0]
        damaged = ""
        while not state.stopping.is_set():
            try:
                if keeper.held.is_set():
                    if worker is None:
                        worker = await anyio.to_thread.run_sync(_worker, store, keeper.holder)
                    report = await anyio.to_thread.run_sync(partial(worker.run_pass, should_stop=stopped))
                    if report.busy:
                        log.info("worker: %s", report.text())
                    idle = lease.IDLE_SLEEP[0] if report.busy else min(idle * 2, lease.IDLE_SLEEP[1])
                else:
                    idle = 0.5  # another process works; look again soon (the keeper retries every renewal)
            except StoreDamaged:  # the database's files changed under this server (logged once): it writes no more
                return
            except Exception as exc:
                if is_damage(exc):  # a damaged database: one line per message, not a traceback every pass
                    from ..upkeep.maintenance import database_error_line

                    line = database_error_line(exc)
                    if line != damaged:
                        log.error("worker pass failed, retrying later: %s", line)
                        damaged = line
                else:
                    log.exception("worker pass failed; retrying later")
                idle = lease.IDLE_SLEEP[1]
            waited = 0.0
            while waited < idle and not state.stopping.is_set():
                await anyio.sleep(0.5)
                waited += 0.5
    except Exception:
        log.exception("the background worker stopped")
    finally:
        if keeper is not None:
            keeper.stop()
