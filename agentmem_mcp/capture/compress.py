"""Rule-based compression of one observation into a title, a few facts and an importance.

Pure and standard-library only. Input is what `events.HookEvent` holds; `extra` may carry
`cwd` (to shorten paths in titles) and the structured facts the hook kept (exit_code, is_error,
start_line, num_lines, total_lines, operation, interrupted, ...). Never raises on odd input.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KINDS", "CompressedObservation", "compress"]

KINDS = (
    "file_read", "file_edit", "file_write", "command", "search", "web", "task", "mcp", "prompt",
    "error", "session", "other",
)  # fmt: skip
IMPORTANCE = {
    "file_read": 0.2, "search": 0.25, "web": 0.3, "command": 0.4, "file_edit": 0.6,
    "file_write": 0.6, "error": 0.7, "prompt": 0.5, "task": 0.4, "mcp": 0.35, "session": 0.1,
    "other": 0.3,
}  # fmt: skip
FAILED_COMMAND_IMPORTANCE = 0.6
TITLE_MAX = 120
FACT_MAX = 240
PROMPT_INTENT_MAX = 300

_TOOL_KINDS = {  # Claude Code, Cursor, Codex (Bash, apply_patch) and Gemini CLI tool names
    "command": "bash shell run_terminal_cmd terminal run_shell_command",
    "file_read": "read read_file readfile read_many_files",
    "file_edit": "edit multiedit strreplace search_replace edit_file notebookedit applypatch apply_patch replace",
    "file_write": "write create_file write_file delete delete_file",
    "search": "grep glob ls codebase_search grep_search file_search list_dir semanticsearch list_directory "
              "search_file_content",
    "web": "webfetch websearch web_search fetch web_fetch google_web_search",
    "task": "task agent taskoutput todowrite taskcreate taskupdate write_todos",
}
_KIND_OF = {name: kind for kind, names in _TOOL_KINDS.items() for name in names.split()}
PATH_KEYS = ("file_path", "notebook_path", "path", "filePath", "target_file")  # where a tool call names its file

_ERROR_LINE = re.compile(
    r"Traceback \(most recent call last\)|\b\w*(?:Error|Exception)\b:|(?i:\berror(?:\[\w+\])?:)"
    r"|\bFAILED\b|^FAIL\b|command not found|No such file or directory|^fatal:|^panic:"
    r"|^\*\* \(\w+\)|<tool_use_error>|^make(?:\[\d+\])?: \*\*\*|\blevel=error\b|^\S+:\d+:\d+: "
    r"|\b[1-9]\d* errors?\b",
    re.MULTILINE,
)
_CLIENT_ERROR_PREFIX = re.compile(r"^\s*(?:Error: )?(?:Exit code -?\d+\s*\n)?(?:Error: )?")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\[\d{1,2}(?:;\d{1,2})*m")
_FAILURE_COUNT = re.compile(r"\b([1-9]\d*) (failed|failures?|errors?)\b", re.IGNORECASE)
_TEST_SUMMARY = re.compile(
    r"\b\d+ (?:passed|failed)\b|\b\d+ tests?, \d+ failures?\b|\btest result: (?:ok|FAILED)\b"
    r"|^\s*Tests?:\s+\d+|^(?:OK|FAILED) \(|^Ran \d+ tests? in\b"
)
_EXISTING_CODE = re.compile(r"^\s*(?://|#|/\*|<!--|--)?\s*\.\.\.\s*existing code\s*\.\.\.", re.IGNORECASE)
_EXIT_LINE = re.compile(r"\s*(?:Error:\s*)?Exit code:?\s+-?\d+\s*$")
_CD_PREFIX = re.compile(r"^\s*cd\s+(?:\"[^\"]*\"|'[^']*'|[^\s;&|]+)\s*(?:&&|;)\s*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[!?]?")
_DEFINITION = re.compile(
    r"^[ \t]*(?:export\s+)?(?:pub\s+)?(?:async\s+)?"
    r"(?:def|defp|defmodule|defmacro|class|function|func|fn|interface|struct|enum|trait|module)"
    r"\s+([A-Za-z_][\w.!?]*)",
    re.MULTILINE,
)
_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\u2192", re.MULTILINE)
_PROMPT_PATH = re.compile(
    r"(?:[\w.-]+/)+[\w.-]+\.\w{1,6}\b|\b[\w-]+\.(?:py|js|ts|tsx|jsx|rs|go|rb|ex|exs|md|json|toml"
    r"|ya?ml|c|h|cpp|java|kt|swift|sh|sql|css|html)\b"
)
_STOPWORDS = frozenset({
    "and", "are", "def", "end", "for", "from", "import", "not", "the", "this", "that", "return",
    "self", "none", "true", "false", "null", "nil", "class", "let", "const", "var", "function",
    "with", "use", "alias", "when", "else", "elif", "then", "you", "your", "defp", "defmodule",
    "case", "cond", "div", "span", "async", "await", "new", "try", "catch", "except", "raise",
})  # fmt: skip


@dataclass
class CompressedObservation:
    """What an observation says, small enough to index and to show in a list."""

    kind: str
    title: str
    facts: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    importance: float = 0.3
    command: str | None = None
    exit_code: int | None = None
    is_error: bool = False


def compress(
    event: str,
    tool: str | None,
    tool_input: Any,
    tool_output: str | None,
    prompt: str | None = None,
    extra: dict | None = None,
) -> CompressedObservation:
    """Summarise one observation by rules: a kind, a one-line title (<= 120 chars), short facts,
    the files it touched and an importance in 0..1."""
    extra = extra if isinstance(extra, dict) else {}
    event = event if isinstance(event, str) else ""
    tool = tool if isinstance(tool, str) else ""
    if isinstance(tool_input, str) and tool_input.lstrip()[:1] == "{":
        tool_input = _loads(tool_input)
    args = tool_input if isinstance(tool_input, dict) else {}
    output = tool_output if isinstance(tool_output, str) else _as_text(tool_output)
    ctx = _Context(args, output, extra)
    if event == "prompt":
        return _prompt(prompt if isinstance(prompt, str) else output)
    if event in ("session_start", "stop", "session_end", "pre_compact"):
        return _session(event, extra)
    if event == "file_edit" and not tool:
        return _edit(ctx, "Edit")
    kind = tool_kind(tool)
    handler = _HANDLERS.get(kind, _other)
    return handler(ctx, tool)


class _Context:
    def __init__(self, args: dict, output: str, extra: dict) -> None:
        self.args = args
        self.output = output
        self.extra = extra
        cwd = extra.get("cwd")
        self.cwd = cwd.rstrip("/") if isinstance(cwd, str) and cwd.strip("/") else None
        self.files = [p for p in (args.get(k) for k in PATH_KEYS) if isinstance(p, str) and p]
        self.exit_code = _int(extra.get("exit_code"))
        self.is_error = extra.get("is_error") is True

    def arg(self, *keys: str) -> str:
        for key in keys:
            value = self.args.get(key)
            if isinstance(value, str) and value.strip():
                return value
        return ""

    def show(self, path: str) -> str:
        if self.cwd and path.rstrip("/") == self.cwd:
            return "."
        if self.cwd and path.startswith(self.cwd + "/"):
            path = path[len(self.cwd) + 1 :]
        if len(path) > 60:
            path = ".../" + "/".join(path.rsplit("/", 3)[-3:])
        return path

    def target(self) -> str:
        return self.show(self.files[0]) if self.files else "a file"

    def tool_failed(self) -> bool:
        return self.is_error or self.output.lstrip().startswith("<tool_use_error>")

    def failure(self, title: str, fallback: str) -> CompressedObservation:
        message = re.sub(r"</?tool_use_error>", "", self.output)
        lines = _content_lines(message)
        facts = [_clip(f"error: {line}", FACT_MAX) for line in lines[:3]]
        reason = lines[0] if lines else fallback
        return _obs("error", f"{title} failed: {reason}", facts, self.files, is_error=True)


def _command(ctx: _Context, tool: str) -> CompressedObservation:
    command = ctx.arg("command", "cmd")
    name = _command_name(command) or tool or "command"
    output = _ANSI.sub("", ctx.output)
    if ctx.is_error:  # the client's wrapper around a failed call's output ("Error: Exit code 1\n..."), not the tool's
        output = _CLIENT_ERROR_PREFIX.sub("", output, count=1)
    failures = _FAILURE_COUNT.search(output)
    summary = _test_summary(output)
    errors = _error_lines(output)
    exit_code = ctx.exit_code
    benign = bool(ctx.extra.get("return_code_interpretation"))
    if ctx.is_error:
        failed = True
    elif exit_code is not None:
        failed = exit_code != 0 and not benign
    elif benign or summary:
        failed = bool(failures)
    else:
        failed = bool(errors)
    reason = ""
    if failed:
        lines = errors or _telling_lines(output)[:1]
        reason = failures.group(0) if failures else _clip(_error_reason(lines[0]), 50) if lines else ""
    head = f"exit {exit_code}" if failed and exit_code is not None else ""
    head = f"{head}: {reason}" if head and reason else head or reason or ("failed" if failed else "")
    tags = [head] if head else [_clip(summary, 50)] if summary else []
    if ctx.extra.get("interrupted") is True:
        tags.append("interrupted")
    if ctx.extra.get("background_task_id"):
        tags.append("in background")
    suffix = f" ({', '.join(tags)})" if tags else ""
    title = f"Ran `{_clip(name, TITLE_MAX - len(suffix) - 7)}`{suffix}"
    facts = [_clip(f"command: {command}", FACT_MAX)] if command else []
    description = ctx.arg("description")
    if description:
        facts.append(_clip(f"purpose: {description}", FACT_MAX))
    if exit_code is not None:
        facts.append(f"exit code: {exit_code}")
    facts.append("status: failed" if failed else "status: ok")
    if summary:
        facts.append(_clip(f"result: {summary}", FACT_MAX))
    if failed:  # the error lines; else the first lines that are not a banner, a hint or the client's note
        shown = errors or _telling_lines(output)[:3]
        facts.extend(_clip(line, FACT_MAX) for line in shown[:8])
    obs = _obs("command", title, facts, ctx.files, is_error=failed)
    obs.importance = FAILED_COMMAND_IMPORTANCE if failed else IMPORTANCE["command"]
    obs.command = command or None
    obs.exit_code = exit_code
    return obs


def _read(ctx: _Context, tool: str) -> CompressedObservation:
    target = ctx.target()
    if ctx.tool_failed():
        return ctx.failure(f"Read of {target}", "could not read")
    start, count, total = (_int(ctx.extra.get(k)) for k in ("start_line", "num_lines", "total_lines"))
    offset, limit = _int(ctx.args.get("offset")), _int(ctx.args.get("limit"))
    if start is None and (offset or limit):
        start, count = offset or 1, limit
    title = f"Read {target}"
    facts = []
    if start is not None and count and not (start <= 1 and total is not None and count >= total):
        title += f" lines {start}-{start + count - 1}"
        facts.append(f"lines {start}-{start + count - 1}" + (f" of {total}" if total else ""))
    elif total:
        facts.append(f"{total} lines")
    definitions = _definitions(_LINE_NUMBER_PREFIX.sub("", ctx.output[:40000]))
    if definitions:
        facts.append(_clip("defines: " + ", ".join(definitions[:8]), FACT_MAX))
    return _obs("file_read", title, facts, ctx.files)


def _edit(ctx: _Context, tool: str) -> CompressedObservation:
    target = ctx.target()
    if ctx.tool_failed():
        return ctx.failure(f"Edit of {target}", "edit not applied")
    pairs = _edit_pairs(ctx.args)
    added = removed = 0
    old_text, new_text = [], []
    for old, new in pairs:
        a, r = _line_delta(old, new)
        added, removed = added + a, removed + r
        old_text.append(old)
        new_text.append(new)
    old_ids, new_ids = _identifiers("\n".join(old_text)), _identifiers("\n".join(new_text))
    gone = [i for i in old_ids if i not in set(new_ids)]
    came = [i for i in new_ids if i not in set(old_ids)]
    definitions = [d for d in _definitions("\n".join(new_text)) if d not in _definitions("\n".join(old_text))]
    if len(gone) == 1 and len(came) == 1:
        change = f"renamed {gone[0]} → {came[0]}"
    elif definitions:
        change = "added " + ", ".join(definitions[:3])
    else:
        change = f"+{added} -{removed} lines"
    verb = "Edited notebook" if tool.lower() == "notebookedit" else "Edited"
    title = f"{verb} {target}: {change}"
    facts = [f"+{added} -{removed} lines in {len(pairs)} change{'s' if len(pairs) != 1 else ''}"]
    if ctx.args.get("replace_all") is True:
        facts.append("replaced all occurrences")
    if came:
        facts.append(_clip("new identifiers: " + ", ".join(came[:8]), FACT_MAX))
    if gone:
        facts.append(_clip("removed identifiers: " + ", ".join(gone[:8]), FACT_MAX))
    if definitions:
        facts.append(_clip("defines: " + ", ".join(definitions[:8]), FACT_MAX))
    return _obs("file_edit", title, facts, ctx.files)


def _write(ctx: _Context, tool: str) -> CompressedObservation:
    target = ctx.target()
    if tool.lower() in ("delete", "delete_file"):
        return _obs("file_write", f"Deleted {target}", [], ctx.files)
    if ctx.tool_failed():
        return ctx.failure(f"Write of {target}", "file not written")
    content = ctx.arg("content", "contents", "file_text")
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Created" if ctx.extra.get("operation") == "create" else "Wrote"
    facts = [f"{lines} lines"]
    definitions = _definitions(content[:40000])
    if definitions:
        facts.append(_clip("defines: " + ", ".join(definitions[:8]), FACT_MAX))
    return _obs("file_write", f"{verb} {target} ({lines} lines)", facts, ctx.files)


def _search(ctx: _Context, tool: str) -> CompressedObservation:
    low = tool.lower()
    pattern = ctx.arg("pattern", "query", "glob_pattern", "regex")
    where = ctx.show(ctx.files[0]) if ctx.files else ctx.show(ctx.arg("dir_path")) if ctx.arg("dir_path") else ""
    where = "" if where == "." else where
    if low in ("ls", "list_dir", "list_directory"):
        title = f"Listed {where or 'directory'}"
    elif low in ("glob", "file_search"):
        title = f"Listed files matching '{_clip(pattern, 60)}'" + (f" in {where}" if where else "")
    else:
        title = f"Searched for '{_clip(pattern, 60)}'" + (f" in {where}" if where else "")
    if ctx.arg("glob"):
        title += f" ({_clip(ctx.arg('glob'), 30)})"
    if ctx.tool_failed():
        return ctx.failure(title, "search error")
    results = [line for line in ctx.output.splitlines() if line.strip()]
    none = not results or results[0].strip() in ("No matches found", "No files found")
    facts = ["no matches"] if none else [f"{len(results)} result line{'s' if len(results) != 1 else ''}"]
    if not none:
        facts.extend(_clip(line.strip(), 160) for line in results[:5])
    return _obs("search", title, facts, ctx.files)


def _web(ctx: _Context, tool: str) -> CompressedObservation:
    url = ctx.arg("url")
    query = ctx.arg("query", "search_term")
    title = f"Fetched {_clip(url, 100)}" if url else f"Searched the web for '{_clip(query, 80)}'"
    if ctx.tool_failed():
        return ctx.failure(title, "web request failed")
    facts = []
    if url and ctx.arg("prompt"):
        facts.append(_clip(f"looking for: {ctx.arg('prompt')}", FACT_MAX))
    facts.extend(_clip(line, 160) for line in _content_lines(ctx.output)[:3])
    return _obs("web", title, facts, [])


def _task(ctx: _Context, tool: str) -> CompressedObservation:
    low = tool.lower()
    if low == "todowrite":
        raw = ctx.args.get("todos")
        todos = [t for t in raw if isinstance(t, dict)] if isinstance(raw, list) else []
        counts: dict[str, int] = {}
        for todo in todos:
            status = todo.get("status") if isinstance(todo.get("status"), str) else "pending"
            counts[status] = counts.get(status, 0) + 1
        summary = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in counts.items()) or "empty"
        facts = [_clip(f"[{_as_text(t.get('status'))}] {_as_text(t.get('content'))}", 160) for t in todos[:10]]
        return _obs("task", f"Updated todo list ({summary})", facts, [])
    if low == "taskoutput":
        task_id = ctx.arg("task_id", "bash_id")
        code = f" (exit {ctx.exit_code})" if ctx.exit_code is not None else ""
        facts = [f"exit code: {ctx.exit_code}"] if code else []
        facts.extend(_clip(line, 160) for line in _error_lines(ctx.output)[:5])
        return _obs("task", f"Checked background task {task_id}{code}", facts, [])
    agent = ctx.arg("subagent_type") or "sub"
    description = ctx.arg("description") or _first_sentence(ctx.arg("prompt"))
    title = f"Delegated to {agent} agent: {_clip(description, 80)}"
    facts = [_clip(f"asked: {_first_sentence(ctx.arg('prompt'))}", FACT_MAX)] if ctx.arg("prompt") else []
    if ctx.output.strip():
        facts.append(_clip("answer: " + " ".join(ctx.output.split()), FACT_MAX))
    obs = _obs("task", title, facts, [])
    if ctx.tool_failed():
        obs.is_error = True
    return obs


def _mcp(ctx: _Context, tool: str) -> CompressedObservation:
    parts = [p for p in re.split(r"__|:", tool) if p and p.lower() != "mcp"]
    name = "/".join(parts[-2:]) if parts else tool
    title = f"Called MCP tool {_clip(name, 90)}"
    if ctx.tool_failed():
        return ctx.failure(title, "MCP tool error")
    args = [f"{k}={_clip(_as_text(v), 60)}" for k, v in list(ctx.args.items())[:5]]
    facts = [_clip("args: " + ", ".join(args), FACT_MAX)] if args else []
    if ctx.output.strip():
        facts.append(_clip("result: " + " ".join(ctx.output.split()), FACT_MAX))
    return _obs("mcp", title, facts, ctx.files)


def _other(ctx: _Context, tool: str) -> CompressedObservation:
    if tool == "AskUserQuestion":
        questions = ctx.args.get("questions")
        first = questions[0] if isinstance(questions, list) and questions else {}
        question = first.get("question") if isinstance(first, dict) else None
        title = f"Asked the user: {_clip(question if isinstance(question, str) else '', 100)}"
        facts = [_clip(_first_line(ctx.output), FACT_MAX)] if ctx.output.strip() else []
        obs = _obs("other", title, facts, [])
        obs.importance = IMPORTANCE["prompt"]
        return obs
    title = f"Used {_clip(tool or 'an unknown tool', 100)}"
    if ctx.tool_failed():
        return ctx.failure(title, "tool error")
    keys = [f"{k}={_clip(_as_text(v), 60)}" for k, v in list(ctx.args.items())[:5]]
    facts = [_clip("args: " + ", ".join(keys), FACT_MAX)] if keys else []
    if ctx.output.strip():
        facts.append(_clip(_first_line(ctx.output), FACT_MAX))
    return _obs("other", title, facts, ctx.files)


_HANDLERS = {
    "command": _command, "file_read": _read, "file_edit": _edit, "file_write": _write,
    "search": _search, "web": _web, "task": _task, "mcp": _mcp,
}  # fmt: skip


def _prompt(text: str | None) -> CompressedObservation:
    text = text if isinstance(text, str) else ""
    line = _first_line(text)
    title = f"Prompt: {_clip(line, TITLE_MAX - 8)}" if line else "Prompt: (empty)"
    intent = _intent(text)
    files = list(dict.fromkeys(_PROMPT_PATH.findall(text[:20000])))[:20]
    return _obs("prompt", title, [intent] if intent else [], files)


def _session(event: str, extra: dict) -> CompressedObservation:
    def said(key: str) -> str:
        value = extra.get(key)
        return f" ({_clip(value, 40)})" if isinstance(value, str) and value.strip() else ""

    titles = {
        "session_start": "Session started" + said("source"),
        "stop": "Agent finished its turn" + said("status"),
        "session_end": "Session ended" + said("reason"),
        "pre_compact": "Context compaction" + said("trigger"),
    }
    facts = []
    if event == "pre_compact" and said("custom_instructions"):
        facts.append(_clip(f"instructions: {extra['custom_instructions']}", FACT_MAX))
    return _obs("session", titles[event], facts, [])


def _obs(kind: str, title: str, facts: list[str], files: list[str], *, is_error: bool = False) -> CompressedObservation:
    facts = [f for f in dict.fromkeys(facts) if f][:12]
    importance = IMPORTANCE["error"] if kind == "error" else IMPORTANCE.get(kind, 0.3)
    return CompressedObservation(
        kind=kind,
        title=_clip(title, TITLE_MAX),
        facts=facts,
        files=list(dict.fromkeys(files))[:50],
        importance=importance,
        is_error=is_error,
    )


def tool_kind(tool: str) -> str:
    """The kind of a client's tool, by its name (`Edit`, `run_shell_command`, `mcp__github__get_issue`)."""
    if tool.startswith("mcp__") or tool.upper().startswith("MCP:"):
        return "mcp"
    return _KIND_OF.get(tool.lower(), "other")


