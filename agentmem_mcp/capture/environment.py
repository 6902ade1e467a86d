"""Environment dumps, judged by their shape wherever they come from: many `NAME=value` lines (`printenv`,
`env | sort`, `export -p`, a pasted `.env`), a compose file's `NAME: value` block (`docker compose config`),
`environ({'NAME': 'value', ...})` (`print(os.environ)`), `{ NAME: 'value' }` (`console.log(process.env)`), and the
values of a Kubernetes Secret (`kubectl get secret -o yaml|json`). In such a text every value may be a secret,
whatever its name: the names stay, the values go.

Pure functions, no I/O; `secret_scan.find_secrets` turns the spans into findings.
"""

from __future__ import annotations

from ..trust.lazy_regex import lazy

TYPE_CHECKING = False  # importing typing costs each hook process ~5 ms
if TYPE_CHECKING:
    from collections.abc import Iterator

MIN_PAIRS = 5  # fewer NAME=value pairs than this is a config line or two, not a dump
SECRET_NAME_WORDS = ("KEY", "TOKEN", "SECRET", "PASS", "PW", "CREDENTIAL", "PRIVATE", "DSN", "SALT", "COOKIE",
                     "SIGNING", "DATABASE_URL")  # one of them is in any name that `_secret_name` accepts
_SECRET_PARTS = frozenset("KEY KEYS APIKEY TOKEN TOKENS SECRET SECRETS PASS PASSWORD PASSWD PASSPHRASE PW PWD "
                          "CREDENTIAL CREDENTIALS PRIVATE DSN SALT COOKIE SIGNING".split())
_LINE_PAIR = lazy(r"(?m)^[ \t]*(?:export[ \t]+|declare[ \t]+-[a-zA-Z]+[ \t]+|setenv[ \t]+|-[ \t]+|\$env:)?"
                  r"([A-Z_][A-Z0-9_]{1,100})(?:=|:[ \t]+)[ \t]*(\"[^\"\n]{0,8192}\"|'[^'\n]{0,8192}'|[^\s\"']{1,8192})"
                  r"[ \t]*$")
_QUOTED_PAIR = lazy(r"(?<![A-Za-z0-9_])([A-Z_][A-Z0-9_]{1,100})[\"']?[ \t]*:[ \t]*([\"'])"
                    r"((?:[^\"'\\\n]|\\.){1,8192})\2")
# variables every process environment has: a dump shows them, a config file or a schema of settings does not
_PROCESS_VARIABLES = ("PATH", "HOME")
_COMPOSE_ENVIRONMENT = lazy(r"(?m)^([ \t]*)environment:[ \t]*\n((?:\1[ \t]+[^\n]*(?:\n|\Z))+)")
_SECRET_KIND = lazy(r"(?i)[\"']?kind[\"']?[ \t]*:[ \t]*[\"']?secret\b")
_YAML_DATA = lazy(r"(?m)^([ \t]*)(?:data|stringData):[ \t]*\n((?:\1[ \t]+[^\n]*(?:\n|\Z))+)")
_YAML_VALUE = lazy(r"(?m)^[ \t]+[^\s:#][^:\n]{0,250}:[ \t]+([^\s#][^\n]{0,8192})")
_JSON_DATA = lazy(r"[\"'](?:data|stringData)[\"'][ \t]*:[ \t]*\{([^{}]{0,200000})\}")
_JSON_VALUE = lazy(r"[\"'][^\"'\n]{1,250}[\"'][ \t]*:[ \t]*[\"']([^\"'\n]{1,8192})[\"']")


def _unquoted(text: str, start: int, end: int) -> tuple[int, int]:
    """The span without surrounding quotes and trailing blanks (`"value"` -> value)."""
    while end > start and text[end - 1] in " \t\r":
        end -= 1
    if end - start >= 2 and text[start] in "\"'" and text[end - 1] == text[start]:
        return start + 1, end - 1
    return start, end


def _pairs(text: str, start: int, end: int) -> Iterator[tuple[str, int, int]]:
    """(name, value start, value end) of each `NAME=value` line (a value of one word, or quoted) and each
    `'NAME': 'value'` / `NAME: 'value'` of a printed mapping, in text[start:end]."""
    for m in _LINE_PAIR.finditer(text, start, end):
        yield (m.group(1), *_unquoted(text, m.start(2), m.end(2)))
    for m in _QUOTED_PAIR.finditer(text, start, end):
        yield m.group(1), m.start(3), m.end(3)


def environment_values(text: str) -> list[tuple[int, int]]:
    """The spans of the values of an environment dump in `text`, in order: MIN_PAIRS or more `NAME=value` pairs
    among them PATH or HOME (a process's environment) and one named like a secret (`_secret_name`); a compose
    `environment:` block naming a secret; a Kubernetes Secret's data. [] when there is none."""
    spans = _secret_data(text) if "ind" in text and "Secret" in text and _SECRET_KIND.search(text) else []
    if _names_a_secret(text):
        pairs = {(start, end): name for name, start, end in _pairs(text, 0, len(text)) if end > start}
        names = set(pairs.values())
        if len(pairs) >= MIN_PAIRS and any(v in names for v in _PROCESS_VARIABLES) and any(map(_secret_name, names)):
            spans += list(pairs)
        if "environment:" in text:
            spans += _compose_values(text)
    return sorted(set(spans))


def _compose_values(text: str) -> list[tuple[int, int]]:
    """The values of each compose `environment:` block that names a secret."""
    spans = []
    for block in _COMPOSE_ENVIRONMENT.finditer(text):
        pairs = list(_pairs(text, block.start(2), block.end(2)))
        if any(_secret_name(name) for name, _, _ in pairs):
            spans += [(start, end) for _, start, end in pairs if end > start]
    return spans


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
MAX_LOOKS = 200


def _names_a_secret(text: str) -> bool:
    """Whether `text` assigns a variable named like a secret (`STRIPE_KEY=`, `"DB_PASSWORD":`, `ADMIN_PW: `): found
    from the upper-case words with str.find, so that the pair patterns run only where a dump can be."""
    looks = 0
    for word in SECRET_NAME_WORDS:
        at = text.find(word)
        while at >= 0 and looks < MAX_LOOKS:
            looks += 1
            start, end = at, at + len(word)
            while start > 0 and text[start - 1] in _NAME_CHARS:
                start -= 1
            while end < len(text) and text[end] in _NAME_CHARS:
                end += 1
            after = text[end:end + 4].lstrip("\"' \t")
            if after[:1] in ("=", ":") and _secret_name(text[start:end]):
                return True
            at = text.find(word, end)
    return False


def _secret_name(name: str) -> bool:
    """A variable named like a secret: STRIPE_KEY, DB_PASSWORD, ADMIN_PW, DATABASE_URL (not PWD, the shell's working
    directory, nor SSH_AUTH_SOCK or GIT_ASKPASS)."""
    return name != "PWD" and (name == "DATABASE_URL" or any(part in _SECRET_PARTS for part in name.split("_")))


def _secret_data(text: str) -> list[tuple[int, int]]:
    """The values under `data:` / `stringData:` of a Kubernetes Secret (YAML or JSON)."""
    spans = []
    for block in _YAML_DATA.finditer(text):
        spans += [_unquoted(text, m.start(1), m.end(1))
                  for m in _YAML_VALUE.finditer(text, block.start(2), block.end(2))]
    for block in _JSON_DATA.finditer(text):
        spans += [(m.start(1), m.end(1)) for m in _JSON_VALUE.finditer(text, block.start(1), block.end(1))]
    return spans
