"""The text of a memory that BM25 indexes and the vectors embed."""

from __future__ import annotations

import re
from collections.abc import Iterable

OPENING_CHARS = 48  # how much of a long first line `memory_text` repeats


def memory_text(title: str, content: str, tags: Iterable[str] = (), files: Iterable[str] = (), *,
                for_vectors: bool = False) -> str:
    """The text that BM25 indexes and the vectors embed: title (unless the body starts with it) + body + the
    tags and files the body does not name already. For the vectors (`for_vectors`), a title whose words the
    body's opening says anyway ("Fix: `make` failed (E ...)" over "`make` failed: E ...") is left out, and so is
    a file the body names by its file name: BM25 finds a memory by both, but they cost the model their tokens
    again and move the vector little. A title cut from a long first line ("…") is not a title
    but the opening: its first OPENING_CHARS are repeated, on purpose, to weigh the opening more (LoCoMo's turn
    recall is lower without it: docs/evaluation.md), and no more of it (each token costs the model time)."""
    if content.startswith(title) or (for_vectors and not title.endswith("…")
                                     and _said_in(title, content[:len(title) * 2])):
        head = ""
    elif title.endswith("…") and content.startswith(title[:-1].rstrip()):
        cut = content[:OPENING_CHARS]
        head = (cut.rsplit(" ", 1)[0] if " " in cut and len(content) > OPENING_CHARS else cut) + "\n"
    else:
        head = f"{title}\n"
    files = [f for f in files if not (for_vectors and f.rsplit("/", 1)[-1] in content)]
    extra = " ".join(dict.fromkeys(x for x in [*tags, *files] if x and x not in content))
    return f"{head}{content}" + (f"\n{extra}" if extra else "")


_WORD = re.compile(r"\w+")


def _said_in(title: str, opening: str) -> bool:
    """Whether every word of the title but a leading label ("Fix:", "Prompt:") is in `opening`."""
    words = _WORD.findall(title.split(": ", 1)[1] if ": " in title[:12] else title)
    present = set(_WORD.findall(opening.casefold()))
    return bool(words) and all(w.casefold() in present for w in words)
