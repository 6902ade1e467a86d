"""Time named in a query: dates ("on 7 July, 2023", "in March", "2023-07-07", "in 2024") and relative time
("yesterday", "3 days ago", "last week", "in the past two months").

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
_YESTERDAY = re.compile(r"\byesterday\b")
_TODAY = re.compile(r"\b(?:today|this morning|this afternoon|earlier today|tonight)\b")
_THIS = re.compile(r"\bthis\s+(week|month|year)\b")


_MONTHS = {name: n for n, names in enumerate(
    (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
     ("november", "nov"), ("december", "dec")), start=1) for name in names}
_M = r"(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_MONTH_WORD = r"(january|february|march|april|may|june|july|august|september|october|november|december)"
_D = r"(\d{1,2})(?:st|nd|rd|th)?"
_Y = r"(\d{4})"
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_SEP = r"(?:,\s*|\s+)"
_DAY_MONTH_YEAR = re.compile(rf"\b{_D}\s+(?:of\s+)?{_M}{_SEP}{_Y}\b")
_MONTH_DAY_YEAR = re.compile(rf"\b{_M}\s+{_D}{_SEP}{_Y}\b")
_MONTH_YEAR = re.compile(rf"\b{_M}{_SEP}{_Y}\b")
# without a year, a day only after a preposition ("on 3 May", "since June 2nd"): "3 may be 4" is no date
_ON = r"\b(?:on|since|by|until|till|from|before|after)\s+(?:the\s+)?"
_DAY_MONTH = re.compile(rf"{_ON}{_D}\s+(?:of\s+)?{_MONTH_WORD}\b")
_MONTH_DAY = re.compile(rf"{_ON}{_MONTH_WORD}\s+{_D}\b")
# a bare month name only after a preposition: "may" and "march" are also verbs
_IN_MONTH = re.compile(
    rf"\b(?:in|during|since|of|early|late|mid|until|till|by)[\s-]+(?:early\s+|late\s+|mid-?)?{_MONTH_WORD}\b")
_IN_YEAR = re.compile(rf"\b(?:in|during|of|since)\s+{_Y}\b")


def _midnight(year: int, month: int, day: int) -> float | None:
    try:
        return dt.datetime(year, month, day).timestamp()
    except (ValueError, OverflowError):
        return None


def _day(year: int, month: int, day: int) -> tuple[float, float] | None:
    start = _midnight(year, month, day)
    return None if start is None else (start - 0.5 * DAY, start + 1.5 * DAY)


def _month(year: int, month: int) -> tuple[float, float] | None:
    start = _midnight(year, month, 1)
    end = _midnight(year + (month == 12), month % 12 + 1, 1)
    return None if start is None or end is None else (start - DAY, end + DAY)


def _latest_year(now: float, month: int, day: int = 1) -> int:
    """The year of the latest `month`/`day` that is not after now ("in March" asked in May: this March)."""
    today = dt.datetime.fromtimestamp(now)
    return today.year if (month, day) <= (today.month, today.day) else today.year - 1


def date_window(query: str, now: float) -> tuple[float, float] | None:
    """The day, month or year a query names, as a window in local time with a margin; None if it names none.
    A day or month without a year is the latest one not after `now`."""
    text = query.lower()
    if m := _ISO_DAY.search(text):
        return _day(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if m := _DAY_MONTH_YEAR.search(text):
        return _day(int(m.group(3)), _MONTHS[m.group(2)], int(m.group(1)))
    if m := _MONTH_DAY_YEAR.search(text):
        return _day(int(m.group(3)), _MONTHS[m.group(1)], int(m.group(2)))
    if m := _MONTH_YEAR.search(text):
        return _month(int(m.group(2)), _MONTHS[m.group(1)])
    for pattern, day_group, month_group in ((_DAY_MONTH, 1, 2), (_MONTH_DAY, 2, 1)):
        if m := pattern.search(text):
            month, day = _MONTHS[m.group(month_group)], int(m.group(day_group))
            if 1 <= day <= 31:
                return _day(_latest_year(now, month, day), month, day)
    if m := _IN_MONTH.search(text):
        month = _MONTHS[m.group(1)]
        return _month(_latest_year(now, month), month)
    if m := _IN_YEAR.search(text):
        year = int(m.group(1))
        start, end = _midnight(year, 1, 1), _midnight(year + 1, 1, 1)
        return None if start is None or end is None else (start - DAY, end + DAY)
    return None


def _count(word: str | None) -> float:
    if not word:
        return 1
    return float(word) if word.isdigit() else _COUNT.get(word, 1)


def time_window(query: str, now: float) -> tuple[float, float] | None:
    """The span of time a query points at, as (start, end) unix times, or None when it names none.

    A date the query names wins over relative words ("last weekend, as I said on 10 April 2023" is about
    the days around 10 April 2023): see `date_window`. "N days/weeks/months/years ago" is a window
    around that day (±20%, at least ±1.5 days); "in the past N weeks" and "this week" reach back from
    now; "last Saturday" is that day ±1.5 days (local time); "last week/month" the two periods back from
    now; "yesterday", "today" the last day or two.
    """
    if window := date_window(query, now):
        return window
    text = query.lower()
    if m := _AGO.search(text):
        days = _count(m.group(1)) * _UNIT_DAYS[m.group(2)]
        half = max(1.5, 0.2 * days)
        return now - (days + half) * DAY, now - (days - half) * DAY
    if m := _WITHIN.search(text):
        return now - (_count(m.group(1)) * _UNIT_DAYS[m.group(2)] + 1) * DAY, now
    if _YESTERDAY.search(text):
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


_RELATIVE = (_AGO, _WITHIN, _YESTERDAY, _TODAY, _THIS, _LAST)


def without_relative_time(query: str) -> str:
    """The query without the relative time words that `time_window` reads ("what did I buy in the past two
    months" -> "what did I buy"), for keyword search: the window already weighs memories by that time, and
    as keywords "past", "last" and "month" only find text that happens to say them. Dates stay ("in March",
    "on 7 July, 2023"): a memory may name them. A query of nothing but time words is returned unchanged."""
    text = query.lower()
    if len(text) != len(query):  # lowercasing moved the offsets (rare non-ASCII): leave the query alone
        return query
    spans = sorted(m.span() for pattern in _RELATIVE for m in pattern.finditer(text))
    if not spans:
        return query
    kept, at = [], 0
    for start, end in spans:
        kept.append(query[at:max(at, start)])
        at = max(at, end)
    kept.append(query[at:])
    stripped = " ".join("".join(kept).split())
    return stripped if re.search(r"\w", stripped) else query
