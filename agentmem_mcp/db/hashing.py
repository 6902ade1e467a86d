"""The content hash of a memory: what saves dedup on, the `memories.content_hash` column, and what the audit chain
binds. A module of its own so that the audit (and the migration that seals it) need not import the table's module."""

from __future__ import annotations

import hashlib
import re

_SPACE = re.compile(r"\s+")


def content_hash(content: str) -> str:
    """sha256 of the content with case and runs of white space evened out."""
    normalized = _SPACE.sub(" ", content.strip().lower())
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()
