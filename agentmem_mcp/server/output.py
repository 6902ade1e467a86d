"""The shapes of the MCP tools' answers and schemas: compact for the model that reads them, complete in
`structuredContent` for a program. Pure functions; `server/app.py` applies them."""

from __future__ import annotations

import json
import time
from typing import Any

from ..upkeep.ages import age

# A memory's epoch-second fields, shown as ISO 8601 UTC dates.
TIME_FIELDS = ("created_at", "updated_at", "last_accessed_at", "valid_from", "valid_to", "forget_after")
# Bookkeeping a model has no use for: the content hash, the vector model and the version chain's root.
HIDDEN_MEMORY_FIELDS = ("content_hash", "embedding_model", "strength")
# What the compact text of a search answer keeps of each hit (structuredContent keeps them all).
COMPACT_HIT_FIELDS = ("id", "title", "type", "project", "snippet", "score", "age", "why")


def compact_json(data: Any) -> str:
    """JSON without indentation or padding, non-ASCII kept as is."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def iso(epoch: float | None) -> str | None:
    """2026-12-01T08:46:58Z for an epoch-second time; None stays None."""
    if epoch is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(epoch)))


def memory_view(memory: dict[str, Any], now: float) -> dict[str, Any]:
    """A memory as `memory_get` shows it: dates in ISO 8601 UTC, an `age`, no content hash or vector model."""
    view = {key: value for key, value in memory.items() if key not in HIDDEN_MEMORY_FIELDS}
    for key in TIME_FIELDS:
        if key in view:
            view[key] = iso(view[key])
    if memory.get("created_at") is not None:
        view["age"] = age(max(now - float(memory["created_at"]), 0.0))
    return view


def get_answer(memory: dict[str, Any], versions: list[dict[str, Any]] | None, now: float) -> dict[str, Any]:
    """`memory_get`'s answer: the memory, or with history every version once, oldest first."""
    if versions is None:
        return {"memory": memory_view(memory, now)}
    return {"id": memory["id"], "history": [memory_view(v, now) for v in versions]}


def compact_search(answer: dict[str, Any]) -> dict[str, Any]:
    """The part of a search answer a model reads: mode, notes, what the budget left out, and per hit its id,
    title, type, project, snippet, score (2 decimals), age and why; a superseded hit says so."""
    hits = []
    for hit in answer.get("hits", []):
        short = {key: hit[key] for key in COMPACT_HIT_FIELDS if key in hit}
        if isinstance(short.get("score"), float):
            short["score"] = round(short["score"], 2)
        if hit.get("is_latest") is False:
            short["superseded"] = True
        hits.append(short)
    compact: dict[str, Any] = {"mode": answer.get("mode"), "notes": answer.get("notes", [])}
    if answer.get("truncated"):
        compact["truncated"] = answer["truncated"]
    compact["hits"] = hits
    return compact


def compact_schema(schema: Any) -> Any:
    """A tool's input schema without what costs tokens and tells a model nothing: pydantic's generated
    titles, the `null` alternative and `default: null` of an optional argument (omitting it is how a model
    leaves it unset), and a `default` of false or "" (what leaving a flag or a text out means)."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and (value is False or value == ""):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: compact_schema(prop) for name, prop in value.items()}
        else:
            out[key] = compact_schema(value)
    options = out.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        rest = [option for option in options if option != {"type": "null"}]
        del out["anyOf"]
        if len(rest) == 1:
            out = {**rest[0], **out}
        else:
            out["anyOf"] = rest
        if out.get("default", ...) is None:
            del out["default"]
    return out


def output_schema(schema: Any) -> Any:
    """A tool's output schema without pydantic's generated titles (a property named `title` stays)."""
    if isinstance(schema, list):
        return [output_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {key: ({name: output_schema(prop) for name, prop in value.items()}
                  if key in ("properties", "$defs") and isinstance(value, dict) else output_schema(value))
            for key, value in schema.items() if not (key == "title" and isinstance(value, str))}
