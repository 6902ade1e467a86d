"""Reading what an agent wrote (pure, `re` only: the hooks import it): its markdown made plain text, links
shortened, list items once each, what a report says is left open, and a digest of its reports that keeps the
sentences that name things within a number of characters."""

from __future__ import annotations

import re


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


_OPEN_HEADING = re.compile(r"^\W*(?:remaining(?: tasks| work| items)?|(?:work|tasks) remaining|next steps?|still to do|"
                           r"open (?:items|issues|questions|work)|left to do|todos?|not (?:yet )?done)\W*$", re.I)
_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*\S)")


def left_open(report: str, limit: int = 4) -> list[str]:
    """What the agent's report says is left: the items under a "Remaining" / "Next steps" heading."""
    items: list[str] = []
    under = False
    for line in report.split("\n"):
        if _OPEN_HEADING.match(line.strip()):
            under = True
            continue
        item = _ITEM.match(line)
        if under and item:
            items = distinct([*items, plain(item.group(1))])
            if len(items) >= limit:
                break
        elif under and line.strip():
            under = False
    return items


def distinct(items: list[str]) -> list[str]:
    """List items once each: an item that starts with the same four words as an earlier one is the same item
    ("Issue #397 - Error messages (needs reimplementation)")."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for item in items:
        head = tuple(item.lower().split()[:4])
        if head not in seen:
            seen.add(head)
            out.append(item)
    return out


def plain(text: str) -> str:
    """Markdown decoration dropped, one line: what the agent wrote, as a note. Headings, quotes, bullets,
    emphasis and code ticks go; what names things stays (`#379`, `waiting_summary.ex`, `__init__.py`)."""
    text = re.sub(r"\[([^\]\n]{1,80})\]\((?:https?://|/)[^)\s]*\)", r"\1", text)  # a link: its text
    text = re.sub(r"^\s{0,3}(?:#{1,6}|>+)\s+", "", text, flags=re.MULTILINE)
    text = re.sub(r"^\s*[-*•]\s+", "", text, flags=re.MULTILINE)
    text = re.sub(r"\*\*|~~|`|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])", "", text)
    return " ".join(text.split())


_NAMING = re.compile(r"#\d+|\b[0-9a-f]{7,40}\b|[\w@-]+(?:/[\w.@-]+)*\.[A-Za-z][A-Za-z0-9]{0,5}\b|\b[a-z]+_[\w]+|"
                     r"\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]+[A-Z]\w*|\b[A-Z]{2,}(?:_[A-Z0-9]+)+\b|\b\d[\d.,]*\b|"
                     r"\b[\w.-]+/[\w./-]+|\"[^\"]{3,60}\"")
_FILLER = re.compile(r"^\W*(?:perfect|great|excellent|awesome|done|good news|success(?:fully)?|now|let me|i'll|i will|"
                     r"here's|here is|summary|all (?:tasks )?(?:completed|done))\b\W*", re.IGNORECASE)
DIGEST_PIECE_CHARS = 220


_HEADING = re.compile(r"^\s{0,3}(?:#{1,6}\s|\*\*[^*]+\*\*:?\s*$|[^.!?]{0,60}:\s*$)")
_URL = re.compile(r"https?://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/(\d+)[^\s)\]]*|https?://([\w.-]+)/\S*")


def short_urls(text: str) -> str:
    """Links shortened to what they name: a GitHub issue or pull request to `#N`, any other to its host."""
    return _URL.sub(lambda m: f"#{m.group(1)}" if m.group(1) else m.group(2), text)


def _pieces(text: str) -> list[str]:
    """A report cut into its sentences and list items, each one line of plain text; headings left out."""
    out = []
    for line in text.replace(" · ", "\n").split("\n"):  # " · " joins the pieces of a digest
        if line.lstrip().startswith("|"):  # a table row: its cells, one piece
            line = " — ".join(c.strip() for c in line.strip().strip("|").split("|") if c.strip(" :-—"))
        if _HEADING.match(line):
            continue
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9#`*])", line):
            piece = short_urls(plain(sentence))
            if len(re.findall(r"[^\W\d_]{2,}", piece)) >= 2 or len(piece) > 12 and re.search(r"[^\W\d_]", piece):
                out.append(clip(piece, DIGEST_PIECE_CHARS))
    return out


def looks_like_code(piece: str) -> bool:
    """A line of code or data quoted in a report (`<% end %>`, `"id": "x",`, `class={f(a, b)}`), not prose."""
    symbols = sum(1 for ch in piece if ch in "{}[]()<>=;$%\\\"'")
    return symbols >= 4 and symbols / len(piece) > 0.06 or piece.lstrip().startswith(("<", "{", "}", "\"", "//"))


def digest(reports: list[tuple[str, float]], limit: int) -> str:
    """The sentences of the agent's reports (text, weight) that say the most in `limit` characters, in the
    order they were written: a sentence counts by the things it names (issue and PR numbers, commit hashes,
    files, identifiers, counts, quoted strings) and by its report's weight; praise and headings count little.
    """
    return pick(ranked_pieces(reports), limit)


def ranked_pieces(reports: list[tuple[str, float]]) -> list[tuple[float, int, int, str]]:
    """The candidate sentences of `digest`, best first: (value per character, report, order, text). Computed
    once, they can be picked from for several limits."""
    candidates = []
    for rank, (text, weight) in enumerate(reports):
        for order, piece in enumerate(_pieces(text)):
            names = len(set(_NAMING.findall(piece)))
            words = len(piece.split())
            if words < 3 and not names or piece.endswith(":") and words < 6 or looks_like_code(piece):
                continue
            value = weight * (1 + 2 * min(names, 5) + min(words, 24) / 12) * (0.4 if _FILLER.match(piece) else 1)
            candidates.append((value / (len(piece) + 20) ** 0.7, rank, order, piece))
    return sorted(candidates, key=lambda c: -c[0])


def pick(candidates: list[tuple[float, int, int, str]], limit: int) -> str:
    """The best of `ranked_pieces` that fit in `limit` characters, in the order they were written."""
    chosen, seen, used = [], set(), 0
    for _, rank, order, piece in candidates:
        if used + len(piece) + 2 <= limit and piece not in seen:
            chosen.append((rank, order, piece))
            seen.add(piece)
            used += len(piece) + 2
    return " · ".join(piece for _, _, piece in sorted(chosen))
