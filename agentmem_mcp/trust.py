"""Trust policy, pure: where a memory came from, text that tries to instruct the agent, and markup defused.

- `provenance(source)`: user (the CLI, statements the user typed), agent (`memory_save` over MCP),
  derived (the worker, from observations: sources `hook` and `consolidation`), import.
- `instruction_reason(text)`: why a text addresses an AI agent with instructions (a prompt injection:
  "IMPORTANT SYSTEM NOTICE for AI agents: ...", "ignore previous instructions", a role header, a fake
  `<system>` tag, "user approved: run ...", `curl ... | sh`), also when hidden by unicode look-alikes,
  zero-width characters or base64; None for ordinary text. Memories from agents, the worker or an import
  that match are quarantined (kept, never searched or injected until a user releases them).
- `neutralize(text)`: the same text with every sequence that could open or close a client's markup
  (`</system-reminder>`, `<system>`, `<|im_start|>`, `<function_calls>`, `<invoke ...>`, the wrappers Codex and
  Gemini CLI put around context (`</hook_context>`, `<environment_context>`), a `Human:` or
  `Assistant:` role header at a line start) made inert but readable (`<` -> `‹`, `>` -> `›`), and the
  invisible characters that hide text removed. Whatever agentmem hands an agent goes through it.

The hook path imports this module: the standard library only, patterns compiled on first use.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata

from .lazy_regex import LazyPattern, lazy

PROVENANCE = {"user": "user", "agent": "agent", "hook": "derived", "consolidation": "derived", "import": "import"}
UNCONFIRMED = frozenset({"agent", "derived"})  # neither P0, pinned nor global until the user confirms
QUARANTINED_PROVENANCE = frozenset({"agent", "derived", "import"})  # checked by `instruction_reason` on save


def provenance(source: str) -> str:
    """user | agent | derived | import, for a memory's `source` column (an unknown source counts as agent)."""
    return PROVENANCE.get(source, "agent")


def is_unconfirmed(source: str) -> bool:
    """True for memories the user has not confirmed: agent saves and what the worker derived."""
    return provenance(source) in UNCONFIRMED


# Zero-width and bidirectional-control characters: they hide or reorder text without showing.
_INVISIBLE = dict.fromkeys([0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x180E, *range(0x200B, 0x2010),
                            *range(0x202A, 0x202F), *range(0x2060, 0x2070), 0xFEFF], None)
# Letters NFKC leaves alone that look like Latin ones (Cyrillic, Greek): enough to read "ѕуѕtеm" as "system".
_LOOKALIKES = str.maketrans("аеорсухіјѕԁɡոԛԝАЕОРСУХІЈЅВНКМТѵνοαρτϲӏΑΒΕΗΙΚΜΝΟΡΤΥΧΖ",
                            "aeopcyxijsdgnqwAEOPCYXIJSBHKMTvvoaptclABEHIKMNOPTYXZ")


def normalize(text: str) -> str:
    """NFKC (fullwidth and styled letters become plain), invisible characters removed, look-alikes mapped."""
    return unicodedata.normalize("NFKC", text).translate(_INVISIBLE).translate(_LOOKALIKES)


_AGENT = (r"(?:ai|a\.i\.|llms?|language\s+models?|(?:ai\s+|coding\s+)?(?:agents?|assistants?)|claude|chatgpt"
          r"|gpt-?\d*|copilot|models?|bots?)")
