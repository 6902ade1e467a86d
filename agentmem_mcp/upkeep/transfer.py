"""Export and import as JSONL: lossless (timestamps, versions, links, confidence), and import never
duplicates (a memory whose id, or whose content in the same project and version chain, exists is skipped).

An export ends with a signature line: the HMAC-SHA256 of every line before it, under a key derived from this
home's audit key (`<database>.audit-key`, 0600, outside the database). An import keeps what its records claim
(source, pin, priority, project) only from a file this home signed, or when the caller's `keep_claims` says the
user confirmed it; otherwise each record comes in as `source = import`, unpinned, not P0, in the store's project.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from ..capture.redact import redact
from ..db import audit, index_outbox, memories, memory_reads
from ..db import links as graph_links
from ..db.memories import MemoryFilter, content_hash
from ..index.entities import extract_entities
from ..models import EXPORT_FORMAT, MEMORY_ID, TIERS, TYPES, InvalidInput, Memory
from ..trust.policy import instruction_reason

if TYPE_CHECKING:
    from ..parts import Parts

FORMAT = EXPORT_FORMAT
COLUMNS = [name for name in Memory.__dataclass_fields__]
SIGNATURE = "signature"
IMPORT_CONFIDENCE = 0.85  # an unsigned record's confidence at most (retention: agent save / import)


def signing_key(store: Parts) -> bytes | None:
    """The key that signs this home's exports (derived from the audit key, which it creates if missing), or None
    for a database without a file."""
    database = audit.database_file(store.conn)
    key = audit.audit_key(database) if database is not None else None
    return hmac.new(key, b"agentmem export signature", hashlib.sha256).digest() if key else None


def _signature(key: bytes, lines: list[str]) -> str:
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for line in lines:
        mac.update(line.rstrip("\n").encode("utf-8") + b"\n")
    return mac.hexdigest()


def export_lines(store: Parts, *, project: str | None = ..., all_projects: bool = True) -> Iterator[str]:
    """The export, line by line: a header, every version of every memory, the links between them, then this
    home's signature of all of them. all_projects=False keeps one project's memories (default: the store's) and
    the global ones, and the links whose two ends are both exported."""
    key = signing_key(store)
    mac = hmac.new(key, digestmod=hashlib.sha256) if key else None
    for line in _unsigned_lines(store, project, all_projects):
        if mac is not None:
            mac.update(line.encode("utf-8") + b"\n")
        yield line
    if mac is not None:
        yield json.dumps({"kind": SIGNATURE, "hmac-sha256": mac.hexdigest()})


def _unsigned_lines(store: Parts, project: str | None, all_projects: bool) -> Iterator[str]:
    conn = store.conn
    yield json.dumps({"kind": "header", "format": FORMAT})
    chosen = MemoryFilter(projects=None if all_projects else [store.project if project is ... else project, None])
    for row in memory_reads.chains(conn, chosen):
        yield json.dumps({"kind": "memory", **Memory.from_row(row).to_dict()}, ensure_ascii=False)
    for row in graph_links.links_within(conn, *memory_reads.ids_query(chosen)):
        yield json.dumps({"kind": "link", **dict(row)})


def export(store: Parts, out: IO[str], **options: Any) -> int:
    count = 0
    for line in export_lines(store, **options):
        out.write(line + "\n")
        count += 1
    return count


@dataclass
class ImportReport:
    imported: int = 0
    skipped: int = 0
    links: int = 0
    errors: int = 0
    signed: bool = False  # signed by this home
    downgraded: int = 0  # records imported without the source, pin, priority or project they claimed


def _check(record: dict[str, Any], line_no: int) -> dict[str, Any]:
    if not isinstance(record.get("id"), str) or not MEMORY_ID.match(record["id"]):
        raise InvalidInput(f"line {line_no}: bad or missing memory id")
    if record.get("tier") not in TIERS or record.get("type") not in TYPES:
        raise InvalidInput(f"line {line_no}: unknown tier or type")
    if not isinstance(record.get("content"), str) or not record["content"].strip():
        raise InvalidInput(f"line {line_no}: empty content")
    return record


def import_(store: Parts, lines: IO[str], *, keep_claims: Callable[[str], bool] | None = None) -> ImportReport:
    """Read an export back. Content, title, tags and files are redacted again on the way in (an export may
    come from anywhere); existing memories are kept. A file this home did not sign keeps what its records claim
    (source, pin, priority, project) only if `keep_claims(what they claim)` returns True (the CLI asks the user on
    a terminal); otherwise its records come in as `source = import`, unpinned, not P0, in the store's project."""
    report = ImportReport()
    links: list[dict[str, Any]] = []
    numbered = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
    records = [(n, _parse(line, n)) for n, line in numbered]
    report.signed = _signed(store, [line for _, line in numbered], [r for _, r in records])
    memories_in = [r for _, r in records if r.get("kind") == "memory"]
    trusted = report.signed
    if not trusted and keep_claims is not None and (claims := _claims(memories_in, store.project)):
        trusted = keep_claims(claims)
    for line_no, record in records:
        kind = record.get("kind")
        if kind == "header":
            if record.get("format") != FORMAT:
                raise InvalidInput(f"unsupported export format {record.get('format')!r}")
        elif kind == "link":
            links.append(record)
        elif kind == "memory":
            claimed = _check(record, line_no)
            if _import_memory(store, claimed if trusted else _as_imported(claimed, store.project), trusted):
                report.imported += 1
                if not trusted and _claims([claimed], store.project, plain=True):
                    report.downgraded += 1
            else:
                report.skipped += 1
        elif kind != SIGNATURE:
            raise InvalidInput(f"line {line_no}: unknown record kind {kind!r}")
    with store.transaction() as conn:
        for link in links:
            if memory_reads.count_existing(conn, [link.get("src_id"), link.get("dst_id")]) == 2:
                graph_links.add_link(conn, link["src_id"], link["dst_id"], str(link.get("relation", "related")),
                               float(link.get("created_at") or store.now()))
                report.links += 1
        audit.append(conn, "import", None, None, {"imported": report.imported, "skipped": report.skipped})
    store.indexer.drain()
    store.backfill.embed_pending()
    return report


def _parse(line: str, line_no: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        raise InvalidInput(f"line {line_no} is not JSON: is this an `agentmem export` file?") from None
    if not isinstance(record, dict):
        raise InvalidInput(f"line {line_no}: unknown record kind None")
    return record


def _signed(store: Parts, lines: list[str], records: list[dict[str, Any]]) -> bool:
    """True when the last line is this home's signature of every line before it."""
    if not records or records[-1].get("kind") != SIGNATURE:
        return False
    key = signing_key(store)
    given = records[-1].get("hmac-sha256")
    return key is not None and isinstance(given, str) and hmac.compare_digest(_signature(key, lines[:-1]), given)


def _claims(records: list[dict[str, Any]], project: str | None, plain: bool = False) -> str:
    """What records claim beyond an import into `project` (empty: nothing), said for the question to the user.
    plain=True also counts a source other than `import`."""
    counts = {"the user's": sum(r.get("source") == "user" for r in records),
              "pinned": sum(bool(r.get("pinned")) for r in records),
              "P0": sum(r.get("priority") == "P0" for r in records),
              "global": sum(r.get("project") is None and project is not None for r in records),
              "of another project": sum(r.get("project") not in (None, project) for r in records)}
    if plain:
        counts["not imported"] = sum(r.get("source", "import") != "import" for r in records)
    said = [f"{n} {what}" for what, n in counts.items() if n]
    return f"its records claim to be {', '.join(said)}" if said else ""


def _as_imported(m: dict[str, Any], project: str | None) -> dict[str, Any]:
    """A record as an unsigned file may bring it: imported, unpinned, not P0, in `project`."""
    priority = m.get("priority") if m.get("priority") in ("P1", "P2") else "P1"
    confidence = m.get("confidence")
    confidence = min(float(confidence), IMPORT_CONFIDENCE) if isinstance(confidence, (int, float)) \
        and not isinstance(confidence, bool) else None
    return {**m, "source": "import", "pinned": False, "priority": priority, "project": project,
            "confidence": confidence}


def _import_memory(store: Parts, m: dict[str, Any], claims_kept: bool) -> bool:
    content = redact(m["content"])
    digest = content_hash(content)
    with store.transaction() as conn:
        if memory_reads.holds_copy(conn, m["id"], digest, m.get("project"), m.get("version", 1), m.get("root_id")):
            return False
        values = {name: m.get(name) for name in COLUMNS}
        values.update(content=content, title=redact(str(m.get("title") or content[:80])), content_hash=digest,
                      embedding_model=None, source_ids=json.dumps(m.get("source_ids") or []),
                      tags=json.dumps([redact(str(t)) for t in m.get("tags") or []]),
                      files=json.dumps([redact(str(f)) for f in m.get("files") or []]),
                      pinned=int(bool(m.get("pinned"))), is_latest=int(bool(m.get("is_latest", True))),
                      root_id=m.get("root_id") or m["id"])
        # an export may come from anywhere: text that addresses the agent stays quarantined (trust/policy.py)
        values["quarantined"] = m.get("quarantined") or instruction_reason(f"{values['title']}\n{content}")
        commit = m.get("anchor_commit")
        values["anchor_commit"] = commit.lower() if isinstance(commit, str) and re.fullmatch(r"[0-9a-fA-F]{7,40}",
                                                                                             commit) else None
        for name, default in (("confidence", 0.85), ("importance", 0.5), ("strength", 1.0), ("access_count", 0),
                              ("version", 1), ("priority", "P1"), ("source", "import")):
            if values.get(name) is None:
                values[name] = default
        for name in ("created_at", "updated_at"):
            if values.get(name) is None:
                values[name] = store.now()
        memories.insert(conn, values)
        graph_links.link_entities(conn, m["id"], extract_entities(f"{values['title']}\n{content}"))
        index_outbox.queue(conn, [m["id"]], store.now())
        audit.append(conn, "import", m["id"], values["project"], {"source": values["source"],
                                                                    "claims_kept": claims_kept})
    return True
