"""Where an embedding model's files come from: AGENTMEM_EMBED_MODEL_PATH, or fastembed's download into agentmem's
model cache (once, on the first start).

For a model that agentmem runs itself (index/sentence_model.py), fastembed is only asked where the files are,
downloading them if need be, in a child process (`python -m agentmem_mcp.index.model_files`), so that its
imports do not stay in a process that holds the model for hours. Offline or with the hub out of reach, a missing
model fails at once with one clear error instead of fastembed's retries.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger("agentmem.embedder")

DOWNLOAD_TIMEOUT_S = 1800.0  # the child's whole run: a first download of ~90 MB on a slow line


class ModelUnavailable(RuntimeError):
    """The model is neither at AGENTMEM_EMBED_MODEL_PATH nor in the cache, and cannot be downloaded now."""


def default_model_cache(env: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    """Where a downloaded model is kept: FASTEMBED_CACHE_PATH if set, else agentmem's folder in the user's
    cache directory (`$XDG_CACHE_HOME/agentmem/models`, `~/.cache/agentmem/models`; on macOS
    `~/Library/Caches/agentmem/models`), which outlives a reboot (fastembed's own default is under /tmp)."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    if env.get("FASTEMBED_CACHE_PATH"):
        return Path(env["FASTEMBED_CACHE_PATH"]).expanduser()
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "agentmem" / "models"
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else home / ".cache"
    return base / "agentmem" / "models"


def local_folder(model_path: Path) -> Path:
    """AGENTMEM_EMBED_MODEL_PATH, checked: a bad path is never a reason to try the network."""
    if not Path(model_path).is_dir():
        raise ModelUnavailable(
            f"AGENTMEM_EMBED_MODEL_PATH={model_path} is not a directory: point it at the "
            f"folder holding the model, or unset it to download the model once")
    return Path(model_path)


def _offline(env: Mapping[str, str]) -> bool:
    return env.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "TRUE", "YES", "ON"}


def _hub_reachable(env: Mapping[str, str], timeout: float = 3.0) -> bool:
    """Whether the model hub answers a TCP connection within `timeout` (a proxy is trusted to)."""
    if any(env.get(name) for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    host = urlsplit(env.get("HF_ENDPOINT") or "https://huggingface.co")
    try:
        socket.create_connection((host.hostname or "huggingface.co", host.port or 443), timeout=timeout).close()
    except OSError:
        return False
    return True


def _no_download(model_name: str, cache: Path, why: str) -> ModelUnavailable:
    return ModelUnavailable(
        f"the embedding model {model_name} is not in {cache} and cannot be downloaded ({why}): set "
        f"AGENTMEM_EMBED_MODEL_PATH to a folder holding the model, or allow the one-time download; "
        f"search uses keywords only meanwhile")


def cached_or_downloaded(model_name: str, cache: Path, **kwargs: Any) -> Any:
    """fastembed's TextEmbedding of the model from the cache, else downloaded once into it (`kwargs` go to
    TextEmbedding). Offline (HF_HUB_OFFLINE) or with the hub unreachable, a missing model fails at once with
    one clear error, instead of fastembed's retries (seven error lines over ~39 s)."""
    from fastembed import TextEmbedding
    from loguru import logger

    cache.mkdir(parents=True, exist_ok=True)
    logger.disable("fastembed")  # a cache miss is expected here: no red "could not find" line
    try:
        return TextEmbedding(model_name=model_name, cache_dir=str(cache), local_files_only=True, **kwargs)
    except Exception as exc:
        log.info("embedding model %s not in %s (%s)", model_name, cache, type(exc).__name__)
    finally:
        logger.enable("fastembed")
    if _offline(os.environ):
        raise _no_download(model_name, cache, "HF_HUB_OFFLINE is set") from None
    if not _hub_reachable(os.environ):
        raise _no_download(model_name, cache, "the model hub cannot be reached") from None
    log.info("downloading embedding model %s into %s", model_name, cache)
    return TextEmbedding(model_name=model_name, cache_dir=str(cache), **kwargs)


def downloaded_folder(model_name: str, cache: Path, timeout: float = DOWNLOAD_TIMEOUT_S) -> Path:
    """The folder of the model's files in `cache`, downloaded first if they are not there; found by fastembed in
    a child process. ModelUnavailable when they cannot be had, with the reason."""
    command = [sys.executable, "-m", "agentmem_mcp.index.model_files", "--model", model_name, "--cache", str(cache)]
    try:
        # stdin is not the child's: in a server it is the MCP client's pipe; its stderr (progress) is ours
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, timeout=timeout,
                              text=True, check=False)
    except subprocess.TimeoutExpired:
        raise ModelUnavailable(f"downloading the embedding model {model_name} took over {timeout:.0f} s") from None
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else {}
    except ValueError:
        answer = {}
    if answer.get("folder"):
        return Path(answer["folder"])
    if answer.get("unavailable"):
        raise ModelUnavailable(answer["error"])
    raise RuntimeError(answer.get("error") or f"finding the embedding model's files failed (exit code "
                                                f"{done.returncode})")


def main(argv: list[str] | None = None) -> int:
    """The child of `downloaded_folder`: prints {"folder": ...} or {"error": ..., "unavailable": bool}."""
    parser = argparse.ArgumentParser(prog="python -m agentmem_mcp.index.model_files",
                                     description="agentmem: find (or download) an embedding model's files")
    parser.add_argument("--model", required=True)
    parser.add_argument("--cache", type=Path, required=True)
    args = parser.parse_args(argv)
    from .sentence_model import without_telemetry

    without_telemetry()
    try:
        found = cached_or_downloaded(args.model, args.cache, lazy_load=True)
        answer: dict[str, Any] = {"folder": str(found.model._model_dir)}
    except ModelUnavailable as exc:
        answer = {"error": str(exc), "unavailable": True}
    except Exception as exc:
        answer = {"error": f"{type(exc).__name__}: {exc}", "unavailable": False}
    print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
