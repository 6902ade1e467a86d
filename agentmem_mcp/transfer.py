"""Export and import as JSONL: lossless (timestamps, versions, links, confidence), and import never
duplicates (a memory whose id, or whose content in the same project and version chain, exists is skipped).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from .capture.redact import redact
from .db import audit, index_outbox, memories, memory_reads
from .db import links as graph_links
from .db.memories import MemoryFilter, content_hash
from .index.entities import extract_entities
from .models import EXPORT_FORMAT, MEMORY_ID, TIERS, TYPES, InvalidInput, Memory
from .trust import instruction_reason

if TYPE_CHECKING:
    from .parts import Parts

FORMAT = EXPORT_FORMAT
COLUMNS = [name for name in Memory.__dataclass_fields__]


def export_lines(store: Parts, *, project: str | None = ..., all_projects: bool = True) -> Iterator[str]:
    """The export, line by line: a header, every version of every memory, then the links between them.
    all_projects=False keeps one project's memories (default: the store's) and the global ones, and the
    links whose two ends are both exported."""
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


def _check(record: dict[str, Any], line_no: int) -> dict[str, Any]:
    if not isinstance(record.get("id"), str) or not MEMORY_ID.match(record["id"]):
        raise InvalidInput(f"line {line_no}: bad or missing memory id")
    if record.get("tier") not in TIERS or record.get("type") not in TYPES:
        raise InvalidInput(f"line {line_no}: unknown tier or type")
    if not isinstance(record.get("content"), str) or not record["content"].strip():
        raise InvalidInput(f"line {line_no}: empty content")
    return record


def import_(store: Parts, lines: IO[str]) -> ImportReport:
    """Read an export back. Content, title, tags and files are redacted again on the way in (an export may
    come from anywhere); existing memories are kept."""
    report = ImportReport()
    links: list[dict[str, Any]] = []
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise InvalidInput(f"line {line_no} is not JSON: is this an `agentmem export` file?") from None
        kind = record.get("kind") if isinstance(record, dict) else None
        if kind == "header":
            if record.get("format") != FORMAT:
                raise InvalidInput(f"unsupported export format {record.get('format')!r}")
        elif kind == "link":
            links.append(record)
        elif kind == "memory":
            if _import_memory(store, _check(record, line_no)):
                report.imported += 1
            else:
                report.skipped += 1
        else:
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


def _import_memory(store: Parts, m: dict[str, Any]) -> bool:
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
        # an export may come from anywhere: text that addresses the agent stays quarantined (trust.py)
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
    return True
