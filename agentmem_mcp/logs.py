"""Logging to a private file under the home directory (hooks must never write noise to the agent)."""

from __future__ import annotations

import logging
import os
from logging.handlers import RotatingFileHandler

from .config import Settings
from .db.connection import ensure_private_dir
from .files import home_refusal

LOG_NAME = "agentmem.log"  # in <home>/logs (Settings.log_path)


class _LogFile(RotatingFileHandler):
    def _open(self):  # also after each rotation: the log stays 0600 whatever the process umask
        old = os.umask(0o077)
        try:
            return super()._open()
        finally:
            os.umask(old)

    def handleError(self, record: logging.LogRecord) -> None:
        """A log that cannot be written (a full disk, a deleted directory) is dropped: printing the failure to
        stderr, logging's default, would put it in front of the agent through a hook."""


def is_log_file(name: str) -> bool:
    """Whether a file of this name in the logs folder is one agentmem writes (the log and its rotated copies)."""
    return name == LOG_NAME or (name.startswith(LOG_NAME + ".") and name[len(LOG_NAME) + 1:].isdigit())


def setup_logging(settings: Settings, level: int = logging.INFO) -> None:
    """Send agentmem's log records to `<home>/logs/agentmem.log` (0600, rotated at 2 MB); when that file cannot be
    had (a refused home, a read-only or full disk) they are dropped, never printed."""
    logger = logging.getLogger("agentmem")
    if any(isinstance(h, RotatingFileHandler) for h in logger.handlers):
        return
    logger.propagate = False  # with no file to write, records are dropped, never printed (hooks' stderr)
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    if home_refusal(settings):  # another user's home, a planted link in the place of the log: write nothing there
        return
    try:
        ensure_private_dir(settings.home)
        ensure_private_dir(settings.log_path.parent)
        handler = _LogFile(settings.log_path, maxBytes=2_000_000, backupCount=2, encoding="utf-8")
    except OSError:
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
