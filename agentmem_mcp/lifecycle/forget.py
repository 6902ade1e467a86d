"""Explicit forgetting: by id(s), by session, or by filter (preview with dry_run first).

Rows, chunks, vectors, entity links and index entries go; the audit log keeps what, when and why,
never the content. Forgetting a memory forgets every version of it, so an old version cannot come back.
The turns after it in its session, which were indexed with its opening and may have embedded its question
(index/neighbours.py), are indexed again and get their answer chunk anew, so none of its text stays behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..db import audit, index_outbox, links, memories, memory_reads, meta, observations, word_vectors
from ..db import vectors as vector_rows
from ..db.memories import MemoryFilter
from ..index import neighbours
from ..models import TIERS, TYPES, InvalidInput, NotFound, check_choice, check_memory_id
from ..trust.policy import provenance

if TYPE_CHECKING:
    from ..parts import Parts

MAX_IDS = 1000


def protected(row: Any) -> bool:
    """A memory only the user may replace or forget: the user's own, pinned or P0."""
    return provenance(row["source"]) == "user" or bool(row["pinned"]) or row["priority"] == "P0"


@dataclass
class ForgetResult:
    dry_run: bool
    ids: list[str] = field(default_factory=list)
    observations: int = 0
    memories: list[dict[str, Any]] = field(default_factory=list)  # id, title, type, version (the preview)
    left: list[str] = field(default_factory=list)  # with keep_protected: the user's memories it left in place

    @property
    def count(self) -> int:
        return len(self.ids)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["count"] = self.count
        return data


@dataclass(frozen=True)
class ForgetRequest:
    """What a caller asks `forget` to remove: the MCP tool, the CLI, the viewer and the team code each build one.

    It lives beside `forget`, the operation it feeds. `validated` is the one place its fields are checked.

    ids: one id or a list; every version of each is removed. session_id: the memories and observations
    captured in that session. Otherwise a filter (project, type, tier, older_than_days / before) that must
    name at least one condition; project: default (...) the store's, all_projects: any. dry_run=True returns
    what would go and removes nothing. reason: for the audit log. now: the time to measure older_than_days from
    (default: the store's clock). within: the projects the caller may touch (None: any); an id or a session of
    another project is not found, and nothing is forgotten. keep_protected: leave the memories only the user may
    forget (`protected`; by ids, the whole chain of one) and list them in the result's `left` (an agent's call).
    """
    ids: Sequence[str] | str | None = None
    session_id: str | None = None
    project: Any = ...
    all_projects: bool = False
    type: str | None = None
    tier: str | None = None
    older_than_days: float | None = None
    before: float | None = None
    dry_run: bool = False
    reason: str = ""
    now: float | None = None
    within: Sequence[str | None] | None = None
    keep_protected: bool = False

    def validated(self) -> ForgetRequest:
        """This request with `ids` as a list, once its fields are checked; InvalidInput says what is wrong. An id's
        form is checked as it is looked up (`forget`), so the first bad or missing id in order names the error."""
        ids = [self.ids] if isinstance(self.ids, str) else self.ids
        chosen = [ids is not None, self.session_id is not None,
                  any(v is not None for v in (self.type, self.tier, self.older_than_days, self.before))]
        if sum(chosen) != 1:
            raise InvalidInput("say what to forget: ids, a session_id, or a filter (type, tier, older_than_days, "
                               "before), exactly one of these")
        if ids is not None:
            if not isinstance(ids, (list, tuple)) or not ids or len(ids) > MAX_IDS:
                raise InvalidInput(f"ids must be a list of 1 to {MAX_IDS} memory ids")
        elif self.session_id is not None:
            if not isinstance(self.session_id, str) or not self.session_id:
                raise InvalidInput("session_id must be a non-empty string")
        else:
            if self.type is not None:
                check_choice("type", self.type, TYPES)
            if self.tier is not None:
                check_choice("tier", self.tier, TIERS)
            days = self.older_than_days
            if days is not None and (isinstance(days, bool) or not isinstance(days, (int, float)) or days < 0):
                raise InvalidInput("older_than_days must be a positive number")
        return replace(self, ids=ids)


