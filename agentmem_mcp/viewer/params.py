"""Reading a page's query parameters: text cut to a length, numbers in a range, a choice among names; a bad
value is a one-line InvalidInput (shown on the page with status 400)."""

from __future__ import annotations

from starlette.requests import Request

from ..models import InvalidInput, check_choice

PER_PAGE = 50


def text(request: Request, name: str, limit: int = 2000) -> str:
    return request.query_params.get(name, "").strip()[:limit]


def number(request: Request, name: str, low: float, high: float) -> float | None:
    raw = text(request, name, 40)
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a number from {low:g} to {high:g}, not {raw[:20]!r}") from None
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be from {low:g} to {high:g}")
    return value


def page_number(request: Request) -> int:
    return int(number(request, "page", 1, 10 ** 6) or 1)


def choice(request: Request, name: str, choices: tuple[str, ...]) -> str | None:
    value = text(request, name, 40)
    return check_choice(name, value, choices) if value else None
