"""The C heap of agentmem's long-lived processes (`agentmem serve`, the shared embedding process), with glibc.

Elsewhere (macOS, musl, Windows) both calls do nothing.
"""

from __future__ import annotations

import os

M_ARENA_MAX = -8  # mallopt's parameter, from glibc's malloc.h
ARENAS = 2


def _libc() -> object | None:
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def limit_arenas() -> None:
    """At most `ARENAS` malloc arenas for the process, unless the user set MALLOC_ARENA_MAX (glibc's own setting).

    glibc gives each thread that allocates an arena of its own, up to 8 per core, and each keeps the pages it
    has touched: a server's search threads (one per retriever), its model loader and indexer hold more memory
    that way and search no faster (docs/benchmarks.md). Call it first thing, before the threads exist."""
    libc = _libc()
    if libc is not None and "MALLOC_ARENA_MAX" not in os.environ:
        try:
            libc.mallopt(M_ARENA_MAX, ARENAS)  # type: ignore[attr-defined]
        except AttributeError:
            pass


def release_freed() -> None:
    """Hand memory freed on the C heap back to the system: what onnxruntime took to make a model's session
    beyond what it keeps (the model's file, the graph before its optimisation: ~55 MB for the default model),
    and a big batch's working memory (a server's memory once its model is loaded: scripts/bench_hooks.py,
    docs/benchmarks.md)."""
    libc = _libc()
    if libc is not None:
        try:
            libc.malloc_trim(0)  # type: ignore[attr-defined]
        except AttributeError:
            pass
