"""Secret redaction for everything that enters the memory store.

Pure functions, no I/O. Hooks, `memory_save` and imports run `redact` / `redact_value` on what they
store: `<private>` blocks are dropped and every secret that `secret_scan.find_secrets` finds is replaced by a
marker naming its kind. `is_sensitive_path` tells capture to skip the contents of files such as `.env` or
SSH keys; `truncate_middle` keeps the head and tail of very long tool outputs.
"""

from __future__ import annotations

import bisect
import re

from ..trust.lazy_regex import lazy
from .secret_scan import Finding, find_secrets

TYPE_CHECKING = False  # importing typing costs each hook process ~5 ms
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_DEPTH", "PRIVATE", "REDACTED", "TRUNCATED_DEPTH", "decodes_secrets", "dumps_environment",
           "is_sensitive_key", "is_sensitive_path", "makes_secrets", "names_sensitive_file", "redact", "redact_value",
           "truncate_middle", "without_sensitive_lines"]

REDACTED = "[REDACTED]"
PRIVATE = "[PRIVATE]"
TRUNCATED_DEPTH = "[TRUNCATED:depth]"
MAX_DEPTH = 64


_PRIVATE_TAG = lazy(r"(?i)<[ \t]*(/?)[ \t]*private\b[^<>\n]{0,200}>")


def _strip_private(text: str) -> str:
    """Replace each outermost <private>...</private> block (nesting counted) with "[PRIVATE]"."""
    if "<" not in text or "private" not in text.lower():
        return text
    pieces = []
    depth = kept_from = 0
    for m in _PRIVATE_TAG.finditer(text):
        if not m.group(1):
            if depth == 0:
                pieces += [text[kept_from : m.start()], PRIVATE]
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                kept_from = m.end()
    if depth == 0:
        pieces.append(text[kept_from:])
    return "".join(pieces)


def _apply(text: str, findings: list[Finding]) -> tuple[str, list[tuple[int, int]]]:
    """Replace each finding by its marker; return the new text and where the markers are in it."""
    pieces = []
    markers = []
    pos = length = 0
    for f in findings:
        marker = f"[REDACTED:{f.kind}]"
        pieces += [text[pos : f.start], marker]
        length += f.start - pos
        markers.append((length, length + len(marker)))
        length += len(marker)
        pos = f.end
    pieces.append(text[pos:])
    return "".join(pieces), markers


