"""Redaction: every corpus secret disappears, ordinary code survives, and the edge cases hold."""

from __future__ import annotations

import json
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem_mcp.capture.redact import (
    REDACTED,
    is_sensitive_key,
    is_sensitive_path,
    redact,
    redact_value,
    truncate_middle,
)
from agentmem_mcp.capture.secret_scan import Finding, find_secrets
from tests.secrets_corpus import ORDINARY_TEXTS, SECRET_CASES, r

# -- the secret corpus ------------------------------------------------------------------------------------


def test_corpus_is_large_and_varied():
    assert len(SECRET_CASES) >= 60
    assert len({case.kind for case in SECRET_CASES}) >= 25
    assert len(ORDINARY_TEXTS) >= 15


@pytest.mark.parametrize("case", SECRET_CASES, ids=[f"{i}-{c.kind}" for i, c in enumerate(SECRET_CASES)])
def test_corpus_secret_is_redacted(case):
    out = redact(case.context)
    assert case.secret not in out
    assert "[REDACTED:" in out


@pytest.mark.parametrize("case", SECRET_CASES, ids=[f"{i}-{c.kind}" for i, c in enumerate(SECRET_CASES)])
def test_findings_are_sorted_and_disjoint(case):
    findings = find_secrets(case.context)
    assert findings
    for a, b in zip(findings, findings[1:]):
        assert a.end <= b.start
    assert all(0 <= f.start < f.end <= len(case.context) for f in findings)


def test_redaction_keeps_the_surrounding_text():
    case = next(c for c in SECRET_CASES if c.kind == "github_token" and "git remote" in c.context)
    out = redact(case.context)
    assert out.startswith("$ git remote -v\norigin\thttps://octocat:[REDACTED:")
    assert out.endswith("@github.com/octocat/hello.git (push)\n")


def test_finding_is_a_frozen_value():
    f = Finding("jwt", 1, 5)
    with pytest.raises(AttributeError):
        f.start = 2  # type: ignore[misc]
    assert REDACTED == "[REDACTED]"


# -- specific rules ---------------------------------------------------------------------------------------


def test_url_password_only_the_password_goes():
    pw = r("abcdefghijkmnopqrstuvwxyz23456789", 18)
    assert redact(f"postgres://app:{pw}@db:5432/x") == "postgres://app:[REDACTED:url_password]@db:5432/x"
    assert redact("https://example.com:8443/path@v2") == "https://example.com:8443/path@v2"


def test_pem_block_goes_whole_and_unterminated_block_goes_to_the_end():
    body = "\n".join(r("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 64) for _ in range(5))
    text = f"before\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\nafter"
    assert redact(text) == "before\n[REDACTED:private_key]\nafter"
    assert redact(f"x\n-----BEGIN PRIVATE KEY-----\n{body[:100]}") == "x\n[REDACTED:private_key]"
    public = f"-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----"
    assert "BEGIN PUBLIC KEY" in redact(public)


def test_authorization_header_keeps_the_scheme():
    token = r("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 40)
    assert redact(f"Authorization: Bearer {token}") == "Authorization: Bearer [REDACTED:auth_header]"
    assert redact(f'-H "authorization: token {token}"') == '-H "authorization: token [REDACTED:auth_header]"'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("API_KEY=abc123xyz789", "API_KEY=[REDACTED:secret_assignment]"),
        ('export DB_PASSWORD="p@ss w0rd!"', 'export DB_PASSWORD="[REDACTED:secret_assignment]"'),
        ("  password: hunter2", "  password: [REDACTED:secret_assignment]"),
        ("password: correct horse battery", "password: [REDACTED:secret_assignment]"),
        ('{"secret": "s3cr3t-value"}', '{"secret": "[REDACTED:secret_assignment]"}'),
        ('client_secret = "abcDEF123"', 'client_secret = "[REDACTED:secret_assignment]"'),
        ("--password=Tr0ub4dor", "--password=[REDACTED:secret_assignment]"),
        ("--api-key Zx81kQ02mW", "--api-key [REDACTED:cli_password]"),
        ("?access_token=abc123def&page=2", "?access_token=[REDACTED:secret_assignment]&page=2"),
        ("Cookie: session=abc123; theme=dark", "Cookie: [REDACTED:cookie]"),
    ],
)
def test_named_secrets(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "password: str",
        "    token: Optional[str] = None",
        "secret_key: SecretStr",
        "token = get_token()",
        "api_key=api_key",
        "password = self.password",
        "password = os.environ['DB_PASSWORD']",
        "max_tokens: 4096",
        "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')",
        "password_min_length = 12",
        'headers["Authorization"] = f"Bearer {token}"',
        "password: ${{ secrets.DOCKERHUB_TOKEN }}",
        "curl -H 'Authorization: Bearer $GITHUB_TOKEN' https://api.github.com",
        "DB_PASSWORD=${DB_PASSWORD}",
        "PWD=/home/dev/project",
        "token_type: bearer",
        "secretKeyRef:",
        "if password == expected:",
        '"password": {"type": "string", "format": "password"}',
        "const token = localStorage.getItem('token');",
        ":param token: the lease token",
        "mkdir -p build/out && ssh -p 2222 host",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "id: 123e4567-e89b-12d3-a456-426614174000",
        "FROM python:3.11-slim@sha256:" + "ab" * 32,
        "integrity sha512-" + "A1b2" * 22,
        "color: #1e40afcc;",
        "    Token.Keyword: 'bold #AB0909',",
        "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "class BetaWebSearchTool20260318Param(TypedDict):",
        "https://user@github.com/org/repo.git",
        '"tool_use_id": "toolu_01D7FLrfh4GYq7yT1ULFeyMV"',
    ],
)
def test_ordinary_lines_are_left_alone(text):
    assert redact(text) == text


