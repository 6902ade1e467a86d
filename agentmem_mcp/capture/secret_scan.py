"""Finding secrets in text: where they are, not what to do about them (that is redact.py).

Pure functions, no I/O. Three layers of detection, merged into one list of non-overlapping findings:
known token formats (provider prefixes, PEM blocks, JWTs), secrets named by their context
(`DB_PASSWORD=...`, `Authorization:` headers, credentials in URLs and command lines) and random-looking
strings found by entropy. Every regex runs in linear time: each starts on a literal or a narrow class,
and every repetition that can fail and retry is bounded. This module is longer than most because the
rule tables are data; the logic is the short functions below them.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter, namedtuple

from ..trust.lazy_regex import lazy

TYPE_CHECKING = False  # importing typing (NamedTuple) costs each hook process ~5 ms: plain namedtuples here
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


class Finding(namedtuple("Finding", ("kind", "start", "end"))):
    """A secret in a text: its kind (str, e.g. "github_token") and its span `text[start:end]` (ints)."""

    __slots__ = ()


class _Rule(namedtuple("_Rule", ("kind", "pattern", "hint", "group", "check", "lower", "on_line", "needs"))):
    """kind and pattern (str); hint: a lower-case literal every match contains (without it in the text, the rule is
    skipped) or None; group: the capture group that holds the secret; check: an extra test on the secret (str ->
    bool) or None; lower: the pattern is written in lower case and runs on the lower-cased text; on_line: words one
    of which must come earlier on the same line (a command name); needs: literals one of which every match contains,
    as the rule sees the text (case-sensitive unless `lower`): without any, the rule is skipped, uncompiled."""

    __slots__ = ()


def _rule(
    kind: str,
    pattern: str,
    group: int = 0,
    check: Callable[[str], bool] | None = None,
    lower: bool = False,
    on_line: tuple[str, ...] = (),
    needs: tuple[str, ...] = (),
) -> _Rule:
    return _Rule(kind, pattern, _literal_prefix(pattern), group, check, lower, on_line, needs)


_COMPILED: dict[str, re.Pattern[str]] = {}


def _regex(rule: _Rule) -> re.Pattern[str]:
    """Rules compile on first use: a hook process pays only for the rules its text can match."""
    regex = _COMPILED.get(rule.pattern)
    if regex is None:
        regex = _COMPILED[rule.pattern] = re.compile(rule.pattern, re.DOTALL)
    return regex


def _literal_prefix(pattern: str) -> str | None:
    """The literal text every match of `pattern` starts with (lower-cased), if it has 3+ characters and
    the pattern has no top-level alternation."""
    depth, escaped, in_class = 0, False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return None
    prefix = ""
    for index, char in enumerate(pattern):
        if char in "\\[](){}.*+?|^$":
            break
        if index + 1 < len(pattern) and pattern[index + 1] in "?*{":
            break
        prefix += char
    return prefix.lower() if len(prefix) >= 3 else None


def _token(prefix: str, body: str, end: str = r"(?![A-Za-z0-9_\-])") -> str:
    """A token that starts with the fixed-width `prefix` and is not glued to a word on either side.

    The prefix comes first and the left boundary is checked behind it, so the regex engine can skip
    straight to occurrences of the prefix instead of trying every position.
    """
    return rf"{prefix}(?<![A-Za-z0-9_\-]{prefix}){body}{end}"


def _mixed_case(s: str) -> bool:
    return any(c.isupper() for c in s) and any(c.islower() for c in s)


def _mixed_case_digit(s: str) -> bool:
    return _mixed_case(s) and any(c.isdigit() for c in s)


def _has_key_body(s: str) -> bool:
    return re.search(r"[A-Za-z0-9+/=]{20}", s) is not None


def _not_reference(s: str) -> bool:
    return not s.startswith(("[", "$", "{", "<", "%"))


_ANY = ""  # no right boundary: the body's own length limit ends the token
# fmt: off
_FORMAT_RULES: tuple[_Rule, ...] = (
    _rule("private_key", r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?"
          r"(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)", check=_has_key_body),
    _rule("aws_access_key_id", _token("(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])", "[A-Z0-9]{16}", "(?![A-Za-z0-9])"),
          needs=("AKIA", "ASIA", "ABIA", "ACCA", "A3T")),
    _rule("aws_secret_access_key", r"secret_?(?:access_?)?key[\"']?[ \t]{0,5}(?:[:=]{1,2}[ \t]{0,5})?[\"']?"
          r"([a-z0-9/+]{40})(?![a-z0-9/+=])", 1, lower=True),
    _rule("gcp_api_key", _token("AIza", r"[0-9A-Za-z_\-]{35}")),
    _rule("gcp_oauth_secret", _token("GOCSPX-", r"[A-Za-z0-9_\-]{20,40}")),
    _rule("gcp_access_token", _token(r"ya29\.", r"[A-Za-z0-9_\-.]{20,2048}", _ANY)),
    _rule("azure_storage_key", r"accountkey=([a-z0-9+/]{20,200}={0,2})", 1, lower=True),
    _rule("azure_storage_key", r"sharedaccesskey=([a-z0-9+/]{20,200}={0,2})", 1, lower=True),
    _rule("azure_sas", r"sig=(?<=[?&]sig=)([A-Za-z0-9%+/]{20,200}(?:%3D|=){0,2})", 1),
    _rule("github_token", _token("gh[pousr]_", "[A-Za-z0-9]{36,251}"), needs=("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _rule("github_token", _token("github_pat_", "[A-Za-z0-9_]{40,240}")),
    _rule("gitlab_token", _token("gl", r"(?:pat|dt|rt|ptt|cbt|imt|soat|ft|agent|oas|wt)-[A-Za-z0-9_\-]{20,80}", _ANY),
          needs=("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glimt-", "glsoat-", "glft-", "glagent-", "gloas-",
                 "glwt-")),
    _rule("slack_token", _token("xox[abposre]-", r"[A-Za-z0-9\-]{10,250}", _ANY)),
    _rule("slack_token", _token("xapp-", r"[A-Za-z0-9\-]{10,250}", _ANY)),
    _rule("slack_webhook", r"hooks\.slack\.com/((?:services|workflows|triggers)/[A-Za-z0-9_/\-]{10,200})", 1),
    _rule("discord_webhook", r"discord(?:app)?\.com/api/webhooks/(\d{5,30}/[A-Za-z0-9_\-]{20,100})", 1),
    _rule("stripe_key", _token("sk_(?:live|test)_", "[A-Za-z0-9]{10,247}", "(?![A-Za-z0-9])")),
    _rule("stripe_key", _token("rk_(?:live|test)_", "[A-Za-z0-9]{10,247}", "(?![A-Za-z0-9])")),
    _rule("stripe_webhook_secret", _token("whsec_", "[A-Za-z0-9]{20,100}", _ANY)),
    _rule("anthropic_api_key", _token("sk-ant-", r"[A-Za-z0-9_\-]{20,250}", _ANY)),
    _rule("openrouter_api_key", _token("sk-or-", r"(?:v\d-)?[A-Za-z0-9_\-]{20,250}", _ANY)),
    _rule("azure_client_secret", r"(?<![A-Za-z0-9_~.\-])([A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34})"
          r"(?![A-Za-z0-9_~.\-])", 1, needs=("Q~",)),
    _rule("openai_api_key", _token("sk-", r"(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,250}", _ANY),
          check=_mixed_case_digit),
    _rule("huggingface_token", _token("hf_", "[A-Za-z0-9]{30,40}", "(?![A-Za-z0-9])"), check=_mixed_case),
    _rule("huggingface_token", _token("api_org_", "[A-Za-z0-9]{30,40}", "(?![A-Za-z0-9])"), check=_mixed_case),
    _rule("npm_token", _token("npm_", "[A-Za-z0-9]{36}", "(?![A-Za-z0-9])"), check=_mixed_case),
    _rule("pypi_token", _token("pypi-Ag", r"[A-Za-z0-9_\-]{50,400}", _ANY)),
    _rule("twilio", _token("AC", "[0-9a-f]{32}", "(?![A-Za-z0-9])"), needs=("AC",)),
    _rule("twilio", _token("SK", "[0-9a-f]{32}", "(?![A-Za-z0-9])"), needs=("SK",)),
    # an account SID, then (on its line or the next) the account's 32-hex auth token: Client("AC...", "...")
    _rule("twilio", r"AC[0-9a-f]{32}(?![0-9A-Za-z])(?:[^\n]{0,100}?\n)?[^\n]{0,100}?(?<![0-9A-Za-z])([0-9a-f]{32})"
          r"(?![0-9A-Za-z])", 1, needs=("AC",)),
    _rule("sendgrid_api_key", _token(r"SG\.", r"[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,64}", _ANY),
          needs=("SG.",)),
    _rule("mailgun_api_key", _token("key-", "[0-9a-f]{32}", "(?![A-Za-z0-9])")),
    _rule("telegram_bot_token", r":(?<=[0-9]{8}:)(AA[A-Za-z0-9_\-]{33})(?![A-Za-z0-9_\-])", 1,
          needs=(":AA",)),
    _rule("vault_token", _token(r"hv[sbr]\.", r"[A-Za-z0-9_\-]{24,200}", _ANY), needs=("hvs.", "hvb.", "hvr.")),
    _rule("digitalocean_token", _token("do[por]_v1_", "[a-f0-9]{64}", _ANY), needs=("_v1_",)),
    _rule("shopify_token", _token("shp(?:at|ss|ca|pa)_", "[a-fA-F0-9]{32}", _ANY)),
    _rule("databricks_token", _token("dapi", r"[a-f0-9]{32}(?:-\d)?", "(?![A-Za-z0-9])")),
    _rule("age_secret_key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    _rule("sentry_dsn", r"://([0-9a-f]{32})(?::[0-9a-f]{32})?@(?=[a-z0-9.\-]{0,200}sentry)", 1, lower=True),
    _rule("pgpass", r"(?m)^[^\s:#][^\s:]{0,252}:(?:\d{1,5}|\*):[^\s:]{1,128}:[^\s:]{1,128}:([^\s]{1,256})$", 1,
          _not_reference),
    _rule("url_signature", r"[?&](?:x-amz-signature|x-amz-security-token|x-goog-signature|x-goog-credential|signature|"
          r"access_token|api_key|apikey|client_secret|token)=([^&#\s\"'<>]{16,4096})", 1, _not_reference, lower=True,
          needs=("signature", "token", "credential", "api_key", "apikey", "client_secret")),
    _rule("jwt", _token("eyJ", r"[A-Za-z0-9_\-]{8,4000}\.eyJ[A-Za-z0-9_\-]{8,8000}\.[A-Za-z0-9_\-]{0,2000}", _ANY)),
)

# Command-line flags whose argument is a password, and the programs they belong to (on the same line).
_SPACED_SECRET_FLAGS = (
    ("a", ("redis-cli",)),
    ("P", ("zip ", "sqlcmd", "bcp ", "ipmitool")),
    ("w", ("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldappasswd", "ldapwhoami")),
    ("p", ("mongo", "mysqlsh")),
)
_CONTEXT_RULES: tuple[_Rule, ...] = (
    _rule("url_password", r"://[^\s:/@?#\"'<>\[\]]{0,256}:([^\s/@\"'<>\[\]]{1,256})@", 1, _not_reference),
    _rule("netrc_password", r"login(?<![a-z0-9_]login)[ \t]+[^\s]{1,256}\s{1,20}password[ \t]+([^\s]{1,256})", 1,
          _not_reference, lower=True),
    _rule("basic_auth", r"-(?<=[ \t]-)(?:u|-user|a|-auth)[ \t=]+[\"']?[^\s:\"']{1,128}:([^\s\"']{1,256})", 1,
          lambda s: _not_reference(s) and not s.isdigit(), on_line=("curl", "wget", "http ")),
    _rule("cli_password", r"-p(?<=[ \t]-p)[ \t]*[\"']?([^\s\"'\-][^\s\"']{0,255})", 1, _not_reference,
          on_line=("sshpass", "docker login", "podman login", "nerdctl login", "az login")),
    _rule("cli_password", r"-p(?<=[ \t]-p)[\"']?([^\s\"'\-][^\s\"']{0,255})", 1, _not_reference,
          on_line=("mysql", "mariadb", "7z ", "7za ", "rar ")),
    *(_rule("cli_password", rf"-{flag}(?<=[ \t]-{flag})[ \t]+[\"']?([^\s\"'\-][^\s\"']{{0,255}})", 1, _not_reference,
            on_line=programs) for flag, programs in _SPACED_SECRET_FLAGS),
    _rule("cli_password", r"pass:(?<=[ \t\"']pass:)([^\s\"']{1,256})", 1, _not_reference,
          on_line=("openssl", "pass ", "pass=")),
    _rule("cli_password", r"--(?:[a-z0-9]{1,20}-){0,4}(?:password|passwd|passphrase|token|secret|api-?key|"
          r"access-key|secret-key|private-key|client-secret)[ \t]+[\"']?([^\s\"'\-$\[{<][^\s\"']{2,255})", 1,
          lambda s: not (s.isalpha() and s.islower()), lower=True, needs=("pass", "token", "secret", "key")),
    _rule("base64_secret", r"echo[ \t]+(?:-[a-z]{1,2}[ \t]+)?[\"']?([A-Za-z0-9+/\-_]{8,4096}={0,2})[\"']?[ \t]*\|[ \t]*"
          r"(?:base64|openssl[ \t]+(?:enc[ \t]+)?base64)[ \t]+(?:-d|--decode|-D)", 1),
    _rule("base64_secret", r"base64[ \t]+(?:-d|--decode|-D)[ \t]*<<<[ \t]*[\"']?([A-Za-z0-9+/\-_]{8,4096}={0,2})", 1),
    _rule("xml_secret", r"<[a-z0-9_.:\-]{0,40}(?:password|passwd|secret|token|api[_-]?key|access[_-]?key)>"
          r"([^<\n]{1,1000})</", 1, _not_reference, lower=True,
          needs=("password>", "passwd>", "secret>", "token>", "key>")),
)

# A name that says "secret", then its separator; matched on the lower-cased text at the places that
# `_ASSIGN_ANCHORS` point to. `_assignment_value` reads the value.
_ASSIGN = lazy(
    r"(?:passw(?:or)?[dt]|passwoord|kennwort|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|"
    r"signing[_-]?key|encryption[_-]?key|master[_-]?key|credentials?|_pass|\.pass|-pass|_pwd|\.pwd|-pwd|;pwd|"
    r"_pw(?![a-z])|\.pw(?![a-z])|-pw(?![a-z])|auth|cookie|"
    r"connection[_-]?string|conn[_-]?str|hmac|signing|subscription[_-]?key|license[_-]?key|"
    r"admin[_-]?key|app[_-]?key|_key(?![a-z]))"
    r"(?:[_.\-]?(?:key|value|hash|b64|base64|hex|str|string|plain|data|id|base|bytes|text|\d{1,2}|v\d)){0,2}"
    r"(?:\\?[\"'`]\]?)?[ \t]{0,10}(:=|=>|:(?![:/])|=(?![=>~]))[ \t]{0,10}"
)
# Substrings found with str.find, and how far before each one a name from `_ASSIGN` can start
# ("key" sits 4 characters into "api_key", 11 into "encryption_key"). Cheaper than scanning with _ASSIGN.
_ASSIGN_ANCHORS = (
    ("pass", (1, 0)), ("pwd", (1,)), ("pw", (1,)), ("kennwort", (0,)), ("secret", (0,)), ("token", (0,)),
    ("auth", (0,)), ("cred", (0,)),
    ("cookie", (0,)), ("conn", (0,)), ("key", (1, 3, 4, 6, 7, 8, 10, 11, 13)), ("hmac", (0,)), ("signing", (0,)),
)  # fmt: skip
_SECRET_WORD = lazy(r"(?i)passw|secret|token|api[_-]?key|credential|_pass|_pwd|auth")
_STOP_VALUES = frozenset((
    "true false null none nil undefined yes no on off required optional include omit same-origin string str"
    " bytes int integer bool boolean any object number float unknown never void await new this self cls"
    " function async typeof return lambda not and or is in if else redacted hidden masked secret password"
    " token empty default env environ getenv process.env os.environ dict list map bearer basic sha256"
    " secretstr char varchar text read write value val obj data result response resp item key arg args"
    " kwargs params config settings options opts static"
).split())
# fmt: on
_QUOTED = {
    '"': lazy(r'"((?:[^"\\\n]|\\.){0,4096})"?'),
    "'": lazy(r"'((?:[^'\\\n]|\\.){0,4096})'?"),
}
_ESCAPED_QUOTED = lazy(r'\\"([^"\\\n]{0,4096})(?:\\")?')
_BARE_VALUE = lazy(r"[^\s\"'`,;<>|(){}\[\]\\&]{1,4096}")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-$")
_LINE_PREFIX = lazy(r"[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]+|\$env:)?[\"']?")
_DOTTED = lazy(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")
_PASCAL = lazy(r"(?:[A-Z][a-z]+)+")
_CAPITAL_WORD = lazy(r"[A-Z][a-z]{2,}")
_DOC_FIELD = lazy(r"(?:[:@](?:param|ivar|type|arg|var|cvar|raises)|Args:|Attributes:)[ \t]*\Z")
_STOPWORDS = frozenset("the a an to of for and or is are use with your this that in on not be by from as it".split())
_SNAKE_WORDS = lazy(r"[a-z]+(?:_[a-z]+)+")
_IDENT = lazy(r"[A-Za-z_][A-Za-z0-9_]*")
_CONSTANT = lazy(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_NAME_LIKE = lazy(r"[A-Za-z_][A-Za-z_\-]*")
_UPPER_NAME = lazy(r"[A-Z0-9_.\-]*[A-Z][A-Z0-9_.\-]*")
_CODE_CHARS = lazy(r"[(){};=]")
_SQUASH = lazy(r"[\s_\-]")
_COLOUR = lazy(r"(?:^|\s)#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})\Z")


def _squash(s: str) -> str:
    return _SQUASH.sub("", s.lower())


def _placeholder(value: str, bare: bool = False) -> bool:
    """A reference or a stand-in, not a secret: $VAR, {{ var }}, <your-token>, %s, ***, sk-...
    Unquoted YAML/shell values can also be anchors, aliases, tags or comments (&a, *a, !Ref, #)."""
    v = value.strip()
    low = v.lower()
    return (
        not v
        or v[0] in ("$[{<%#&*!" if bare else "$[{<%")
        or len(set(low)) <= 2
        or ("your" in low and any(w in low for w in ("key", "token", "secret", "pass")))
        or low.endswith(("...", "…"))
        or low in ("changeme", "change_me", "replace_me", "todo", "example")
    )


def _prose(value: str) -> bool:
    words = value.lower().split()
    return len(words) >= 4 and any(w in _STOPWORDS for w in words)


def _type_name(value: str) -> bool:
    """SecretStr, SSHPrivateKeyTypes: capitalised words, not a random mix of cases."""
    return len(_CAPITAL_WORD.findall(value)) >= 2 and len(value) >= 3 * len(_CASE_RUN.findall(value))


def _looks_like_code(value: str, name: str, following: str) -> bool:
    """`password = self.password`, `token: str`, `api_key=api_key`, `secret = make_secret()`."""
    return (
        following in ("(", "[")
        or value.lower() in _STOP_VALUES
        or _squash(value) == _squash(name)
        or _DOTTED.fullmatch(value) is not None
        or _PASCAL.fullmatch(value) is not None
        or (value[:1].isupper() and _IDENT.fullmatch(value) is not None and _type_name(value))
        or _SNAKE_WORDS.fullmatch(value) is not None
        or (_IDENT.fullmatch(value) is not None and _SECRET_WORD.search(value) is not None
            and ("_" in value or not _DIGIT.search(value)))  # `api_key=api_key_var`; not `password=MySecret123`
        or (value.isdigit() and len(value) < 8)
        or (value[:1] == "_" and _IDENT.fullmatch(value) is not None)
        or _CONSTANT.fullmatch(value) is not None
    )


def _assignment_matches(low: str) -> Iterator[re.Match[str]]:
    starts = set()
    for anchor, offsets in _ASSIGN_ANCHORS:
        i = low.find(anchor)
        while i >= 0:
            starts.update(i - off for off in offsets if i >= off)
            i = low.find(anchor, i + 1)
    for start in sorted(starts):
        m = _ASSIGN.match(low, start)
        if m and not (low.startswith("auth", start) and low[start - 1 : start].isalpha()):  # oauth, BasicAuth
            yield m


def _assignment_findings(text: str, low: str) -> list[Finding]:
    out = []
    for m in _assignment_matches(low):
        name_start = m.start()
        while name_start > 0 and m.start() - name_start < 64 and text[name_start - 1] in _NAME_CHARS:
            name_start -= 1
        if _DOC_FIELD.search(text, max(0, name_start - 12), name_start):
            continue
        if low.startswith("_key", m.start()) and not _UPPER_NAME.fullmatch(text[name_start:m.start() + 4]):
            continue  # any NAME_KEY of an environment holds a key; a cache_key or sort_key in code does not
        span = _assignment_value(text, m, name_start)
        if span:
            out.append(Finding("secret_assignment", *span))
    return out


def _assignment_value(text: str, m: re.Match[str], name_start: int) -> tuple[int, int] | None:
    key = text[name_start : m.start(1)].rstrip(" \t")
    if (
        m.group(1) == ":"
        and m.end(1) == m.end()
        and text[name_start - 1 : name_start] in ("'", '"')
        and not key.endswith(("'", '"', "']", '"]'))
    ):
        return None  # "passwd:dir" is one string, not a key and its value
    name = key.rstrip("\"'`]\\")
    p = m.end()
    c = text[p : p + 1]
    if c and c in "fbrFBR" and text[p + 1 : p + 2] in ("'", '"'):
        if c in "fF" and "{" in _QUOTED[text[p + 1]].match(text, p + 1).group(1):
            return None
        p += 1
        c = text[p]
    if c == "\\" and text[p + 1 : p + 2] == '"':
        q = _ESCAPED_QUOTED.match(text, p)
    elif c and c in _QUOTED:
        q = _QUOTED[c].match(text, p)
    else:
        return _bare_assignment_value(text, m, name_start, name)
    value = q.group(1)
    if len(value) < 3 or _placeholder(value) or value.strip().lower() in _STOP_VALUES or _prose(value):
        return None
    if _NAME_LIKE.fullmatch(value) and _SECRET_WORD.search(value):
        return None  # ENV_API_KEY = "ANTHROPIC_API_KEY", HEADER = "X-Auth-Token"
    if _COLOUR.search(value):
        return None  # a style: Token.Keyword: "bold #AB0909"
    return None if _squash(value) == _squash(name) else (q.start(1), q.end(1))


def _bare_assignment_value(text: str, m: re.Match[str], name_start: int, name: str) -> tuple[int, int] | None:
    p = m.end()
    v = _BARE_VALUE.match(text, p)
    if not v or _placeholder(v.group(), bare=True):
        return None
    value = v.group().rstrip(":.")
    if len(value) < 3 or value.lower() in _STOP_VALUES:
        return None
    sep = m.group(1)
    shell_env = (  # NAME=value: a shell or .env assignment, where any value is meant literally
        sep == "="
        and m.end(1) == p
        and not text[m.start(1) - 1 : m.start(1)].isspace()
        and _UPPER_NAME.fullmatch(name or "-") is not None
    )
    if not shell_env and _looks_like_code(value, name, text[v.end() : v.end() + 1]):
        return None
    end = p + len(value)
    at_line_start = _starts_line(text, name_start)
    word = value.split(":", 1)[0].replace("-", "")
    if sep == ":" and word.isalpha() and word.islower() and (not at_line_start or m.end(1) == p):
        return None  # prose ("the refresh token: when it expires") or CSS (".token:hover")
    if sep in (":", "=") and at_line_start:  # `password: two words` in YAML or INI
        eol = text.find("\n", end, end + 513)
        rest = text[end : end + 513 if eol < 0 else eol]
        rest = rest.split(" #", 1)[0]
        if rest.strip() and len(rest) <= 512 and not _CODE_CHARS.search(rest):
            if _prose(value + rest):
                return None  # a docstring's "token: the lease token to renew"
            end += len(rest.rstrip())
    return p, end


def _starts_line(text: str, pos: int) -> bool:
    nl = text.rfind("\n", max(0, pos - 64), pos)
    if nl < 0 and pos > 64:
        return False
    return _LINE_PREFIX.fullmatch(text, nl + 1, pos) is not None


# These run on the lower-cased text.
_HEADER_AUTH = lazy(r"authorization[\"']?[ \t]{0,10}[:=][ \t]{0,10}(?:[fbr](?=[\"'`]))?[\"'`]?[ \t]{0,10}")
_AUTH_SCHEME = lazy(
    r"(?:bearer|basic|token|bot|digest|negotiate|ntlm|apikey|api-key|key|sso-key|hmac|oauth|"
    r"aws4-hmac-sha256|gitlab-token)[ \t]+"
)
_MULTI_PARAM_SCHEMES = ("digest", "aws4-hmac-sha256", "hmac", "oauth")
_AUTH_VALUE = lazy(r"[A-Za-z0-9\-._~+/=:]{1,4096}")
_AUTH_PARAMS = lazy(r"[^\n]{1,4096}")
_BEARER = lazy(r"bearer(?<![a-z]bearer)[ \t]+([a-z0-9\-._~+/]{16,4096}=*)")
_COOKIE = lazy(
    r"cookie(?<![a-z0-9]cookie)[\"']?[ \t]{0,10}:[ \t]{0,10}[\"']?([a-z0-9_.\-]{1,128}=[^\n\"']{0,8192})"
)


def _header_findings(text: str, low: str) -> list[Finding]:
    out = []
    if "authorization" in low:
        for m in _HEADER_AUTH.finditer(low):
            p = m.end()
            scheme = _AUTH_SCHEME.match(low, p)
            if scheme:
                p = scheme.end()
            multi = scheme is not None and scheme.group().strip() in _MULTI_PARAM_SCHEMES
            v = (_AUTH_PARAMS if multi else _AUTH_VALUE).match(low, p)
            value = v.group().rstrip(" \t\"'`") if v else ""
            if scheme is None and (len(value) < 16 or not any(ch.isdigit() for ch in value)):
                continue
            if len(value) >= 8 and not _placeholder(value):
                out.append(Finding("auth_header", p, p + len(value)))
    if "bearer" in low:
        for m in _BEARER.finditer(low):
            if any(ch.isdigit() for ch in m.group(1)):
                out.append(Finding("bearer_token", m.start(1), m.end(1)))
    if "cookie" in low:
        for m in _COOKIE.finditer(low):
            value = text[m.start(1) : m.end(1)].rstrip()
            if not _placeholder(value):
                out.append(Finding("cookie", m.start(1), m.start(1) + len(value)))
    return out


_HTPASSWD = lazy(r"(?<![\w-])htpasswd((?:[ \t]+[^\s;&|]+){1,8})")
_ARGUMENT = lazy(r"[^\s;&|]+")


def _htpasswd_findings(text: str, low: str) -> list[Finding]:
    """`htpasswd -b[c] FILE USER PASSWORD`, `htpasswd -nb USER PASSWORD`: the password is a positional argument."""
    out = []
    for m in _HTPASSWD.finditer(low):
        words = list(_ARGUMENT.finditer(text, m.start(1), m.end(1)))
        flags = "".join(w.group().lstrip("-") for w in words if w.group().startswith("-"))
        args = [w for w in words if not w.group().startswith("-")]
        if "b" not in flags:
            continue
        at = 1 if "n" in flags else 2
        if len(args) > at and not _placeholder(args[at].group()):
            out.append(Finding("cli_password", args[at].start(), args[at].end()))
    return out


# A match can only begin where a run begins: inside a run every later start is shorter, so it fails too.
_CANDIDATE = lazy(r"[A-Za-z0-9+/_\-]{20,}={0,3}")
_HEX = lazy(r"[0-9a-fA-F\-]+")
_SEPARATORS = lazy(r"[/_\-+]")
_DIGEST_PREFIX = lazy(r"(?i)(?:sha\d{1,3}|md5|h1|blake2b?|sri)[-:]")
# "h1:<base64>" in go.sum, "sha256:<hex>", "--hash=sha512:<...>": the word must stand alone, so that a
# neighbour's redaction cannot turn it into or out of a prefix (redact must be idempotent).
_DIGEST_BEFORE = lazy(r"(?i)(?<![A-Za-z0-9])(?:sha\d{1,3}|md5|h1|blake2b?)[-:]\Z")
_SAMPLE = 256  # long blobs are judged on their first characters
_DIGIT = lazy(r"[0-9]")
_LETTER = lazy(r"[A-Za-z]")
_CASE_RUN = lazy(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
# Identifiers that APIs print everywhere (tool-use, message, request and object ids): random, not secret.
_ID_PREFIXES = (
    "toolu_", "srvtoolu_", "msg_", "msgbatch_", "req_", "wrkspc_", "rlg_", "call_", "chatcmpl-", "run_", "thread_",
    "asst_", "file-", "file_", "batch_", "cus_", "pi_", "ch_", "evt_", "acct_", "prod_", "price_", "sub_", "in_",
    "txn_", "seti_", "pm_", "xn--",
)  # fmt: skip


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _ascending_run(s: str, run: int = 8) -> bool:
    """An alphabet such as "ABCDEFGH..." or "0123456789" in a constant is not a secret."""
    count = 1
    for a, b in itertools.pairwise(s):
        count = count + 1 if ord(b) == ord(a) + 1 else 1
        if count >= run:
            return True
    return False


def _wordy(s: str) -> bool:
    """Made of words: on average 3 or more characters per run of one case or of digits."""
    return len(s) >= 3 * len(_CASE_RUN.findall(s))


def _looks_random(token: str) -> bool:
    """True when `token` reads like a generated secret rather than a word, path, identifier or digest.

    Hex strings (git SHAs, digests, UUIDs) are never random here: without a name that says "secret"
    they are far more often hashes than keys.
    """
    core = token.rstrip("=")[:_SAMPLE]
    if len(core) < 20 or _DIGEST_PREFIX.match(core) or core.lower().startswith(_ID_PREFIXES) or _HEX.fullmatch(core):
        return False
    # Words in identifiers make long runs of one case ("BetaWebSearchTool20260318": 5 chars a run);
    # random strings switch case and digits every 1-2 characters.
    if _wordy(core) or not _DIGIT.search(core) or not _LETTER.search(core):
        return False
    parts = _SEPARATORS.split(core)
    longest = max(parts, key=len)
    if len(longest) < 12 or _ascending_run(longest) or all(_HEX.fullmatch(x) for x in parts if len(x) >= 12):
        return False
    if core.count("/") >= 2 and 2 * sum(1 for part in parts if _wordy(part)) >= len(parts):
        return False  # a path
    return _entropy(core) >= min(4.2, 0.8 * math.log2(len(core)))


_HEX_KEY = lazy(r"[0-9a-f]{32,128}")
_KEY_BEFORE = lazy(r"key[\"'\]]?[ \t]{0,5}(?::=|=>|:|=)[ \t]{0,5}[\"']?\Z")
_SECRET_BEFORE = lazy(r"(?:secret|signing|hmac|passphrase|(?:api|private|access|secret|signing)[ _-]?key)\b"
                      r"[^\n]{0,40}\Z")


def _hex_secret(low: str, start: int, end: int) -> bool:
    """A run of hex digits that is a key by its context, not a hash: the value of a name ending in "key"
    (`STRIPE_KEY=`, `"apiKey": "`), or 32/48/64/96/128 digits after "secret", "signing", "hmac", "api key" on
    the same line ("Your signing secret is ..."; a 40-digit git hash is not taken)."""
    if _HEX_KEY.fullmatch(low, start, end) is None:
        return False
    if _KEY_BEFORE.search(low, max(0, start - 24), start) is not None:
        return True
    return end - start in (32, 48, 64, 96, 128) and _SECRET_BEFORE.search(low, max(0, start - 64), start) is not None


def _entropy_findings(text: str, low: str) -> list[Finding]:
    """Random-looking runs (`_looks_random`), and hex runs that are keys by their context (`_hex_secret`)."""
    out = []
    for m in _CANDIDATE.finditer(text):
        if _looks_random(m.group()) and not _DIGEST_BEFORE.search(text, max(0, m.start() - 12), m.start()):
            out.append(Finding("high_entropy", m.start(), m.end()))
        elif m.end() - m.start() >= 32 and _hex_secret(low, m.start(), m.end()):
            out.append(Finding("hex_secret", m.start(), m.end()))
    return out


_PASS_VALUE = lazy(r"(?:word|wd|phrase)?(?:[ \t]+|=)[\"']?(?!(?:env|file|fd):|stdin\b)([^\s\"'\-][^\s\"']{0,255})")


def _pass_flag_findings(text: str, low: str) -> list[Finding]:
    """The argument of a command-line flag named "-...pass" (`keytool -storepass X`, `openssl -passout pass:X`,
    `-keypass X`, `-password X`): found from each "pass" in the text, as a regex starting at every "-" cost more."""
    out = []
    at = low.find("pass")
    while at >= 0:
        dash = max(low.rfind(" -", max(0, at - 14), at), low.rfind("\t-", max(0, at - 14), at))
        flag = low[dash + 2:at] if dash >= 0 else "-"  # the letters between the dash and "pass" (`store`)
        if not flag or (flag.isascii() and flag.isalpha()):
            m = _PASS_VALUE.match(low, at + 4)
            if m and _not_reference(text[m.start(1):m.end(1)]):
                out.append(Finding("cli_password", m.start(1), m.end(1)))
        at = low.find("pass", at + 4)
    return out


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _lower(text: str) -> str:
    """Lower-case `text` keeping every index in place, so spans found in it apply to `text`."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def _on_line(low: str, pos: int, words: tuple[str, ...]) -> bool:
    line_start = max(low.rfind("\n", max(0, pos - 300), pos) + 1, pos - 300, 0)
    return any(low.find(w, line_start, pos) >= 0 for w in words)


_CONTINUATION = "\\\n"
# words in every environment dump `environment.py` finds: a variable named like a secret, or a Kubernetes Secret
_DUMP_WORDS = ("KEY", "TOKEN", "SECRET", "PASS", "PW", "CREDENTIAL", "PRIVATE", "DSN", "SALT", "COOKIE", "SIGNING",
               "DATABASE_URL", "Secret")  # a shell line continuation: backslash, newline


def find_secrets(text: str) -> list[Finding]:
    """Find the secrets in `text`: non-overlapping findings sorted by position.

    Overlapping detections merge into one finding that takes the most specific kind. A value split by shell
    line continuations (backslash-newline) is also looked for with them joined; its finding spans every piece.
    """
    found = _find_secrets(text)
    if _CONTINUATION not in text:
        return found
    return _merge([(0, f) for f in found] + [(0, f) for f in _across_continuations(text)])


def _across_continuations(text: str) -> list[Finding]:
    """Findings that span a line continuation, in `text`'s positions: each run of continued lines (with the lines
    on either side) is scanned again with its continuations removed."""
    out = []
    for lo, hi in _continued_runs(text):
        pieces = text[lo:hi].split(_CONTINUATION)
        origin: list[int] = []  # origin[i]: where character i of the joined run is in `text`
        pos = lo
        for piece in pieces:
            origin.extend(range(pos, pos + len(piece)))
            pos += len(piece) + len(_CONTINUATION)
        for f in _find_secrets("".join(pieces)):
            start, end = origin[f.start], origin[f.end - 1] + 1
            if end - start != f.end - f.start:
                out.append(Finding(f.kind, start, end))
    return out


def _continued_runs(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each run of lines joined by continuations, from the line before it to the line after it."""
    at = text.find(_CONTINUATION)
    while at >= 0:
        lo = text.rfind("\n", 0, max(at - 1, 0))
        lo = max(text.rfind("\n", 0, lo) if lo > 0 else -1, at - 4096, -1) + 1
        hi = at
        while True:
            nl = text.find("\n", hi + len(_CONTINUATION))
            if nl < 0:
                hi = len(text)
                break
            if text[nl - 1 : nl] != "\\" or nl - at > 65536:
                hi = nl
                break
            hi = nl - 1
        after = text.find("\n", hi + 1)
        hi = len(text) if after < 0 else after
        yield lo, hi
        at = text.find(_CONTINUATION, hi)


def _find_secrets(text: str) -> list[Finding]:
    low = _lower(text)
    raw: list[tuple[int, Finding]] = []
    for rank, rule in enumerate(_FORMAT_RULES + _CONTEXT_RULES):
        if rule.hint is not None and rule.hint not in low:
            continue
        subject = low if rule.lower else text
        if rule.needs and not any(literal in subject for literal in rule.needs):
            continue
        if rule.on_line and not any(word in low for word in rule.on_line):  # _on_line would refuse every match
            continue
        for m in _regex(rule).finditer(subject):
            start, end = m.span(rule.group)
            if end == start or (rule.check is not None and not rule.check(text[start:end])):
                continue
            if rule.on_line and not _on_line(low, m.start(), rule.on_line):
                continue
            raw.append((rank, Finding(rule.kind, start, end)))
    rank = len(_FORMAT_RULES) + len(_CONTEXT_RULES)
    raw += [(rank, f) for f in _header_findings(text, low)]
    if "htpasswd" in low:
        raw += [(rank, f) for f in _htpasswd_findings(text, low)]
    if "pass" in low:
        raw += [(rank, f) for f in _pass_flag_findings(text, low)]
    raw += [(rank + 1, f) for f in _assignment_findings(text, low)]
    raw += [(rank + 2, f) for f in _entropy_findings(text, low)]
    if any(word in text for word in _DUMP_WORDS):  # upper-case names: most texts have none, and skip the import
        from .environment import environment_values

        raw += [(rank + 3, Finding("environment", start, end)) for start, end in environment_values(text)
                if not _placeholder(text[start:end], bare=True)]
    return _merge(raw)


def _merge(raw: list[tuple[int, Finding]]) -> list[Finding]:
    merged: list[Finding] = []
    best = 0
    for rank, f in sorted(raw, key=lambda rf: (rf[1].start, rf[0])):
        if merged and f.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Finding(f.kind if rank < best else last.kind, last.start, max(last.end, f.end))
            best = min(best, rank)
        else:
            merged.append(f)
            best = rank
    return merged
