"""The file side of `agentmem install`: reading a client's config, one backup folder per run, atomic writes that
keep a file's mode (and a dotfiles symlink a symlink), and the config text as it may be shown (other servers'
secrets masked, in the file's own layout)."""

from __future__ import annotations

import json
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

from ..capture.redact import is_sensitive_key, redact
from . import jsonedit, tomledit
from .clients import InstallError

SERVER_NAME = "agentmem"


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise InstallError(f"Cannot read {path} ({e}); fix its permissions or encoding, then run again.") from None


def backup_folder(root: Path, run: str) -> Path:
    """A new private folder under `root` for one run's backups: `<time>-<run>` (run: "install-codex", ...)."""
    from ..files import ensure_private_dir

    ensure_private_dir(root.parent)
    ensure_private_dir(root)
    base = f"{time.strftime('%Y%m%d-%H%M%S')}-{run}"
    folder, n = root / base, 1
    while folder.exists():
        folder, n = root / f"{base}-{n}", n + 1
    ensure_private_dir(folder)
    return folder


def backup(path: Path, folder: Path) -> Path:
    """A private copy of `path` in `folder`, at its absolute path below it."""
    target = folder.joinpath(*[part.replace(":", "") for part in path.absolute().parts[1:]])
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = path.read_bytes()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return target


def write_atomic(path: Path, text: str) -> None:
    target = path.resolve() if path.is_symlink() else path  # keep a dotfiles symlink a symlink
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        pass


MASK = "[hidden by agentmem]"
_SECRET_SECTIONS = ("env", "headers")
_TOML_SECRET_SECTIONS = ("env", "headers", "http_headers", "env_http_headers")


def masked(text: str | None) -> str:
    """A config file's text as it may be shown, in its own layout: every value in another MCP server's `env` or
    `headers`, every string under a key naming a secret (token, password, apiKey, ...) and every secret found in
    the rest replaced. A TOML file (Codex's config.toml) gets the same per line; other text is redacted as plain
    text."""
    if not text:
        return ""
    try:
        config = jsonedit.loads(text)
    except ValueError:
        try:
            return redact(tomledit.mask_values(text, _toml_hidden, MASK))
        except tomledit.TomlEditError:
            return redact(text)
    hidden = _mask(config, False)
    try:
        return jsonedit.patch(text, hidden)
    except ValueError:
        return json.dumps(hidden, indent=2, ensure_ascii=False)


def _toml_hidden(table: tuple[str, ...], key: str) -> bool:
    if table[:1] == ("mcp_servers",) and len(table) >= 2 and table[1] != SERVER_NAME:
        if key in _TOML_SECRET_SECTIONS or (len(table) >= 3 and table[2] in _TOML_SECRET_SECTIONS):
            return True
    return is_sensitive_key(key)


def _mask(value: Any, hidden: bool) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "mcpServers" and isinstance(v, dict):
                out[k] = {name: _mask(server, False) if name == SERVER_NAME else _mask_server(server)
                          for name, server in v.items()}
            else:
                out[k] = _mask(v, hidden or is_sensitive_key(str(k)))
        return out
    if isinstance(value, list):
        return [_mask(v, hidden) for v in value]
    if isinstance(value, str):
        return MASK if hidden and value else redact(value)
    return value


def _mask_server(server: Any) -> Any:
    if not isinstance(server, dict):
        return _mask(server, False)
    return {k: _mask(v, k in _SECRET_SECTIONS or is_sensitive_key(str(k))) for k, v in server.items()}
