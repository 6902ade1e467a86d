"""Secret redaction for everything that enters the memory store.

Pure functions, no I/O. Hooks, `memory_save` and imports run `redact` / `redact_value` on what they
store; `is_sensitive_path` tells capture to skip the contents of files such as `.env` or SSH keys;
`truncate_middle` keeps the head and tail of very long tool outputs.

Three layers of detection, merged into one list of non-overlapping findings: known token formats
(provider prefixes, PEM blocks, JWTs), secrets named by their context (`DB_PASSWORD=...`,
`Authorization:` headers, credentials in URLs and command lines) and random-looking strings found by
entropy. Every regex runs in linear time: each starts on a literal or a narrow class, and every
repetition that can fail and retry is bounded. This module is longer than most because the rule
tables are data; the logic is the short functions below them.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

REDACTED = "[REDACTED]"
PRIVATE = "[PRIVATE]"
TRUNCATED_DEPTH = "[TRUNCATED:depth]"
MAX_DEPTH = 64


@dataclass(frozen=True)
class Finding:
    """A secret in a text: its kind (e.g. "github_token") and its span `text[start:end]`."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class _Rule:
    kind: str
    regex: re.Pattern[str]
    hints: tuple[str, ...]  # one of these must occur in the lower-cased text, else the regex is skipped
    group: int  # the capture group that holds the secret
    check: Callable[[str], bool] | None  # extra test on the secret


def _rule(kind: str, pattern: str, hints: tuple[str, ...], group: int = 0, check=None, flags: int = 0) -> _Rule:
    return _Rule(kind, re.compile(pattern, flags), hints, group, check)


def _mixed_case(s: str) -> bool:
    return any(c.isupper() for c in s) and any(c.islower() for c in s)


def _mixed_case_digit(s: str) -> bool:
    return _mixed_case(s) and any(c.isdigit() for c in s)


def _has_key_body(s: str) -> bool:
    return _KEY_BODY.search(s) is not None


_KEY_BODY = re.compile(r"[A-Za-z0-9+/=]{20}")


def _not_reference(s: str) -> bool:
    return not s.startswith(("[", "$", "{", "<", "%"))


_L = r"(?<![A-Za-z0-9_\-])"  # the token does not continue to the left
_R = r"(?![A-Za-z0-9_\-])"  # ... nor to the right

