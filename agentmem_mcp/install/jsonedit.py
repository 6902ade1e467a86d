"""Change a JSON config file's text only where its data changes: the rest stays byte for byte as it was.

`agentmem install` computes a client config's new content as data (add our server, append our hooks, drop
them again). `patch(text, new)` turns that into the smallest edits of the user's text: a member removed takes
its comma with it, a member added goes after the last one of its object in the object's own layout (its
indent, one line or several, spaces after `:` and `,` or not), a value replaced is written at its own indent.
Hand-formatted arrays and objects that did not change are never reflowed.

`//` and `/* */` comments are read as whitespace (Gemini CLI's settings.json allows them) and kept.
Pure functions, standard library only.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 200
_COMMENT_OR_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
_SCALAR = json.JSONDecoder()


@dataclass
class Node:
    """A JSON value's place in the text: [start, end), and its members (object) or items (array)."""

    kind: str  # "object", "array" or "scalar"
    start: int
    end: int
    keys: list[str] = field(default_factory=list)  # object: member keys, in order
    children: list[Node] = field(default_factory=list)  # object: member values; array: items
    key_starts: list[int] = field(default_factory=list)  # object: where each member's key starts


def blank_comments(text: str) -> str:
    """`text` with every `//` and `/* */` comment outside strings replaced by spaces (newlines kept), so that
    offsets stay the same and the result is plain JSON."""
    def blank(match: re.Match[str]) -> str:
        found = match.group(0)
        return found if found.startswith('"') else re.sub(r"[^\n]", " ", found)

    return _COMMENT_OR_STRING.sub(blank, text)


def loads(text: str) -> Any:
    """The value of a JSON text that may hold comments; ValueError (json.JSONDecodeError) when it is not JSON."""
    return json.loads(blank_comments(text))


def parse(text: str) -> Node:
    """The span tree of a JSON text (comments already blanked); ValueError when it is not JSON."""
    node, end = _value(text, _skip(text, 0), 0)
    if _skip(text, end) != len(text):
        raise ValueError(f"extra data at offset {end}")
    return node


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _value(text: str, i: int, depth: int) -> tuple[Node, int]:
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if i >= len(text):
        raise ValueError("unexpected end of text")
    opener = text[i]
    if opener not in "{[":
        _, end = _SCALAR.raw_decode(text, i)
        return Node("scalar", i, end), end
    node = Node("object" if opener == "{" else "array", i, i)
    closer = "}" if opener == "{" else "]"
    j = _skip(text, i + 1)
    if j < len(text) and text[j] == closer:
        node.end = j + 1
        return node, j + 1
    while True:
        if opener == "{":
            if j >= len(text) or text[j] != '"':
                raise ValueError(f"expected a key at offset {j}")
            key, after = _SCALAR.raw_decode(text, j)
            node.keys.append(key)
            node.key_starts.append(j)
            j = _skip(text, after)
            if j >= len(text) or text[j] != ":":
                raise ValueError(f"expected ':' at offset {j}")
            j = _skip(text, j + 1)
        child, after = _value(text, j, depth + 1)
        node.children.append(child)
        j = _skip(text, after)
        if j < len(text) and text[j] == ",":
            j = _skip(text, j + 1)
            continue
        if j < len(text) and text[j] == closer:
            node.end = j + 1
            return node, j + 1
        raise ValueError(f"expected ',' or '{closer}' at offset {j}")


@dataclass
class _Style:
    unit: int | str  # one level of indent
    spaced: bool  # ", " and ": " in one-line containers
    one_line_file: bool


Edit = tuple[int, int, str]


def patch(text: str, new: Any) -> str:
    """`text` (a JSON document, comments allowed) changed so that it holds `new`, by the smallest edits."""
    blank = blank_comments(text)
    old = json.loads(blank)
    if old == new:
        return text
    tree = parse(blank)
    stripped = blank.strip()
    tight = re.search(r'":[^ \t\r\n]', blank) is not None and re.search(r'": ', blank) is None
    style = _Style(indent_unit(blank), not tight, "\n" not in stripped and '":' in stripped)
    edits: list[Edit] = []
    _diff(blank, tree, old, new, style, edits, style.one_line_file)
    out = text
    last = len(text) + 1
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        if end > last:
            raise ValueError("overlapping edits")  # a bug here, never the user's file: the caller reports it
        out = out[:start] + replacement + out[end:]
        last = start
    return out


def indent_unit(text: str) -> int | str:
    """One level of indent of a JSON text: that of its first nested line (a tab, or a number of spaces; 2 when
    nothing is indented)."""
    match = re.match(r"\s*[{\[]\s*?\n([ \t]+)\S", text or "")
    if not match:
        return 2
    return "\t" if "\t" in match.group(1) else len(match.group(1))


def _diff(text: str, node: Node, old: Any, new: Any, style: _Style, edits: list[Edit], inline_parent: bool) -> None:
    """Edits that make `node` (holding `old`) hold `new`; `inline_parent`: its container is written on one line."""
    if old == new:
        return
    if node.kind == "object" and isinstance(old, dict) and isinstance(new, dict):
        _diff_object(text, node, old, new, style, edits)
    elif node.kind == "array" and isinstance(old, list) and isinstance(new, list):
        _diff_array(text, node, old, new, style, edits)
    else:
        inline = inline_parent if node.kind == "scalar" else _inline(text, node, style)
        edits.append((node.start, node.end, _dump(new, _line_indent(text, node.start), style, inline)))