def _around(text: str, markers: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The lines next to each marker (the line before, its own, the line after), merged."""
    line_ends = [m.start() for m in _NEWLINE.finditer(text)] + [len(text)]
    line_starts = [0] + [end + 1 for end in line_ends[:-1]]
    windows: list[tuple[int, int]] = []
    for start, end in markers:
        lo = line_starts[max(bisect.bisect_right(line_starts, start) - 2, 0)]
        hi = line_ends[min(bisect.bisect_left(line_ends, end) + 1, len(line_ends) - 1)]
        if windows and lo <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(hi, windows[-1][1]))
        else:
            windows.append((lo, hi))
    return windows


_NEWLINE = lazy("\n")


def redact(text: str) -> str:
    """Return `text` with `<private>...</private>` blocks replaced by "[PRIVATE]" (an unclosed
    `<private>` hides everything after it) and every secret replaced by "[REDACTED:kind]".

    Idempotent: redacting the result again changes nothing.
    """
    out = _strip_private(text)
    findings = find_secrets(out)
    for _ in range(4):
        if not findings:
            break
        out, markers = _apply(out, findings)
        # A replacement can change what its neighbours look like: a token that was glued to a secret
        # now stands alone, a line that was too long or held a ";" no longer does. Rules see at most
        # the neighbouring lines, so look again there.
        findings = [
            Finding(f.kind, f.start + lo, f.end + lo)
            for lo, hi in _around(out, markers)
            for f in find_secrets(out[lo:hi])
        ]
    return out


_SENSITIVE_KEY = lazy(
    r"(?:passw(?:or)?d|passphrase|secret|token|apikey|accesskey|privatekey|authorization|cookie|clientsecret|"
    r"credentials?|signingkey|encryptionkey|masterkey|connectionstring|_pass|_pwd)"
    r"(?:key|value|hash|b64|base64|hex|str|string|plain|data|id|base|bytes|\d{1,2})?\Z"
)
_SENSITIVE_EXACT = frozenset({"auth", "_auth", "pass", "pwd", "pw", "sig", "signature"})
_SENSITIVE_KEY_WORDS = ("pass", "secret", "token", "key", "auth", "cookie", "credential", "connectionstring", "pwd")


def is_sensitive_key(key: str) -> bool:
    """True for mapping keys that name a secret: "password", "GITHUB_TOKEN", "clientSecret", "x-api-key".

    Counters and settings about secrets ("max_tokens", "token_type", "secret_name") are not sensitive.
    """
    norm = re.sub(r"[\s\-.]", "", key.lower())
    if norm in _SENSITIVE_EXACT:
        return True
    if not any(word in norm for word in _SENSITIVE_KEY_WORDS):  # every _SENSITIVE_KEY match has one: skip compiling it
        return False
    return (
        _SENSITIVE_KEY.search(norm.replace("_", "")) is not None
        or _SENSITIVE_KEY.search(norm) is not None
    )


def redact_value(value: Any) -> Any:
    """Deep-copy JSON-like data (dict, list, str, number, bool, None) with every string redacted.

    A non-empty string under a sensitive key (password, token, api_key, ...) becomes
    "[REDACTED:field]". Nesting deeper than 64 levels becomes "[TRUNCATED:depth]", which also ends
    self-referencing structures. Tuples become lists, bytes are decoded, other objects become their
    redacted `str()`.
    """
    return _redact_value(value, 0)


def _redact_value(value: Any, depth: int) -> Any:
    if depth >= MAX_DEPTH:
        return TRUNCATED_DEPTH
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, str) and isinstance(v, str) and v and is_sensitive_key(k):
                out[redact(k)] = "[REDACTED:field]"
            else:
                out[redact(k) if isinstance(k, str) else k] = _redact_value(v, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_redact_value(v, depth + 1) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return redact(bytes(value).decode("utf-8", errors="replace"))
    return redact(str(value))


_TEMPLATE_SUFFIXES = tuple(sep + word for sep in "._-" for word in ("example", "sample", "template", "dist",
                                                                     "defaults", "schema"))
_BACKUP_SUFFIXES = (".bak", ".old", ".orig", ".save", ".swp", ".swo", ".backup", ".tmp")


def _unbacked(base: str) -> str:
    """A file name without the marks of a copy: `.env~`, `.env.bak`, `#.env#` -> `.env`."""
    base = base.lstrip("#").rstrip("~#")
    while base.endswith(_BACKUP_SUFFIXES):
        base = base.rsplit(".", 1)[0].rstrip("~#")
    return base
_SENSITIVE_NAMES = frozenset(
    (
        ".netrc _netrc .pgpass .npmrc .pypirc credentials credentials.json .git-credentials .htpasswd .dockercfg"
        " .envrc .flaskenv .secrets secrets.yaml secrets.yml secrets.json secrets.toml"
    ).split()
)
_SENSITIVE_EXTENSIONS = (".pem", ".key", ".p12", ".pfx", ".keystore", ".jks", ".p8", ".ppk", ".env")
_SSH_KEY_PREFIXES = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519")
_SENSITIVE_TAILS = (".aws/credentials", ".docker/config.json", ".kube/config")


def is_sensitive_path(path: str) -> bool:
    """True when the file at `path` probably holds credentials: .env files, private keys, .netrc, ...

    Accepts relative, absolute and Windows paths. Variants and copies count (`.env-prod`, `.env~`, `.env.bak`,
    `.flaskenv`); templates (`.env.example`, `.env-sample`, `.env.template`) and public keys (`*.pub`) do not.
    """
    norm = path.strip().strip("\"'").replace("\\", "/").rstrip("/").lower()
    base = _unbacked(norm.rsplit("/", 1)[-1])  # `.env~`, `.env.bak`, `#.env#`: a copy of the file
    if not base or base.endswith(".pub") or base.endswith(_TEMPLATE_SUFFIXES):
        return False
    return (
        base == ".env"
        or base.startswith((".env.", ".env-", ".env_"))
        or base in _SENSITIVE_NAMES
        or base.endswith(_SENSITIVE_EXTENSIONS)
        or base.startswith(_SSH_KEY_PREFIXES)
        or any(norm == tail or norm.endswith("/" + tail) for tail in _SENSITIVE_TAILS)
    )


_SHELL_WORD = lazy(r"[^\s;|&<>()`'\"=]+")
_GLOB_CHARS = frozenset("*?[")
_BRACES = lazy(r"\{[^{}]*\}")
# What a glob in a command may expand to: a name of each kind that `is_sensitive_path` denies.
_DENIED_EXAMPLES = (".env", ".env.local", ".env.production", ".env-prod", ".flaskenv", ".envrc", ".netrc", "_netrc",
                    ".pgpass", ".npmrc", ".pypirc", ".git-credentials", ".htpasswd", ".dockercfg", ".secrets",
                    "credentials", "credentials.json", "secrets.yaml", "secrets.yml", "secrets.json", "secrets.toml",
                    "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "server.pem", "server.key", "cert.p12", "cert.pfx",
                    "app.keystore", "app.jks", "key.p8", "key.ppk", "prod.env")


def _glob_may_be_sensitive(word: str) -> bool:
    """A shell glob (`.e*`, `.en?`, `.[e]nv`, `*.pem`, `config/.env*`) that could expand to a deny-listed file; as
    the shell does, a pattern matches a dot file only when it starts with a dot; `*` and `*.*` count as nothing."""
    from fnmatch import fnmatchcase

    pattern = _BRACES.sub("*", word.replace("\\", "/").rsplit("/", 1)[-1]).lower()
    if not pattern.strip("*?") or pattern == "*.*":
        return False
    return any(fnmatchcase(name, pattern) for name in _DENIED_EXAMPLES
               if pattern.startswith(".") or not name.startswith("."))


def names_sensitive_file(command: str) -> bool:
    """True when a shell command names a deny-listed file (`cat .env`, `grep KEY config/.env.prod`,
    `source .env`, `head ~/.ssh/id_rsa`, `less ~/.pgpass`), also through a glob (`cat .e*`, `cat .en?`): what it
    prints may be that file's content."""
    if len(command) > 20_000:
        command = command[:20_000]
    for word in _SHELL_WORD.findall(command):
        if _GLOB_CHARS.intersection(word) or "{" in word:
            if _glob_may_be_sensitive(word):
                return True
        elif ("." in word or "_" in word or word in _SENSITIVE_NAMES) and is_sensitive_path(word):
            return True
    return False


_DECODER_WORDS = ("base64", "openssl", "gpg", "sops", "age", "xxd")
_DECODER = lazy(
    r"(?i)(?:\bbase64\b[^|;&\n]{0,80}?(?:\s-d\b|\s--decode\b|\s-D\b)|\bopenssl\b[^|;&\n]{0,80}?\s-d\b|"
    r"\b(?:gpg|gpg2|sops|age)\b[^|;&\n]{0,80}?(?:\s-d\b|\s--decrypt\b)|\bxxd\b[^|;&\n]{0,40}?\s-r\b)"
)


def decodes_secrets(command: str) -> bool:
    """True when a shell command decodes or decrypts something (`base64 -d`, `openssl enc -d`, `gpg --decrypt`,
    `sops -d`, `xxd -r`): its output is plaintext that no pattern recognises, so it is not recorded."""
    command = command[:20_000]
    low = command.lower()
    return any(word in low for word in _DECODER_WORDS) and _DECODER.search(command) is not None


_ENVIRONMENT_WORDS = ("env", "set", "export", "declare", "typeset", "compose", "kubectl", "environ", "heroku", "vercel",
                      "getenv", "%env")
_ENVIRONMENT = lazy(
    r"(?i)(?:^|[;&|(`{]|\$\()\s*(?:sudo\s+(?:-\S+\s+)*)?(?:printenv\b|env(?:\s+-[0iu]\S*(?:\s+[A-Z_]\w*)?)*\s*"
    r"(?:$|[|;&>)`])|export\s+-p\b|declare\s+-[a-z]*[xp]|typeset\s+-[a-z]*x|set\s*(?:$|[|;&>)]))|"
    r"\bdocker[\s-]compose\b[^|;&\n]*\sconfig\b|\bkubectl\b[^|;&\n]*\b(?:get|describe|edit)\s+secrets?\b|"
    r"\b(?:python[\d.]*|node|ruby|perl|php|deno|bun)\b[^|;&\n]*\s-[a-z]*[cepr]\b[^\n]*(?:\benviron\b|process\.env|"
    r"\bENV\b|getenv|%ENV|\$_ENV|\$_SERVER)|/proc/[\w/]*environ\b|\bheroku\s+config\b(?!:set)|"
    r"\bvercel\s+env\s+(?:pull|ls)\b"
)
_MAKER_WORDS = ("rand", "token_", "urandom", "pwgen", "secret", "genkey", "keygen", "mkpasswd", "key:generate")
_MAKES_SECRETS = lazy(
    r"(?i)\bopenssl\s+rand\b|\bsecrets\.token_|\btoken_(?:hex|urlsafe|bytes)\b|/dev/u?random\b|\bpwgen\b|"
    r"\bgpg2?\s+[^|;&\n]*--gen-random\b|\b(?:rails|rake)\s+secret\b|\bphx\.gen\.secret\b|"
    r"\bget_random_secret_key\b|\bkey:generate\b[^|;&\n]*--show\b|\brandomBytes\b|\bos\.urandom\b|\bwg\s+genkey\b|"
    r"\bage-keygen\b|\bmkpasswd\b"
)


def dumps_environment(command: str) -> bool:
    """True when a shell command prints the environment or a store of secrets (`printenv`, `env | sort`, `export -p`,
    `docker compose config`, `kubectl get secret -o yaml`, `python -c "print(os.environ)"`, `heroku config`): its
    output is not recorded. The output's shape is judged too, wherever it comes from (`environment.py`)."""
    command = command[:20_000]
    low = command.lower()
    return any(word in low for word in _ENVIRONMENT_WORDS) and _ENVIRONMENT.search(command) is not None


def makes_secrets(command: str) -> bool:
    """True when a shell command makes a secret (`openssl rand -hex 32`, `python -c "import secrets; ..."`,
    `head -c 32 /dev/urandom | base64`, `rails secret`, `wg genkey`): what it prints is a fresh key that has no
    recognisable shape (a bare 64-hex string is as often a content hash), so it is not recorded."""
    command = command[:20_000]
    low = command.lower()
    return any(word in low for word in _MAKER_WORDS) and _MAKES_SECRETS.search(command) is not None


_SEARCH_LINE = lazy(r"(?m)^[ \t]*([^\s:]{1,4096}?)(?::\d+[:\-]|:|-\d+-)[^\n]*")
_DENIED_HINTS = (".env", ".pem", ".key", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "pgpass", "netrc", "credentials",
                 ".npmrc", ".pypirc", "secrets", ".p12", ".pfx", ".htpasswd", ".jks", ".keystore", ".p8", ".ppk",
                 ".dockercfg", "/config")


def without_sensitive_lines(text: str) -> str:
    """`text` (a tool's output) with every line that a search tool prefixed with a deny-listed file's path
    (`config/.env:3:API_KEY=...`, `~/.pgpass:1:...`, grep's `.env-4-` context lines) replaced by a note."""
    low = text.lower()
    if not any(hint in low for hint in _DENIED_HINTS):
        return text
    pieces, pos = [], 0
    for m in _SEARCH_LINE.finditer(text):
        if is_sensitive_path(m.group(1)):
            pieces += [text[pos : m.start()], f"[a line of {m.group(1)}, not recorded]"]
            pos = m.end()
    if not pieces:
        return text
    pieces.append(text[pos:])
    return "".join(pieces)


def truncate_middle(text: str, max_chars: int) -> str:
    """Shorten `text` longer than `max_chars` to its head (~60%) and tail around a marker
    "… [n chars cut] …". Cuts move to a nearby line break when one is close. The result is at most
    `max_chars` plus the marker's length."""
    if len(text) <= max_chars:
        return text
    budget = max(0, max_chars)
    head_end = budget * 6 // 10
    tail_start = len(text) - (budget - head_end)
    nl = text.rfind("\n", head_end - budget // 10, head_end) if budget >= 10 else -1
    head_end = nl if nl > 0 else head_end
    nl = text.find("\n", tail_start, tail_start + budget // 10) if budget >= 10 else -1
    tail_start = nl + 1 if nl >= 0 else tail_start
    return f"{text[:head_end]}\n… [{tail_start - head_end} chars cut] …\n{text[tail_start:]}"
