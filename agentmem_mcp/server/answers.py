"""What each MCP tool answers, as types: the SDK turns a tool's return type into its `outputSchema`, and checks each
structuredContent against it. Every answer may also carry what its size cap left out (`Capped`, server/answer_cap.py).
A key not named here is allowed, and the keys a tool may leave out are NotRequired, so an answer can change
without breaking a client that checks the schema."""

from __future__ import annotations

from typing import Any

from typing_extensions import NotRequired, TypedDict  # pydantic reads TypedDicts from here before Python 3.12


class Capped(TypedDict):
    omitted: NotRequired[dict[str, int]]  # list -> how many of its entries were left out
    cut: NotRequired[dict[str, int]]  # place of a text ("memory.content") -> its full length
    more: NotRequired[str]  # how to see what was left out


class SaveAnswer(Capped):
    id: str
    action: str  # created | duplicate | superseded
    version: NotRequired[int]
    supersedes: NotRequired[str | None]
    reason: NotRequired[str]
    conflicts_with: NotRequired[list[str]]
    notes: NotRequired[list[str]]
    quarantined: NotRequired[str | None]


class SearchHitAnswer(TypedDict):
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
    version: int
    is_latest: bool


class SearchAnswer(Capped):
    query: str
    mode: str
    notes: list[str]
    truncated: int
    tokens: int
    hits: list[SearchHitAnswer]


class MemoryAnswer(TypedDict):
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
    access_count: int
    last_accessed_at: str | None
    created_at: str | None
    updated_at: str | None
    valid_from: str | None
    valid_to: str | None
    forget_after: str | None
    version: int
    is_latest: bool
    age: NotRequired[str]


class GetAnswer(Capped):
    memory: NotRequired[MemoryAnswer]  # history=false
    id: NotRequired[str]  # history=true, with every version oldest first
    history: NotRequired[list[MemoryAnswer]]


class ForgottenMemory(TypedDict):
    id: str
    title: str
    type: str
    version: int


class ForgetAnswer(Capped):
    dry_run: bool
    count: int
    ids: NotRequired[list[str]]
    observations: NotRequired[int]
    memories: NotRequired[list[ForgottenMemory]]
    derived: NotRequired[list[str]]


class ContextAnswer(Capped):
    project: str | None
    context: str
    memory_ids: list[str]


class StatsAnswer(Capped):
    project: str | None
    all_projects: bool
    memories: int
    superseded_versions: int
    by_tier: dict[str, int]
    by_type: dict[str, int]
    by_source: dict[str, int]
    confidence: dict[str, int]
    quarantined: int
    never_accessed: int
    expiring_within_7_days: list[dict[str, Any]]
    last_sweep: dict[str, Any] | None
    observations: dict[str, int]
    sessions: int
    index_backlog: int
    vector_backlog: dict[str, int]
    embedder: str
    llm_today: dict[str, Any]


class ShareAnswer(Capped):
    id: str
    note: str
