"""Entities named in text: file paths, code symbols, packages and tools (pure functions).

They link memories into a graph: a query naming `src/auth.py` or `parseConfig` reaches the memories
that name them, even when BM25 and vectors rank those memories low.
"""

from __future__ import annotations

import re

FILE_EXTENSIONS = (
    "py|pyi|js|jsx|ts|tsx|mjs|cjs|go|rs|java|kt|kts|rb|php|c|h|cc|cpp|hpp|cs|swift|m|mm|scala|sh|bash|zsh|"
    "sql|json|jsonl|yaml|yml|toml|ini|cfg|conf|md|rst|txt|html|css|scss|vue|svelte|lock|xml|gradle|proto|"
    "graphql|tf|dockerfile|env|ipynb"
)
_PATH = re.compile(
    rf"(?<![\w/.-])((?:\.{{0,2}}/)?(?:[\w@.+-]+/)+[\w@.+-]+|[\w@+-][\w@.+-]*\.(?:{FILE_EXTENSIONS}))(?![\w/-])",
    re.IGNORECASE,
)
_SPECIAL_FILES = re.compile(
    r"\b(Dockerfile|Makefile|Justfile|Procfile|Gemfile|Rakefile|Cargo\.toml|package\.json|pyproject\.toml)\b"
)
_SYMBOL = re.compile(
    r"\b([a-z]+(?:[A-Z][a-z0-9]*)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|"
    r"[A-Za-z_][\w]*(?=\())"
)
_INSTALL = re.compile(
    r"\b(?:pip3?|uv pip|poetry|npm|pnpm|yarn|bun|cargo|go|gem|brew|apt(?:-get)?)\s+"
    r"(?:install|add|get|i)\s+((?:[-\w@/.=<>~^]+\s*)+)",
    re.IGNORECASE,
)
_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.MULTILINE)
_REQUIRE = re.compile(r"""(?:require\(|from\s+)['"]([@\w][\w@/.-]*)['"]""")
TOOLS = frozenset(
    "git gh npm npx pnpm yarn bun node deno pip pip3 uv poetry pipx python python3 pytest tox nox ruff black "
    "mypy pyright flake8 isort docker podman kubectl helm terraform make cmake cargo rustc go gradle mvn "
    "javac jest vitest mocha eslint prettier tsc webpack vite esbuild rollup psql mysql sqlite3 redis-cli "
    "curl wget ssh rsync aws gcloud az grep rg sed awk jq".split()
)
_WORD = re.compile(r"(?<![\w/.-])([a-z][a-z0-9-]*[0-9a-z])(?![\w/-])")
COMMON_WORDS = frozenset({"make", "go", "node", "black", "git"})  # ambiguous unless in a command position
_COMMAND_START = re.compile(r"(?:^|[`$;&|]\s*|\bran\s+|\brun\s+|\buse\s+|\bwith\s+)([a-z][a-z0-9-]+)", re.MULTILINE)

MAX_ENTITIES = 64


def normalize_path(path: str) -> str:
    path = path.strip().strip("'\"`").replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip(".,:;)")


def extract_entities(text: str) -> set[tuple[str, str]]:
    """(kind, name) pairs: kind is `file` (basename), `path`, `symbol`, `package` or `tool`."""
    found: set[tuple[str, str]] = set()
    for match in _PATH.finditer(text):
        path = normalize_path(match.group(1))
        if not path or "://" in path or path.count("/") > 12 or path.replace(".", "").isdigit():
            continue
        base = path.rsplit("/", 1)[-1]
        if "/" in path:
            found.add(("path", path.lower()))
        if "." in base or _SPECIAL_FILES.fullmatch(base):
            found.add(("file", base.lower()))
    for match in _SPECIAL_FILES.finditer(text):
        found.add(("file", match.group(1).lower()))
    for match in _SYMBOL.finditer(text):
        symbol = match.group(1)
        if len(symbol) >= 4 and symbol.lower() not in TOOLS:
            found.add(("symbol", symbol.lower()))
    for match in _INSTALL.finditer(text):
        for spec in match.group(1).split():
            name = re.split(r"[=<>~^]|(?<=.)@", spec, maxsplit=1)[0].lower()
            if name and not name.startswith("-") and len(name) > 1:
                found.add(("package", name))
    for match in _IMPORT.finditer(text):
        module = (match.group(1) or match.group(2)).split(".")[0]
        found.add(("package", module.lower()))
    for match in _REQUIRE.finditer(text):
        spec = match.group(1)
        name = "/".join(spec.split("/")[:2]) if spec.startswith("@") else spec.split("/")[0]
        if not name.startswith("."):
            found.add(("package", name.lower()))
    lowered = text.lower()
    for match in _WORD.finditer(lowered):
        word = match.group(1)
        if word in TOOLS and word not in COMMON_WORDS:
            found.add(("tool", word))
    for match in _COMMAND_START.finditer(lowered):
        if match.group(1) in TOOLS:
            found.add(("tool", match.group(1)))
    if len(found) > MAX_ENTITIES:
        ranked = sorted(found, key=lambda e: ({"path": 0, "file": 1, "package": 2, "tool": 3}.get(e[0], 4), e[1]))
        found = set(ranked[:MAX_ENTITIES])
    return found