def _diff_object(text: str, node: Node, old: dict, new: dict, style: _Style, edits: list[Edit]) -> None:
    last_of = {key: n for n, key in enumerate(node.keys)}  # a repeated key: the last one is the value
    gone = [n for n, key in enumerate(node.keys) if key not in new or last_of[key] != n]
    for key in old:
        if key in new and old[key] != new[key]:
            _diff(text, node.children[last_of[key]], old[key], new[key], style, edits, _inline(text, node, style))
    added = [(key, new[key]) for key in new if key not in old]
    _remove_and_insert(text, node, gone, [(len(node.children), added)], style, edits)


def _diff_array(text: str, node: Node, old: list, new: list, style: _Style, edits: list[Edit]) -> None:
    canon = [json.dumps(v, sort_keys=True) for v in old], [json.dumps(v, sort_keys=True) for v in new]
    gone: list[int] = []
    inserts: list[tuple[int, list[Any]]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, *canon, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and i2 - i1 == j2 - j1:
            for offset in range(i2 - i1):
                _diff(text, node.children[i1 + offset], old[i1 + offset], new[j1 + offset], style, edits,
                      _inline(text, node, style))
            continue
        gone.extend(range(i1, i2))
        if j2 > j1:
            inserts.append((i2, new[j1:j2]))
    _remove_and_insert(text, node, gone, inserts, style, edits)


def _remove_and_insert(text: str, node: Node, gone: list[int], inserts: list[tuple[int, list[Any]]],
                       style: _Style, edits: list[Edit]) -> None:
    """Edits that remove the children of `node` numbered in `gone` and put new ones before child `position`
    (or at the end when no kept child follows): (key, value) members for an object, values for an array."""
    removed = set(gone)
    kept = [n for n in range(len(node.children)) if n not in removed]
    pieces = [(position, items) for position, items in sorted(inserts, key=lambda p: p[0]) if items]
    if not removed and not pieces:
        return
    if not kept:  # nothing of the old inside survives: write it anew
        edits.append((node.start + 1, node.end - 1, _inside(text, node, [i for _, items in pieces for i in items],
                                                            style)))
        return
    inline = _inline(text, node, style)
    sep = _separator(text, node, style)
    indent = sep.rsplit("\n", 1)[1] if "\n" in sep else _line_indent(text, _child_start(node, kept[0]))

    def rendered(items: list[Any]) -> list[str]:
        return [_render(node, item, indent, style, inline) for item in items]

    tail: list[str] = []
    for position, items in pieces:
        target = next((n for n in kept if n >= position), None)
        if target is None:
            tail += rendered(items)
        else:
            at = _child_start(node, target)
            edits.append((at, at, "".join(r + "," + sep for r in rendered(items))))
    appended = "".join("," + sep + r for r in tail)
    last_kept, count = kept[-1], len(node.children)
    run: int | None = None
    for n in range(count + 1):
        if n < count and n in removed:
            run = n if run is None else run
            continue
        if run is not None and n < count:  # a run of removed children before a kept one: up to where it starts
            edits.append((_child_start(node, run), _child_start(node, n), ""))
        elif run is not None:  # a run to the end: from the end of the last kept child, with its comma
            edits.append((node.children[last_kept].end, node.children[count - 1].end, appended))
            appended = ""
        run = None
    if appended:
        end = node.children[last_kept].end
        edits.append((end, end, appended))


def _child_start(node: Node, n: int) -> int:
    return node.key_starts[n] if node.kind == "object" else node.children[n].start


def _inline(text: str, node: Node, style: _Style) -> bool:
    """Whether `node` is written on one line: a container with children as it is, an empty one as the file is."""
    return "\n" not in text[node.start:node.end] if node.children else style.one_line_file


def _separator(text: str, node: Node, style: _Style) -> str:
    """The whitespace a child of `node` follows: what is between its first two children after the comma, or
    between the opening bracket and its only child (a space on one line when the file writes one)."""
    if len(node.children) >= 2:
        between = text[node.children[0].end:_child_start(node, 1)]
        return between[between.index(",") + 1:]
    before = text[node.start + 1:_child_start(node, 0)]
    return before if "\n" in before else (" " if style.spaced else "")


def _inside(text: str, node: Node, items: list[Any], style: _Style) -> str:
    """The new inside of a container whose old children are all gone (or that had none)."""
    if _inline(text, node, style):
        return (", " if style.spaced else ",").join(_render(node, item, "", style, True) for item in items)
    outer = _line_indent(text, node.start)
    inner = outer + (style.unit if isinstance(style.unit, str) else " " * style.unit)
    body = [inner + _render(node, item, inner, style, False) for item in items]
    return ("\n" + ",\n".join(body) + "\n" + outer) if body else ""


def _render(node: Node, item: Any, indent: str, style: _Style, inline: bool) -> str:
    """A new child of `node` at `indent`: a (key, value) member of an object, or an array item."""
    if node.kind == "object":
        key, value = item
        return json.dumps(key, ensure_ascii=False) + (": " if style.spaced else ":") + _dump(value, indent, style,
                                                                                             inline)
    return _dump(item, indent, style, inline)


def _dump(value: Any, indent: str, style: _Style, inline: bool) -> str:
    if inline or not isinstance(value, (dict, list)) or not value:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": ") if style.spaced else (",", ":"))
    return json.dumps(value, ensure_ascii=False, indent=style.unit).replace("\n", "\n" + indent)


def _line_indent(text: str, position: int) -> str:
    line_start = text.rfind("\n", 0, position) + 1
    line = text[line_start:position]
    return line[: len(line) - len(line.lstrip(" \t"))]
