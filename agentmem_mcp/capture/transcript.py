"""What a session's own log says: the user's typed prompts and the agent's replies, turn by turn.

Claude Code sends `transcript_path` with every hook: a JSONL file of the conversation. Its assistant
messages usually state what was done and what is left, a summary already written by the agent's model.
`read_transcript` reads it as data: redacted, size-bounded, client noise dropped (interrupt markers, slash-
command wrappers, system reminders, task notifications, compaction preambles). Sub-agent records
(`isSidechain`) are skipped. A missing, oversized or unreadable file gives no turns: the summariser then
works from the captured observations alone (Cursor, or a log that is gone). A Cursor conversation
imported by `agentmem import-history cursor` is read from Cursor's own files instead.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .compress import PATH_KEYS, tool_kind
from .redact import redact

MAX_TRANSCRIPT_BYTES = 32 * 1024 * 1024
MAX_TEXT_CHARS = 4000
NOISE_PREFIXES = ("<command-", "<local-command", "<task-notification>", "<system-reminder>", "Caveat:",
                  "[Request interrupted", "This session is being continued from a previous conversation",
                  "<user-prompt-submit-hook>", "<bash-input>", "<bash-stdout>", "<bash-stderr>")
_SLASH_COMMAND = re.compile(r"<command-name>\s*(/[\w:.-]+)\s*</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
CLIENT_COMMANDS = frozenset("/clear /compact /mcp /model /help /config /cost /exit /resume /status /login /logout "
                            "/doctor /permissions /hooks /agents /memory /ide /vim /theme /context /usage".split())
AGENT_REPORT_TOOLS = frozenset({"Task", "Agent"})
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
INTERRUPTED = "[Request interrupted"
_API_ERROR = re.compile(r"^(?:API Error\b|Request timed out\b|Request was aborted\b|Error: (?:API|overloaded))",
                        re.IGNORECASE)
_REJECTED = re.compile(r"doesn't want to proceed with this tool use|tool use was rejected", re.IGNORECASE)


@dataclass
class Turn:
    """One typed prompt and what the agent wrote until the next one."""
    prompt: str
    replies: list[str] = field(default_factory=list)
    slash_command: str | None = None
    timestamp: str | None = None
    answers: list[tuple[str, str]] = field(default_factory=list)  # (the agent's question, the user's answer)
    picked: list[str] = field(default_factory=list)  # the answers that were one of the options the agent offered
    ended: str = ""  # how the turn ended when not with a reply: "interrupted", "api-error" or "rejected"
    error: str = ""  # the client's error line when it ended on an API error ("API Error: 400 ...")
    branch: str | None = None  # the git branch the client recorded for the turn (Claude Code's `gitBranch`)
    delegated: list[str] = field(default_factory=list)  # the replies that are sub-agents' reports, not the agent's
    tool_results: int = 0  # how many tool calls of the turn came back
    edited: list[str] = field(default_factory=list)  # the files the agent's own edits of the turn changed

    @property
    def final(self) -> str:
        """The agent's last message of the turn: where it says what it did."""
        return self.replies[-1] if self.replies else ""


_PATH_MENTION = re.compile(r"(?<![\w/.:-])((?:[\w.@-]+/)*[\w@-][\w.@-]*\.[A-Za-z0-9]{1,8})\b")


def mentioned_paths(text: str) -> list[str]:
    """Relative file paths and file names a text names (`lib/app/session_live.ex`, `CLAUDE.md`), in order,
    once each: candidates, to be looked up in the working tree."""
    return list(dict.fromkeys(m.group(1).removeprefix("./") for m in _PATH_MENTION.finditer(text)
                              if not m.group(1).startswith(("http", "www."))))


def is_noise(text: str) -> bool:
    """Client noise that is not what the user typed."""
    return not text.strip() or text.lstrip().startswith(NOISE_PREFIXES)


def clean_prompt(text: str) -> str:
    """A typed prompt without system reminders the client appended."""
    return _REMINDER.sub("", text).strip()