def _command_name(command: str) -> str:
    name = command.strip()
    while True:
        stripped = _CD_PREFIX.sub("", name, count=1)
        if stripped == name or not stripped:
            break
        name = stripped
    return " ".join(_first_line(name).replace(" 2>&1", "").split())


_INFO_LINE = re.compile(r"^(?:hint|note|info|warning|warn|tip)\b:?|^\[Output truncated|^\(!\)|^Using (?:config|"
                        r"configuration)|^(?:Configuration file|Source|Destination|Incremental build|Generating|"
                        r"Compiling|Running|Checking|Finished|Downloading|Fetching)\b|^[=\-─*#]{3,}", re.IGNORECASE)


def _telling_lines(output: str) -> list[str]:
    """The lines of a failed command's output that may say why: not the exit line, nor an informational banner,
    a hint or the client's own note (those stay when nothing else is there)."""
    lines = [x for x in _content_lines(output) if not _EXIT_LINE.match(x)]
    return [x for x in lines if not _INFO_LINE.match(x)] or lines


def _error_reason(line: str) -> str:
    return re.sub(r"^Error:\s*", "", line).split("\\n")[0]


def _error_lines(output: str) -> list[str]:
    lines = output.splitlines()
    found: list[str] = []
    for index, line in enumerate(lines[:5000]):
        if not _ERROR_LINE.search(line) or _EXIT_LINE.match(line):
            continue
        if line.startswith("Traceback"):
            last = next((x for x in lines[index + 1 :] if x and not x[0].isspace()), "")
            found.extend(x for x in (line.strip(), last.strip()) if x)
        elif line.rstrip().endswith(":"):  # "blocked by hook:", "ignored by one of your .gitignore files:"
            detail = next((x.strip() for x in lines[index + 1:index + 3] if x.strip()), "")
            found.append(f"{line.strip()} {detail}".strip())
        else:
            found.append(line.strip())
    found = list(dict.fromkeys(found))
    # make's "*** [target] Error 1" says which target failed; the lines above it say why
    return ([x for x in found if not x.startswith("make")] + [x for x in found if x.startswith("make")])[:10]