@pytest.mark.parametrize("name", sorted(ORDINARY_TEXTS))
def test_ordinary_texts_are_left_alone(name):
    text = ORDINARY_TEXTS[name]
    assert [(f.kind, text[f.start : f.end]) for f in find_secrets(text)] == []


def test_false_positive_rate_over_ordinary_texts():
    tokens = sum(len(t.split()) for t in ORDINARY_TEXTS.values())
    flagged = sum(
        len(text[f.start : f.end].split()) or 1 for text in ORDINARY_TEXTS.values() for f in find_secrets(text)
    )
    assert tokens > 1000
    assert flagged / tokens <= 0.001


def test_entropy_catches_unlabelled_random_strings_but_not_digests():
    key = r("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 32)
    assert redact(f"key is {key} ok") == "key is [REDACTED:high_entropy] ok"
    sha = r("0123456789abcdef", 40)
    digests = f"{sha} {sha[:7]} sha256:{r('0123456789abcdef', 64)} {r('0123456789ABCDEF', 32)}"
    assert redact(digests) == digests


# -- private blocks ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a <private>x</private> b", "a [PRIVATE] b"),
        ("a <PRIVATE>x\ny\n</Private> b", "a [PRIVATE] b"),
        ("a <private>x</private> b <private>y</private> c", "a [PRIVATE] b [PRIVATE] c"),
        ("a <private>everything after", "a [PRIVATE]"),
        ("a <private>x <private>y</private> z</private> b", "a [PRIVATE] b"),
        ('a <private reason="pii">x</private> b', "a [PRIVATE] b"),
        ("a </private> b", "a </private> b"),
        ("<private_key>x</private_key>", "<private_key>x</private_key>"),
    ],
)
def test_private_blocks(text, expected):
    assert redact(text) == expected


# -- redact_value -----------------------------------------------------------------------------------------


