"""The records the library hands out (memories, save results, search hits) and the search request."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from .kinds import PRIORITIES, SHOWN_TIERS, SOURCES, TIERS, TYPES  # noqa: F401 (this module's API too)

if TYPE_CHECKING:
    from collections.abc import Sequence

EXPORT_FORMAT = "agentmem-export/1"  # the header of `agentmem export` files (upkeep/transfer.py) and recovery's copy

MEMORY_ID = re.compile(r"^m_[0-9a-f]{16}$")
MAX_QUERY_CHARS = 20000


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


def _check_query(query: Any) -> str:
    if not isinstance(query, str):
        raise InvalidInput(f"query must be text, not {type(query).__name__}")
    query = query.replace("\x00", " ").strip()
    if not query:
        raise InvalidInput("query is empty: describe what you are looking for, e.g. 'how are tests run'")
    return query[:MAX_QUERY_CHARS]


def _check_list(name: str, value: Any, choices: tuple[str, ...]) -> list[str] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, (list, tuple)):
        raise InvalidInput(f"{name} must be one of {', '.join(choices)} or a list of them")
    return [check_choice(name, v, choices) for v in values] or None


@dataclass(frozen=True)
class SearchRequest:
    """What a caller asks `search` for: the MCP tool, the CLI, the search socket and the scripts each build one.

    It lives here, beside the SearchResult it gets back, rather than in recall/retrieval.py beside `search`: the team's
    merge (team/recall.py), which retrieval calls, reads it too. `validated` is the one place its fields are
    checked.

    project: the project to search (default (...): the store's project) plus global memories; all_projects=True
    searches everything. types / tiers filter (default tiers: all but working, the raw captured events);
    since / until bound created_at (unix time); min_confidence drops doubtful memories; include_history
    also returns superseded versions. limit is 1..100; budget_tokens caps the size of the answer (default: the
    `search_budget_tokens` setting). record_access=False leaves the hits' access statistics alone. retrievers:
    which of bm25, vector and graph run. Quarantined memories (text that reads as instructions to an agent,
    `trust.instruction_reason`) are left out unless include_quarantined=True.
    """
    query: Any
    project: Any = ...
    all_projects: bool = False
    types: Sequence[str] | str | None = None
    tiers: Sequence[str] | str | None = None
    since: float | None = None
    until: float | None = None
    min_confidence: float | None = None
    include_history: bool = False
    limit: int = 10
    budget_tokens: int | None = None
    record_access: bool = True
    retrievers: Sequence[str] = ("bm25", "vector", "graph")
    include_quarantined: bool = False

    def validated(self, home_project: str | None, budget_tokens: int) -> SearchRequest:
        """This request checked and completed: the query cleaned, `project` resolved (`home_project` for ...),
        `budget_tokens` set (`budget_tokens` when None), `types` a list or None and `tiers` a list; InvalidInput
        says what is wrong."""
        query = _check_query(self.query)
        limit = self.limit
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
            raise InvalidInput("limit must be a whole number from 1 to 100")
        budget = budget_tokens if self.budget_tokens is None else self.budget_tokens
        if isinstance(budget, bool) or not isinstance(budget, int) or not 50 <= budget <= 100000:
            raise InvalidInput("budget_tokens must be a whole number from 50 to 100000")
        least = self.min_confidence
        if least is not None:
            if isinstance(least, bool) or not isinstance(least, (int, float)) or not 0 <= least <= 1:
                raise InvalidInput("min_confidence must be between 0 and 1")
        for name, value in (("since", self.since), ("until", self.until)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise InvalidInput(f"{name} must be a unix timestamp")
        type_list = _check_list("type", self.types, TYPES)
        tier_list = _check_list("tier", self.tiers, TIERS) or list(SHOWN_TIERS)
        project = home_project if self.project is ... else self.project
        return replace(self, query=query, budget_tokens=budget, types=type_list, tiers=tier_list, project=project)

    @property
    def projects(self) -> list[str | None] | None:
        """The projects searched (None: all): the request's and the global memories. Resolved requests only."""
        return None if self.all_projects else list(dict.fromkeys([self.project, None]))
