"""Shell commands as knowledge: what a command is (its identity, for grouping), the form it was typed in, and
what it is for (tests, checks, formatting, builds, starting the app, dependencies). Pure.

`normalize_command("cd x && mix test foo_test.exs 2>&1 | tail")` is `mix test`; `git add -A && git commit -m
...` is `git commit` (preparatory steps give way to what follows them); `working_form` keeps a command as
someone would type it again (`mix credo --strict`), without file arguments or messages.
"""

from __future__ import annotations

import re
import shlex

NOT_KNOWLEDGE = frozenset({"git", "gh", "curl", "wget", "kill", "pkill", "lsof", "ssh", "scp", "rm", "open",
                           "ps", "killall", "osascript", "docker-compose"})
TRIVIAL_PROGRAMS = frozenset(
    "ls cat head tail echo cd pwd grep rg find sed awk which wc sort uniq cut tr mkdir rm cp mv touch chmod "
    "sleep true false printf env export source less more diff file stat du df ps kill date clear history "
    "set unset type command time timeout xargs tee open code vim nano".split())
INTERPRETERS = frozenset({"python", "python3", "node", "ruby", "bash", "sh", "perl", "php", "deno", "bun"})
PREPARATORY = frozenset({"git add", "git status", "git diff", "git log", "git fetch", "git stash", "mkdir"})
_SUBCOMMAND = re.compile(r"^[a-z][a-z0-9:_.-]*$")
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_SEGMENTS = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")
_TEST = re.compile(r"\b(?:test|tests|pytest|jest|vitest|mocha|rspec|phpunit|ctest|tox|nox)\b")
_CATEGORIES = (
    ("test", _TEST, "Run the tests"),
    ("lint", re.compile(r"\b(?:credo|lint|ruff|eslint|flake8|clippy|mypy|pyright|dialyzer|rubocop|check|vet)\b"),
     "Check the code"),
    ("format", re.compile(r"\b(?:format|fmt|prettier|black|isort)\b"), "Format the code"),
    ("build", re.compile(r"\b(?:build|compile|tsc|webpack|make)\b"), "Build"),
    ("run", re.compile(r"\b(?:phx\.server|dev|start|serve|runserver|up|server)\b"), "Start the app"),
    ("deps", re.compile(r"\b(?:install|deps\.get|add|ci)\b|^(?:uv|pdm|poetry|pipenv|rye|bundle) sync\b"),
     "Install dependencies"),
)


def _segment_key(segment: str) -> tuple[str, list[str]] | None:
    """(identity, tokens) of one shell segment, None for an empty or trivial one."""
    try:
        tokens = shlex.split(segment)
    except ValueError:
        tokens = segment.split()
    tokens = [t for t in tokens if t and not _ENV_ASSIGN.match(t) and "<" not in t and ">" not in t]
    while tokens and tokens[0] in ("sudo", "time", "env", "nohup", "exec"):
        tokens = tokens[1:]
    if not tokens or tokens[0] in ("cd", "export", "source", "."):
        return None
    program = tokens[0].rsplit("/", 1)[-1]
    if program in TRIVIAL_PROGRAMS or not _SUBCOMMAND.match(program.lower()):
        return None
    key = [program]
    rest = tokens[1:]
    if program in INTERPRETERS and rest:
        if rest[0] == "-m" and len(rest) > 1:
            key += rest[:2]
            rest = rest[2:]
        elif not rest[0].startswith("-"):
            key.append(rest[0])
            rest = rest[1:]
    if rest and _SUBCOMMAND.match(rest[0]):
        key.append(rest[0])
        if rest[0] in ("run", "exec", "x") and len(rest) > 1 and _SUBCOMMAND.match(rest[1]):
            key.append(rest[1])
    return " ".join(key)[:80], tokens


def command_segments(command: str | None) -> list[tuple[str, list[str]]]:
    """The non-trivial segments of a shell command's first line, as (identity, tokens), in order."""
    if not command or not command.strip():
        return []
    first_line = _QUOTED.sub("''", command.strip().splitlines()[0])  # a quoted `|` or `&&` splits nothing
    return [found for segment in _SEGMENTS.split(first_line) if (found := _segment_key(segment))]


def normalize_command(command: str | None) -> str | None:
    """The identity of a shell command, for grouping: `cd x && mix test foo_test.exs 2>&1 | tail` -> `mix
    test`; `git add -A && git commit -m ... && git push` -> `git commit` (preparatory steps such as `git add`
    give way to what follows them). None for empty commands and for trivial shell utilities (ls, cat, ...)."""
    segments = command_segments(command)
    if not segments:
        return None
    main = next((key for key, _ in segments if key not in PREPARATORY), segments[0][0])
    return main


FILE_FLAGS = frozenset({"-r", "--requirement", "-c", "--constraint", "-f", "--file", "--config", "--config-file",
                        "--project"})  # a file after these is the flag's value, part of the form


def working_form(tokens: list[str]) -> str:
    """A command as someone would type it again: program, subcommands, flags and folders, without file
    arguments, messages or long values. An interpreter keeps its module or script (`python -m pytest`,
    `python train.py`), and a flag that takes a file keeps it (`pip install -r requirements.txt`)."""
    kept: list[str] = []
    interpreter = bool(tokens) and tokens[0].rsplit("/", 1)[-1] in INTERPRETERS
    for index, token in enumerate(tokens):
        if interpreter and index == 1 + (kept[1:2] == ["-m"]) and not token.startswith(("-", "/", "~")):
            kept.append(token)  # the script, or the module after -m
            continue
        if interpreter and token in ("-c", "-e", "--eval"):
            break  # inline code follows
        if not interpreter and (token in ("-m", "--message", "-F") or token.startswith("--message=")):
            break  # a commit message follows
        if kept and token.startswith(("'", '"')):
            break  # a quoted message or script: the rest is its text
        if kept and (token.startswith(("/", "~")) or re.search(r"\.\w{1,5}(:\d+)?$", token)):
            if kept[-1] in FILE_FLAGS and not token.startswith(("/", "~")) and len(token) <= 60:
                kept.append(token)
            continue
        if "'" in token or '"' in token:
            break  # an unbalanced quote: the rest is the quoted text
        if len(token) > 40 or any(c in token for c in "$`*{}\n") or token.endswith("="):
            continue  # a value that was expanded or left empty is not part of the command's form
        kept.append(token)
    while kept and kept[-1] in ("--", "-"):
        kept.pop()
    return " ".join(kept[:8])


def is_test_command(key: str) -> bool:
    return bool(_TEST.search(key))


def command_label(key: str) -> str:
    return next((label for _, pattern, label in _CATEGORIES if pattern.search(key)), "Run")
