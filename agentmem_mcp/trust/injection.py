"""Text from tools and transcripts is data: what reads as instructions to an AI agent, and how text is shown.

- `normalize(text)`: the text as the detector reads it (NFKC, combining marks, invisible characters and Unicode
  tag characters removed, Cyrillic / Greek look-alikes mapped to Latin).
- `hidden_text(text)`: what a text smuggles in invisible characters (Unicode tag characters U+E0000-E007F,
  runs of variation selectors U+FE00-FE0F / U+E0100-E01EF that encode bytes), decoded.
- `instruction_reason(text)`: why a text addresses an AI agent with instructions (a prompt injection), or None.
- `neutralize(text)`: markup that could open or close a client's tags (`</system-reminder>`, `<tool_result>`,
  `<|im_start|>`, `[SYSTEM]`, a `Human:` role header, also in fullwidth, small-form or look-alike letters) made
  inert but readable, invisible characters removed.
- `as_data(text, trusted=False)`: the one step every text passes on its way out to an agent (briefing, prompt
  recall, search, the viewer): `neutralize`, and each line or sentence that reads as instructions replaced by
  `WITHHELD`, unless the text is the user's own (`trusted`).

The hook path imports this module: the standard library only, patterns compiled on first use.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata

from .lazy_regex import LazyPattern, lazy

# Characters that show nothing: zero-width and bidirectional controls, fillers, variation selectors and the
# Unicode tag characters (which spell ASCII invisibly).
_INVISIBLE_CODES = (0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, *range(0x180B, 0x1810),
                    *range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2070), 0x3164,
                    *range(0xFE00, 0xFE10), 0xFEFF, 0xFFA0, *range(0x1BCA0, 0x1BCA4), *range(0x1D173, 0x1D17B),
                    *range(0xE0000, 0xE0080), *range(0xE0100, 0xE01F0))
_INVISIBLE = dict.fromkeys(_INVISIBLE_CODES, None)
_COMBINING = lazy("[\u0300-\u036f\u0483-\u0489\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")
_MARKS = "\u0300-\u036f\u0483-\u0489\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
# Letters NFKC leaves alone that look like Latin ones (Cyrillic, Greek): enough to read "ѕуѕtеm" as "system";
# and angle brackets NFKC leaves alone that read as `<` / `>`.
_LOOKALIKES = str.maketrans("аеорсухіјѕԁɡոԛԝАЕОРСУХІЈЅВНКМТѵνοαρτϲӏΑΒΕΗΙΚΜΝΟΡΤΥΧΖ˂˃ᐸᐳ〈〉⟨⟩❮❯",
                            "aeopcyxijsdgnqwAEOPCYXIJSBHKMTvvoaptclABEHIKMNOPTYXZ<><><><><>")


def normalize(text: str) -> str:
    """NFKC (fullwidth and styled letters become plain), combining marks and invisible characters removed,
    look-alikes mapped: what the detector reads."""
    if text.isascii():
        return text
    bare = _COMBINING.sub("", unicodedata.normalize("NFKD", text))
    return unicodedata.normalize("NFKC", bare).translate(_INVISIBLE).translate(_LOOKALIKES)


_TAG_RUN = lazy("[\U000e0001-\U000e007f]+")
_SELECTOR_RUN = lazy("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{2,}")
_FLAG = "\U0001f3f4"  # a waving black flag, followed by tag letters, spells a subdivision's flag (England)


def hidden_text(text: str) -> str:
    """What `text` spells in invisible characters: Unicode tag characters read as ASCII, runs of variation
    selectors read as bytes (U+FE00-FE0F: 0-15, U+E0100-E01EF: 16-255); '' when there is none (a flag emoji's
    tag letters and a single selector after a character are ordinary)."""
    if text.isascii():
        return ""
    found = []
    for m in _TAG_RUN.finditer(text):
        decoded = "".join(chr(ord(c) - 0xE0000) for c in m.group() if 0xE0020 <= ord(c) <= 0xE007E)
        if text[m.start() - 1:m.start()] == _FLAG and decoded.isalnum() and len(decoded) <= 7:
            continue
        found.append(decoded)
    for m in _SELECTOR_RUN.finditer(text):
        data = bytes(ord(c) - 0xFE00 if ord(c) <= 0xFE0F else ord(c) - 0xE0100 + 16 for c in m.group())
        found.append(data.decode("utf-8", "replace"))
    hidden = "\n".join(found)
    return hidden if sum(ch.isprintable() and not ch.isspace() for ch in hidden) >= 3 else ""


# Markdown and HTML emphasis inside words and sentences ("**ignore** all _previous_ instructions"), removed before
# the sentence rules read a text; an underscore inside a name (`user_prompt`) stays.
_EMPHASIS = lazy(r"[*~`]+|(?<![^\W_])_+(?=[^\W_])|(?<=[^\W_])_+(?![^\W_])|"
                 r"</?(?:b|i|u|s|em|strong|del|ins|mark|code|kbd|sup|sub|span|font)\b[^<>\n]{0,80}>", re.I)
_HYPHEN_BREAK = lazy(r"(?<=[a-z])-[ \t]*\n[ \t]*(?=[a-z])", re.I)
# a line break, and the comment or quote marker that starts the next line: a notice split across lines reads whole
_SPACES = lazy(r"\s+")
_LINE_BREAK = lazy(r"[ \t]*\n\s*(?:(?:#+|//+|--+|;+|%+|>+|-(?=\s)|\d{1,2}[.)](?=\s))[ \t]*)?")


def flatten(plain: str) -> str:
    """A normalised text as one line of prose: emphasis removed, lines joined without their comment markers, one
    space between words (so that the prose rules' words, "you must", are found as written)."""
    out = _EMPHASIS.sub("", plain) if any(mark in plain for mark in "*~`_<") else plain
    if "\n" in out:
        if "-" in out:
            out = _HYPHEN_BREAK.sub("", out)
        out = _LINE_BREAK.sub(" ", out)
    return _SPACES.sub(" ", out) if "  " in out or "\t" in out or "\r" in out else out


_AGENT = (r"(?:ai|a\.i\.|llms?|language\s+models?|(?:ai\s+|coding\s+)?(?:agents?|assistants?)|claude(?:\s+code)?"
          r"|chatgpt|gpt-?\d*|copilot|gemini|codex|windsurf|aider|cline|devin|models?|bots?)")
_NAMED = r"(?:cursor|claude|copilot|codex|gemini|windsurf|aider|cline|devin|chatgpt)"
_ORDER = (r"(?:please\s+)?(?:run|execute|ignore|disregard|forget|delete|remove|push|commit|install|download|add|"
          r"always|never|do\s+not|don't|you|from\s+now|make\s+sure|before|send|upload|curl|wget)\b")
_SHELL = (r"(?:(?:(?:/[\w.+-]+)*/)?(?:sudo|doas|env|exec|command|nohup|time|xargs|stdbuf)\b[^|\n;&]{0,40}?\s+)*"
          r"(?:/[\w.+-]+)*/?(?:(?:ba|z|k|da|fi|c|tc|a)?sh|python[\d.]*|perl|ruby|node|php|pwsh|powershell|iex|"
          r"invoke-expression)\b")
_FETCH = r"(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|aria2c)"
_DECODE = (r"(?:base64\s+(?:-\w*[dD]\w*|--decode)|xxd\s+(?:-\w+\s+)*-r|openssl\s+(?:enc|base64)\b[^|\n]{0,80}?\s-d\b|"
           r"printf\s+['\"]?(?:\\x|%b)|gunzip|zcat)")
_PIPED = "pipes a download or decoded text into a shell"
_AGENT_WORDS = ("agent", "assistant", "model", "bot", "llm", "claude", "chatgpt", "gpt", "copilot", "gemini", "codex",
                "windsurf", "aider", "cline", "devin", "cursor", "ai ", "ai,", "ai:", "ai!", "ai.", "a.i.")
_SAVED_AND_RUN = (r"(?:\s*(?:&&|;|\|\|)\s*chmod\s+\S+\s+\S+)?\s*(?:&&|;|\|\|)\s*(?:sudo\s+(?:-\S+\s+)*)?"
                  r"(?:(?:(?:/[\w.+-]+)*/?(?:(?:ba|z|k|da)?sh|source|\.)\s+))?(?:\./)?")
# (what the rule finds, words one of which any match contains (lowercase), words one of which the text must hold
# too (none: no such condition), the pattern, the form it reads: "flat" for prose (emphasis removed, lines joined),
# "plain" where lines and markup matter). A rule whose words a text lacks is neither compiled nor run: a hook
# process pays only for the rules its text can match.
_RULES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], LazyPattern, str], ...] = (
    ("a notice addressed to AI agents", ("important", "urgent", "critical", "mandatory", "system", "security",
                                         "attention", "notice", "message", "instruction", "note"), (), lazy(
        r"\b(?:important|urgent|critical|mandatory|system|security|attention|notice|message|instructions?|note)\b"
        r"[^\n]{0,40}?\b(?:for|to)\s+(?:all\s+|any\s+|the\s+)?" + _AGENT + r"\b", re.I), "flat"),
    ("an instruction addressed to an AI agent", _AGENT_WORDS, (), lazy(
        r"\b(?:dear|attention|hey|hello|listen|note\s+to)\s*,?\s+(?:the\s+)?(?:" + _AGENT
        + r"\b|" + _NAMED + r"\s*[,:!])|(?:^|[.!?:]\s+|\n\s*)" + _NAMED + r"\s*,\s+" + _ORDER
        + r"|\b(?:ai|llm)\s+(?:agents?|assistants?|models?)\b[^\n.]{0,60}?\b(?:must|should|shall|need\s+to|are\s+"
        r"required|have\s+to|run|execute|ignore)\b", re.I), "flat"),
    ("tells the agent to ignore its instructions", ("ignore", "disregard", "forget", "override", "bypass"), (), lazy(
        r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|of|these|those|my|every)\s+)*"
        r"(?:(?:previous|prior|above|earlier|preceding|existing|system|original|safety|former|old)\s+)?"
        r"(?:instructions?|prompts?|rules|directions|guidelines|messages|context|directives|constraints)\b|"
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+(?:of\s+)?)?(?:everything|anything|all|whatever)\s+(?:(?:that\s+)?"
        r"(?:was|is|you\s+were|you've\s+been)\s+(?:said|written|told|stated|given)\s+)?(?:above|before|previously|"
        r"earlier|so\s+far|up\s+to\s+(?:now|here))\b(?!\s*[\d$%])|"
        r"\b(?:ignore|disregard)\s+(?:all\s+of\s+)?the\s+above(?=\s*(?:[.,;:!]|and\b|$))", re.I), "flat"),
    ("gives the agent new orders", ("you must", "you should", "you shall", "you will", "you are", "you have",
                                    "from now on", "instruction", "your new", "your real", "your actual",
                                    "your next", "before any", "before every", "before each"), (), lazy(
        r"\byou\s+(?:must|should|shall|will|are\s+required\s+to|have\s+to)\s+now\b|\bfrom\s+now\s+on,?\s+you\b|"
        r"\byou\s+are\s+now\s+(?:a|an|in|the)\b|\b(?:new|updated|real|actual)\s+(?:system\s+)?instructions?\s*:|"
        r"\byour\s+(?:new|real|actual|next)\s+(?:task|goal|instructions?|objective)\b|"
        r"\bbefore\s+(?:any|every|each)\s+(?:other\s+)?(?:task|command|action|response|reply)\b[^\n]{0,30}?"
        r"\b(?:run|execute|call|fetch|download|send)\b", re.I), "flat"),
    ("claims the user's approval", ("approved", "authorized", "authorised", "confirmed", "consented", "granted",
                                    "allowed"), (), lazy(
        r"\b(?:the\s+)?user\s+(?:has\s+)?(?:already\s+)?(?:approved|authori[sz]ed|confirmed|consented|granted|"
        r"allowed)(?:\s*:|[^\n.]{0,30}?\b(?:to\s+run|running|execut\w*|the\s+following|this\s+command|all\s+"
        r"commands|permission))|\b(?:pre-?)?approved\s+by\s+the\s+user\s*:", re.I), "flat"),
    ("a chat role header or control token", ("system", "assistant", "human", "developer", "<|", "inst]", "sys>>",
                                             "turn>"), (), lazy(
        r"(?m)^\s*(?:#+\s*)?(?:\*\*)?(?:system|assistant|human|developer)\s*(?:\*\*)?\s*:|"
        r"<\|\s*im_(?:start|end|sep)\s*\|>|<\|[a-z_]{3,20}\|>|\[/?INST\]|<</?SYS>>|"
        r"(?:^[ \t]*|>[ \t]*)(?-i:\[\s*(?:SYSTEM|ASSISTANT|HUMAN|DEVELOPER|System|Assistant|Human|Developer)"
        r"(?:\s+(?:MESSAGE|PROMPT|NOTE|Message|Prompt|Note))?\s*\])|<(?:start|end)_of_turn>", re.I), "plain"),
    ("markup that opens or closes the client's own tags", ("<",), (), lazy(
        r"<\s*/?\s*(?:system(?:[-_][a-z]+)*|assistant|human|user(?:[-_](?:prompt|message|query|input|request|turn|"
        r"instructions?)[a-z_-]*)?|developer|instructions?|function_calls|function_results|invoke|tool_use|"
        r"tool_results?|tool_calls?|tool_response|antml:[a-z_]+|im_start|im_end|command-[a-z]+|local-command-[a-z]+|"
        r"additional[-_]context|document_content|documents?|search_results|important|user-prompt-submit-hook)"
        r"\b[^<>]{0,200}>", re.I), "plain"),
    (_PIPED, ("curl", "wget", "iwr", "irm", "invoke-", "aria2c", "base64", "xxd", "openssl", "printf", "gunzip",
              "zcat"), ("|",), lazy(r"\b(?:" + _FETCH + "|" + _DECODE + r")\b[^\n;&]{0,300}?\|\s*" + _SHELL, re.I),
     "plain"),
    (_PIPED, ("<(", "$(", "`"), ("curl", "wget"), lazy(
        r"\b(?:(?:ba|z|k|da)?sh|eval|source|python[\d.]*)\s+(?:-c\s+)?[\"']?\s*(?:<\(|\$\(|`)\s*(?:curl|wget)\b",
        re.I), "plain"),
    (_PIPED, ("iex",), (), lazy(r"\biex\s*\(\s*(?:new-object|iwr|irm)\b", re.I), "plain"),
    (_PIPED, ("curl", "wget"), ("&&", ";", "||"), lazy(
        r"\b(?:curl|wget)\b[^\n;&|]*?\s(?:-[a-zA-Z]*[oO]\s*|--output(?:-document)?[=\s]\s*|>\s*)(?P<saved>[\w./~-]+)"
        r"[^\n]{0,200}?" + _SAVED_AND_RUN + r"(?P=saved)(?![\w./-])|"
        r"\b(?:curl|wget)\b[^\n;&|]*?https?://[^\s/]+/(?:[^\s/]+/)*(?P<named>[\w.-]+\.(?:sh|bash|zsh|py|pl|rb))\b"
        r"[^\n]{0,200}?" + _SAVED_AND_RUN + r"(?P=named)(?![\w./-])", re.I), "plain"),
)
HIDDEN = "text hidden in invisible characters"
WITHHELD = "(withheld: it reads as instructions to an AI agent)"
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