def forget(store: Parts, request: ForgetRequest) -> ForgetResult:
    """Forget what `request` names (its fields: `ForgetRequest`). Forgetting a memory forgets every version of it."""
    request = request.validated()
    ids, session_id, within = request.ids, request.session_id, request.within
    now = store.now() if request.now is None else request.now
    conn = store.conn
    session_observations = 0
    if ids is not None:
        roots = []
        for memory_id in ids:
            row = memory_reads.row_by_id(conn, check_memory_id(memory_id), "root_id, project")
            if row is None or within is not None and row["project"] not in within:
                raise NotFound(f"no memory {memory_id}{'' if row is None else ' in this project'}: "
                               "nothing was forgotten")
            roots.append(row[0])
        rows = memory_reads.in_chains(conn, roots)
    elif session_id is not None:
        if within is not None and not memory_reads.session_projects(conn, session_id) <= set(within):
            raise NotFound(f"no session {session_id[:80]!r} in this project: nothing was forgotten")
        rows = memory_reads.of_session(conn, session_id, memory_reads.FORGOTTEN)
        session_observations = observations.count_of_session(conn, session_id)
        if not rows and not session_observations:
            raise NotFound(f"no memories or observations for session {session_id[:80]!r}")
    else:
        rows = _by_filter(store, request, now)
    left: list[str] = []
    if request.keep_protected:
        held = {r["root_id"] if ids is not None else r["id"] for r in rows if protected(r)}
        left = [r["id"] for r in rows if (r["root_id"] if ids is not None else r["id"]) in held]
        rows = [r for r in rows if r["id"] not in held and r["root_id" if ids is not None else "id"] not in held]
    result = ForgetResult(dry_run=request.dry_run, ids=[r["id"] for r in rows], observations=session_observations,
                          memories=[{"id": r["id"], "title": r["title"], "type": r["type"], "version": r["version"]}
                                    for r in rows], left=left)
    if request.dry_run or (not rows and not session_observations):
        return result
    delete_memories(store, rows, request.reason or "forgotten on request", now)
    if session_id is not None and session_observations:
        with store.transaction() as conn:
            observations.delete_session(conn, session_id)
            audit.append(conn, "forget_session", None, None,
                         {"session_id": session_id, "observations": session_observations,
                          "memories": len(rows), "reason": request.reason}, at=now)
    return result


def forget_session(store: Parts, session_id: str, reason: str, within: Sequence[str | None] | None = None,
                   keep_protected: bool = False) -> tuple[ForgetResult, list[str]]:
    """`forget` of a session and what else holds that session's text: the summariser's state for it, and
    the memories consolidation derived from its observations or its summaries (they are forgotten too; the worker
    derives again what the remaining sessions still support). Returns the forget result and the derived ids.
    within and keep_protected: as in `forget` (what is left of the derived ones is added to the result's `left`)."""
    conn = store.conn
    cited = {f"obs:{obs_id}" for obs_id in observations.ids_of_session(conn, session_id)}
    cited |= {row[0] for row in memory_reads.of_session(conn, session_id, "id")}
    result = forget(store, ForgetRequest(session_id=session_id, reason=reason, within=within,
                                         keep_protected=keep_protected))
    derived = [i for i in memory_reads.citing(conn, sorted(cited)) if i not in result.left] if cited else []
    if derived:
        done = forget(store, ForgetRequest(ids=derived, reason=f"derived from forgotten session {session_id[:80]}",
                                           keep_protected=keep_protected))
        derived, result.left = [d for d in derived if d not in done.left], result.left + done.left
    with store.transaction() as tx:
        meta.delete(tx, meta.summary_state(session_id))
    return result, derived


def _by_filter(store: Parts, request: ForgetRequest, now: float) -> list[Any]:
    """The memories a filter request names (its fields checked by `ForgetRequest.validated`)."""
    types = (request.type,) if request.type is not None else ()
    tiers = (request.tier,) if request.tier is not None else ()
    cutoffs = []
    if request.older_than_days is not None:
        cutoffs.append(now - request.older_than_days * 86400)
    if request.before is not None:
        cutoffs.append(float(request.before))
    project = store.project if request.project is ... else request.project
    chosen = MemoryFilter(projects=None if request.all_projects else (project,), types=types, tiers=tiers,
                          before=min(cutoffs) if cutoffs else None)
    return memory_reads.admitted(store.conn, chosen, memory_reads.FORGOTTEN)


def delete_memories(store: Parts, rows: Sequence[Any], reason: str, now: float, action: str = "forget") -> None:
    """Remove memories and everything derived from them, in one transaction, then update the index."""
    ids = [r["id"] for r in rows]
    for start in range(0, len(ids), 500):
        batch = rows[start:start + 500]
        batch_ids = ids[start:start + 500]
        with store.transaction() as conn:
            later = sorted(neighbours.later_turns(conn, batch_ids) - set(ids))
            vector_rows.delete(conn, batch_ids)
            word_vectors.release(conn, batch_ids)
            links.unlink_memories(conn, batch_ids)
            memories.delete(conn, batch_ids)
            index_outbox.queue(conn, batch_ids, now, op="delete")
            _redo_context(conn, later, now)
            for row in batch:
                audit.append(conn, action, row["id"], row["project"],
                             {"reason": reason, "type": row["type"], "version": row["version"]}, at=now)
    store.indexer.index_soon()


def _redo_context(conn: Any, memory_ids: Sequence[str], now: float) -> None:
    """The turns that followed forgotten ones: BM25 indexes them again (with the turns now before them), and
    they lose their answer chunk until the worker's next pass makes it again with their pieces."""
    vector_rows.drop_answers(conn, memory_ids)
    memories.clear_pieces(conn, memory_ids)
    index_outbox.queue(conn, memory_ids, now)