def relative_to(text: str, root: str | None) -> str:
    """Paths under `root` written relative to it (`/home/u/proj/lib/a.ex` -> `lib/a.ex`)."""
    if not root or root == "/":
        return text
    return text.replace(root.rstrip("/") + "/", "")


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def _clip(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def readable_transcript(path: str | None) -> Path | None:
    """The transcript file if it is a regular .jsonl file of a sane size, else None."""
    if not path or not isinstance(path, str):
        return None
    candidate = Path(path)
    try:
        if candidate.suffix != ".jsonl" or not candidate.is_file():
            return None
        if os.path.getsize(candidate) > MAX_TRANSCRIPT_BYTES:
            return None
    except OSError:
        return None
    return candidate


def json_objects(lines: list[str]) -> list[dict]:
    """The JSON objects of a JSON-lines log, in order: broken lines and other values are skipped."""
    found = []
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            found.append(record)
    return found


def parse_turns(lines: list[str]) -> list[Turn]:
    """Turns from the transcript's lines (pure): each typed prompt with the agent's text replies after it."""
    turns: list[Turn] = []
    reports: set[str] = set()  # ids of sub-agent calls: their results are reports of work done
    cwd = ""
    for record in json_objects(lines):
        if record.get("isSidechain"):
            continue
        if not cwd and isinstance(record.get("cwd"), str) and len(record["cwd"]) > 1:
            cwd = record["cwd"].rstrip("/")
        message = record.get("message") if isinstance(record.get("message"), dict) else {}
        content = message.get("content")
        kind = record.get("type")
        if turns and isinstance(record.get("gitBranch"), str) and record["gitBranch"].strip() \
                and record["gitBranch"] != "HEAD":
            turns[-1].branch = record["gitBranch"].strip()
        if kind == "user" and not record.get("isMeta") and not record.get("isCompactSummary"):
            if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                                 for b in content):
                if turns:
                    turns[-1].answers.extend(_answers(record.get("toolUseResult"), cwd))
                    turns[-1].picked.extend(_picked(record.get("toolUseResult"), cwd))
                    delegated = _agent_reports(content, reports, cwd)
                    turns[-1].replies.extend(delegated)
                    turns[-1].delegated.extend(delegated)
                    turns[-1].tool_results += sum(1 for b in content if isinstance(b, dict)
                                                  and b.get("type") == "tool_result")
                    turns[-1].ended = _tool_result_ending(content) or turns[-1].ended
                continue
            text = _text_of(content)
            if text.lstrip().startswith(INTERRUPTED):
                if turns:
                    turns[-1].ended = "interrupted"
                continue
            stamp = record.get("timestamp") if isinstance(record.get("timestamp"), str) else None
            command = _SLASH_COMMAND.search(text)
            if command:
                if command.group(1) not in CLIENT_COMMANDS:
                    args = _COMMAND_ARGS.search(text)
                    typed = f"{command.group(1)} {args.group(1).strip() if args else ''}".strip()
                    turns.append(Turn(prompt=_clip(redact(relative_to(typed, cwd)), 2000),
                                      slash_command=command.group(1), timestamp=stamp))
                continue
            if is_noise(text):
                continue
            turns.append(Turn(prompt=_clip(redact(relative_to(clean_prompt(text), cwd)), 2000), timestamp=stamp))
        elif kind == "assistant" and turns:
            if isinstance(content, list):
                reports.update(b.get("id") for b in content if isinstance(b, dict) and b.get("type") == "tool_use"
                               and b.get("name") in AGENT_REPORT_TOOLS)
                turns[-1].edited.extend(_edited(content, cwd))
            text = _text_of(content).strip()
            if record.get("isApiErrorMessage") is True or _API_ERROR.match(text):
                turns[-1].ended, turns[-1].error = "api-error", _clip(redact(text), 200)
            elif text and not is_noise(text):
                turns[-1].replies.append(_clip(redact(relative_to(_REMINDER.sub("", text).strip(), cwd))))
                turns[-1].ended = turns[-1].error = ""
    return [t for t in turns if t.prompt]


def _edited(content: list, cwd: str) -> list[str]:
    """The files an assistant record's edit and write calls name."""
    out = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("input"), dict) \
                and tool_kind(str(block.get("name"))) in ("file_edit", "file_write"):
            path = next((p for p in (block["input"].get(k) for k in PATH_KEYS) if isinstance(p, str) and p.strip()), "")
            if path:
                out.append(relative_to(path.strip(), cwd))
    return out


def _tool_result_ending(content: list) -> str:
    """"interrupted" or "rejected" when a tool result says the user stopped the call, else ""."""
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            text = _text_of(block.get("content")) if not isinstance(block.get("content"), str) else block["content"]
            if text.lstrip().startswith(INTERRUPTED):
                return "interrupted"
            if _REJECTED.search(text[:300]):
                return "rejected"
    return ""


def _agent_reports(content: list, reports: set[str], cwd: str) -> list[str]:
    """What sub-agents reported back (their tool results), as replies of the turn."""
    out = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") in reports:
            text = _REMINDER.sub("", _text_of(block.get("content"))).strip()
            if text and not block.get("is_error"):
                out.append(_clip(redact(relative_to(text, cwd)), 1500))
    return out


def _answers(result: object, cwd: str) -> list[tuple[str, str]]:
    """The user's answers to the agent's questions (Claude Code's AskUserQuestion tool result)."""
    if not isinstance(result, dict) or not isinstance(result.get("answers"), dict):
        return []
    return [(_clip(redact(relative_to(q, cwd)), 300), _clip(redact(relative_to(a, cwd)), 300))
            for q, a in result["answers"].items() if isinstance(q, str) and isinstance(a, str) and a.strip()]


def _picked(result: object, cwd: str) -> list[str]:
    """The answers (as `_answers` gives them) that are the label of an option the question offered: a pick among
    the agent's choices, not the user's own words."""
    if not isinstance(result, dict) or not isinstance(result.get("answers"), dict) \
            or not isinstance(result.get("questions"), list):
        return []
    labels = {(q.get("question"), o.get("label")) for q in result["questions"] if isinstance(q, dict)
              for o in (q.get("options") or []) if isinstance(o, dict)}
    return [_clip(redact(relative_to(a, cwd)), 300) for q, a in result["answers"].items()
            if isinstance(a, str) and (q, a) in labels]


def read_transcript(path: str | None) -> list[Turn]:
    """The turns of a Claude Code transcript file; [] when there is no readable transcript."""
    found = readable_transcript(path)
    if found is None:
        return []
    try:
        with open(found, encoding="utf-8", errors="replace") as handle:
            text = handle.read(MAX_TRANSCRIPT_BYTES)
    except OSError:
        return []
    return parse_turns(text.split("\n"))