def _find(rule: LazyPattern, words: tuple[str, ...], text: str, lowered: str) -> re.Match[str] | None:
    """rule.search(text), skipped when none of the rule's words is in `lowered` (`text` lower-cased), and in a
    long text only around those words (a tool's output runs to thousands of characters)."""
    if len(text) <= SMALL_TEXT or len(lowered) != len(text):
        return rule.search(text) if any(word in lowered for word in words) else None
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

    The text is normalised first (`normalize`); prose rules read it flattened (emphasis removed, lines joined);
    text hidden in invisible characters and base64 runs that decode to text are checked too. The reason names
    the rule and quotes what matched (at most 60 characters)."""
    if not text:
        return None
    head = text[:MAX_SCAN_CHARS]
    if WITHHELD in head:  # agentmem's own note where a text was withheld is no order, nor part of one
        head = head.replace(WITHHELD, "(withheld)")
    if _depth == 0 and (hidden := hidden_text(head)):
        inner = instruction_reason(hidden, _depth=1)
        return f"{HIDDEN}: {inner or repr(' '.join(hidden.split())[:60])}"
    plain = normalize(head)
    forms = {"plain": (plain, plain.lower())}
    flat = flatten(plain)
    forms["flat"] = (flat, flat.lower()) if flat != plain else forms["plain"]
    for name, words, also, rule, form in _RULES:
        subject, lowered = forms[form]
        if also and not any(word in lowered for word in also):
            continue
        match = _find(rule, words, subject, lowered)
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


def withhold_instructions(text: str) -> str:
    """`text`, or a note in its place when it reads as instructions to an AI agent: what the worker derives
    from tool output, commit messages or pasted text keeps its facts but never a payload's words."""
    return WITHHELD if instruction_reason(text) else text


