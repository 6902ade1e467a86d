"""Text that agentmem injects into an agent is data, not instructions: `neutralize` defuses sequences that
could close or open a client's own markup (a `</system-reminder>` in a recalled tool output must not end the
client's reminder block)."""

from __future__ import annotations

import re

_TAG = re.compile(r"<\s*/?\s*(?:system[-_ ]?reminder|system|user|assistant|human|tool[-_ ]?(?:use|result|call)s?|"
                  r"function[-_ ]?(?:calls?|results?)|invoke|parameter|antml:[\w-]+|instructions?|"
                  r"user-prompt-submit-hook|command-[\w-]+|\|im_(?:start|end)\|)\b[^>]{0,200}>?", re.IGNORECASE)
_ROLE = re.compile(r"^(\s*)(Human|Assistant|System|User)\s*:", re.IGNORECASE | re.MULTILINE)


def neutralize(text: str) -> str:
    """`text` with markup-like tags and role headers made inert but readable (`<system>` -> `‹system›`)."""
    text = _TAG.sub(lambda m: m.group(0).replace("<", "‹").replace(">", "›"), text)
    return _ROLE.sub(lambda m: f"{m.group(1)}{m.group(2)} said:", text)
