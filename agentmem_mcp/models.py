"""The records the library hands out: memories, save results, search hits."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .kinds import PRIORITIES, SHOWN_TIERS, SOURCES, TIERS, TYPES  # noqa: F401 (this module's API too)

EXPORT_FORMAT = "agentmem-export/1"  # the header of `agentmem export` files (upkeep/transfer.py) and recovery's copy

MEMORY_ID = re.compile(r"^m_[0-9a-f]{16}$")


class AgentmemError(ValueError):
    """Base of the errors a caller can meet; the message says what to do."""


class InvalidInput(AgentmemError):
    """An argument is missing, malformed or out of range."""


class NotFound(AgentmemError):
    """No memory has that id."""


class StoreBusy(AgentmemError):
    """Another process held the database's write lock for longer than the busy timeout."""


class StoreFull(AgentmemError):
    """The disk holding the database has no room for a write."""


class StoreReadOnly(AgentmemError):
    """The store was opened read-only (its files cannot be written: a read-only filesystem, or permissions)."""


class StoreDamaged(AgentmemError):
    """The database file or its write-ahead log was deleted or replaced under this process: it writes no more."""


def check_memory_id(memory_id: Any) -> str:
    if not isinstance(memory_id, str) or not MEMORY_ID.match(memory_id):
        raise InvalidInput(f"{str(memory_id)[:80]!r} is not a memory id: ids look like m_0123456789abcdef")
    return memory_id


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise InvalidInput(f"{name} must be one of {', '.join(choices)}; got {str(value)[:40]!r}")
    return value


@dataclass
class Memory:
    id: str
    project: str | None
    tier: str
    type: str
    title: str
    content: str
    tags: list[str]
    files: list[str]
    source: str
    confidence: float
    importance: float
    priority: str
    pinned: bool
    strength: float
    access_count: int
    last_accessed_at: float | None
    created_at: float
    updated_at: float
    valid_from: float | None
    valid_to: float | None
    forget_after: float | None
    version: int
    parent_id: str | None
    root_id: str
    is_latest: bool
    source_ids: list[str]
    session_id: str | None
    content_hash: str
    embedding_model: str | None
    key: str | None = None
    quarantined: str | None = None  # why it reads as instructions to an agent (trust.instruction_reason)
    anchor_commit: str | None = None  # the commit checked out where the files it names were seen

    @classmethod
    def from_row(cls, row: Any) -> Memory:
        # only the memory's own fields: a column a later migration adds (such as `pieces`, the vector index's
        # bookkeeping) must not break a reader, even one from an older version running beside a newer one
        names = {f.name for f in fields(cls)}
        data = {name: value for name, value in dict(row).items() if name in names}
        for name in ("tags", "files", "source_ids"):
            data[name] = json.loads(data[name] or "[]")
        data["pinned"] = bool(data["pinned"])
        data["is_latest"] = bool(data["is_latest"])
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SaveResult:
    id: str
    action: str  # "created" | "duplicate" | "superseded"
    version: int
    supersedes: str | None = None
    reason: str = ""
    conflicts_with: list[str] = field(default_factory=list)  # kept memories this one contradicts or would replace
    notes: list[str] = field(default_factory=list)  # what the save changed or held back
    quarantined: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SearchHit:
    id: str
    title: str
    type: str
    tier: str
    project: str | None
    snippet: str
    score: float
    age: str
    why: str
    confidence: float
    version: int = 1
    is_latest: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SearchResult:
    query: str
    hits: list[SearchHit]
    mode: str  # "hybrid" or "bm25+graph"
    notes: list[str] = field(default_factory=list)
    truncated: int = 0  # hits left out by the token budget
    tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "mode": self.mode, "notes": self.notes, "truncated": self.truncated,
                "tokens": self.tokens, "hits": [h.to_dict() for h in self.hits]}