class _Fold(dict):
    """code point -> the one character it reads as (NFKC when that is one character, look-alikes mapped): a
    translation table that keeps every index in place, filled as characters are met."""

    def __missing__(self, code: int) -> str:
        folded = unicodedata.normalize("NFKC", chr(code))
        out = (folded if len(folded) == 1 else chr(code)).translate(_LOOKALIKES)
        self[code] = out
        return out


_FOLD = _Fold()
_TAGLIKE = lazy(rf"<(\s*/?\s*)([^\W\d_][\w{_MARKS}:.\-]{{0,60}})([^<>]{{0,300}})(>?)")
_SPECIAL_TOKEN = lazy(r"<\|[^|<>\n]{1,40}\|>")
_ROLE_HEADER = lazy(rf"(?m)^([ \t]*(?:#{{1,6}}[ \t]*|>[ \t]*)?(?:\*\*)?)((?:system|assistant|human|user|developer|"
                    rf"model)[{_MARKS}]*)([ \t]*(?:\*\*)?[ \t]*):", re.I)
_BRACKET_ROLE = lazy(r"\[(\s*/?\s*)([A-Za-z]{2,12}(?:[ _-][A-Za-z]{2,12})?)(\s*)\]")
_LLAMA_SYS = lazy(r"<<(/?SYS)>>", re.I)
_CLIENT_TAGS = frozenset(
    "system assistant human user developer model tool tools function functions function_calls function_results "
    "invoke parameter result results instruction instructions prompt context document documents im_start im_end "
    "thinking answer output input message messages reminder command stdout stderr memory memories search_results "
    "example important turn".split())
