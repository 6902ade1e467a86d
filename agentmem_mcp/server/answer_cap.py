"""A size cap for every answer an MCP tool hands a model: counts stay whole, lists keep a few examples, long texts
are cut, and the answer says what was left out and how to see it.

A list longer than `items` keeps its first entries (its last for a list named in `keep_end`, such as a version
history whose newest entries matter most); `omitted` then says how many of each list were left out. When the
answer's JSON is still over `chars`, its longest texts are cut to one common length, the longest length that fits
(each keeps its start); `cut` then gives each cut text's full length by its place in the answer
("memory.content", "history.2.content"). `more`, when anything was left out, is the tool's own words on how to see
the rest. Pure functions: `server/app.py` applies them to each tool's answer, which is both the text the model reads and
the structuredContent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

CUT_MARK = "…"
MIN_TEXT_CHARS = 200  # a text is never cut shorter than this: a cap that small says nothing
RESERVED_CHARS = 400  # of the cap, kept for `omitted`, `cut` and `more` themselves


@dataclass(frozen=True)
class Cap:
    """How much of an answer a tool may hand a model: `items` entries per list, `chars` characters of JSON."""

    items: int
    chars: int
    keep_end: tuple[str, ...] = ()


def json_chars(data: Any) -> int:
    """The length of `data` as the compact JSON the tools answer with."""
    return len(json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str))


def cap_answer(answer: dict[str, Any], cap: Cap, more: str) -> dict[str, Any]:
    """`answer` within `cap` (a new dict; the input is left as it was), with `omitted`, `cut` and `more` when
    something was left out. `more` may name `{omitted}`, the number of list entries left out in all."""
    capped = dict(answer)
    omitted: dict[str, int] = {}
    for key, value in answer.items():
        if isinstance(value, list) and len(value) > cap.items:
            capped[key] = value[-cap.items:] if key in cap.keep_end else value[:cap.items]
            omitted[key] = len(value) - cap.items
    cut = _cut_texts(capped, cap.chars - RESERVED_CHARS)
    if omitted:
        capped["omitted"] = omitted
    if cut:
        capped["cut"] = cut
    if omitted or cut:
        capped["more"] = more.replace("{omitted}", str(max(omitted.values(), default=0)))
    return capped


def _texts(data: Any, path: str = "") -> list[tuple[str, Any, Any, int]]:
    """(place, container, key, length) of each text inside `data`'s dicts and lists."""
    found: list[tuple[str, Any, Any, int]] = []
    entries = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in entries:
        place = f"{path}.{key}" if path else str(key)
        if isinstance(value, str):
            found.append((place, data, key, len(value)))
        elif isinstance(value, (dict, list)):
            found.extend(_texts(value, place))
    return found


def _cut_texts(answer: dict[str, Any], chars: int) -> dict[str, int]:
    """Cut `answer`'s longest texts in place (copying the dicts and lists on their way) so that its JSON fits in
    `chars`: every text over one common length is cut to it, the longest such length that fits (JSON escapes make
    a text longer than its characters, so a second pass may cut further). Returns each cut text's full length by
    place."""
    cut: dict[str, int] = {}
    for _ in range(3):
        excess = json_chars(answer) - chars
        if excess <= 0:
            break
        lengths = sorted((length for *_, length in _texts(answer)), reverse=True)
        limit, prefix = MIN_TEXT_CHARS, 0
        for n, length in enumerate(lengths, start=1):
            prefix += length
            floor = max(lengths[n] if n < len(lengths) else 0, MIN_TEXT_CHARS)
            if prefix - n * floor >= excess:  # cutting the n longest to `floor` would be enough
                limit = max((prefix - excess) // n, MIN_TEXT_CHARS)
                break
        _copy_path(answer)
        for place, container, key, length in _texts(answer):
            if length > limit:
                container[key] = container[key][:limit - len(CUT_MARK)] + CUT_MARK
                cut.setdefault(place, length)
    return cut


def _copy_path(data: Any) -> None:
    """Replace the dicts and lists inside `data` by copies, so cutting its texts leaves the caller's alone."""
    entries = data.items() if isinstance(data, dict) else enumerate(data)
    for key, value in list(entries):
        if isinstance(value, dict):
            data[key] = dict(value)
            _copy_path(data[key])
        elif isinstance(value, list):
            data[key] = list(value)
            _copy_path(data[key])
