"""The hook path fuzzed: `decode_payload` / `parse_hook_event` / `scrub` as properties, `handle` and
`run_hook` in-process on a real database, and the real `agentmem hook` process with 50 MB outputs,
binary stdin, invalid UTF-8, NUL bytes, 10k-deep nesting and truncated JSON.

A hook must exit 0 within its time budget, print nothing a client could choke on, store what is
valid and never harm what was stored before.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem_mcp.capture.events import (
    CLAUDE_CODE_EVENTS,
    CURSOR_EVENTS,
    MAX_DEPTH,
    HookEvent,
    HookInputError,
    decode_payload,
    event_fingerprint,
    parse_hook_event,
)
from agentmem_mcp.capture.hook import handle, run_hook
from agentmem_mcp.capture.observations import MARKER_EVENTS, scrub
from agentmem_mcp.db.connection import connect

HOOK_BUDGET_S = 3.0
MAX_OUTPUT_CHARS = 12000  # the default of settings.max_output_chars
AGENTMEM = Path(sys.executable).with_name("agentmem")
HOOK_COMMAND = [str(AGENTMEM), "hook"] if AGENTMEM.exists() else [sys.executable, "-m", "agentmem_mcp", "hook"]
CANARY_SESSION = "canary-session-0001"

# -- strategies ----------------------------------------------------------------------------------------

strings = st.one_of(
    st.text(max_size=40),  # lone surrogates included: json.dumps writes them as \udXXX escapes
    st.sampled_from(["", "\x00", "a\x00b", "../../etc/passwd", "🎉", "\ufeff", "\udc80", "x" * 5000,
                     "Exit code 1", "Error: Exit code -99999999999", '{"half": ', "[[[[", "C:\\x\\..\\y"]),
)
numbers = st.one_of(st.integers(), st.sampled_from([2**64, -(2**63), 10**400, 0]),
                    st.floats(allow_nan=True, allow_infinity=True))
json_values = st.recursive(st.none() | st.booleans() | numbers | strings,
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(strings, inner, max_size=4),
                           max_leaves=15)
CLIENT_EVENTS = [("claude-code", name) for name in CLAUDE_CODE_EVENTS] + [("cursor", name) for name in CURSOR_EVENTS]
FIELDS = (
    "session_id", "conversation_id", "generation_id", "cwd", "workspace_roots", "hook_event_name", "tool_name",
    "tool_input", "tool_response", "tool_output", "tool_use_id", "error", "error_message", "prompt", "attachments",
    "command", "output", "result_json", "file_path", "edits", "source", "reason", "transcript_path", "duration",
    "is_interrupt", "status",
)


def valid_payload(client: str, event: str, session: str = "fuzz-session") -> dict[str, Any]:
    """A plausible payload for the event, every field the parser reads filled in."""
    payload: dict[str, Any] = {"hook_event_name": event, "transcript_path": "/tmp/t.jsonl", "source": "startup"}
    if client == "claude-code":
        payload.update(session_id=session, cwd="/tmp/fuzz-project", prompt="fix the flaky test",
                       tool_name="Bash", tool_input={"command": "pytest -q", "file_path": "/tmp/fuzz-project/a.py"},
                       tool_response={"stdout": "1 failed", "stderr": "", "interrupted": False},
                       error="Exit code 1", tool_use_id="toolu_1")
    else:
        payload.update(conversation_id=session, generation_id="gen-1", workspace_roots=["/tmp/fuzz-project"],
                       prompt="fix the flaky test", attachments=[{"file_path": "/tmp/fuzz-project/a.py"}],
                       tool_name="Shell", tool_input='{"command": "ls"}', tool_output='{"output": "a b"}',
                       command="ls -la", output="total 0", result_json='{"ok": true}',
                       file_path="/tmp/fuzz-project/a.py", edits=[{"old_string": "a", "new_string": "b"}],
                       cwd="/tmp/fuzz-project", duration=12)
    return payload


def nest(depth: int, leaf: Any = "deep") -> Any:
    for n in range(depth):
        leaf = [leaf] if n % 2 else {"k": leaf}
    return leaf


def deep_json(depth: int) -> bytes:
    return b'{"k": ' * depth + b"1" + b"}" * depth


@st.composite
def payloads(draw: st.DrawFn) -> tuple[str, str, Any]:
    """(client, event, payload): a valid payload with fields given wrong types, removed or nested deep."""
    client, event = draw(st.sampled_from(CLIENT_EVENTS))
    payload = valid_payload(client, event, draw(st.sampled_from(["fuzz-session", "s p a c e", "x" * 300, "\x00"])))
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=4, unique=True)):
        how = draw(st.sampled_from(["wrong type", "wrong type", "odd string", "odd string", "missing", "deep"]))
        if how == "missing":
            payload.pop(name, None)
        elif how == "odd string":
            payload[name] = draw(strings)
        elif how == "deep":
            payload[name] = nest(draw(st.sampled_from([MAX_DEPTH - 3, MAX_DEPTH, MAX_DEPTH + 1, 400])))
        else:
            payload[name] = draw(json_values)
    if draw(st.sampled_from([False] * 9 + [True])):
        payload = draw(json_values)
    return client, event, payload


def encode(payload: Any) -> bytes:
    try:
        return json.dumps(payload).encode()
    except (RecursionError, ValueError):
        return b"{}"


@st.composite
def hook_inputs(draw: st.DrawFn) -> tuple[str, str, bytes]:
    """(client, event, stdin bytes): encoded payloads, then sometimes truncated, spliced with bytes,
    given NUL bytes, wrapped in deep nesting, or replaced by arbitrary bytes."""
    client, event, payload = draw(payloads())
    raw = encode(payload)
    damage = draw(st.sampled_from(["none"] * 6 + ["truncate", "splice", "nul", "wrap", "bytes", "bom"]))
    if damage == "truncate":
        raw = raw[: draw(st.integers(0, max(0, len(raw) - 1)))]
    elif damage == "splice":
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80\x80", b"\x00"])) + raw[at:]
    elif damage == "nul":
        raw = raw.replace(b'"', b'"\x00', draw(st.integers(1, 3)))
    elif damage == "wrap":
        depth = draw(st.sampled_from([MAX_DEPTH - 1, MAX_DEPTH + 1, 1000, 10000]))
        raw = b"[" * depth + raw + b"]" * depth
    elif damage == "bytes":
        raw = draw(st.binary(max_size=300))
    elif damage == "bom":
        raw = b"\xef\xbb\xbf\x00 \n" + raw + b"\x00\r\n"
    return client, event, raw


def check_event(ev: HookEvent) -> None:
    """What the rest of the pipeline relies on, whatever the input was."""
    assert isinstance(ev.session_id, str) and 0 < len(ev.session_id) <= 200 and "\x00" not in ev.session_id
    assert ev.cwd is None or isinstance(ev.cwd, str)
    assert ev.tool is None or isinstance(ev.tool, str)
    assert ev.tool_output is None or isinstance(ev.tool_output, str)
    assert ev.prompt is None or isinstance(ev.prompt, str)
    assert isinstance(ev.files, list) and all(isinstance(f, str) for f in ev.files)
    json.dumps([ev.tool_input, ev.extra, ev.files], ensure_ascii=False, default=str).encode("utf-8")
    event_fingerprint(ev)
    kept = scrub(ev, MAX_OUTPUT_CHARS)
    assert kept.tool_output is None or len(kept.tool_output) <= MAX_OUTPUT_CHARS + 200
    json.dumps([kept.tool_input, kept.extra], ensure_ascii=False, default=str).encode("utf-8")
    event_fingerprint(kept)


# -- pure properties ---------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hook_inputs())
def test_decode_and_parse_raise_only_hook_input_error(case: tuple[str, str, bytes]):
    client, event, raw = case
    try:
        ev = parse_hook_event(client, event, decode_payload(raw))
    except HookInputError as exc:
        assert str(exc)
        return
    check_event(ev)


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(payloads())
def test_parse_of_python_objects_raises_only_hook_input_error(case: tuple[str, str, Any]):
    """parse_hook_event straight from Python values: surrogates, NaN, huge ints, nesting past the limit."""
    client, event, payload = case
    try:
        ev = parse_hook_event(client, event, payload)
    except HookInputError:
        return
    check_event(ev)


# -- in-process handle / run_hook on a real database --------------------------------------------------


@pytest.fixture(scope="module")
def hook_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hooks") / "home"


@pytest.fixture
def quiet_logger():
    """`run_hook` points the 'agentmem' logger at its home's log file; give the logger back afterwards."""
    logger = logging.getLogger("agentmem")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    for handler in logger.handlers:
        if handler not in saved[0]:
            handler.close()
    logger.handlers[:], logger.level, logger.propagate = saved