_MARKUP_WORDS = frozenset(
    "system assistant human user developer model tool tools function functions invoke parameter result results "
    "instruction instructions prompt context document documents content reminder message messages turn im antml "
    "command stdout stderr memory memories search thinking answer output input example important hook submit "
    "query response request call calls use additional".split())
_BRACKET_ROLES = frozenset("system assistant human user developer inst sys instructions model".split())


def _client_tag(name: str) -> bool:
    """Whether a tag name (as folded) reads as a client's or a chat template's own: `system`, `tool_result`,
    `system-reminder`, `start_of_turn`, `antml:invoke`, any name with `-` or `:`, an all-capitals word."""
    bare = _COMBINING.sub("", name)
    low = bare.lower()
    if low in _CLIENT_TAGS or "-" in low or ":" in low:
        return True
    parts = [p for p in re.split(r"[_.]+", low) if p]
    if len(parts) > 1 and any(p in _MARKUP_WORDS for p in parts):
        return True
    return len(bare) >= 3 and bare.isalpha() and bare.isupper()


def neutralize(text: str) -> str:
    """`text` with markup that could open or close a client's tags made inert and invisible characters removed.

    `<system>` -> `‹system›`, `</tool_result>` -> `‹/tool_result›`, `＜system＞` (fullwidth) -> `‹system›`,
    `<|im_start|>` -> `‹|im_start|›`, a line starting `Human:` (or `Humаn:` in Cyrillic, `### System:`) ->
    `(Human):`, `[INST]` / `[SYSTEM]` -> `[‹INST›]` / `[‹SYSTEM›]`, `<<SYS>>` -> `‹‹SYS››`. Ordinary code
    (`a < b`, `List<int>`, `<div>`, a TOML `[user]` table) is left as it is."""
    if not text:
        return text
    out = text if text.isascii() else text.translate(_INVISIBLE)
    folded = out if out.isascii() else out.translate(_FOLD)  # same length: a match's span is the original's
    replace: dict[int, str] = {}  # position in `out` -> what takes the character's place
    insert: dict[int, str] = {}  # position in `out` -> what goes before the character
    if "<" in folded:
        for m in _TAGLIKE.finditer(folded):
            if _client_tag(m.group(2)):
                replace[m.start()] = "‹"
                if m.group(4):
                    replace[m.end() - 1] = "›"
        for m in _SPECIAL_TOKEN.finditer(folded):
            replace[m.start()], replace[m.end() - 1] = "‹", "›"
        for m in _LLAMA_SYS.finditer(folded):
            for at in (m.start(), m.start() + 1):
                replace[at] = "‹"
            for at in (m.end() - 2, m.end() - 1):
                replace[at] = "›"
    if ":" in folded:
        for m in _ROLE_HEADER.finditer(folded):
            insert[m.start(2)] = "("
            insert[m.end(2)] = ")" + insert.get(m.end(2), "")
    if "[" in folded:
        for m in _BRACKET_ROLE.finditer(folded):
            word = re.split(r"[ _-]", m.group(2))[0]
            if word.lower() in _BRACKET_ROLES and (word[0].isupper() or word.lower() in ("inst", "sys")):
                insert[m.start(2)] = "‹"
                insert[m.end(2)] = "›" + insert.get(m.end(2), "")
    if not replace and not insert:
        return out
    pieces, last = [], 0
    for at in sorted(replace.keys() | insert.keys()):
        pieces += [out[last:at], insert.get(at, "")]
        if at in replace:
            pieces.append(replace[at])
            last = at + 1
        else:
            last = at
    pieces.append(out[last:])
    return "".join(pieces)


