"""Does a new statement update an old one? The supersede rule, pure.

Two statements are aligned token by token (difflib). The new one supersedes the old only when they are the
same statement with its value changed: every differing piece sits in a value slot,

- a number, version, port or count (`3000` -> `4000`, `Node 18` -> `Node 20`), not an id (`issue 123`);
- a command-line flag (and its argument) added, dropped or changed (`pytest` -> `pytest -x`);
- a word right after a word that introduces a value ("use yarn" -> "use pnpm", "with black", "is main",
  "by Alice", ":", "=", "over", "instead of", "switch to") and not itself the qualifier of a shared noun
  that follows ("unit tests" / "integration tests" name two things) except after "use" / "prefer";
- the program of a quoted command (`` `make build` `` -> `` `npm run build` ``); its other arguments name what
  the command acts on;
- a path or URL only right after "is" / ":" / "=" ("the entry point is src/main.ts");
- the value that ends the statement after "on / to / in / at / from ..." or soon after a value cue ("runs on
  CircleCI" -> "runs on GitHub Actions now", "with npm test" -> "with npm run test:ci"), unless two sibling
  folders (`apps/web`, `apps/admin`: two places).

A statement that says what changed ("we moved from Netlify to Cloudflare Pages", "replaced jest with vitest")
supersedes the old one that names what was left, when the rest of the old one is about the same thing. Number
words count as numbers ("one" -> "two approving reviews"), plurals align with singulars, and time words that
end a statement ("now", "currently") are not part of it.

Anything else that differs means different subjects, however many words they share: a word at the start
of the statement or before a shared word it qualifies ("The billing service ..." / "The search service ...",
"Alice owns ..." / "Bob owns ..."), a proper name outside a value slot, a path segment, an added or removed
word. A flip of negation or polarity ("never" / "always", "do" / "don't", "enable" / "disable") is a
conflict, never a silent supersede.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

_TOKEN = re.compile(
    r"`[^`\n]{1,200}`"                                  # a quoted command or identifier
    r"|--?[A-Za-z][\w-]*(?:=[^\s,;]+)?"                  # a flag
    r"|[A-Za-z][\w+.-]*://[^\s,;)`'\"]+"                 # a URL
    r"|[\w@#~+$%]+(?:[./:'’\\-][\w@#~+$%]+)*/?"          # a word, number, version, path, contraction
    r"|[;,:=!?()]|\.(?=\s|$)"                            # punctuation that separates clauses
)
FUNCTION_WORDS = frozenset("""
a an the this that these those it its is are was were be been being am do does did has have had will would
shall should can could may might must to of in on at by for with from into onto via as and or but nor so
than then there here when while before after if unless until because since about over under between per
not no all any each every some our we us you your i me my they them their he she his her one ones also
only just always never instead rather now currently nowadays anymore today
""".split())
# A word after one of these is the value of the statement ("use yarn", "default branch is main").
VALUE_CUES = frozenset("""
use uses using used prefer prefers preferred with via is are was were be = : by over than not instead called
named
""".split())
# ... and these, when the value ends the statement ("runs on CircleCI", "logs are written to /var/log/app.log")
END_CUES = frozenset("on to in at from into under onto".split())
NUMBER_WORDS = frozenset("zero one two three four five six seven eight nine ten eleven twelve".split())
TRAILING = frozenset("now currently nowadays anymore today".split())  # time words that end a statement
CHOICE_CUES = frozenset("use uses using prefer prefers preferred".split())  # "use single quotes": a choice
SWITCH_CUES = frozenset({("switch", "to"), ("switched", "to"), ("moved", "to"), ("migrated", "to"),
                         ("migrate", "to"), ("instead", "of"), ("rather", "than"), ("upgrade", "to"),
                         ("upgraded", "to"), ("changed", "to"), ("set", "to")})
COPULA_CUES = frozenset({"is", "are", "was", "=", ":"})
ID_NOUNS = frozenset("issue issues pr prs ticket tickets bug bugs incident task story epic commit #".split())
POLARITY = frozenset("""
never always not no don't dont doesn't doesnt isn't isnt aren't arent won't wont can't cant cannot shouldn't
shouldnt mustn't mustnt avoid stop enable enabled disable disabled allow allowed forbid forbidden do does
must required optional without
""".split())
_PLURAL = re.compile(r"^[a-z]{3,}[^s']s$")
_SWITCH = re.compile(r"\b(?:switched|switch|moved|move|migrated|migrate|changed|went|upgraded|upgrade)\s+from\s+"
                     r"(.+?)\s+to\s+(.+?)(?=\s+(?:for|in|on|at|because|since|as|when)\b|[.,;]|$)|"
                     r"\breplaced\s+(.+?)\s+with\s+(.+?)(?=\s+(?:for|in|on|at|because|since|as|when)\b|[.,;]|$)",
                     re.IGNORECASE)
MAX_PIECE_TOKENS = 3
MIN_SHARED = 0.5
MAX_STATEMENT_TOKENS = 400  # longer texts are documents, not one statement: they never supersede by this rule


@dataclass(frozen=True)
class Token:
    text: str   # as written
    low: str    # what alignment compares
    first: bool  # first word of its sentence (so a capital is not a proper name)


@dataclass(frozen=True)
class Verdict:
    """`kind`: "supersede" (same subject, changed value), "conflict" (same statement, polarity flipped)
    or None (different subjects, or not similar enough to compare)."""
    kind: Literal["supersede", "conflict"] | None
    reason: str = ""


def tokens(text: str) -> list[Token]:
    """The statement's tokens: words, numbers, flags, paths, URLs, quoted commands and clause punctuation."""
    return list(_tokens(text))


