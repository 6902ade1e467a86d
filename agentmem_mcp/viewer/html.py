"""HTML built by functions that escape every string they are given: `Markup` marks what is already safe HTML,
anything else (memory content, titles, paths, prompts: attacker-controlled text) is escaped on the way in.
A link's target comes from `href`, which accepts only this server's own paths and puts this run's path in front
of them (`ROOT`, set for each request by `security.Guard`)."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from string import Template
from typing import Any
from urllib.parse import urlencode

VOID = frozenset({"br", "hr", "input", "img", "meta", "link"})
ROOT: ContextVar[str] = ContextVar("agentmem_viewer_root", default="")  # this run's path, e.g. "/r7Kq..."


class Markup(str):
    """A string that is already safe HTML (built by this module)."""


def esc(value: Any) -> Markup:
    """`value` as HTML text: Markup as is, None as '', anything else escaped (quotes too)."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("")
    return Markup(html.escape(str(value), quote=True))


def join(items: Iterable[Any], sep: str = "") -> Markup:
    return Markup(esc(sep).join(esc(item) for item in items))


def href(path: str, **params: Any) -> str:
    """A link to this server's `path` (it must start with one '/') under this run's path (once: a link `href` made
    is left as it is), with the query `params` (None dropped)."""
    if not path.startswith("/") or path.startswith("//"):
        raise ValueError(f"not a local path: {path!r}")
    query = urlencode({k: v for k, v in params.items() if v is not None and v != ""}, doseq=True)
    root = ROOT.get()
    return ("" if root and (path + "/").startswith(root + "/") else root) + path + (f"?{query}" if query else "")


def tag(element: str, /, *children: Any, **attrs: Any) -> Markup:
    """<element attrs>children</element>; attribute names drop a trailing '_' (class_) and turn '_' into '-'
    (data_live); a value of True writes the bare attribute, False or None leaves it out."""
    parts = [element]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        attr = key.rstrip("_").replace("_", "-")
        if attr in ("href", "action", "src") and not isinstance(value, Markup):
            value = href(str(value))  # refuses javascript:, data:, other hosts
        parts.append(attr if value is True else f'{attr}="{esc(value)}"')
    opening = f"<{' '.join(parts)}>"
    if element in VOID:
        return Markup(opening)
    return Markup(f"{opening}{join(children)}</{element}>")


def table(headers: Iterable[Any], rows: Iterable[Iterable[Any]], **attrs: Any) -> Markup:
    head = tag("thead", tag("tr", *(tag("th", h) for h in headers)))
    body = tag("tbody", *(tag("tr", *(tag("td", cell) for cell in row)) for row in rows))
    return tag("table", head, body, **attrs)


def definition_list(pairs: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> Markup:
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    return tag("dl", *(Markup(tag("dt", k) + tag("dd", v)) for k, v in items))


def hidden(name: str, value: Any) -> Markup:
    return tag("input", type="hidden", name=name, value=value)


def post_form(action: str, csrf: str, *fields: Any, button: str, danger: bool = False, **attrs: Any) -> Markup:
    """A POST form to `action` carrying the CSRF token, its `fields` and a submit button."""
    return tag("form", hidden("csrf", csrf), *fields,
               tag("button", button, type="submit", class_="danger" if danger else None),
               method="post", action=action, class_="inline", **attrs)


def render(template: Template, **values: Any) -> str:
    """Fill a page template; every value is escaped unless it is Markup."""
    return template.substitute({key: esc(value) for key, value in values.items()})
