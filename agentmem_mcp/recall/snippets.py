"""What a search hit shows of its memory: the part that holds the query's words (pure).

`snippet` is the window of a memory's text with the most distinct query words, each weighted by its rarity;
`summary_snippet` picks a session summary's lines and items instead (a question may touch two far apart);
`with_files` adds the files a memory names when the question asks which file holds something."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from ..index import vectors
from ..index.tokenize import STOPWORDS

SNIPPET_CHARS = 480
_SNIPPET_STOP = frozenset(STOPWORDS)


def _stem(term: str) -> str:
    """A query word cut to the part its other forms share ("models" meets "model_comparison.py", "compares"
    meets "comparison", "simpler" meets "useSimpleTodos"), for finding it in text."""
    for suffix in ("ing", "es", "ed", "er", "s"):
        if term.endswith(suffix) and len(term) - len(suffix) >= 4:
            return term[:-len(suffix)]
    return term


SUMMARY_SNIPPET_ITEMS = 3
FAILURE_STEMS = ("fail", "error", "refus", "block", "denied", "reject", "crash", "broke")


def _needle(stem: str) -> str:
    """How a query word is looked for in text: a two-letter word as a whole word (`rm`, `pr`), a three-letter
    stem as a word's start (`fix` in "fixes"), a longer one anywhere (`model` in "model_comparison.py")."""
    if len(stem) <= 2:
        return rf"\b{re.escape(stem)}\b"
    return rf"\b{re.escape(stem)}" if len(stem) == 3 else re.escape(stem)


def _occurrences(lowered: str, query_terms: Sequence[str],
                 weights: dict[str, float] | None) -> tuple[list[tuple[int, str]], dict[str, float]]:
    """Where each query word occurs in a lowered text, as (position, term), and each term's weight (its rarity
    when `weights` gives it, else 1); the words of a failure count as one term."""
    found: list[tuple[int, str]] = []
    weight: dict[str, float] = {}
    for word in {t for t in query_terms if len(t) > 1 and t not in _SNIPPET_STOP}:
        stem = _stem(word)
        failure = stem.startswith(FAILURE_STEMS)
        term = "(failure)" if failure else stem  # a question about a failure meets the error, however worded
        weight[term] = max(weight.get(term, 0.0), (weights or {}).get(word, 1.0))
        for needle in (FAILURE_STEMS if failure else (stem,)):
            for match in re.finditer(_needle(needle), lowered):
                if len(found) >= 400:
                    break
                found.append((match.start(), term))
    return found, weight


def snippet(content: str, query_terms: Sequence[str], limit: int = SNIPPET_CHARS,
            weights: dict[str, float] | None = None) -> str:
    """The part of the content that holds the most distinct query words, each counted by its weight (its
    rarity, when `weights` gives it: 1 otherwise); the earliest such part on a tie."""
    text = " ".join(content.split())
    if len(text) <= limit:
        return text
    found, weight = _occurrences(text.lower(), query_terms, weights)
    start, best = 0, 0.0
    for at, _ in sorted(found):
        begin = max(0, at - limit // 4)
        count = sum(weight[t] for t in {term for pos, term in found if begin <= pos < begin + limit - len(term)})
        if count > best + 1e-9:
            start, best = begin, count
    piece = text[start:start + limit]
    return ("…" if start else "") + piece + ("…" if start + limit < len(text) else "")


def summary_snippet(content: str, query_terms: Sequence[str], limit: int = SNIPPET_CHARS,
                    weights: dict[str, float] | None = None) -> str:
    """What a session summary shows for a query: its lines and reported items that hold the query's words
    (the one adding the most weight first, then the others holding some, then the item after each chosen
    one, up to `limit`), in the summary's order, joined by " … "; a plain snippet when no item holds any. A
    summary's lines are separate facts, and a question may touch two that lie far apart ("Asked: /init" and
    "Other tool errors: Write of CLAUDE.md ...")."""
    items = vectors.summary_pieces(content, min_chars=1)
    terms_of = [{term for _, term in _occurrences(item.lower(), query_terms, weights)[0]} for item in items]
    weight = _occurrences(content.lower(), query_terms, weights)[1]
    chosen: list[int] = []
    covered: set[str] = set()
    while len(chosen) < SUMMARY_SNIPPET_ITEMS:
        gains = [(sum(weight[t] for t in terms - covered), -index) for index, terms in enumerate(terms_of)
                 if index not in chosen]
        if not gains or max(gains)[0] <= 0:
            break
        index = -max(gains)[1]
        chosen.append(index)
        covered |= terms_of[index]
    if not chosen:
        return snippet(content, query_terms, limit, weights)
    items = [" ".join(item.split()) for item in items]
    used = sum(len(items[i]) + 3 for i in chosen)
    # room left: the other items holding query words, then the item after each chosen one (its context)
    more = sorted((i for i, terms in enumerate(terms_of) if terms and i not in chosen),
                  key=lambda i: -sum(weight[t] for t in terms_of[i]))
    for index in [*more, *(i + 1 for i in list(chosen))]:
        if index < len(items) and index not in chosen and used + len(items[index]) + 3 <= limit:
            chosen.append(index)
            used += len(items[index]) + 3
    parts = [items[i] for i in sorted(chosen)]
    if used > limit:
        share = max(80, limit // len(parts) - 3)
        parts = [snippet(part, query_terms, share, weights) for part in parts]
    return " … ".join(parts)


FILES_IN_SNIPPET = 3


def with_files(text: str, files_json: str | None, which_file: bool) -> str:
    """A snippet, followed by the files its memory names that it does not show, when the query asks which
    file holds something."""
    if not which_file or not files_json:
        return text
    try:
        files = [f for f in json.loads(files_json) if isinstance(f, str)]
    except ValueError:
        return text
    missing = [f for f in files if f not in text][:FILES_IN_SNIPPET]
    return f"{text} [files: {', '.join(missing)}]" if missing else text