@lru_cache(maxsize=2048)
def _tokens(text: str) -> tuple[Token, ...]:
    """`tokens`, kept for the texts met lately: a save compares its statement with each of its candidates, and
    the same memories are candidates of many saves."""
    out: list[Token] = []
    first = True
    for match in _TOKEN.finditer(text):
        raw = match.group(0)
        low = raw.lower().replace("’", "'")
        if len(low) > 1 and low[-1] == "/" and "/" not in low[:-1]:
            low = low[:-1]
        if _PLURAL.match(low) and low not in FUNCTION_WORDS and low not in POLARITY and low not in VALUE_CUES:
            low = low[:-1]  # "reviews" aligns with "review"
        out.append(Token(raw, low, first))
        first = raw in (".", ";", ":", "!", "?")
    return tuple(out)


def _wordlike(low: str) -> bool:
    return low not in ";,:=!?()."


def _is_number(low: str) -> bool:
    return low in NUMBER_WORDS or any(ch.isdigit() for ch in low) and "/" not in low and not low.startswith("`")


def _is_path(low: str) -> bool:
    return "/" in low or "\\" in low or "://" in low or bool(re.search(r"[a-z]\.[a-z]{1,5}$", low))


def _is_flag(low: str) -> bool:
    return low.startswith("-") and len(low) > 1


def _is_word(low: str) -> bool:
    return low[:1].isalpha() and not _is_path(low)


def _sibling_folders(a: str, b: str) -> bool:
    """Two folders side by side (`apps/web`, `apps/admin`): the same parent, no file extension."""
    if "/" not in a or "/" not in b or "://" in a + b:
        return False
    (pa, _, na), (pb, _, nb) = a.rstrip("/").rpartition("/"), b.rstrip("/").rpartition("/")
    return pa == pb and "." not in na and "." not in nb


def _proper_name(token: Token) -> bool:
    return token.text[:1].isupper() and not token.first


def _command_change(old: str, new: str) -> str | None:
    """A change inside quoted commands that keeps their subject: the program, flags or numbers."""
    a, b = old.strip("`").split(), new.strip("`").split()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        changed = a[i1:i2] + b[j1:j2]
        at_program = i1 == 0 and j1 == 0 and (i2 < len(a) or j2 < len(b))
        if not (at_program or all(_is_flag(x) or _is_number(x) for x in changed)):
            return None
    return f"{old} → {new}"


