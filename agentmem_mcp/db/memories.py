"""The `memories` table read by id: a memory, its version chain, its latest version; the one filter that
search, listing and forgetting select memories by (`MemoryFilter`); and the content hash that saves dedup on
and the audit chain binds."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..models import Memory, NotFound, check_memory_id
from .database import Database

_SPACE = re.compile(r"\s+")


def content_hash(content: str) -> str:
    """sha256 of the content with case and runs of white space evened out."""
    normalized = _SPACE.sub(" ", content.strip().lower())
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class MemoryFilter:
    """Which memories a read selects, as SQL (`where`) or on rows already read (`admits`); every bound left at
    its default admits all.

    projects: the projects admitted (None: every project; a global memory's project is None); latest_only:
    no superseded versions; types / tiers: admitted when non-empty; since / until: created_at >= since and
    <= until; before: created_at < before; min_confidence; with_quarantined=False leaves out quarantined
    memories; live_at: leaves out memories whose forget_after has come by then."""

    projects: Sequence[str | None] | None = None
    latest_only: bool = False
    types: Sequence[str] = ()
    tiers: Sequence[str] = ()
    since: float | None = None
    until: float | None = None
    before: float | None = None
    min_confidence: float | None = None
    with_quarantined: bool = True
    live_at: float | None = None

    def where(self) -> tuple[str, list[Any]]:
        """The SQL condition on `memories` and its arguments."""
        where, args = ["1 = 1"], []
        if self.latest_only:
            where.append("is_latest = 1")
        if self.projects is not None:
            where.append("(" + " OR ".join(["project IS ?"] * len(self.projects)) + ")" if self.projects else "0")
            args.extend(self.projects)
        for column, values in (("type", self.types), ("tier", self.tiers)):
            if values:
                where.append(f"{column} IN ({','.join('?' * len(values))})")
                args.extend(values)
        for condition, value in (("created_at >= ?", self.since), ("created_at <= ?", self.until),
                                 ("created_at < ?", self.before), ("confidence >= ?", self.min_confidence)):
            if value is not None:
                where.append(condition)
                args.append(value)
        if not self.with_quarantined:
            where.append("quarantined IS NULL")
        if self.live_at is not None:
            where.append("(forget_after IS NULL OR forget_after > ?)")
            args.append(self.live_at)
        return " AND ".join(where), args

    def admits(self, row: Mapping[str, Any]) -> bool:
        """Whether a memory row read whole (or with the columns the filter names) passes."""
        return not (
            self.projects is not None and row["project"] not in self.projects
            or self.latest_only and not row["is_latest"]
            or self.types and row["type"] not in self.types
            or self.tiers and row["tier"] not in self.tiers
            or self.since is not None and row["created_at"] < self.since
            or self.until is not None and row["created_at"] > self.until
            or self.before is not None and row["created_at"] >= self.before
            or self.min_confidence is not None and row["confidence"] < self.min_confidence
            or not self.with_quarantined and row["quarantined"] is not None
            or self.live_at is not None and row["forget_after"] is not None and row["forget_after"] <= self.live_at
        )


class Memories:
    """Reads of the memories table of `db`, by id and by version chain."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def count(self) -> int:
        """How many memories are stored (every version)."""
        return self.db.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]

    def get(self, memory_id: str, *, within: Sequence[str | None] | None = None) -> Memory:
        """The whole memory; raises NotFound. within: the projects the caller may see (None: any); a memory
        of another project is not found, so a caller walled into a project learns nothing of the others."""
        check_memory_id(memory_id)
        row = self.db.conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None or within is not None and row["project"] not in within:
            raise NotFound(f"no memory {memory_id}" + (" in this project" if row is not None else "")
                           + ": it may have been forgotten; search again for current ids")
        return Memory.from_row(row)

    def history(self, memory_id: str, *, within: Sequence[str | None] | None = None) -> list[Memory]:
        """Every version of the memory's chain, oldest first (`within` as in `get`)."""
        memory = self.get(memory_id, within=within)
        rows = self.db.conn.execute("SELECT * FROM memories WHERE root_id = ? ORDER BY version", (memory.root_id,))
        return [Memory.from_row(row) for row in rows if within is None or row["project"] in within]

    def latest_version(self, memory_id: str) -> Memory:
        """The current version of the memory's chain (the memory itself when it is the latest)."""
        memory = self.get(memory_id)
        if memory.is_latest:
            return memory
        row = self.db.conn.execute("SELECT * FROM memories WHERE root_id = ? AND is_latest = 1",
                                   (memory.root_id,)).fetchone()
        return Memory.from_row(row) if row else memory