def observation(home: Path, session_id: str) -> list[dict[str, Any]]:
    conn = connect(home / "agentmem.db", load_vec=False)
    try:
        return [dict(row) for row in conn.execute("SELECT * FROM observations WHERE session_id = ? ORDER BY id",
                                                  (session_id,))]
    finally:
        conn.close()


def store_canary(home: Path) -> list[dict[str, Any]]:
    payload = valid_payload("claude-code", "PostToolUse", CANARY_SESSION)
    payload["tool_response"] = {"stdout": "canary: 42 passed in 1.2s", "stderr": ""}
    if not observation_exists(home):
        handle("claude-code", "PostToolUse", json.dumps(payload).encode(), {"AGENTMEM_HOME": str(home)})
    rows = observation(home, CANARY_SESSION)
    assert len(rows) == 1 and rows[0]["output"] == "canary: 42 passed in 1.2s"
    return rows


def observation_exists(home: Path) -> bool:
    return (home / "agentmem.db").exists() and bool(observation(home, CANARY_SESSION))


def assert_canary_intact(home: Path, before: list[dict[str, Any]]) -> None:
    assert observation(home, CANARY_SESSION) == before
    conn = connect(home / "agentmem.db", load_vec=False)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_handle_stores_what_is_valid_and_raises_only_hook_input_error(hook_home: Path):
    canary = store_canary(hook_home)
    env = {"AGENTMEM_HOME": str(hook_home)}

    @settings(max_examples=200, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(hook_inputs())
    def fuzz(case: tuple[str, str, bytes]) -> None:
        client, event, raw = case
        try:
            expected = scrub(parse_hook_event(client, event, decode_payload(raw)), MAX_OUTPUT_CHARS)
        except HookInputError:
            expected = None
        try:
            answer = handle(client, event, raw, env)
        except HookInputError:
            assert expected is None, "the parser accepted what handle refused"
            return
        assert expected is not None
        json.dumps(answer)
        if expected.extra.get("phase") == "before" or (expected.client == "cursor" and expected.files):
            return  # not recorded, or merged with its edit twin
        fingerprints = {row["fingerprint"] for row in observation(hook_home, expected.session_id)}
        if expected.event in MARKER_EVENTS and not fingerprints:
            return  # an end, a stop or a compaction of a session nothing else is stored of: not recorded
        assert event_fingerprint(expected) in fingerprints

    fuzz()
    assert_canary_intact(hook_home, canary)


def test_run_hook_always_returns_0_and_prints_json_or_nothing(hook_home: Path, quiet_logger):
    canary = store_canary(hook_home)

    @settings(max_examples=80, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(hook_inputs())
    def fuzz(case: tuple[str, str, bytes]) -> None:
        client, event, raw = case
        stdout = io.StringIO()
        with mock.patch.dict(os.environ, {"AGENTMEM_HOME": str(hook_home)}):
            assert run_hook(client, event, stdin=io.BytesIO(raw), stdout=stdout) == 0
        printed = stdout.getvalue()
        if client == "cursor":
            assert isinstance(json.loads(printed), dict)
        else:
            assert printed == "" or isinstance(json.loads(printed), dict)

    fuzz()
    assert_canary_intact(hook_home, canary)


# -- the real hook process ----------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    return repo


def run_real_hook(home: Path, event: str, raw: bytes, client: str = "claude-code") -> tuple[subprocess.CompletedProcess,
                                                                                             float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env["AGENTMEM_HOME"] = str(home)
    env["AGENTMEM_HOOK_STARTS_PROCESS"] = "0"  # the hook records the event before it answers, and leaves no process
    started = time.perf_counter()
    done = subprocess.run([*HOOK_COMMAND, "--client", client, event], input=raw, env=env, capture_output=True,
                          timeout=60)
    return done, time.perf_counter() - started


def check_hook_process(done: subprocess.CompletedProcess, seconds: float, client: str = "claude-code") -> None:
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stderr == b"", done.stderr[-500:]
    assert seconds < HOOK_BUDGET_S, f"the hook took {seconds:.2f} s"
    if client == "cursor":
        assert isinstance(json.loads(done.stdout), dict)
    else:
        assert done.stdout == b"" or isinstance(json.loads(done.stdout), dict)


@pytest.mark.parametrize("client", ["claude-code", "cursor"])
def test_50_mb_tool_output_is_cut_head_and_tail_within_budget(client: str, project: Path, hook_home: Path):
    canary = store_canary(hook_home)
    big = "HEAD-OF-OUTPUT " + "x" * (50 << 20) + " TAIL-OF-OUTPUT"
    session = f"big-{client}"
    payload = valid_payload(client, "PostToolUse" if client == "claude-code" else "postToolUse", session)
    payload.update(cwd=str(project), workspace_roots=[str(project)], tool_name="Bash",
                   tool_input={"command": "cat huge.log"})
    if client == "claude-code":
        payload["tool_response"] = {"stdout": big, "stderr": ""}
    else:
        payload["tool_output"] = json.dumps({"output": big})
    raw = json.dumps(payload).encode()
    assert len(raw) > 50 << 20
    done, seconds = run_real_hook(hook_home, payload["hook_event_name"], raw, client)
    check_hook_process(done, seconds, client)
    [row] = observation(hook_home, session)
    assert row["output"].startswith("HEAD-OF-OUTPUT") and row["output"].endswith("TAIL-OF-OUTPUT")
    assert len(row["output"]) <= MAX_OUTPUT_CHARS + 200 and row["tool"] == "Bash"
    assert_canary_intact(hook_home, canary)


def test_bad_stdin_never_breaks_the_client(project: Path, hook_home: Path):
    canary = store_canary(hook_home)

    def event_bytes(session: str, **fields: Any) -> bytes:
        payload = {"session_id": session, "cwd": str(project), "tool_name": "Bash",
                   "tool_input": {"command": "make"}, **fields}
        return json.dumps(payload).encode()

    cases: list[tuple[str, bytes, str | None]] = [
        ("binary", bytes(range(256)) * 400, None),
        ("random bytes", os.urandom(1 << 20), None),
        ("empty", b"", None),
        ("only NULs", b"\x00" * 1000, None),
        ("truncated", event_bytes("truncated", tool_response={"stdout": "never stored"})[:-12], None),
        ("10k-deep top level", deep_json(10000), None),
        ("10k-deep list", b"[" * 10000 + b"]" * 10000, None),
        ("invalid UTF-8", event_bytes("bad-utf8")[:-1] + b', "tool_response": "ok \xff\xfe\xc3\x28 done"}',
         "ok \ufffd\ufffd\ufffd( done"),
        ("NUL bytes", event_bytes("nul-bytes", tool_response={"stdout": "a\x00b\x00c"}), "a\x00b\x00c"),
        ("raw NUL in JSON", event_bytes("raw-nul")[:-1] + b', "tool_response": "x\x00y"}', "x\x00y"),
        ("BOM and padding", b"\xef\xbb\xbf\n" + event_bytes("bom", tool_response="fine") + b"\n\x00", "fine"),
        ("wrong types", json.dumps({"session_id": "wrong-types", "cwd": 12, "tool_name": ["Bash"],
                                    "tool_input": "not a dict", "tool_response": {"stdout": 7}}).encode(), None),
    ]
    for name, raw, stored_output in cases:
        done, seconds = run_real_hook(hook_home, "PostToolUse", raw)
        check_hook_process(done, seconds)
        if stored_output is not None:
            session = json.loads(raw.decode("utf-8", "replace").strip("\ufeff\n\x00"), strict=False)["session_id"]
            rows = observation(hook_home, session)
            assert [row["output"] for row in rows] == [stored_output], name
    assert len(observation(hook_home, "wrong-types")) == 1, "a payload with odd field types still records the event"
    assert observation(hook_home, "truncated") == []
    done, seconds = run_real_hook(hook_home, "postToolUse", b"\xff" * 100, "cursor")
    check_hook_process(done, seconds, "cursor")
    assert_canary_intact(hook_home, canary)


@pytest.mark.parametrize("depth", [500, 10000])
def test_deep_nesting_inside_a_valid_event_keeps_the_event(depth: int, project: Path, hook_home: Path):
    store_canary(hook_home)
    session = f"deep-inside-{depth}"
    raw = (json.dumps({"session_id": session, "cwd": str(project), "tool_name": "mcp__db__query",
                       "tool_input": {"sql": "select 1"}}).encode()[:-1]
           + b', "tool_response": ' + deep_json(depth) + b"}")
    done, seconds = run_real_hook(hook_home, "PostToolUse", raw)
    check_hook_process(done, seconds)
    rows = observation(hook_home, session)
    assert len(rows) == 1 and rows[0]["tool"] == "mcp__db__query"


@pytest.mark.parametrize("cwd", ["/tmp/a\x00b", "/" + "a" * 5000])
def test_odd_cwd_does_not_lose_the_event(cwd: str, hook_home: Path):
    store_canary(hook_home)
    session = f"odd-cwd-{len(cwd)}"
    raw = json.dumps({"session_id": session, "cwd": cwd, "tool_name": "Bash", "tool_input": {"command": "ls"},
                      "tool_response": {"stdout": "a b"}}).encode()
    done, seconds = run_real_hook(hook_home, "PostToolUse", raw)
    check_hook_process(done, seconds)
    assert len(observation(hook_home, session)) == 1


def test_over_64_mb_of_stdin_keeps_the_event(project: Path, hook_home: Path):
    store_canary(hook_home)
    raw = json.dumps({"session_id": "over-64mb", "cwd": str(project), "tool_name": "Bash",
                      "tool_input": {"command": "cat huge.log"},
                      "tool_response": {"stdout": "HEAD " + "y" * (70 << 20) + " TAIL"}}).encode()
    done, seconds = run_real_hook(hook_home, "PostToolUse", raw)
    check_hook_process(done, seconds)
    assert len(observation(hook_home, "over-64mb")) == 1
