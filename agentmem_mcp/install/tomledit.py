"""Set or remove one table of a TOML file (Codex's `config.toml`) and leave every other byte as it was.

The standard library reads TOML (`tomllib`) but writes none, and a rewritten file would lose the user's
comments and layout. This editor knows the shape it writes, a table of its own (`[mcp_servers.agentmem]`
with string and string-array keys), and changes only lines of that table: a key's line (all of its lines,
for a value over several) replaced, a missing key added after the table's header, the whole table (and its
sub-tables) removed. Every result is read back with `tomllib` and compared with what was meant; anything else
(the table written inline, as dotted keys, or a file this line-based reading gets wrong) raises `TomlEditError`
and nothing is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

_HEADER = re.compile(r"^[ \t]*\[(?!\[)([^\]\n]*)\][ \t]*(?:#.*)?$")
_ARRAY_HEADER = re.compile(r"^[ \t]*\[\[")
_KEY = re.compile(r'^[ \t]*("(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_-]+)[ \t]*=')
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_DOTTED_PART = re.compile(r'\s*("(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_-]+)\s*(?:\.|$)')


class TomlEditError(ValueError):
    """The file cannot be changed safely by this editor; the message says what is in the way."""


class TomlSyntaxError(TomlEditError):
    """The text is not TOML (the message is tomllib's: what and where)."""


def loads(text: str) -> dict[str, Any]:
    """The TOML document `text` as data (TomlSyntaxError when it is not TOML)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlSyntaxError(str(exc)) from None


def mask_values(text: str, hidden: Callable[[tuple[str, ...], str], bool], mask: str) -> str:
    """`text` (TOML) with the value of every key for which `hidden(table path, key)` is true replaced by `mask`
    (a value over several lines by one line); the rest as it was. TomlSyntaxError when it is not TOML."""
    loads(text)
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    table: tuple[str, ...] = ()
    in_string = None
    n = 0
    while n < len(lines):
        line = lines[n]
        if in_string is None and (header := _header_path(line)) is not None:
            table = header
        elif in_string is None and (key := _line_key(line)) is not None and hidden(table, key):
            out.append(line[:line.index("=") + 1] + " " + json.dumps(mask) + "\n")
            n += _value_lines(lines, n)
            continue
        in_string = _string_state(line, in_string)
        out.append(line)
        n += 1
    return "".join(out)


def dumps_value(value: Any) -> str:
    """A string, a number, a boolean or an array of them as TOML (JSON's string escapes are TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(dumps_value(v) for v in value) + "]"
    raise TomlEditError(f"cannot write a {type(value).__name__} as a TOML value here")


def table_key(path: tuple[str, ...]) -> str:
    """The header of table `path`: `mcp_servers.agentmem`, with parts quoted where TOML needs it."""
    return ".".join(p if _BARE.fullmatch(p) else json.dumps(p) for p in path)


def set_table(text: str, path: tuple[str, ...], values: dict[str, Any], drop: tuple[str, ...] = ()) -> str:
    """`text` with table `path` holding `values` (other keys of the table kept, those in `drop` removed); the
    table is appended at the end when the file has none."""
    before = loads(text)
    lines = text.splitlines(keepends=True)
    span = _table_span(lines, path)
    if span is None:
        _refuse_other_forms(before, path)
        block = f"[{table_key(path)}]\n" + "".join(f"{_key(k)} = {dumps_value(v)}\n" for k, v in values.items())
        prefix = text if not text or text.endswith("\n") else text + "\n"
        after = prefix + ("\n" if prefix.strip() else "") + block
    else:
        header, end = span
        body = lines[header + 1:end]
        replaced: dict[str, str] = {}
        kept: list[str] = []
        n = 0
        while n < len(body):
            key = _line_key(body[n])
            length = _value_lines(body, n) if key is not None else 1
            if key in values and key not in replaced:
                current = body[n:n + length]
                same = _parsed(current).get(key, None) == _plain(values[key])
                replaced[key] = "".join(current) if same else f"{_key(key)} = {dumps_value(values[key])}\n"
                kept.append(replaced[key])
            elif key not in values and key not in drop:
                kept.extend(body[n:n + length])
            n += length
        missing = [f"{_key(k)} = {dumps_value(v)}\n" for k, v in values.items() if k not in replaced]
        header_line = lines[header] if lines[header].endswith("\n") else lines[header] + "\n"
        after = "".join(lines[:header]) + header_line + "".join(missing) + "".join(kept) + "".join(lines[end:])
    expected = _with_table(before, path, values, drop)
    if loads(after) != expected:
        raise TomlEditError(f"[{table_key(path)}] is written in a form this editor does not change safely")
    return after


def remove_table(text: str, path: tuple[str, ...]) -> str:
    """`text` without table `path` and its sub-tables (unchanged when it has none)."""
    before = loads(text)
    if _get(before, path) is None:
        return text
    lines = text.splitlines(keepends=True)
    span = _table_span(lines, path)
    if span is None:
        _refuse_other_forms(before, path, removing=True)
        raise TomlEditError(f"[{table_key(path)}] is written in a form this editor does not change safely")
    header, end = span
    while end < len(lines) and (sub := _header_path(lines[end])) is not None and sub[:len(path)] == path:
        end = _next_header(lines, end + 1)
    start = header
    if start > 0 and not lines[start - 1].strip() and (end == len(lines) or not lines[end].strip()):
        start -= 1  # the blank line that set the table apart goes with it
    after = "".join(lines[:start] + lines[end:])
    if loads(after) not in (_without(before, path, prune=False), _without(before, path, prune=True)):
        raise TomlEditError(f"[{table_key(path)}] is written in a form this editor does not change safely")
    return after


def _refuse_other_forms(data: dict[str, Any], path: tuple[str, ...], removing: bool = False) -> None:
    if _get(data, path) is not None:
        verb = "remove it by hand" if removing else "write it as its own table or remove it"
        raise TomlEditError(f"{table_key(path)} is set without a [{table_key(path)}] table of its own "
                            f"(inline or as dotted keys); {verb}, then run again")


def _table_span(lines: list[str], path: tuple[str, ...]) -> tuple[int, int] | None:
    """(header line, first line after the table's own keys) of table `path`, or None."""
    in_string = None
    for n, line in enumerate(lines):
        in_string = _string_state(line, in_string)
        if in_string is None and _header_path(line) == path:
            return n, _next_header(lines, n + 1)
    return None


def _next_header(lines: list[str], start: int) -> int:
    in_string = None
    for n in range(start, len(lines)):
        was = in_string
        in_string = _string_state(lines[n], in_string)
        if was is None and (_header_path(lines[n]) is not None or _ARRAY_HEADER.match(lines[n])):
            return n
    return len(lines)


def _string_state(line: str, state: str | None) -> str | None:
    """Whether a multi-line string ("\"\"\"" or "'''") is still open after `line`."""
    for quote in re.findall(r'"""|\'\'\'', line):
        if state is None:
            state = quote
        elif quote == state:
            state = None
    return state


def _header_path(line: str) -> tuple[str, ...] | None:
    match = _HEADER.match(line)
    if not match:
        return None
    parts, rest = [], match.group(1)
    while rest.strip():
        part = _DOTTED_PART.match(rest)
        if not part:
            return None
        raw = part.group(1)
        parts.append(json.loads(raw) if raw.startswith('"') else raw.strip("'"))
        rest = rest[part.end():]
    return tuple(parts)


def _line_key(line: str) -> str | None:
    match = _KEY.match(line)
    if not match:
        return None
    raw = match.group(1)
    return json.loads(raw) if raw.startswith('"') else raw.strip("'")


def _value_lines(body: list[str], n: int) -> int:
    """How many lines the key-value pair starting at body[n] takes (a multi-line array or string)."""
    for count in range(1, len(body) - n + 1):
        try:
            tomllib.loads("".join(body[n:n + count]))
            return count
        except tomllib.TOMLDecodeError:
            continue
    return 1


def _parsed(lines: list[str]) -> dict[str, Any]:
    try:
        return tomllib.loads("".join(lines))
    except tomllib.TOMLDecodeError:
        return {}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _key(key: str) -> str:
    return key if _BARE.fullmatch(key) else json.dumps(key)


def _get(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _with_table(data: dict[str, Any], path: tuple[str, ...], values: dict[str, Any],
                drop: tuple[str, ...]) -> dict[str, Any]:
    out = _copy(data)
    node = out
    for part in path:
        node = node.setdefault(part, {})
    for key in drop:
        node.pop(key, None)
    node.update({k: list(v) if isinstance(v, tuple) else v for k, v in values.items()})
    return out


def _without(data: dict[str, Any], path: tuple[str, ...], *, prune: bool) -> dict[str, Any]:
    """`data` without `path`; prune=True: parent tables left empty go too (they were named only through it)."""
    out = _copy(data)
    parents = [out]
    for part in path[:-1]:
        parents.append(parents[-1][part])
    del parents[-1][path[-1]]
    for depth in range(len(path) - 1, 0, -1):
        if prune and parents[depth] == {}:
            del parents[depth - 1][path[depth - 1]]
    return out


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
