"""How long ago something happened, in the words `agentmem list`, `agentmem stats` and `memory_get` write it."""

from __future__ import annotations


def age(seconds: float) -> str:
    """'just now', '5 min ago', '3 h ago', '12 d ago'."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return "just now"
