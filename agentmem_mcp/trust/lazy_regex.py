"""Regular expressions compiled on first use.

Compiling a pattern costs 0.05-0.5 ms, and every hook is a fresh process: a module with forty patterns
would spend several milliseconds compiling ones the event at hand never reaches. `lazy(...)` stands in
for `re.compile(...)` at module level and compiles when a method is first called.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # importing typing costs each hook process ~5 ms
if TYPE_CHECKING:
    from typing import Any


class LazyPattern:
    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return self._compiled

    def __getattr__(self, name: str) -> Any:  # search, match, finditer, sub, pattern, ...
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return f"lazy({self._args[0]!r})"


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    return LazyPattern(pattern, flags)
