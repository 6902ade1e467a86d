"""The user's shared agentmem process: `python -m agentmem_mcp.runtime.shared_process --home HOME`.

Started on demand by the first relay (`agentmem serve`, runtime/relay.py), the first server that needs vectors
(runtime/embed_service.py) or a hook that found none running (capture/hook_start.py; `--for-hooks`: the model loads
when a server first asks for it), one per home (it holds `<home>/embed.lock`). It holds the embedding model
(`<home>/embed.sock`), takes hook events (`<home>/hooks.sock`, capture/hook_service.py) and serves agent sessions
(`<home>/sessions.sock`, session_host.py); each socket is 0600 in a home nobody else can enter. Its settings are those
of the environment it was started with; without --model, the model is the settings' (none when they turn embeddings
off or the shared model off).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentmem_mcp.runtime.shared_process",
                                     description="agentmem's shared process (started by `agentmem serve`)")
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--model", help="the embedding model (default: the settings')")
    parser.add_argument("--model-path", type=Path)
    parser.add_argument("--idle-seconds", type=float)
    parser.add_argument("--for-session", action="store_true", help="started by a relay: its session before the model")
    parser.add_argument("--for-hooks", action="store_true",
                        help="started by a hook: take hooks at once, load the model when a server asks for it")
    args = parser.parse_args(argv)
    if _already_served(args.home):  # before the imports below: hooks started together leave one process
        return 0
    from ..config import ConfigError, load_settings
    from ..files import ensure_private_dir
    from ..index.heap import limit_arenas
    from ..logs import setup_logging
    from .embed_service import EmbedService
    from .session_host import SessionListener

    limit_arenas()
    home = Path(os.path.abspath(args.home))
    settings = None
    try:
        ensure_private_dir(home)  # a relay started before any server made the home
        settings = load_settings(home=home)
        setup_logging(settings)
    except (ConfigError, OSError):  # a config the sessions would refuse too: log nowhere rather than not serve
        pass
    model, model_path, idle = args.model, args.model_path, args.idle_seconds
    if model is None and settings is not None and settings.embeddings and settings.shared_embedder:
        model, model_path = settings.embed_model, settings.embed_model_path
    if idle is None:
        idle = float(settings.embed_idle_seconds) if settings is not None else 600.0
    service = EmbedService(home, model, model_path, idle)
    service.sessions = SessionListener(home, service.shared_embedder_for)
    service.session_first = args.for_session
    service.model_on_demand = args.for_hooks
    return service.run()


def _already_served(home: Path) -> bool:
    """Another process holds the home's lock (`EmbedService.run` takes it for good)."""
    import fcntl

    try:
        fd = os.open(os.path.join(os.path.abspath(home), "embed.lock"), os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


if __name__ == "__main__":
    raise SystemExit(main())
