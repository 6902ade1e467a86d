"""Relative time in a query ("yesterday", "3 days ago", "last week", "in the past two months").

Pure functions. Search uses the window to weigh memories from that time more (a soft preference, not
a filter: the explicit `since` / `until` arguments filter). A query that names no time is unaffected.
"""

from __future__ import annotations

import datetime as dt
import re

DAY = 86400.0
_COUNT = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
          "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_N = r"(\d{1,4}|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_AGO = re.compile(rf"\b{_N}\s+(day|week|month|year)s?\s+ago\b")
_WITHIN = re.compile(
    rf"\b(?:in|during|over|within|for)\s+the\s+(?:last|past)\s+(?:{_N}\s+)?(day|week|month|year)s?\b")
_LAST = re.compile(r"\blast\s+(week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend)\b")
_TODAY = re.compile(r"\b(?:today|this morning|this afternoon|earlier today|tonight)\b")
_THIS = re.compile(r"\bthis\s+(week|month|year)\b")


def _count(word: str | None) -> float:
    if not word:
        return 1
    return float(word) if word.isdigit() else _COUNT.get(word, 1)


def time_window(query: str, now: float) -> tuple[float, float] | None:
    """The span of time a query points at, as (start, end) unix times, or None when it names none.

    "N days/weeks/months/years ago" is a window around that day (±20%, at least ±1.5 days); "in the
    past N weeks" and "this week" reach back from now; "last Saturday" is that day ±1.5 days (local
    time); "last week/month" the two periods back from now; "yesterday", "today" the last day or two.
    """
    text = query.lower()
    if m := _AGO.search(text):
        days = _count(m.group(1)) * _UNIT_DAYS[m.group(2)]
        half = max(1.5, 0.2 * days)
        return now - (days + half) * DAY, now - (days - half) * DAY
    if m := _WITHIN.search(text):
        return now - (_count(m.group(1)) * _UNIT_DAYS[m.group(2)] + 1) * DAY, now
    if "yesterday" in text:
        return now - 2 * DAY, now
    if _TODAY.search(text):
        return now - DAY, now
    if m := _THIS.search(text):
        return now - (_UNIT_DAYS[m.group(1)] + 1) * DAY, now
    if m := _LAST.search(text):
        word = m.group(1)
        if word in _WEEKDAYS or word == "weekend":
            weekday = 5 if word == "weekend" else _WEEKDAYS.index(word)
            today = dt.datetime.fromtimestamp(now).weekday()
            back = (today - weekday) % 7 or 7
            return now - (back + 1.5) * DAY, now - (back - 1.5) * DAY
        return now - 2 * _UNIT_DAYS[word] * DAY, now
    return None