# fmt: off
_FORMAT_RULES: tuple[_Rule, ...] = (
    _rule("private_key", r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?"
          r"(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)", ("private key",), check=_has_key_body,
          flags=re.DOTALL),
    _rule("aws_access_key_id", rf"{_L}(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{{16}}(?![A-Za-z0-9])",
          ("akia", "asia", "abia", "acca", "a3t")),
    _rule("aws_secret_access_key", r"(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)[\"']?[ \t]{0,5}"
          r"[:=]{1,2}[ \t]{0,5}[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", ("secret",), 1),
    _rule("gcp_api_key", rf"{_L}AIza[0-9A-Za-z_\-]{{35}}{_R}", ("aiza",)),
    _rule("gcp_oauth_secret", rf"{_L}GOCSPX-[A-Za-z0-9_\-]{{20,40}}{_R}", ("gocspx",)),
    _rule("gcp_access_token", rf"{_L}ya29\.[A-Za-z0-9_\-.]{{20,2048}}", ("ya29",)),
    _rule("azure_storage_key", r"(?i)(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{20,200}={0,2})",
          ("accountkey", "sharedaccesskey"), 1),
    _rule("azure_sas", r"[?&]sig=([A-Za-z0-9%+/]{20,200}(?:%3D|=){0,2})", ("sig=",), 1),
    _rule("github_token", rf"{_L}(?:gh[pousr]_[A-Za-z0-9]{{36,251}}|github_pat_[A-Za-z0-9_]{{40,240}}){_R}",
          ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    _rule("gitlab_token", rf"{_L}gl(?:pat|dt|rt|ptt|cbt|imt|soat|ft|agent|oas|wt)-[A-Za-z0-9_\-]{{20,80}}",
          ("gl",)),
    _rule("slack_token", rf"{_L}(?:xox[abposre]|xapp)-[A-Za-z0-9\-]{{10,250}}", ("xox", "xapp-")),
    _rule("slack_webhook", r"hooks\.slack\.com/((?:services|workflows|triggers)/[A-Za-z0-9_/\-]{10,200})",
          ("hooks.slack.com",), 1),
    _rule("discord_webhook", r"discord(?:app)?\.com/api/webhooks/(\d{5,30}/[A-Za-z0-9_\-]{20,100})",
          ("webhooks",), 1),
    _rule("stripe_key", rf"{_L}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{10,247}}(?![A-Za-z0-9])",
          ("sk_live", "sk_test", "rk_live", "rk_test")),
    _rule("stripe_webhook_secret", rf"{_L}whsec_[A-Za-z0-9]{{20,100}}", ("whsec_",)),
    _rule("anthropic_api_key", rf"{_L}sk-ant-[A-Za-z0-9_\-]{{20,250}}", ("sk-ant-",)),
    _rule("openai_api_key", rf"{_L}sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{{20,250}}", ("sk-",),
          check=_mixed_case_digit),
    _rule("huggingface_token", rf"{_L}(?:hf_|api_org_)[A-Za-z0-9]{{30,40}}(?![A-Za-z0-9])", ("hf_", "api_org_"),
          check=_mixed_case),
    _rule("npm_token", rf"{_L}npm_[A-Za-z0-9]{{36}}(?![A-Za-z0-9])", ("npm_",), check=_mixed_case),
    _rule("pypi_token", rf"{_L}pypi-Ag[A-Za-z0-9_\-]{{50,400}}", ("pypi-ag",)),
    _rule("twilio", rf"{_L}(?:AC|SK)[0-9a-f]{{32}}(?![A-Za-z0-9])", ("ac", "sk")),
    _rule("sendgrid_api_key", rf"{_L}SG\.[A-Za-z0-9_\-]{{16,32}}\.[A-Za-z0-9_\-]{{30,64}}", ("sg.",)),
    _rule("mailgun_api_key", rf"{_L}key-[0-9a-f]{{32}}(?![A-Za-z0-9])", ("key-",)),
    _rule("telegram_bot_token", r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}(?![A-Za-z0-9_\-])", (":aa",)),
    _rule("vault_token", rf"{_L}hv[sbr]\.[A-Za-z0-9_\-]{{24,200}}", ("hvs.", "hvb.", "hvr.")),
    _rule("digitalocean_token", rf"{_L}do[por]_v1_[a-f0-9]{{64}}", ("_v1_",)),
    _rule("shopify_token", rf"{_L}shp(?:at|ss|ca|pa)_[a-fA-F0-9]{{32}}", ("shp",)),
    _rule("databricks_token", rf"{_L}dapi[a-f0-9]{{32}}(?:-\d)?(?![A-Za-z0-9])", ("dapi",)),
    _rule("age_secret_key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}", ("age-secret-key-",)),
    _rule("jwt", rf"{_L}eyJ[A-Za-z0-9_\-]{{8,4000}}\.eyJ[A-Za-z0-9_\-]{{8,8000}}\.[A-Za-z0-9_\-]{{0,2000}}",
          ("eyj",)),
)

_CONTEXT_RULES: tuple[_Rule, ...] = (
    _rule("url_password", r"://[^\s:/@?#\"'<>\[\]]{0,256}:([^\s/@\"'<>\[\]]{1,256})@", ("://",), 1, _not_reference),
    _rule("netrc_password", r"(?i)\blogin[ \t]+[^\s]{1,256}\s{1,20}password[ \t]+([^\s]{1,256})", ("password",),
          1, _not_reference),
    _rule("basic_auth", r"(?i)\b(?:curl|wget|http(?=[ \t]))\b[^\n]{0,300}?[ \t](?:-u|--user|-a|--auth)[ \t=]+"
          r"[\"']?[^\s:\"']{1,128}:([^\s\"']{1,256})", ("curl", "wget", "http "), 1,
          lambda s: _not_reference(s) and not s.isdigit()),
    _rule("cli_password", r"(?i)\bsshpass\b[^\n]{0,100}?[ \t]-p[ \t]*[\"']?([^\s\"']{1,256})", ("sshpass",), 1),
    _rule("cli_password", r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]{0,200}?[ \t]-p[\"']?"
          r"([^\s\"'\-][^\s\"']{0,255})", ("mysql", "mariadb"), 1, _not_reference),
    _rule("cli_password", r"(?i)--(?:[a-z0-9]{1,20}-){0,4}(?:password|passwd|passphrase|token|secret|api-?key|"
          r"access-key|secret-key|private-key|client-secret)[ \t]+[\"']?([^\s\"'\-$\[{<][^\s\"']{2,255})",
          ("--",), 1, lambda s: not (s.isalpha() and s.islower())),
    _rule("xml_secret", r"(?i)<[A-Za-z0-9_.:\-]{0,40}(?:password|passwd|secret|token|api[_-]?key|access[_-]?key)>"
          r"([^<\n]{1,1000})</", ("password>", "passwd>", "secret>", "token>", "key>"), 1, _not_reference),
)

# A name that says "secret", then its separator. The value is read by `_assignment_value`.
_ASSIGN = re.compile(
    r"(?i)(?:passw(?:or)?d|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|signing[_-]?key|"
    r"encryption[_-]?key|master[_-]?key|credentials?|(?<=[_.\-])pass|(?<=[_.\-])pwd|(?<![A-Za-z])auth|cookie|"
    r"connection[_-]?string|conn[_-]?str)"
    r"(?:[_.\-]?(?:key|value|hash|b64|base64|hex|str|string|plain|data|id|base|bytes|text|\d{1,2}|v\d)){0,2}"
    r"(?:\\?[\"'`]\]?)?[ \t]{0,10}(:=|=>|:(?![:/])|=(?![=>~]))[ \t]{0,10}"
)
_SECRET_WORD = re.compile(r"(?i)passw|secret|token|api_?key|credential|_pass|_pwd|auth")
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
    '"': re.compile(r'"((?:[^"\\\n]|\\.){0,4096})"?'),
    "'": re.compile(r"'((?:[^'\\\n]|\\.){0,4096})'?"),
}
_ESCAPED_QUOTED = re.compile(r'\\"([^"\\\n]{0,4096})(?:\\")?')
_BARE_VALUE = re.compile(r"[^\s\"'`,;<>|(){}\[\]\\&]{1,4096}")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-$")
_LINE_PREFIX = re.compile(r"[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]+|\$env:)?[\"']?")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")
_PASCAL = re.compile(r"(?:[A-Z][a-z]+)+")
_CAPITAL_WORD = re.compile(r"[A-Z][a-z]{2,}")
_DOC_FIELD = re.compile(r"(?:[:@](?:param|ivar|type|arg|var|cvar|raises)|Args:|Attributes:)[ \t]*\Z")
_STOPWORDS = frozenset("the a an to of for and or is are use with your this that in on not be by from as it".split())
_SNAKE_WORDS = re.compile(r"[a-z]+(?:_[a-z]+)+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME_LIKE = re.compile(r"[A-Za-z_][A-Za-z_\-]*")
_UPPER_NAME = re.compile(r"[A-Z0-9_.\-]*[A-Z][A-Z0-9_.\-]*")
_CODE_CHARS = re.compile(r"[(){};=]")
_SQUASH = re.compile(r"[\s_\-]")


def _squash(s: str) -> str:
    return _SQUASH.sub("", s.lower())


def _placeholder(value: str) -> bool:
    v = value.strip()
    low = v.lower()
    return (
        not v
        or v[0] in "$[{<%#&*!"
        or len(set(low)) <= 2
        or ("your" in low and any(w in low for w in ("key", "token", "secret", "pass")))
        or low in ("...", "…", "changeme", "change_me", "replace_me", "todo", "example")
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
        or (_IDENT.fullmatch(value) is not None and _SECRET_WORD.search(value) is not None)
        or (value.isdigit() and len(value) < 8)
    )


def _assignment_findings(text: str) -> list[Finding]:
    out = []
    for m in _ASSIGN.finditer(text):
        name_start = m.start()
        while name_start > 0 and m.start() - name_start < 64 and text[name_start - 1] in _NAME_CHARS:
            name_start -= 1
        if _DOC_FIELD.search(text, max(0, name_start - 12), name_start):
            continue
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
    return None if _squash(value) == _squash(name) else (q.start(1), q.end(1))


def _bare_assignment_value(text: str, m: re.Match[str], name_start: int, name: str) -> tuple[int, int] | None:
    p = m.end()
    v = _BARE_VALUE.match(text, p)
    value = v.group().rstrip(":.") if v else ""
    if len(value) < 3 or _placeholder(value) or value.lower() in _STOP_VALUES:
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
    if sep == ":" and not at_line_start and value.isalpha() and value.islower():
        return None  # prose: "the refresh token: when it expires"
    if sep in (":", "=") and at_line_start:  # `password: two words` in YAML or INI
        eol = text.find("\n", end, end + 513)
        rest = text[end : end + 513 if eol < 0 else eol]
        rest = rest.split(" #", 1)[0]
        if rest.strip() and len(rest) <= 512 and not _CODE_CHARS.search(rest):
            end += len(rest.rstrip())
    return p, end


def _starts_line(text: str, pos: int) -> bool:
    nl = text.rfind("\n", max(0, pos - 64), pos)
    if nl < 0 and pos > 64:
        return False
    return _LINE_PREFIX.fullmatch(text, nl + 1, pos) is not None


_HEADER_AUTH = re.compile(
    r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]{0,10}[:=][ \t]{0,10}(?:[fbr](?=[\"'`]))?[\"'`]?[ \t]{0,10}"
)
_AUTH_SCHEME = re.compile(
    r"(?i)(?:bearer|basic|token|bot|digest|negotiate|ntlm|apikey|api-key|key|sso-key|hmac|oauth|"
    r"aws4-hmac-sha256|gitlab-token)[ \t]+"
)
_MULTI_PARAM_SCHEMES = ("digest", "aws4-hmac-sha256", "hmac", "oauth")
_AUTH_VALUE = re.compile(r"[A-Za-z0-9\-._~+/=:]{1,4096}")
_AUTH_PARAMS = re.compile(r"[^\n]{1,4096}")
_BEARER = re.compile(r"(?<![A-Za-z])[Bb]earer[ \t]+([A-Za-z0-9\-._~+/]{16,4096}=*)")
_COOKIE = re.compile(
    r"(?i)\b(?:set-)?cookie[\"']?[ \t]{0,10}:[ \t]{0,10}[\"']?([A-Za-z0-9_.\-]{1,128}=[^\n\"']{0,8192})"
)


def _header_findings(text: str, low: str) -> list[Finding]:
    out = []
    if "authorization" in low:
        for m in _HEADER_AUTH.finditer(text):
            p = m.end()
            scheme = _AUTH_SCHEME.match(text, p)
            if scheme:
                p = scheme.end()
            multi = scheme is not None and scheme.group().strip().lower() in _MULTI_PARAM_SCHEMES
            v = (_AUTH_PARAMS if multi else _AUTH_VALUE).match(text, p)
            value = v.group().rstrip(" \t\"'`") if v else ""
            if scheme is None and (len(value) < 16 or not any(ch.isdigit() for ch in value)):
                continue
            if len(value) >= 8 and not _placeholder(value):
                out.append(Finding("auth_header", p, p + len(value)))
    if "bearer" in low:
        for m in _BEARER.finditer(text):
            if any(ch.isdigit() for ch in m.group(1)):
                out.append(Finding("bearer_token", m.start(1), m.end(1)))
    if "cookie" in low:
        for m in _COOKIE.finditer(text):
            value = m.group(1).rstrip()
            if not _placeholder(value):
                out.append(Finding("cookie", m.start(1), m.start(1) + len(value)))
    return out


_CANDIDATE = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{20,}={0,3}")
_HEX = re.compile(r"[0-9a-fA-F\-]+")
_SEPARATORS = re.compile(r"[/_\-+]")
_DIGEST_PREFIX = re.compile(r"(?i)(?:sha\d{1,3}|md5|h1|blake2b?|sri)[-:]")
_SAMPLE = 256  # long blobs are judged on their first characters
_CASE_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
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


def looks_random(token: str) -> bool:
    """True when `token` reads like a generated secret rather than a word, path, identifier or digest.

    Hex strings (git SHAs, digests, UUIDs) are never random here: without a name that says "secret"
    they are far more often hashes than keys.
    """
    core = token.rstrip("=")[:_SAMPLE]
    if len(core) < 20 or _HEX.fullmatch(core) or _DIGEST_PREFIX.match(core) or core.lower().startswith(_ID_PREFIXES):
        return False
    if not any(ch.isdigit() for ch in core) or not any(ch.isalpha() for ch in core):
        return False
    parts = _SEPARATORS.split(core)
    longest = max(parts, key=len)
    if len(longest) < 12 or _ascending_run(longest) or all(_HEX.fullmatch(x) for x in parts if len(x) >= 12):
        return False
    if core.count("/") >= 2 and 2 * sum(1 for part in parts if part.isalpha() or not part) >= len(parts):
        return False
    # Words in identifiers make long runs of one case ("BetaWebSearchTool20260318": 5 chars a run);
    # random strings switch case and digits every 1-2 characters.
    if len(core) >= 3 * len(_CASE_RUN.findall(core)):
        return False
    return _entropy(core) >= min(4.2, 0.8 * math.log2(len(core)))


def _entropy_findings(text: str) -> list[Finding]:
    out = []
    for m in _CANDIDATE.finditer(text):
        if looks_random(m.group()) and "sha" not in text[max(0, m.start() - 8) : m.start()].lower():
            if not _DIGEST_PREFIX.search(text, max(0, m.start() - 7), m.start()):
                out.append(Finding("high_entropy", m.start(), m.end()))
    return out


def find_secrets(text: str) -> list[Finding]:
    """Find the secrets in `text`: non-overlapping findings sorted by position.

    Overlapping detections merge into one finding that takes the most specific kind.
    """
    low = text.lower()
    raw: list[tuple[int, Finding]] = []
    for rank, rule in enumerate(_FORMAT_RULES + _CONTEXT_RULES):
        if not any(h in low for h in rule.hints):
            continue
        for m in rule.regex.finditer(text):
            secret = m.group(rule.group)
            if secret and (rule.check is None or rule.check(secret)):
                raw.append((rank, Finding(rule.kind, m.start(rule.group), m.end(rule.group))))
    rank = len(_FORMAT_RULES) + len(_CONTEXT_RULES)
    raw += [(rank, f) for f in _header_findings(text, low)]
    raw += [(rank + 1, f) for f in _assignment_findings(text)]
    raw += [(rank + 2, f) for f in _entropy_findings(text)]
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


_PRIVATE_TAG = re.compile(r"(?i)<[ \t]*(/?)[ \t]*private\b[^<>\n]{0,200}>")


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


def _apply(text: str, findings: list[Finding]) -> str:
    pieces = []
    pos = 0
    for f in findings:
        pieces += [text[pos : f.start], f"[REDACTED:{f.kind}]"]
        pos = f.end
    pieces.append(text[pos:])
    return "".join(pieces)


def redact(text: str) -> str:
    """Return `text` with `<private>...</private>` blocks replaced by "[PRIVATE]" (an unclosed
    `<private>` hides everything after it) and every secret replaced by "[REDACTED:kind]".

    Idempotent: redacting the result again changes nothing.
    """
    out = _strip_private(text)
    for _ in range(4):  # a replaced secret can leave a neighbour that a boundary rule now sees whole
        findings = find_secrets(out)
        if not findings:
            break
        out = _apply(out, findings)
    return out


_SENSITIVE_KEY = re.compile(
    r"(?:passw(?:or)?d|passphrase|secret|token|apikey|accesskey|privatekey|authorization|cookie|clientsecret|"
    r"credentials?|signingkey|encryptionkey|masterkey|connectionstring|_pass|_pwd)"
    r"(?:key|value|hash|b64|base64|hex|str|string|plain|data|id|base|bytes|\d{1,2})?\Z"
)
_SENSITIVE_EXACT = frozenset({"auth", "_auth", "pass", "pwd", "pw", "sig", "signature"})


def is_sensitive_key(key: str) -> bool:
    """True for mapping keys that name a secret: "password", "GITHUB_TOKEN", "clientSecret", "x-api-key".

    Counters and settings about secrets ("max_tokens", "token_type", "secret_name") are not sensitive.
    """
    norm = re.sub(r"[\s\-.]", "", key.lower())
    return (
        norm in _SENSITIVE_EXACT
        or _SENSITIVE_KEY.search(norm.replace("_", "")) is not None
        or _SENSITIVE_KEY.search(norm) is not None
    )


def redact_value(value: Any, _depth: int = 0) -> Any:
    """Deep-copy JSON-like data (dict, list, str, number, bool, None) with every string redacted.

    A non-empty string under a sensitive key (password, token, api_key, ...) becomes
    "[REDACTED:field]". Nesting deeper than 64 levels becomes "[TRUNCATED:depth]", which also ends
    self-referencing structures. Tuples become lists, bytes are decoded, other objects become their
    redacted `str()`.
    """
    if _depth >= MAX_DEPTH:
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
                out[redact(k) if isinstance(k, str) else k] = redact_value(v, _depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [redact_value(v, _depth + 1) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return redact(bytes(value).decode("utf-8", errors="replace"))
    return redact(str(value))


_TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist", ".defaults", ".schema")
_SENSITIVE_NAMES = frozenset(
    (
        ".netrc _netrc .pgpass .npmrc .pypirc credentials credentials.json .git-credentials .htpasswd .dockercfg"
        " .envrc .secrets secrets.yaml secrets.yml secrets.json secrets.toml"
    ).split()
)
_SENSITIVE_EXTENSIONS = (".pem", ".key", ".p12", ".pfx", ".keystore", ".jks", ".p8", ".ppk", ".env")
_SSH_KEY_PREFIXES = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519")
_SENSITIVE_TAILS = (".aws/credentials", ".docker/config.json", ".kube/config")


def is_sensitive_path(path: str) -> bool:
    """True when the file at `path` probably holds credentials: .env files, private keys, .netrc, ...

    Accepts relative, absolute and Windows paths. Templates (`.env.example`, `.env.sample`,
    `.env.template`) and public keys (`*.pub`) are not sensitive.
    """
    norm = path.strip().strip("\"'").replace("\\", "/").rstrip("/").lower()
    base = norm.rsplit("/", 1)[-1]
    if not base or base.endswith(".pub") or base.endswith(_TEMPLATE_SUFFIXES):
        return False
    return (
        base == ".env"
        or base.startswith(".env.")
        or base in _SENSITIVE_NAMES
        or base.endswith(_SENSITIVE_EXTENSIONS)
        or base.startswith(_SSH_KEY_PREFIXES)
        or any(norm == tail or norm.endswith("/" + tail) for tail in _SENSITIVE_TAILS)
    )


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