# (what the rule finds, words one of which any match contains (lowercase), the pattern)
_RULES: tuple[tuple[str, tuple[str, ...], LazyPattern], ...] = (
    ("a notice addressed to AI agents", ("important", "urgent", "critical", "mandatory", "system", "security",
                                         "attention", "notice", "message", "instruction", "note"), lazy(
        r"\b(?:important|urgent|critical|mandatory|system|security|attention|notice|message|instructions?|note)\b"
        r"[^\n]{0,40}?\b(?:for|to)\s+(?:all\s+|any\s+|the\s+)?" + _AGENT + r"\b", re.I)),
    ("an instruction addressed to an AI agent", ("dear", "attention", "hey", "hello", "note", "ai ", "llm"), lazy(
        r"\b(?:dear|attention|hey|hello|note\s+to)\s+(?:the\s+)?" + _AGENT + r"\b|\b(?:ai|llm)\s+(?:agents?|"
        r"assistants?|models?)\b[^\n.]{0,60}?\b(?:must|should|shall|need\s+to|are\s+required|have\s+to|run|"
        r"execute|ignore)\b", re.I)),
    ("tells the agent to ignore its instructions", ("ignore", "disregard", "forget", "override", "bypass"), lazy(
        r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+)*(?:previous|prior|above|"
        r"earlier|preceding|existing|system|original|safety)?\s*(?:instructions?|prompts?|rules|directions|guidelines"
        r"|messages|context)\b", re.I)),
    ("gives the agent new orders", ("you", "instruction", "before"), lazy(
        r"\byou\s+(?:must|should|shall|will|are\s+required\s+to|have\s+to)\s+now\b|\bfrom\s+now\s+on,?\s+you\b|"
        r"\byou\s+are\s+now\s+(?:a|an|in|the)\b|\b(?:new|updated|real|actual)\s+(?:system\s+)?instructions?\s*:|"
        r"\byour\s+(?:new|real|actual|next)\s+(?:task|goal|instructions?|objective)\b|"
        r"\bbefore\s+(?:any|every|each)\s+(?:other\s+)?(?:task|command|action|response|reply)\b[^\n]{0,30}?"
        r"\b(?:run|execute|call|fetch|download|send)\b", re.I)),
    ("claims the user's approval", ("user",), lazy(
        r"\b(?:the\s+)?user\s+(?:has\s+)?(?:already\s+)?(?:approved|authori[sz]ed|confirmed|consented|granted|"
        r"allowed)(?:\s*:|[^\n.]{0,30}?\b(?:to\s+run|running|execut\w*|the\s+following|this\s+command|all\s+"
        r"commands|permission))|\b(?:pre-?)?approved\s+by\s+the\s+user\s*:", re.I)),
    ("a chat role header or control token", ("system", "assistant", "human", "developer", "<|", "inst]", "sys>>"),
     lazy(
        r"(?m)^\s*(?:#+\s*)?(?:system|assistant|human|developer)\s*:|<\|\s*im_(?:start|end|sep)\s*\|>|<\|[a-z_]{3,20}\|>"
        r"|\[/?INST\]|<</?SYS>>", re.I)),
    ("markup that opens or closes the client's own tags", ("<",), lazy(
        r"<\s*/?\s*(?:system(?:[-_][a-z]+)?|assistant|human|user(?:[-_][a-z]+)?|developer|instructions?|"
        r"function_calls|function_results|invoke|tool_use|tool_result|antml:[a-z_]+|im_start|im_end|"
        r"command-[a-z]+|local-command-[a-z]+)\b[^<>]{0,200}>", re.I)),
    ("pipes a download into a shell", ("curl", "wget", "fetch", "iwr", "irm", "invoke-", "iex"), lazy(
        r"\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^|\n;&]{0,300}\|\s*(?:sudo\s+)?"
        r"(?:(?:ba|z|k|da|fi)?sh|python[\d.]*|perl|ruby|node|iex|invoke-expression)\b|"
        r"\b(?:ba|z)?sh\s+(?:-c\s+)?[\"']?\s*(?:<\(|\$\()\s*(?:curl|wget)\b|"
        r"\biex\s*\(\s*(?:new-object|iwr|irm)\b", re.I)),
)
_BASE64_RUN = lazy(r"[A-Za-z0-9+/=_-]{24,}")
_BASE64 = lazy(r"[A-Za-z0-9+/]{24,}={0,2}|[A-Za-z0-9_-]{24,}={0,2}")
MAX_BASE64_RUNS = 16
MAX_SCAN_CHARS = 200_000
WINDOW_BEFORE, WINDOW_AFTER = 48, 400  # around a rule's word: every rule's match fits in it
MAX_WINDOWS = 64
SMALL_TEXT = 2000  # shorter texts are searched whole