def _test_summary(output: str) -> str:
    for line in reversed(output.splitlines()[-200:]):
        if len(line) < 200 and _TEST_SUMMARY.search(line):
            return line.strip(" =\t-")
    return ""


def _edit_pairs(args: dict) -> list[tuple[str, str]]:
    edits = args.get("edits")
    if isinstance(edits, list):
        pairs = [(_s(e.get("old_string")), _s(e.get("new_string"))) for e in edits if isinstance(e, dict)]
        if pairs:
            return pairs
    if "new_source" in args:
        return [("", _s(args.get("new_source")))]
    if not args.get("old_string") and not args.get("new_string") and isinstance(args.get("code_edit"), str):
        # Cursor's edit_file: the new code between "// ... existing code ..." markers; what it replaced is unknown
        return [("", "\n".join(line for line in args["code_edit"].splitlines() if not _EXISTING_CODE.search(line)))]
    return [(_s(args.get("old_string")), _s(args.get("new_string")))]


def _line_delta(old: str, new: str) -> tuple[int, int]:
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if len(old_lines) > 2000 or len(new_lines) > 2000:
        # Order-blind but linear: exact diffs of huge edits are not worth quadratic time here.
        old_count, new_count = Counter(old_lines), Counter(new_lines)
        return sum((new_count - old_count).values()), sum((old_count - new_count).values())
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed


def _identifiers(text: str) -> list[str]:
    words = _IDENT.findall(text[:20000])
    return [w for w in dict.fromkeys(words) if len(w) >= 3 and w.lower() not in _STOPWORDS]


def _definitions(text: str) -> list[str]:
    return list(dict.fromkeys(_DEFINITION.findall(text)))


def _intent(text: str) -> str:
    flat = " ".join(text.split())
    sentences = re.split(r"(?<=[.!?])\s+", flat)
    intent = ""
    for sentence in sentences:
        candidate = f"{intent} {sentence}".strip()
        if len(candidate) > PROMPT_INTENT_MAX:
            break
        intent = candidate
    return intent or _clip(flat, PROMPT_INTENT_MAX)


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    return re.split(r"(?<=[.!?:])\s", flat, maxsplit=1)[0] if flat else ""


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _content_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if len(line.strip()) > 3]


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split()) if isinstance(text, str) else ""
    limit = max(limit, 1)
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**63:
        return value
    return None


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (ValueError, TypeError, RecursionError):
        return f"<{type(value).__name__}>"


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text