def test_redact_value_walks_nested_data_without_mutating_it():
    ghp = "ghp_" + r("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 36)
    payload = {
        "session_id": "123e4567-e89b-12d3-a456-426614174000",
        "tool_name": "Bash",
        "tool_input": {"command": f"git push https://x:{ghp}@github.com/o/r", "timeout": 120},
        "tool_response": {"stdout": ["ok", f"token {ghp}"], "exit_code": 0, "interrupted": False, "err": None},
        "env": {"GITHUB_TOKEN": "plainvalue", "api_key": "abc", "password": "", "max_tokens": 4096},
        "headers": [{"Authorization": "Basic dXNlcjpwYXNz"}, {"Accept": "*/*"}],
        "token_type": "bearer",
        "usage": {"input_tokens": 10, "output_tokens": 20},
        "pair": ("a", 1.5),
    }
    before = json.dumps(payload, default=list)
    out = redact_value(payload)
    assert json.dumps(payload, default=list) == before
    dumped = json.dumps(out)
    assert ghp not in dumped and "plainvalue" not in dumped and "dXNlcjpwYXNz" not in dumped
    assert out["session_id"] == payload["session_id"]
    assert out["tool_input"]["timeout"] == 120
    assert out["tool_response"]["exit_code"] == 0 and out["tool_response"]["interrupted"] is False
    assert out["tool_response"]["err"] is None
    assert out["env"] == {
        "GITHUB_TOKEN": "[REDACTED:field]",
        "api_key": "[REDACTED:field]",
        "password": "",
        "max_tokens": 4096,
    }
    assert out["headers"][0] == {"Authorization": "[REDACTED:field]"}
    assert out["token_type"] == "bearer"
    assert out["usage"] == {"input_tokens": 10, "output_tokens": 20}
    assert out["pair"] == ["a", 1.5]


def test_redact_value_caps_depth_and_survives_cycles():
    deep: list = []
    node = deep
    for _ in range(200):
        node.append([])
        node = node[0]
    out = redact_value(deep)
    depth = 0
    while isinstance(out, list):
        out = out[0] if out else None
        depth += 1
    assert out == "[TRUNCATED:depth]"
    assert depth == 64
    cyclic: dict = {"a": 1}
    cyclic["self"] = cyclic
    assert "[TRUNCATED:depth]" in json.dumps(redact_value(cyclic))


def test_redact_value_scalars_and_odd_types():
    assert redact_value(None) is None
    assert redact_value(3) == 3
    assert redact_value(True) is True
    assert redact_value(b"password=hunter22") == "password=[REDACTED:secret_assignment]"
    assert redact_value({1: "x"}) == {1: "x"}


@pytest.mark.parametrize(
    "key", ["password", "DB_PASSWORD", "passwd", "secret", "client_secret", "clientSecret", "GITHUB_TOKEN",
            "access_token", "api_key", "apiKey", "x-api-key", "AWS_SECRET_ACCESS_KEY", "private_key",
            "Authorization", "cookie", "credentials", "auth", "db_pass", "password_hash"],
)  # fmt: skip
def test_sensitive_keys(key):
    assert is_sensitive_key(key)


@pytest.mark.parametrize(
    "key", ["session_id", "max_tokens", "input_tokens", "token_type", "tokenizer", "secret_name", "author",
            "passwordless", "bypass", "tool_use_id", "transcript_path", "oauth_provider", "key", "monkey"],
)  # fmt: skip
def test_ordinary_keys(key):
    assert not is_sensitive_key(key)


# -- sensitive paths --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        ".env", "./.env", "/srv/app/.env", ".env.local", ".env.production", "C:\\proj\\.env",
        "certs/server.pem", "tls.key", "store.p12", "cert.pfx", "~/.ssh/id_rsa", "/home/u/.ssh/id_ed25519",
        "id_ecdsa", "id_dsa", "id_rsa_backup", "/home/u/.netrc", ".pgpass", ".npmrc", ".pypirc", "credentials",
        "gcp/credentials.json", "~/.aws/credentials", "C:\\Users\\me\\.aws\\credentials", "/root/.docker/config.json",
        "release.keystore", "app.jks", "secrets.yaml", "config/secrets.yml", "secrets.json", "secrets.toml",
        "/home/u/.ssh/ID_RSA", ".git-credentials", "deploy/prod.env",
    ],
)  # fmt: skip
def test_sensitive_paths(path):
    assert is_sensitive_path(path)


@pytest.mark.parametrize(
    "path",
    [
        ".env.example", ".env.sample", ".env.template", "/srv/app/.env.example", "id_rsa.pub", "~/.ssh/id_ed25519.pub",
        "src/environment.ts", "README.md", "config.json", "keys.py", "docs/credentials.md", ".venv/lib/python3.11",
        ".env/bin/python", "secrets_manager.py", "", "/", "known_hosts", "monkey.json",
    ],
)  # fmt: skip
def test_ordinary_paths(path):
    assert not is_sensitive_path(path)


# -- truncate_middle --------------------------------------------------------------------------------------


def test_truncate_middle_leaves_short_text_alone():
    assert truncate_middle("short", 100) == "short"
    assert truncate_middle("x" * 100, 100) == "x" * 100


def test_truncate_middle_keeps_head_and_tail():
    text = "".join(chr(ord("a") + i % 26) for i in range(10_000))
    out = truncate_middle(text, 1000)
    assert len(out) <= 1000 + 40
    m = re.fullmatch(r"(.*)\n… \[(\d+) chars cut\] …\n(.*)", out, re.DOTALL)
    assert m is not None
    head, cut, tail = m.group(1), int(m.group(2)), m.group(3)
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) == 600 and len(tail) == 400
    assert len(head) + cut + len(tail) == len(text)