def _decoded(run: str) -> str | None:
    """A base64 run's text, if it decodes to mostly printable UTF-8; None otherwise."""
    padded = run + "=" * (-len(run) % 4)
    try:
        raw = base64.b64decode(padded, altchars=b"-_" if ("-" in run or "_" in run) else None, validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(ch.isprintable() or ch in "\n\t\r" for ch in text)
    return text if text and printable >= 0.9 * len(text) else None


def _find(rule: LazyPattern, words: tuple[str, ...], text: str, lowered: str | None) -> re.Match[str] | None:
    """rule.search(text), looking only around the rule's words in a long text (a tool's output runs to
    thousands of characters, and scanning it whole with each pattern cost milliseconds)."""
    if lowered is None:
        return rule.search(text)
    starts = []
    for word in words:
        at = lowered.find(word)
        while at >= 0:
            starts.append(at)
            if len(starts) > MAX_WINDOWS:
                return rule.search(text)
            at = lowered.find(word, at + 1)
    end = -1
    for at in sorted(starts):
        if at - WINDOW_BEFORE < end:  # overlaps the window just searched
            continue
        end = at + WINDOW_AFTER
        match = rule.search(text, max(0, at - WINDOW_BEFORE), end)
        if match:
            return match
    return None


def instruction_reason(text: str, *, _depth: int = 0) -> str | None:
    """Why `text` reads as instructions addressed to an AI agent (a prompt injection), or None.

    The text is normalised first (NFKC, zero-width characters stripped, Cyrillic / Greek look-alikes
    mapped to Latin), and base64 runs that decode to text are checked too. The reason names the rule
    and quotes what matched (at most 60 characters)."""
    if not text:
        return None
    plain = normalize(text[:MAX_SCAN_CHARS])
    lowered = plain.lower() if len(plain) > SMALL_TEXT else None
    if lowered is not None and len(lowered) != len(plain):  # a letter whose lower case is longer: search whole
        lowered = None
    for name, words, rule in _RULES:
        match = _find(rule, words, plain, lowered)
        if match:
            quoted = " ".join(match.group(0).split())[:60]
            return f"{name}: {quoted!r}"
    if _depth == 0:
        count = 0
        for run in _BASE64_RUN.finditer(plain):
            for piece in _BASE64.findall(run.group(0)):
                count += 1
                if count > MAX_BASE64_RUNS:
                    return None
                decoded = _decoded(piece)
                if decoded and (inner := instruction_reason(decoded, _depth=1)):
                    return f"base64-wrapped {inner}"
    return None


WITHHELD = "(withheld: it reads as instructions to an AI agent)"


def withhold_instructions(text: str) -> str:
    """`text`, or a note in its place when it reads as instructions to an AI agent: what the worker derives
    from tool output, commit messages or pasted text keeps its facts but never a payload's words."""
    return WITHHELD if instruction_reason(text) else text


_TAG = lazy(
    r"<(\s*/?\s*)((?:system|assistant|human|user|developer|tool|tools|function|functions|function_calls|"
    r"function_results|invoke|parameter|result|results|instructions?|prompt|context|documents?|im_start|im_end|"
    r"thinking|answer|output|input|messages?|reminder|command|stdout|stderr|memory|memories|search_results|"
    r"example|antml:[\w-]+|[a-z][\w]*[-:][\w:-]+|"
    r"[a-z]+_(?:context|instructions|prompt|command))\b)([^<>]{0,300})(>?)", re.I)
_SPECIAL_TOKEN = lazy(r"<\|([^|<>\n]{1,40})\|>")
_ROLE_HEADER = lazy(r"(?m)^(\s*)(system|assistant|human|user|developer)(\s*):", re.I)
_LLAMA = lazy(r"\[(/?INST)\]|<<(/?SYS)>>", re.I)


def neutralize(text: str) -> str:
    """`text` with markup that could open or close a client's tags made inert and invisible characters removed.

    `<system>` -> `‹system›`, `</system-reminder>` -> `‹/system-reminder›`, `<|im_start|>` -> `‹|im_start|›`,
    `<invoke name="x">` -> `‹invoke name="x"›`, a line starting `Human:` -> `(Human):`, `[INST]` -> `[‹INST›]`.
    Ordinary code (`a < b`, `List<int>`, `<div>`) is left as it is."""
    if not text:
        return text
    out = text.translate(_INVISIBLE)
    out = _TAG.sub(lambda m: f"‹{m.group(1)}{m.group(2)}{m.group(3)}{'›' if m.group(4) else ''}", out)
    out = _SPECIAL_TOKEN.sub(lambda m: f"‹|{m.group(1)}|›", out)
    out = _ROLE_HEADER.sub(lambda m: f"{m.group(1)}({m.group(2)}){m.group(3)}:", out)
    return _LLAMA.sub(lambda m: f"[‹{m.group(1)}›]" if m.group(1) else f"‹‹{m.group(2)}››", out)
