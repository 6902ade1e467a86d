"""The write path of `memory_save`.

redact -> validate -> trust (an agent's or the worker's memory is saved project-scoped, P1 and unpinned
until the user confirms it (`agentmem pin`, the user's command); one that reads as instructions to an AI agent is
quarantined) -> exact duplicate (content hash, same project, latest): no-op -> supersede an old memory
about the same subject whose value changed (`lifecycle.supersede.decide`; a reworded statement when
word-set Jaccard and vector similarity are both above their thresholds) or the memory the caller names;
never a user's, pinned or P0 memory by an agent's or the worker's: that one is kept, the new one saved
beside it with a `conflicts_with` link, as is a statement whose polarity flipped ("never" / "always")
-> row + chunks + vectors + entities + links + outbox + audit in one transaction -> index.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..capture.redact import redact
from ..db import audit, index_outbox, links, memories, memory_reads
from ..db import vectors as vector_rows
from ..db.memories import MemoryFilter, content_hash
from ..index import vectors
from ..index.entities import extract_entities
from ..index.tokenize import terms
from ..models import (
    PRIORITIES,
    SOURCES,
    TIERS,
    TYPES,
    InvalidInput,
    NotFound,
    SaveResult,
    check_choice,
    check_memory_id,
)
from ..recall.anchors import head_commit
from ..recall.ranking import jaccard, specific_tokens, words
from ..trust.policy import QUARANTINED_PROVENANCE, instruction_reason, is_unconfirmed, provenance
from .forget import protected
from .retention import initial_confidence
from .supersede import FUNCTION_WORDS, Verdict, decide

if TYPE_CHECKING:
    from ..parts import Parts

MAX_CONTENT_CHARS = 65536
MAX_TITLE_CHARS = 200
MAX_TAGS = 32
SUPERSEDE_CANDIDATES = 20
COMMON_WORDS = 0.9  # words in more of a big store's memories than this share say nothing of a draft's subject
EARLY_CANDIDATES = 4  # saves up to this many look up BM25 candidates while the model embeds
# Facts, decisions and workflows get updated; episodes (what happened in a session) and raw
# observations are records of events, so a similar later event never replaces an earlier one.
SUPERSEDING_TIERS = ("semantic", "procedural")
_COMMIT = re.compile(r"^[0-9a-fA-F]{7,40}$")


def new_memory_id() -> str:
    return f"m_{uuid.uuid4().hex[:16]}"


def derive_title(content: str, limit: int = 80) -> str:
    first = next((line.strip() for line in content.splitlines() if line.strip()), content.strip())
    first = first.lstrip("#-* ").strip()
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def check_content(content: Any) -> str:
    """Redacted, stripped content, or InvalidInput saying what is wrong."""
    if not isinstance(content, str):
        raise InvalidInput(f"content must be text, not {type(content).__name__}")
    content = redact(content.replace("\x00", "")).strip()
    if not content:
        raise InvalidInput("content is empty: write the decision, fact or fix you want remembered")
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInput(f"content is {len(content):,} characters; a memory holds at most {MAX_CONTENT_CHARS:,}. "
                           "Save the key points, or split it into several memories")
    meaningful = [t for t in terms(content) if t != "redacted"]
    if len(content) < 8 or len(meaningful) < 2:
        raise InvalidInput(f"content {content[:40]!r} is too short to be useful later: say what, and why "
                           "(e.g. 'use pnpm, not npm: the lockfile is pnpm-lock.yaml')")
    return content


def _str_list(name: str, value: Any, limit: int = MAX_TAGS) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"{name} must be a list of strings")
    if len(value) > limit:
        raise InvalidInput(f"{name} has {len(value)} entries; at most {limit}")
    cleaned = (v.replace("\x00", "").strip() for v in value)
    return list(dict.fromkeys(redact(v)[:300] for v in cleaned if v))


def _unit(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidInput(f"{name} must be a number between 0 and 1; got {str(value)[:40]!r}")
    return float(value)


@dataclass
class Draft:
    """A validated memory about to be written."""
    title: str
    content: str
    type: str
    tier: str
    project: str | None
    tags: list[str]
    files: list[str]
    source: str
    confidence: float
    importance: float
    priority: str
    pinned: bool
    forget_after: float | None
    valid_from: float | None
    valid_to: float | None
    session_id: str | None
    source_ids: list[str]
    key: str | None
    content_hash: str
    created_at: float
    quarantined: str | None = None
    notes: tuple[str, ...] = ()  # what trust changed (trust_limits), for the save's answer
    anchor_commit: str | None = None  # the commit checked out where the files it names were seen


def same_scope(a: str | None, b: str | None) -> bool:
    """Memories of two different projects never supersede each other; a global one matches any."""
    return a is None or b is None or a == b


def supersede_verdict(old_text: str, new_text: str, cosine: float | None, jaccard_threshold: float,
                      cosine_threshold: float, decided: Verdict | None = None) -> Verdict:
    """Whether a new memory supersedes an old one, contradicts it, or neither: the supersede policy, pure.

    `lifecycle.supersede.decide` on the two statements; when they are too differently worded to align, a
    rewording still supersedes if its word-set Jaccard is above `jaccard_threshold`, its cosine at least
    `cosine_threshold`, and the two differ only in function words ("the", "to", ...) and name the same
    numbers, identifiers and paths. `decided`: `decide(old_text, new_text)` if already worked out.
    """
    verdict = decide(old_text, new_text) if decided is None else decided
    if verdict.kind is not None or not verdict.reason.startswith("too different"):
        return verdict
    old_set, new_set = set(words(old_text)), set(words(new_text))
    similarity = jaccard(old_set, new_set)
    if cosine is not None and cosine >= cosine_threshold and similarity > jaccard_threshold \
            and (old_set ^ new_set) <= FUNCTION_WORDS and specific_tokens(old_text) == specific_tokens(new_text):
        return Verdict("supersede", f"reworded (word overlap {similarity:.2f}, cosine {cosine:.2f})")
    return verdict


def trust_limits(source: str, priority: str, pinned: bool, project: str | None,
                 home_project: str | None) -> tuple[str, bool, str | None, list[str]]:
    """(priority, pinned, project, notes) for a memory from `source`: an agent's or the worker's memory
    is P1, unpinned and scoped to `home_project` (when there is one) until the user confirms it; each
    note says what was held back."""
    if not is_unconfirmed(source):
        return priority, pinned, project, []
    held = []
    if priority == "P0":
        held.append("P0")
        priority = "P1"
    if pinned:
        held.append("pinned")
        pinned = False
    if project is None and home_project is not None:
        held.append("global")
        project = home_project
    notes = [f"saved as {'project-scoped, ' if 'global' in held else ''}P1, unpinned: only the user can make "
             f"a memory {' or '.join(held)}, by confirming it"] if held else []
    return priority, pinned, project, notes


@dataclass(frozen=True)
class SaveRequest:
    """What a caller asks `save` to remember: the MCP tool, the CLI, the viewer and the team code each build one.

    It lives beside `save`, the operation it feeds, so that a reader finds the fields, their checks and their use
    in one module. The fields hold what the caller sent, unchecked (an MCP client or a JSON file may send any
    type); `draft` is the one place they are checked, with the messages `InvalidInput` carries to the caller.

    type: pattern | preference | architecture | bug | workflow | fact | decision | context | summary.
    tier: working | episodic | semantic | procedural. source: user | agent | hook | consolidation | import.
    importance and confidence are 0..1 (confidence defaults by source); priority P0 never decays, P2 may
    expire. ttl_days sets a forget-after date. supersedes names the memory this one replaces.
    project: default (...) the store's project; None saves a global memory (true in every project).
    key (for derived memories): a stable identity; a save with the same key and project updates that memory.
    commit: the git commit checked out where `files` were seen (default: the project's, when it names files).
    created_at: the save's time (default: the store's clock). vector_text (for bulk saves): what to embed instead
    of the whole memory, a shorter text, or None for no vector at all (`prepare_saves`).
    """
    content: Any
    title: Any = None
    type: Any = "fact"
    tier: Any = "semantic"
    project: Any = ...
    tags: Any = None
    files: Any = None
    source: Any = "agent"
    importance: Any = 0.5
    priority: Any = "P1"
    confidence: Any = None
    pinned: Any = False
    ttl_days: Any = None
    supersedes: Any = None
    valid_from: Any = None
    valid_to: Any = None
    session_id: Any = None
    source_ids: Any = None
    key: Any = None
    created_at: Any = None
    commit: Any = None
    vector_text: Any = ...

    @classmethod
    def of(cls, item: Any) -> SaveRequest:
        """The request an item of `save_many` describes: a SaveRequest, or a dict of `content` and its fields."""
        if isinstance(item, SaveRequest):
            return item
        if not isinstance(item, dict) or "content" not in item:
            raise InvalidInput("each item needs a content")
        try:
            return cls(**item)
        except TypeError as exc:
            raise InvalidInput(f"unknown option for a memory: {exc}") from None

    def draft(self, home_project: str | None, now: float) -> Draft:
        """The checked memory this request asks for, at `now`, for a store of `home_project` (where trust scopes
        an unconfirmed global memory); InvalidInput says what is wrong. `project` must be resolved (not ...)."""
        content = check_content(self.content)
        title, commit, source, priority = self.title, self.commit, self.source, self.priority
        project, ttl_days, valid_from, valid_to = self.project, self.ttl_days, self.valid_from, self.valid_to
        if commit is not None and (not isinstance(commit, str) or not _COMMIT.match(commit)):
            raise InvalidInput("commit must be a git commit hash (7 to 40 hexadecimal digits)")
        if title is not None and not isinstance(title, str):
            raise InvalidInput("title must be text")
        title = title.replace("\x00", "") if title else title
        title = redact(title).strip()[:MAX_TITLE_CHARS] if title and title.strip() else derive_title(content)
        check_choice("type", self.type, TYPES)
        check_choice("tier", self.tier, TIERS)
        check_choice("source", source, SOURCES)
        check_choice("priority", priority, PRIORITIES)
        if project is not None and (not isinstance(project, str) or not project.strip()):
            raise InvalidInput("project must be a non-empty string, or omitted for a global memory")
        if ttl_days is not None:
            if isinstance(ttl_days, bool) or not isinstance(ttl_days, (int, float)) or not 0 < ttl_days <= 36500:
                raise InvalidInput("ttl_days must be a number of days between 0 and 36500")
        conf = initial_confidence(source) if self.confidence is None else _unit("confidence", self.confidence)
        for name, value in (("valid_from", valid_from), ("valid_to", valid_to)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise InvalidInput(f"{name} must be a unix timestamp")
        ids = _str_list("source_ids", self.source_ids, limit=1000)
        priority, pinned, project, notes = trust_limits(source, priority, bool(self.pinned), project, home_project)
        if project is None and provenance(source) == "derived":
            raise InvalidInput("what the worker derives from a session is never global: the session has no "
                               "project (it was captured outside any project before agentmem scoped such sessions "
                               "to their directory)")
        quarantined = instruction_reason(f"{title}\n{content}") if provenance(source) in QUARANTINED_PROVENANCE \
            else None
        files = _str_list("files", self.files, limit=200)
        session_id, key = self.session_id, self.key
        return Draft(
            title=title, content=content, type=self.type, tier=self.tier, project=project,
            tags=_str_list("tags", self.tags), files=files, source=source, confidence=conf,
            importance=_unit("importance", self.importance), priority=priority, pinned=bool(pinned),
            forget_after=now + ttl_days * 86400 if ttl_days else None, valid_from=valid_from if valid_from else now,
            valid_to=valid_to, session_id=session_id if isinstance(session_id, str) else None, source_ids=ids,
            key=key if isinstance(key, str) and key else None, content_hash=content_hash(content), created_at=now,
            quarantined=quarantined, notes=tuple(notes), anchor_commit=commit.lower() if files and commit else None,
        )


def save(store: Parts, request: SaveRequest) -> SaveResult:
    """Remember what `request` asks (its fields: `SaveRequest`).

    Returns a SaveResult whose action is created, duplicate (nothing written) or superseded.
    """
    return save_many(store, [request])[0]


def save_many(store: Parts, items: Sequence[SaveRequest | dict[str, Any]], *,
              supersede_check: bool = True) -> list[SaveResult]:
    """Save several memories with one embedding batch, one transaction and one index update.

    Each item is a SaveRequest, or a dict of `content` and the other fields of one. Every item is validated before
    anything is written: one bad item raises InvalidInput and nothing is saved. supersede_check=False
    skips the near-duplicate search (for bulk loads of records known to be distinct); exact duplicates,
    keys and explicit `supersedes` still apply.
    """
    prepared = prepare_saves(store, items, supersede_check=supersede_check)
    with store.transaction() as conn:
        results = write_prepared(conn, store, prepared)
    store.indexer.index_soon()
    return results


@dataclass
class PreparedSave:
    """A validated, embedded memory waiting for `write_prepared`."""
    draft: Draft
    supersedes: str | None
    chunks: list[str]
    embedded: Any
    candidates: dict[str, float | None]
    vectorless: bool = False  # no vector by design (see `vector_text`), not for want of a model
    decided: dict[str, Verdict] = field(default_factory=dict)  # `decide` on candidates, worked out early


def prepare_saves(store: Parts, items: Sequence[SaveRequest | dict[str, Any]], *, supersede_check: bool = True,
                  skip_invalid: bool = False) -> list[PreparedSave | None]:
    """Validate and embed `items` (one embedding batch, each distinct text once) without writing.

    skip_invalid: an invalid item gives None instead of raising InvalidInput. An item's own `vector_text`
    says what to embed instead of the whole memory: a shorter text (cheaper; BM25 still indexes all of
    it), or None for no vector at all (BM25 and the graph still find it).
    """
    drafts: list[tuple[Draft, str | None, Any] | None] = []
    commits: dict[str, str | None] = {}  # each project's checked-out commit, read once for the batch
    for item in items:
        request = SaveRequest.of(item)
        project = store.project if request.project is ... else request.project
        commit = request.commit
        if commit is None and request.files and isinstance(project, str):
            if project not in commits:
                commits[project] = head_commit(project)
            commit = commits[project]
        now = store.now() if request.created_at is None else request.created_at
        try:
            draft = replace(request, project=project, commit=commit).draft(store.project, now)
        except InvalidInput:
            if not skip_invalid:
                raise
            drafts.append(None)
            continue
        supersedes, vector_text = request.supersedes, request.vector_text
        if supersedes is not None:
            supersedes = store.memories.latest_version(check_memory_id(supersedes)).id
        drafts.append((draft, supersedes, vector_text))
    chunked = [_vector_chunks(entry[0], entry[2]) if entry else [] for entry in drafts]
    wanted = [i for i, entry in enumerate(drafts) if entry and supersede_check and entry[1] is None
              and entry[0].tier in SUPERSEDING_TIERS]
    # A few saves (the usual case: one, from the agent): look up their BM25 candidates, and compare them with the
    # draft, on a pool thread while the model embeds (onnxruntime releases the GIL). Bulk saves look them up one
    # by one afterwards.
    early = (store.pool.submit(lambda: {i: _early_candidates(store, drafts[i][0]) for i in wanted})
             if wanted and len(wanted) <= EARLY_CANDIDATES and store.embedder.ready else None)
    embedded_flat = _embed(store, [chunk for chunks in chunked for chunk in chunks])
    wanted_set = set(wanted)
    prepared: list[PreparedSave | None] = []
    near: dict[int, dict[str, float]] = {}
    offset = 0
    for entry, chunks in zip(drafts, chunked):
        if entry is None:
            prepared.append(None)
            continue
        draft, supersedes, vector_text = entry
        embedded = embedded_flat[offset:offset + len(chunks)] if embedded_flat and chunks else None
        offset += len(chunks)
        index = len(prepared)
        if index in wanted_set and embedded:  # while the early BM25 lookups may still run on their thread
            near[index] = _vector_candidates(store, draft, embedded[0])
        prepared.append(PreparedSave(draft, supersedes, chunks, embedded, {}, vector_text is None))
    text_candidates = early.result() if early else {}
    for index in wanted:
        text_ids, decided = text_candidates.get(index) or (_text_candidates(store, drafts[index][0]), {})
        prepared[index].candidates = {**dict.fromkeys(text_ids), **near.get(index, {})}
        prepared[index].decided = decided
    return prepared


def write_prepared(conn: Any, store: Parts, prepared: Sequence[PreparedSave | None]) -> list[SaveResult | None]:
    """Write prepared saves inside the caller's write transaction (the caller indexes after it commits),
    so memories commit together with the caller's own rows, e.g. the worker's "compressed" marks."""
    return [_write(conn, store, p) if p else None for p in prepared]


def _embed(store: Parts, texts: list[str]) -> list[Any] | None:
    """Vectors for `texts`: each distinct text once, shortest first, so that batches pad to similar
    lengths (the model's cost is in the padded tokens). None without a model."""
    if not texts or not store.embedder.ready:
        return None
    unique = sorted(set(texts), key=len)
    by_text = dict(zip(unique, store.embedder.embed(unique) or []))
    return [by_text[text] for text in texts] if len(by_text) == len(unique) else None


def _write(conn: Any, store: Parts, prepared: PreparedSave) -> SaveResult:
    draft, chunks, embedded = prepared.draft, prepared.chunks, prepared.embedded
    now = draft.created_at
    duplicate = memory_reads.latest_with_hash(conn, draft.content_hash, draft.project)
    if duplicate is not None:
        return SaveResult(duplicate["id"], "duplicate", duplicate["version"],
                          reason="the same content is already stored in this project")
    old, reason, conflicts = _choose_old(conn, store, draft, prepared.supersedes, prepared.candidates,
                                         prepared.decided)
    memory_id = new_memory_id()
    version = old["version"] + 1 if old else 1
    root_id = old["root_id"] if old else memory_id
    if old:
        memories.retire(conn, old["id"], now)
        audit.append(conn, "superseded", old["id"], old["project"], {"by": memory_id}, at=now)  # binds is_latest 0
        vector_rows.set_latest(conn, old["id"], False)
        index_outbox.queue(conn, [old["id"]], now)
    _insert(conn, draft, memory_id, version, old["id"] if old else None, root_id,
            store.embedder.model_id if embedded else "" if prepared.vectorless else None)
    if embedded:
        vector_rows.put(conn, memory_id, draft.project, True, chunks, embedded)
    links.link_entities(conn, memory_id, extract_entities(f"{draft.title}\n{draft.content}\n"
                                                          + " ".join(draft.files)))
    if old:
        links.add_link(conn, memory_id, old["id"], "supersedes", now)
    for conflict_id, _ in conflicts:
        links.add_link(conn, memory_id, conflict_id, "conflicts_with", now)
    for source_id in draft.source_ids:
        if source_id.startswith("m_"):
            links.add_link(conn, memory_id, source_id, "derived_from", now)
    index_outbox.queue(conn, [memory_id], now)
    audit.append(conn, "supersede" if old else "save", memory_id, draft.project,
                 {"version": version, "supersedes": old["id"] if old else None, "type": draft.type,
                  "tier": draft.tier, "source": draft.source, "reason": reason,
                  **({"conflicts_with": [c for c, _ in conflicts]} if conflicts else {}),
                  # the rule only: the audit log keeps no memory text (the quote would outlive a forget)
                  **({"quarantined": draft.quarantined.split(":")[0]} if draft.quarantined else {})}, at=now)
    return SaveResult(memory_id, "superseded" if old else "created", version, old["id"] if old else None,
                      reason or "", [c for c, _ in conflicts], _notes(draft, conflicts), draft.quarantined)


def _notes(draft: Draft, conflicts: list[tuple[str, str]]) -> list[str]:
    """What the save's answer tells the caller: what trust held back, the memories it was saved beside, and a
    quarantine. It names no command: the caller may be an agent, and what only the user does is the user's to
    find (cli/confirm_user.py)."""
    notes = list(draft.notes)
    notes.extend(f"conflicts with {conflict_id} ({why}): both are kept; the user decides which stays"
                 for conflict_id, why in conflicts)
    if draft.quarantined:
        notes.append(f"quarantined: it reads as instructions to an AI agent ({draft.quarantined}); it is kept but "
                     "never searched or injected unless the user releases it")
    return notes


def _vector_chunks(draft: Draft, vector_text: Any) -> list[str]:
    """The texts to embed for a draft: its `vector_text` if given (None: nothing), else the whole memory."""
    if vector_text is None:
        return []
    if isinstance(vector_text, str):
        return vectors.chunk_text(vector_text)
    from ..index.document import memory_text

    return vectors.chunk_text(memory_text(draft.title, draft.content, draft.tags, draft.files, for_vectors=True))


def _text_candidates(store: Parts, draft: Draft) -> list[str]:
    """Ids of latest memories whose words overlap the draft's (BM25), and those not yet in BM25."""
    projects = None if draft.project is None else [draft.project, None]
    chosen = MemoryFilter(projects=projects, latest_only=True)
    found: list[str] = []
    try:
        found = [memory_id for memory_id, _ in store.fulltext.search(
            draft.content[:2000], projects=projects, limit=SUPERSEDE_CANDIDATES, common_share=COMMON_WORDS,
            admitted=lambda ids: memories.admitted(store.conn, ids, chosen))]
    except Exception:  # a broken index must not stop a save; the vector check still runs
        pass
    return found + store.indexer.pending_ids(limit=200)


def _early_candidates(store: Parts, draft: Draft) -> tuple[list[str], dict[str, Verdict]]:
    """`_text_candidates`, and `decide` between each candidate of the draft's scope and tier and the draft (the
    verdict's costly part, which needs no cosine), keyed by id: a memory's content never changes under its id, so
    the write, which reads the candidates again in its transaction, can use them."""
    ids = _text_candidates(store, draft)  # asked only for drafts of a superseding tier
    if not ids:
        return ids, {}
    decided = {row["id"]: decide(row["content"], draft.content)
               for row in memory_reads.latest_unquarantined(store.conn, ids)
               if same_scope(row["project"], draft.project) and row["tier"] == draft.tier}
    return ids, decided


def _vector_candidates(store: Parts, draft: Draft, vector: Any) -> dict[str, float]:
    """Ids of latest memories whose vectors are nearest the draft's, with their cosine similarity: with the BM25
    candidates (`_text_candidates`, cosine unknown), the memories the draft might supersede."""
    projects = None if draft.project is None else [draft.project, None]
    # Only near-identical vectors matter here, and they sit at the top of the binary ranking too.
    return dict(vectors.knn(store.conn, vector, projects=projects, latest_only=True, k=5, candidates=48,
                            copy_limit=store.settings.vector_copy_chunks))


def _choose_old(conn: Any, store: Parts, draft: Draft, supersedes: str | None, candidates: dict[str, float | None],
                decided: dict[str, Verdict] | None = None) -> tuple[Any, str | None, list[tuple[str, str]]]:
    """The memory the draft replaces (or None), why, and the memories it is saved beside in conflict. `decided`:
    `decide` already worked out for some candidates (`_early_candidates`)."""
    unconfirmed = is_unconfirmed(draft.source)
    if supersedes is not None:
        row = memory_reads.row_by_id(conn, supersedes)
        if row is None:
            raise NotFound(f"cannot supersede {supersedes}: no such memory")
        if unconfirmed and protected(row):
            return None, None, [(row["id"], "named as superseded, but only the user can replace it")]
        return row, "named by the caller", []
    if draft.key is not None:
        row = memory_reads.latest_by_key(conn, draft.key, draft.project)
        if row is not None:
            return row, f"update of {draft.key}", []
    if not candidates or draft.tier not in SUPERSEDING_TIERS:
        return None, None, []
    rows = memory_reads.latest_unquarantined(conn, list(candidates))
    draft_set = set(words(draft.content))
    best, best_reason, best_score = None, None, -1.0
    conflicts: list[tuple[str, str]] = []
    for row in rows:
        if not same_scope(row["project"], draft.project) or row["tier"] != draft.tier:
            continue
        verdict = supersede_verdict(row["content"], draft.content, candidates[row["id"]],
                                    store.settings.supersede_jaccard, store.settings.supersede_cosine,
                                    (decided or {}).get(row["id"]))
        if verdict.kind == "conflict":
            conflicts.append((row["id"], verdict.reason))
            continue
        if verdict.kind is None:
            continue
        if unconfirmed and protected(row):
            conflicts.append((row["id"], f"would replace it ({verdict.reason}), but only the user can"))
            continue
        score = jaccard(set(words(row["content"])), draft_set)
        if score > best_score:
            best, best_reason, best_score = row, verdict.reason, score
    return best, best_reason, conflicts


def _insert(conn: Any, d: Draft, memory_id: str, version: int, parent_id: str | None, root_id: str,
            model_id: str | None) -> None:
    memories.insert(conn, {
        "id": memory_id, "project": d.project, "tier": d.tier, "type": d.type, "title": d.title,
        "content": d.content, "tags": json.dumps(d.tags), "files": json.dumps(d.files), "source": d.source,
        "confidence": d.confidence, "importance": d.importance, "priority": d.priority, "pinned": int(d.pinned),
        "strength": 1.0, "access_count": 0, "last_accessed_at": None, "created_at": d.created_at,
        "updated_at": d.created_at, "valid_from": d.valid_from, "valid_to": d.valid_to,
        "forget_after": d.forget_after, "version": version, "parent_id": parent_id, "root_id": root_id,
        "is_latest": 1, "source_ids": json.dumps(d.source_ids), "session_id": d.session_id,
        "content_hash": d.content_hash, "embedding_model": model_id, "key": d.key, "quarantined": d.quarantined,
        "anchor_commit": d.anchor_commit})