def test_truncate_middle_prefers_line_breaks():
    text = "\n".join(f"line {i:04d}" for i in range(2000))
    out = truncate_middle(text, 2000)
    head, _, rest = out.partition("\n… [")
    tail = rest.split("] …\n", 1)[1]
    assert head.endswith(("0", "1", "2", "3", "4", "5", "6", "7", "8", "9")) and "\n" not in head[-9:]
    assert tail.startswith("line ")
    assert len(out) <= 2040


def test_truncate_middle_with_tiny_budgets():
    assert len(truncate_middle("abcdef" * 10, 0)) <= 40
    assert truncate_middle("abcdef" * 10, 5).startswith("abc")


# -- robustness and speed ---------------------------------------------------------------------------------


def test_odd_input_does_not_crash_or_shift_spans():
    assert redact("") == ""
    assert redact("\x00" * 1000) == "\x00" * 1000
    weird = "İ" * 5 + " password=hunter22 " + "ß\ud800\U0001f600" * 3
    out = redact(weird)
    assert out == "İ" * 5 + " password=[REDACTED:secret_assignment] " + "ß\ud800\U0001f600" * 3
    nul = "token=\x00abc\x00 AKIA" + "A" * 16
    assert "AKIAAAAA" not in redact(nul)


def _payload(size: int) -> str:
    chunks = list(ORDINARY_TEXTS.values()) + [c.context for c in SECRET_CASES[::7]]
    text = "\n".join(chunks)
    return (text * (size // len(text) + 1))[:size]


def test_redact_8kb_is_fast():
    payload = _payload(8192)
    timings = []
    for _ in range(15):
        start = time.process_time()
        redact(payload)
        timings.append(time.process_time() - start)
    assert min(timings) < 0.02  # typically ~1 ms; generous for a loaded machine


def test_redact_5mb_finishes():
    payload = _payload(5_000_000)
    start = time.process_time()
    out = redact(payload)
    assert time.process_time() - start < 5.0
    assert "[REDACTED:" in out


@pytest.mark.parametrize(
    "text",
    [
        "token=abc123 " * 20_000,
        "a" * 300_000,
        "://a:" * 50_000,
        "-----BEGIN RSA PRIVATE KEY-----\n" * 5_000,
        'password="' * 20_000,
        "curl -u " * 30_000,
        "<private>" * 20_000 + "</private>" * 20_000,
        "eyJhbGciOi." * 20_000,
        "Authorization: " * 20_000,
    ],
    ids=["assignments", "one-run", "urls", "pem-headers", "quotes", "curl", "private", "jwt-parts", "headers"],
)
def test_adversarial_inputs_stay_linear(text):
    start = time.process_time()
    redact(text)
    assert time.process_time() - start < 3.0


# -- properties -------------------------------------------------------------------------------------------

_FRAGMENTS = [
    "password=", "PASSWORD=", "token: ", '"secret": "', "api_key = '", "Authorization: Bearer ", "Cookie: a=",
    "https://u:", "@host/", "<private>", "</private>", "-----BEGIN PRIVATE KEY-----\n", "-----END PRIVATE KEY-----",
    "\n", " ", '"', "'", "=", ":", "[REDACTED:x]", "[PRIVATE]", "--password ", "curl -u a:", "mysql -p", "eyJ",
    ".eyJ", "ghp_", "sk-", "AKIA", "\\\"", "export ", "  - ", "#", "&", "?sig=", "AccountKey=",
] + [c.secret for c in SECRET_CASES[::3]]  # fmt: skip

_mixed_text = st.lists(st.one_of(st.text(max_size=30), st.sampled_from(_FRAGMENTS)), max_size=25).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_redact_never_raises_and_is_idempotent_on_any_text(text):
    once = redact(text)
    assert redact(once) == once
    assert find_secrets(text) == sorted(find_secrets(text), key=lambda f: f.start)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mixed_text)
def test_redact_is_idempotent_on_secret_shaped_text(text):
    once = redact(text)
    assert redact(once) == once


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SECRET_CASES), st.text(max_size=200), st.text(max_size=200))
def test_corpus_secrets_never_survive_any_surroundings(case, before, after):
    out = redact(f"{before}\n{case.context}\n{after}")
    assert case.secret not in out