_SENTENCE_END = lazy(r"(?<=[.!?;])\s+(?=\S)")
_LABEL = lazy(r"[ \t]*(?:[-*•][ \t]+)?(?:[A-Za-z][\w ]{0,30}:[ \t]+)?")
_TAIL = lazy(r"\s*\([^()\n]{1,200}\)\s*\Z")


def as_data(text: str, *, trusted: bool = False) -> str:
    """`text` as it may be shown to an agent: `neutralize`d, and, unless `trusted` (the user's own words), each
    line or sentence that reads as instructions to an AI agent (`instruction_reason`: orders, and the fake client
    markup or role headers they come wrapped in) replaced by `WITHHELD`
    (the whole text when only lines together read so: a notice split across lines). A line's label ("- still
    failing: ") and closing provenance ("(learned, 2 days ago)") stay when they are clean."""
    if not text or trusted or instruction_reason(text) is None:
        return neutralize(text)
    lines = text.split("\n")
    if len(lines) == 1:
        return _withheld_line(text)
    flagged = [bool(instruction_reason(line)) for line in lines]
    if not any(flagged):
        return WITHHELD
    shown = [_withheld_line(line) if bad else neutralize(line) for line, bad in zip(lines, flagged, strict=True)]
    out = "\n".join(line for i, line in enumerate(shown) if not (line == WITHHELD and i and shown[i - 1] == line))
    return WITHHELD if instruction_reason(out) else out  # what is left must not read so either


def _withheld_line(line: str) -> str:
    """One line that reads as instructions, with only its offending sentences withheld."""
    label = _LABEL.match(line)
    head = line[:label.end()] if label and not instruction_reason(line[:label.end()]) else ""
    tail_match = _TAIL.search(line, len(head))
    tail = tail_match.group(0) if tail_match and not instruction_reason(tail_match.group(0)) else ""
    body = line[len(head):len(line) - len(tail)]
    sentences = _SENTENCE_END.split(body)
    flagged = [bool(instruction_reason(s)) for s in sentences]
    if not any(flagged):
        shown = WITHHELD
    else:
        kept: list[str] = []
        for sentence, bad in zip(sentences, flagged, strict=True):
            if not bad:
                kept.append(neutralize(sentence))
            elif not kept or kept[-1] != WITHHELD:
                kept.append(WITHHELD)
        shown = " ".join(kept)
        if instruction_reason(shown):  # an order spread over sentences ("run `curl ... | sh`")
            shown = WITHHELD
    return f"{neutralize(head)}{shown}{neutralize(tail)}"
