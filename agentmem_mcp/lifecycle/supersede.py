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
- a path or URL only right after "is" / ":" / "=" ("the entry point is src/main.ts").

Anything else that differs means different subjects, however many words they share: a word at the start
of the statement or before a shared word it qualifies ("The billing service ..." / "The search service ...",
"Alice owns ..." / "Bob owns ..."), a proper name outside a value slot, a path segment, an added or removed
word. A flip of negation or polarity ("never" / "always", "do" / "don't", "enable" / "disable") is a
conflict, never a silent supersede.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
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
only just always never instead rather
""".split())
# A word after one of these is the value of the statement ("use yarn", "default branch is main").
VALUE_CUES = frozenset("""
use uses using used prefer prefers preferred with via is are was were be = : by over than not instead
""".split())
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
    out: list[Token] = []
    first = True
    for match in _TOKEN.finditer(text):
        raw = match.group(0)
        low = raw.lower().replace("’", "'")
        if len(low) > 1 and low[-1] == "/" and "/" not in low[:-1]:
            low = low[:-1]
        out.append(Token(raw, low, first))
        first = raw in (".", ";", ":", "!", "?")
    return out


def _wordlike(low: str) -> bool:
    return low not in ";,:=!?()."


def _is_number(low: str) -> bool:
    return any(ch.isdigit() for ch in low) and "/" not in low and not low.startswith("`")


def _is_path(low: str) -> bool:
    return "/" in low or "\\" in low or "://" in low or bool(re.search(r"[a-z]\.[a-z]{1,5}$", low))


def _is_flag(low: str) -> bool:
    return low.startswith("-") and len(low) > 1


def _is_word(low: str) -> bool:
    return low[:1].isalpha() and not _is_path(low)


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


def _piece_verdict(a: list[Token], b: list[Token], left: list[Token], right: Token | None) -> Verdict:
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


def decide(old_text: str, new_text: str) -> Verdict:
    """Whether `new_text` supersedes `old_text` (same subject, a value changed), contradicts it, or neither."""
    old, new = tokens(old_text), tokens(new_text)
    if not old or not new:
        return Verdict(None, "nothing to compare")
    if max(len(old), len(new)) > MAX_STATEMENT_TOKENS:
        return Verdict(None, "too different (too long to compare as one statement)")
    a, b = [t.low for t in old], [t.low for t in new]
    if a == b:
        return Verdict("supersede", "the same statement")
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    shared = sum(block.size for block in matcher.get_matching_blocks())
    content = [t for block in matcher.get_matching_blocks() for t in a[block.a:block.a + block.size]
               if t not in FUNCTION_WORDS and _wordlike(t)]
    if shared / max(len(a), len(b)) < MIN_SHARED or not content:
        return Verdict(None, f"too different (shares {shared} of {max(len(a), len(b))} tokens)")
    changes: list[str] = []
    conflict: Verdict | None = None
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        right = old[i2] if i2 < len(old) and j2 < len(new) else None
        verdict = _piece_verdict(old[i1:i2], new[j1:j2], old[:i1], right)
        if verdict.kind is None:
            return verdict
        if verdict.kind == "conflict":
            conflict = conflict or verdict
        else:
            changes.append(verdict.reason)
    if conflict:
        return conflict
    return Verdict("supersede", "; ".join(changes))