def _piece_verdict(a: list[Token], b: list[Token], left: list[Token], right: Token | None,
                   alone: bool = True) -> Verdict:
    """The verdict on one differing piece: old tokens `a` became `b`, after the shared tokens `left`, before
    the shared token `right` (None: the end)."""
    changed = a + b
    said = f"{' '.join(t.text for t in a) or '(nothing)'} → {' '.join(t.text for t in b) or '(nothing)'}"
    if any(t.low in POLARITY for t in changed):
        return Verdict("conflict", f"contradicts it ({said})")
    if len(a) > MAX_PIECE_TOKENS or len(b) > MAX_PIECE_TOKENS:
        return Verdict(None, f"too much differs ({said})")
    if not left:
        return Verdict(None, f"a different subject ({said})")
    if all(t.low in FUNCTION_WORDS or not _wordlike(t.low) for t in changed):
        return Verdict("supersede", f"same statement ({said})")
    cue = left[-1].low
    before_cue = left[-2].low if len(left) > 1 else ""
    if cue in ID_NOUNS or any(t.low.startswith("#") for t in changed):
        return Verdict(None, f"a different {cue if cue in ID_NOUNS else 'item'} ({said})")
    if all(_is_flag(t.low) for t in changed) or (a and b and all(_is_number(t.low) or _is_flag(t.low)
                                                                 for t in changed)):
        return Verdict("supersede", f"value changed: {said}")
    if not a or not b:
        added = a or b
        if _is_flag(added[0].low) and len(added) <= 2:  # a flag and its argument
            return Verdict("supersede", f"option changed: {said}")
        return Verdict(None, f"a word added or dropped ({said})")
    if len(a) == len(b) == 1 and a[0].low.startswith("`") and b[0].low.startswith("`"):
        change = _command_change(a[0].low, b[0].low)
        return Verdict("supersede", f"command changed: {change}") if change else \
            Verdict(None, f"a command for something else ({said})")
    if right is None and (cue in END_CUES or alone and any(t.low in VALUE_CUES for t in left[-3:])):
        if len(a) == len(b) == 1 and _sibling_folders(a[0].low, b[0].low):
            return Verdict(None, f"a different folder ({said})")  # apps/web and apps/admin: two places
        return Verdict("supersede", f"value changed: {said}")  # the value that ends the statement
    if any(_is_path(t.low) for t in changed):
        if cue in COPULA_CUES and (right is None or right.low in FUNCTION_WORDS or right.low in ".;,"):
            return Verdict("supersede", f"value changed: {said}")
        return Verdict(None, f"a different path ({said})")
    in_value_slot = cue in VALUE_CUES or (before_cue, cue) in SWITCH_CUES
    if not in_value_slot or not all(_is_word(t.low) or t.low.startswith("`") for t in changed):
        if any(_proper_name(t) for t in changed):
            return Verdict(None, f"a different name ({said})")
        return Verdict(None, f"a different subject ({said})")
    qualifies_next = right is not None and right.low not in FUNCTION_WORDS and right.low not in ";,.:=!?()"
    if qualifies_next and cue not in CHOICE_CUES:
        return Verdict(None, f"a different kind of {right.text} ({said})")
    return Verdict("supersede", f"value changed: {said}")


def _trimmed(statement: list[Token]) -> list[Token]:
    """The statement without the time words and the full stop that end it ("... on GitHub Actions now.")."""
    end = len(statement)
    while end and (statement[end - 1].low in TRAILING or statement[end - 1].low == "."):
        end -= 1
    return statement[:end]


def _content(statement: list[Token]) -> set[str]:
    return {t.low for t in statement if _wordlike(t.low) and t.low not in FUNCTION_WORDS}


def _switch(old: list[Token], new_text: str) -> Verdict | None:
    """A new statement that says what changed ("we moved from Netlify to Cloudflare Pages", "replaced jest with
    vitest") supersedes the old one when the old names what was left and is about the same thing otherwise
    (at least half of its other content words are in the new one)."""
    match = _SWITCH.search(new_text)
    if match is None:
        return None
    was, now = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
    left = _content(tokens(was))
    rest = _content(old) - left
    if not left or not left <= _content(old) or not rest:
        return None
    shared = rest & _content(tokens(new_text))
    if len(shared) * 2 < len(rest):
        return None
    return Verdict("supersede", f"switched: {was} → {now}")


def decide(old_text: str, new_text: str) -> Verdict:
    """Whether `new_text` supersedes `old_text` (same subject, a value changed), contradicts it, or neither."""
    old, new = _trimmed(tokens(old_text)), _trimmed(tokens(new_text))
    if not old or not new:
        return Verdict(None, "nothing to compare")
    switched = _switch(old, new_text)
    if switched:
        return switched
    if max(len(old), len(new)) > MAX_STATEMENT_TOKENS:
        return Verdict(None, "too different (too long to compare as one statement)")
    a, b = [t.low for t in old], [t.low for t in new]
    if a == b:
        return Verdict("supersede", "the same statement")
    at_most = sum((Counter(a) & Counter(b)).values())  # no alignment shares more tokens than the two hold in common
    if at_most / max(len(a), len(b)) < MIN_SHARED:
        return Verdict(None, f"too different (shares at most {at_most} of {max(len(a), len(b))} tokens)")
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    shared = sum(block.size for block in matcher.get_matching_blocks())
    content = [t for block in matcher.get_matching_blocks() for t in a[block.a:block.a + block.size]
               if t not in FUNCTION_WORDS and _wordlike(t)]
    if shared / max(len(a), len(b)) < MIN_SHARED or not content:
        return Verdict(None, f"too different (shares {shared} of {max(len(a), len(b))} tokens)")
    changes: list[str] = []
    conflict: Verdict | None = None
    pieces = sum(op != "equal" for op, *_ in matcher.get_opcodes())
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        right = old[i2] if i2 < len(old) and j2 < len(new) else None
        verdict = _piece_verdict(old[i1:i2], new[j1:j2], old[:i1], right, alone=pieces == 1)
        if verdict.kind is None:
            return verdict
        if verdict.kind == "conflict":
            conflict = conflict or verdict
        else:
            changes.append(verdict.reason)
    if conflict:
        return conflict
    return Verdict("supersede", "; ".join(changes))

