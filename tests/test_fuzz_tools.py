"""Every MCP tool fuzzed with bad arguments through one real `agentmem serve` and the SDK's stdio client,
plus raw JSON-RPC garbage written straight to a second server's stdin.

Each call must come back in time with a normal result or an `isError` result carrying a clear message;
the server must stay up, and the memories stored before the fuzzing must come out of it unchanged.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.mcpserver.exceptions import ToolError

from agentmem_mcp.config import load_settings
from agentmem_mcp.db.connection import connect
from agentmem_mcp.server.app import AppState, _call

CALL_TIMEOUT_S = 20.0
FUZZ_EXAMPLES = 300
SEEDS = [
    {"content": "The billing service retries Stripe webhooks three times with exponential backoff",
     "type": "decision", "tags": ["billing", "webhooks"], "files": ["billing/webhooks.py"]},
    {"content": "Run the Elixir suite with `mix test --cover`; the LiveView tests need Postgres up",
     "type": "workflow", "priority": "P0"},
    {"content": "The user prefers tabs over spaces in Makefiles and short commit subjects",
     "type": "preference", "scope": "global"},
]
SEED_QUERIES = ["stripe webhook retries backoff", "how to run the elixir tests", "tabs in makefiles"]
STABLE_FIELDS = ("content", "title", "type", "tags", "files", "priority", "project", "version", "is_latest",
                 "root_id", "importance")
GENERIC_CRASH = re.compile(r"Error executing tool \w+\s*$")


# -- one server for the module ---------------------------------------------------------------------


class Client:
    """A persistent MCP client session, driven from sync (hypothesis) code through an anyio portal."""

    def __init__(self, portal: BlockingPortal, session: ClientSession) -> None:
        self.portal = portal
        self.session = session

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, str, float]:
        """(is_error, text, seconds); raises TimeoutError if the server does not answer in time."""
        async def run() -> tuple[bool, str]:
            with anyio.fail_after(CALL_TIMEOUT_S):
                result = await self.session.call_tool(tool, arguments)
            return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)

        started = time.perf_counter()
        error, text = self.portal.call(run)
        return error, text, time.perf_counter() - started

    def ok(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        error, text, _ = self.call(tool, arguments)
        assert not error, (tool, arguments, text)
        return json.loads(text)

    def ping(self) -> None:
        async def run() -> None:
            with anyio.fail_after(CALL_TIMEOUT_S):
                await self.session.send_ping()

        self.portal.call(run)


@asynccontextmanager
async def open_session(params: StdioServerParameters):
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def server_env(home: Path, model_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env.update(AGENTMEM_HOME=str(home), AGENTMEM_EMBED_MODEL_PATH=str(model_path))
    return env


def serve_command() -> list[str]:
    return [sys.executable, "-m", "agentmem_mcp", "serve"]


def server_pids() -> list[int] | None:
    """Our child processes running `agentmem serve` (the stdio client spawns it); None without /proc."""
    if not Path("/proc/self/stat").exists():
        return None
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"agentmem_mcp" in cmdline and b"serve" in cmdline:
            pids.append(int(entry.name))
    return pids


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("fuzz") / "shop"
    (repo / ".git").mkdir(parents=True)
    return repo


@pytest.fixture(scope="module")
def client(project: Path, model_path: Path) -> Iterator[Client]:
    params = StdioServerParameters(command=serve_command()[0], args=serve_command()[1:],
                                   env=server_env(project.parent / "home", model_path), cwd=str(project))
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(open_session(params)) as session:
        yield Client(portal, session)


# -- strategies ----------------------------------------------------------------------------------------

# The SDK client cannot serialise lone surrogates at all (the raw-protocol tests send those).
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)
huge_text = st.builds(lambda size, unit: unit * (size // len(unit.encode())),
                      st.integers(1 << 20, 5 << 20), st.sampled_from(["a", "é", "🎉", "\x00", "word ", "../"]))
nasty_text = st.sampled_from([
    "", " ", "\x00", "\x00" * 64, "a\x00b", "../../etc/passwd", "m_../x", "m_../../../etc/shadow", "..\\..\\boot.ini",
    "/etc/passwd", "file:///etc/passwd", "m_0000000000000000", "M_0123456789ABCDEF", "m_0123456789abcdeg",
    "m_0123456789abcdef0", "🎉🔥💾", "\u202e\u200b\ufeff", "null", "true", "[1, 2]", '{"a": 1}', "1e999", "NaN",
    "-1", "'; DROP TABLE memories; --", "%s%s%n", "AND OR NOT ( \" * : ^ ~", "\r\n\t",
])
numbers = st.one_of(
    st.sampled_from([-1, 0, 1, 2, -(10**18), 10**18, 2**63, 2**64 + 1, 10**30, -0.0, 0.5, 1e-300, 1e308]),
    st.integers(), st.floats(allow_nan=True, allow_infinity=True),
)


def nest(depth: int, leaf: Any) -> Any:
    for n in range(depth):
        leaf = [leaf] if n % 2 else {"k": leaf}
    return leaf


json_value = st.recursive(st.none() | st.booleans() | numbers | text,
                          lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
                          max_leaves=12)
garbage = st.one_of(
    st.none(), st.booleans(), numbers, text, nasty_text, json_value,
    st.builds(nest, st.integers(10, 120), st.sampled_from(["x", 1, None])),
    st.lists(nasty_text, min_size=1, max_size=5), st.dictionaries(nasty_text, nasty_text, max_size=3),
)
words = st.lists(st.sampled_from(["cache", "deploy", "queue", "retry", "index", "lockfile", "schema", "token",
                                  "worker", "vector", "alpha", "beta", "gamma", "delta"]), min_size=2, max_size=12)
fuzz_content = st.one_of(words.map(" ".join).map(lambda s: f"fuzz note: {s}"), text, nasty_text)
unknown_ids = st.from_regex(r"\Am_[0-9a-f]{16}\Z")


def valid_arguments(seed_ids: set[str]) -> dict[str, dict[str, st.SearchStrategy]]:
    """Per tool: each argument with a strategy of acceptable (or at least well-typed) values."""
    ids = unknown_ids.filter(lambda i: i not in seed_ids)
    return {
        "memory_save": {
            "content": fuzz_content | huge_text, "type": st.sampled_from(["fact", "bug", "decision", "workflow"]),
            "title": text, "tags": st.lists(text, max_size=5), "files": st.lists(text | nasty_text, max_size=5),
            "importance": st.floats(0, 1), "priority": st.sampled_from(["P1", "P2"]),
            "scope": st.sampled_from(["project", "global"]), "ttl_days": st.floats(0.001, 36500),
            "supersedes": ids | nasty_text,
        },
        "memory_search": {
            "query": words.map(" ".join) | text | nasty_text, "limit": st.integers(1, 50),
            "type": st.sampled_from(["fact", "bug", "decision"]),
            "tier": st.sampled_from(["working", "episodic", "semantic", "procedural"]),
            "all_projects": st.booleans(), "include_history": st.booleans(), "min_confidence": st.floats(0, 1),
            "since_days": st.floats(0.001, 1e6), "budget_tokens": st.integers(50, 20000),
        },
        "memory_get": {"id": ids | nasty_text, "history": st.booleans()},
        "memory_forget": {
            "ids": st.lists(ids | nasty_text, min_size=1, max_size=4), "session_id": text | nasty_text,
            "type": st.sampled_from(["fact", "bug", "decision", "nonsense"]), "older_than_days": numbers,
            "dry_run": st.sampled_from([True, "true", "yes", 1]), "reason": text,
        },
        "memory_context": {"budget_tokens": st.integers(100, 20000)},
        "memory_stats": {"all_projects": st.booleans()},
    }


REQUIRED = {"memory_save": ("content",), "memory_search": ("query",), "memory_get": ("id",)}


def harmless_dry_run(value: Any) -> Any:
    """dry_run as the fuzzer may send it: never a value pydantic reads as False, since a filter with
    dry_run=false really forgets (and a fuzzer is not there to wipe the seeded memories)."""
    if value is None or value is True or isinstance(value, (list, dict)):
        return value
    return True if str(value).strip().lower() in ("", "0", "0.0", "-0.0", "false", "f", "n", "no", "off") else value


@st.composite
def tool_calls(draw: st.DrawFn, seed_ids: set[str]) -> tuple[str, dict[str, Any]]:
    """A tool and its arguments: mostly well-typed (odd values included) with one argument broken, that is
    garbage, huge, missing or unknown; sometimes all well-typed, sometimes everything at random."""
    table = valid_arguments(seed_ids)
    tool = draw(st.sampled_from(sorted(table)))
    names = list(table[tool])
    required = REQUIRED.get(tool, ())
    arguments = {name: draw(table[tool][name]) for name in names if name in required or draw(st.booleans())}
    mode = draw(st.sampled_from(["one broken", "one broken", "well-typed", "chaos"]))
    broken = [draw(st.sampled_from(names))] if mode == "one broken" else names if mode == "chaos" else []
    for name in broken:
        how = draw(st.sampled_from(["garbage", "garbage", "huge", "missing", "unknown"]))
        if how == "garbage" or (mode == "chaos" and how == "huge"):
            arguments[name] = draw(garbage)
        elif how == "huge":
            arguments[name] = draw(huge_text)
        elif how == "missing":
            arguments.pop(name, None)
        else:
            arguments[draw(text | nasty_text)] = draw(garbage)
    if tool == "memory_forget" and "dry_run" in arguments:
        arguments["dry_run"] = harmless_dry_run(arguments["dry_run"])
    return tool, arguments


# -- checks --------------------------------------------------------------------------------------------


def check_answer(tool: str, arguments: dict[str, Any], error: bool, text: str, seconds: float) -> None:
    shown = json.dumps(arguments, default=repr)[:300]
    assert seconds < CALL_TIMEOUT_S, (tool, shown, seconds)
    if not error:
        assert isinstance(json.loads(text), dict), (tool, shown, text[:300])
        return
    assert text.strip(), (tool, shown, "empty error message")
    assert "Traceback (most recent call last)" not in text, (tool, shown, text[:2000])
    assert "Internal error" not in text, (tool, shown, text[:300])
    assert not GENERIC_CRASH.match(text), (tool, shown, f"the tool crashed: {text!r}; see the server log")
    assert "bug in agentmem" not in text, (tool, shown, text[:500])


def seed(client: Client) -> dict[str, dict[str, Any]]:
    stored = {}
    for memory in SEEDS:
        saved = client.ok("memory_save", memory)
        assert saved["action"] == "created", saved
        stored[saved["id"]] = client.ok("memory_get", {"id": saved["id"]})["memory"]
    return stored


def assert_seeds_intact(client: Client, seeds: dict[str, dict[str, Any]]) -> None:
    for memory_id, before in seeds.items():
        after = client.ok("memory_get", {"id": memory_id})["memory"]
        assert {k: after[k] for k in STABLE_FIELDS} == {k: before[k] for k in STABLE_FIELDS}
    for memory_id, query in zip(seeds, SEED_QUERIES):
        found = client.ok("memory_search", {"query": query})
        assert memory_id in [hit["id"] for hit in found["hits"]], (query, found)


# -- the tests -----------------------------------------------------------------------------------------


def test_every_tool_survives_fuzzed_arguments(client: Client):
    seeds = seed(client)
    pids = server_pids()
    assert pids is None or len(pids) == 1, pids
    calls: list[tuple[str, float]] = []

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(tool_calls(set(seeds)))
    def fuzz(call: tuple[str, dict[str, Any]]) -> None:
        tool, arguments = call
        error, text, seconds = client.call(tool, arguments)
        calls.append((tool, seconds))
        check_answer(tool, arguments, error, text, seconds)
        if len(calls) % 25 == 0:
            client.ping()

    fuzz()
    assert server_pids() == pids, "the server process died or was replaced"
    assert {tool for tool, _ in calls} == set(valid_arguments(set()))
    assert_seeds_intact(client, seeds)


EXPLICIT_CASES = [
    ("memory_save", {}), ("memory_save", {"content": None}), ("memory_save", {"content": 12}),
    ("memory_save", {"content": ["a", "list"]}), ("memory_save", {"content": "x" * (5 << 20)}),
    ("memory_save", {"content": "\x00" * 1000}), ("memory_save", {"content": "fine content here", "type": "nope"}),
    ("memory_save", {"content": "fine content here", "importance": float("nan")}),
    ("memory_save", {"content": "fine content here", "importance": float("inf")}),
    ("memory_save", {"content": "fine content here", "ttl_days": -1}),
    ("memory_save", {"content": "fine content here", "ttl_days": 10**18}),
    ("memory_save", {"content": "fine content here", "supersedes": "../../etc/passwd"}),
    ("memory_save", {"content": "fine content here", "supersedes": "m_0000000000000000"}),
    ("memory_save", {"content": "fine content here", "tags": {"a": 1}}),
    ("memory_save", {"content": "fine content here", "tags": ["t"] * 100}),
    ("memory_save", {"content": nest(150, "deep")}),
    ("memory_search", {}), ("memory_search", {"query": ""}), ("memory_search", {"query": "\x00\x00"}),
    ("memory_search", {"query": "x", "limit": -1}), ("memory_search", {"query": "x", "limit": 0}),
    ("memory_search", {"query": "x", "limit": 10**18}), ("memory_search", {"query": "x", "budget_tokens": -1}),
    ("memory_search", {"query": "x", "budget_tokens": 10**18}), ("memory_search", {"query": "x", "type": "../x"}),
    ("memory_search", {"query": "x", "tier": "nope"}), ("memory_search", {"query": "x", "since_days": -5}),
    ("memory_search", {"query": "x", "min_confidence": 2}), ("memory_search", {"query": {"nested": [1]}}),
    ("memory_get", {}), ("memory_get", {"id": "../../etc/passwd"}), ("memory_get", {"id": "m_../x"}),
    ("memory_get", {"id": "m_0000000000000000"}), ("memory_get", {"id": ["m_0000000000000000"]}),
    ("memory_get", {"id": "x" * (2 << 20)}), ("memory_get", {"id": None}),
    ("memory_forget", {}), ("memory_forget", {"ids": []}), ("memory_forget", {"ids": "m_0000000000000000"}),
    ("memory_forget", {"ids": ["../../etc/passwd"]}), ("memory_forget", {"ids": ["m_0000000000000000"]}),
    ("memory_forget", {"ids": ["m_0000000000000000"] * 5000}), ("memory_forget", {"ids": [1, 2]}),
    ("memory_forget", {"session_id": ""}), ("memory_forget", {"session_id": "../../x"}),
    ("memory_forget", {"type": "nonsense"}), ("memory_forget", {"older_than_days": -1}),
    ("memory_forget", {"ids": ["m_0000000000000000"], "session_id": "s"}),
    ("memory_context", {"budget_tokens": -1}), ("memory_context", {"budget_tokens": 0}),
    ("memory_context", {"budget_tokens": 10**18}), ("memory_context", {"budget_tokens": "lots"}),
    ("memory_stats", {"all_projects": [1]}), ("memory_stats", {"all_projects": "maybe"}),
    ("no_such_tool", {}),
]


def test_explicit_bad_arguments_get_clear_errors(client: Client):
    """The classic bad calls, each of which must be refused (not silently accepted)."""
    for tool, arguments in EXPLICIT_CASES:
        error, text, seconds = client.call(tool, arguments)
        assert error, (tool, json.dumps(arguments, default=repr)[:200], text[:300])
        check_answer(tool, arguments, error, text, seconds)
    assert len(server_pids() or [0]) == 1, "the server process died"


def test_nul_bytes_are_not_stored_in_titles_tags_or_files(client: Client):
    saved = client.ok("memory_save", {"content": "NUL probe: the cron job rotates the nginx logs nightly",
                                      "title": "\x00", "tags": ["ops\x00"], "files": ["etc/\x00logrotate.conf"]})
    memory = client.ok("memory_get", {"id": saved["id"]})["memory"]
    assert "\x00" not in "".join([memory["title"], *memory["tags"], *memory["files"]]), memory


def test_an_unexpected_failure_reads_as_a_clear_error(tmp_path: Path):
    """A crash inside the library must reach the agent as a message it can act on, not 'Error executing tool'."""
    state = AppState(load_settings(env={}, home=tmp_path / "home", embeddings=False))

    def crash(_store: Any) -> None:
        raise RuntimeError("the disk caught fire")

    logged: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = logged.append  # type: ignore[method-assign]
    logging.getLogger("agentmem.server").addHandler(handler)
    try:
        with pytest.raises(ToolError, match=r"RuntimeError: the disk caught fire\. This is unexpected.*agentmem\.log"):
            anyio.run(_call, state, None, crash)
    finally:
        logging.getLogger("agentmem.server").removeHandler(handler)
        state.close()
    assert [r.exc_info[1] for r in logged if r.exc_info][0].args == ("the disk caught fire",)


# -- raw protocol garbage --------------------------------------------------------------------------------


class RawServer:
    """`agentmem serve` on pipes, spoken to in raw JSON-RPC lines."""

    def __init__(self, home: Path, project: Path, model_path: Path) -> None:
        self.process = subprocess.Popen(serve_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=server_env(home, model_path), cwd=project)
        self.answers: dict[Any, dict[str, Any]] = {}
        self.garbled: list[bytes] = []
        self._arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                self.garbled.append(line)
                continue
            with self._arrived:
                if isinstance(message, dict) and "id" in message:
                    self.answers[message["id"]] = message
                self._arrived.notify_all()

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.rstrip(b"\n") + b"\n")
        self.process.stdin.flush()

    def request(self, request_id: int, method: str, params: dict[str, Any]) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode())

    def call(self, request_id: int, tool: str, arguments: dict[str, Any]) -> None:
        self.request(request_id, "tools/call", {"name": tool, "arguments": arguments})

    def wait_for(self, request_id: int, timeout: float = CALL_TIMEOUT_S) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        with self._arrived:
            while request_id not in self.answers and time.monotonic() < deadline:
                self._arrived.wait(0.1)
            return self.answers.get(request_id)

    def initialize(self) -> None:
        self.request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "fuzz", "version": "0"}})
        assert self.wait_for(0), "no answer to initialize"
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def close(self, timeout: float = 20) -> tuple[int, str]:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"agentmem serve did not exit within {timeout} s of its stdin closing")
        return code, self.process.stderr.read().decode("utf-8", "replace")


def tool_text(answer: dict[str, Any]) -> tuple[bool, str]:
    result = answer["result"]
    return bool(result.get("isError")), "".join(c.get("text", "") for c in result["content"])


def call_line(request_id: int, tool: str, arguments: bytes) -> bytes:
    return (b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "%s", "arguments": %s}}'
            % (request_id, tool.encode(), arguments))


GARBAGE_LINES = [
    b"{", b"}", b"[", b"[]", b"[1, 2]", b"null", b"42", b'"text"', b"\x00\x00\x00", b"\xff\xfe\xfd\xfc",
    b'{"jsonrpc": "2.0", "id": 900, "method": "tools/call", "params": {"name": "memory_sea',
    b'{"jsonrpc": "2.0"}', b'{"jsonrpc": "1.0", "id": 901, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": {"an": "object"}, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": 902, "method": "tools/call", "params": "not an object"}',
    b'{"jsonrpc": "2.0", "id": 903, "method": "no/such/method", "params": {}}',
    b'{"jsonrpc": "2.0", "id": 904, "method": "tools/call", "params": {"name": "memory_search", "arguments": [1]}}',
    b'{"jsonrpc": "2.0", "id": 905, "method": "tools/call", "params": {"name": "memory_search"}}',
    call_line(906, "memory_search", b'{"query": "x", "limit": NaN}'),
    call_line(907, "memory_save", b'{"content": "a valid enough sentence here", "importance": Infinity}'),
    call_line(908, "memory_search", b'{"query": "x", "limit": 1e400}'),
    call_line(909, "memory_search", b'{"query": "x", "limit": 99999999999999999999999999999999999999}'),
    call_line(910, "memory_get", b'{"id": "m_\\u0000"}'),
    call_line(911, "memory_get", b'{"id": "\xff\xfe\xc3\x28"}'),
    call_line(912, "memory_search", b'{"query": "duplicate", "query": "keys"}'),
    call_line(913, "memory_search", b'{"query": "' + b"q" * (5 << 20) + b'"}'),
    call_line(914, "memory_save", b"[" * 10000 + b"]" * 10000),
    call_line(915, "memory_save", b'{"content": ' + b"[" * 10000 + b"]" * 10000 + b"}"),
    call_line(916, "memory_save", b'{"content": "lone \\ud800 surrogate in a saved sentence"}'),
    call_line(917, "memory_forget", b'{"ids": ["../../etc/passwd", "m_../x"]}'),
    call_line(918, "memory_stats", b'{"all_projects": 1e-400}'),
    call_line(919, "memory_context", b'{"budget_tokens": -1}'),
    b'{"jsonrpc": "2.0", "id": 920, "method": "tools/call", "params": {"name": "memory_save", "arguments": {"con',
]

# Parseable requests among the garbage: these must be answered, with an error or with a result.
REFUSED = (903, 904, 905, 906, 907, 908, 909, 910, 911, 917, 919)
ANSWERED = (912, 913, 918)


def test_raw_protocol_garbage(project: Path, model_path: Path, tmp_path: Path):
    home = tmp_path / "home"
    server = RawServer(home, project, model_path)
    try:
        server.initialize()
        server.call(1, "memory_save", {"content": "The raw protocol canary deploys with fly.io every Friday"})
        canary = server.wait_for(1)
        assert canary and not tool_text(canary)[0], canary
        canary_id = json.loads(tool_text(canary)[1])["id"]
        for line in GARBAGE_LINES:
            server.send(line)
        server.call(2, "memory_get", {"id": canary_id})
        after = server.wait_for(2, timeout=60)
        assert after is not None, "the server stopped answering after the garbage"
        assert server.process.poll() is None
        error, text = tool_text(after)
        assert not error and json.loads(text)["memory"]["content"].startswith("The raw protocol canary")
        for request_id in (*REFUSED, *ANSWERED):
            answer = server.wait_for(request_id)
            assert answer is not None, f"no answer to request {request_id}"
            if "error" in answer:
                assert request_id in REFUSED and answer["error"].get("message"), answer
                continue
            error, text = tool_text(answer)
            assert error == (request_id in REFUSED), (request_id, text[:300])
            assert text.strip() and not GENERIC_CRASH.match(text) and "bug in agentmem" not in text, text[:300]
        assert server.garbled == [], server.garbled[:3]
    finally:
        code, stderr = server.close()
    assert code == 0, stderr[-2000:]
    assert "terminate called" not in stderr and "Traceback" not in stderr, stderr[-2000:]
    conn = connect(home / "agentmem.db", load_vec=False)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        row = conn.execute("SELECT content FROM memories WHERE id = ?", (canary_id,)).fetchone()
        assert row and row[0].startswith("The raw protocol canary")
    finally:
        conn.close()


@pytest.mark.xfail(strict=False, reason="mcp SDK 2.3 stdio transport drops any line its JSON parser (jiter) refuses, "
                                       "a request with a lone-surrogate escape or nesting past ~200 levels included, "
                                       "without answering: the client waits for its timeout")
def test_unparseable_requests_are_answered(project: Path, model_path: Path, tmp_path: Path):
    server = RawServer(tmp_path / "home", project, model_path)
    try:
        server.initialize()
        server.send(call_line(1, "memory_search", b'{"query": "lone \\udc80 low surrogate"}'))
        server.send(call_line(2, "memory_save", b'{"content": ' + b"[" * 1000 + b"]" * 1000 + b"}"))
        server.call(3, "memory_stats", {})
        assert server.wait_for(3)
        assert server.wait_for(1, timeout=1) is not None and server.wait_for(2, timeout=1) is not None
    finally:
        server.close()


def onnxruntime_loaded(pid: int) -> bool:
    """Whether the process has mapped onnxruntime (without /proc: assume so, and close at once)."""
    try:
        return "onnxruntime" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return not Path("/proc/self/maps").exists()


def test_stdin_closed_while_the_model_loads_exits_cleanly(project: Path, model_path: Path, tmp_path: Path):
    """The client may hang up at any moment, including while the embedding model loads on its thread
    (an interpreter torn down under onnxruntime used to abort with SIGABRT)."""
    server = RawServer(tmp_path / "home", project, model_path)
    server.initialize()
    server.call(1, "memory_stats", {})
    assert server.wait_for(1)
    deadline = time.monotonic() + 20
    while not onnxruntime_loaded(server.process.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.15)  # inside the model's initialisation (measured window: 0.05 s to 0.5 s after the library maps)
    code, stderr = server.close()
    assert code == 0, stderr[-2000:]
    assert "terminate called" not in stderr, stderr[-2000:]
