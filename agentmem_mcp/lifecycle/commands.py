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
# general-purpose utilities: running one says nothing about how this project is built, tested or run
UTILITIES = frozenset(
    "jq yq unzip zip tar gzip gunzip ping afplay say launchctl brew apt apt-get dnf yum pacman pbcopy pbpaste "
    "xdg-open sqlite3 nc netstat ss dig nslookup host whoami id uname hostname uptime top htop free mount "
    "ln chown rmdir basename dirname realpath readlink md5sum sha256sum shasum base64 xxd od hexdump "
    "tree bat fd fzf code cursor claude pip-audit".split())
# a command whose output goes through one of these shows the filter's exit status, not its own
FILTERS = frozenset("grep egrep fgrep rg wc sort uniq cut awk sed jq column tr".split())
# `| head`, `| tail`, `| tee`: the output shown is the command's own, cut; its errors show, its status does not
_HELP = frozenset({"--help", "-h", "help", "--version", "-V", "version", "--usage"})
# flags that pick some tests or checks out of the whole: a run with them is not the project's command
NARROWING_FLAGS = frozenset({"-k", "-run", "--run", "-t", "--testNamePattern", "--testPathPattern", "--grep", "-g",
                             "--filter", "--only", "--enable-only", "--tests", "--test", "--spec", "--focus", "-m",
                             "--match", "--select", "--deselect", "--lf", "--last-failed", "--since", "--changed",
                             "--onlyChanged", "-o", "--include", "--file", "--files", "--package", "-p"})
_WHOLE_TREE = frozenset({".", "./...", "...", "./", "all"})
_INVOCATION = re.compile(
    r"command not found|unknown (?:flag|option|command|shorthand flag)|unrecognized (?:arguments?|option)|"
    r"invalid (?:option|choice|argument)|no such (?:option|command)|bad interpreter|is not a main package|"
    r"^usage:|named files must be|cannot find module|no rule to make target|not a git repository|"
    r"is not recognized as|permission denied|missing script|Could not find (?:a )?(?:task|command)|"
    r"Unknown (?:script|command)|The task .{1,40} could not be found|No such file or directory",
    re.IGNORECASE | re.MULTILINE)
_RUNNING = re.compile(r"Command running in background|running in the background|Server (?:running|started|listening)|"
                      r"[Ll]istening on|started (?:server )?on (?:port|http)|Serving (?:HTTP )?on", re.IGNORECASE)
_TIMED_OUT = re.compile(r"Command timed out after", re.IGNORECASE)
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
    inner = _wrapped(tokens)
    if inner is not None:  # `nix develop -c lint`, `uv run pytest`: the wrapper, then what it runs
        found = _segment_key(" ".join(shlex.quote(t) for t in tokens[inner:]))
        if found:
            return f"{' '.join(t for t in tokens[:inner] if not t.startswith('-'))} {found[0]}"[:80], tokens
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


# wrappers that run another command in the project's environment: (program, subcommand) -> flags before it
WRAPPERS = {("nix", "develop"): ("-c", "--command"), ("nix", "shell"): ("-c", "--command"), ("uv", "run"): (),
            ("poetry", "run"): (), ("pipenv", "run"): (), ("pdm", "run"): (), ("rye", "run"): (), ("hatch", "run"): (),
            ("conda", "run"): (), ("bundle", "exec"): (), ("pnpm", "exec"): (), ("yarn", "dlx"): (),
            ("npx", None): (), ("bunx", None): (), ("pnpx", None): (), ("direnv", "exec"): ()}


def _wrapped(tokens: list[str]) -> int | None:
    """Where the wrapped command starts in `tokens` when the program is a wrapper (`nix develop -c lint`: 3)."""
    program = tokens[0].rsplit("/", 1)[-1]
    sub = tokens[1] if len(tokens) > 1 else None
    flags = WRAPPERS.get((program, sub))
    start = 2
    if flags is None:
        flags = WRAPPERS.get((program, None))
        start = 1
    if flags is None:
        return None
    index = start
    while index < len(tokens) and tokens[index].startswith("-"):
        index += 1
        if tokens[index - 1] in flags:
            break
    return index if index < len(tokens) else None


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
        if interpreter and index == 2 and kept[1:2] in (["run"], ["x"], ["exec"]) and not token.startswith("-"):
            kept.append(token)  # `bun run server.ts`: the script it runs
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
    if interpreter and len(kept) > 1 and all(k.startswith("-") for k in kept[1:]) \
            and any(re.search(r"\.\w{1,5}$", t) for t in tokens[len(kept):]):
        kept.append("<file>")  # `node --check <file>`: the file it checks is part of how it runs
    return " ".join(kept[:8])


def is_help(tokens: list[str]) -> bool:
    """A run that only asks the program for its help or version (`./templar build --help`): not how it is used."""
    return any(t in _HELP for t in tokens[1:4]) or any(t in ("--help", "--version") for t in tokens)


def is_narrowed(tokens: list[str]) -> bool:
    """A run of part of the project: particular test files, packages or names, or only some checks
    (`go test ./internal/build -run X`, `golangci-lint run --enable-only dupl`, `pytest tests/test_a.py -k b`)."""
    interpreter = bool(tokens) and tokens[0].rsplit("/", 1)[-1] in INTERPRETERS
    for index, token in enumerate(tokens[1:], start=1):
        flag = token.split("=", 1)[0]
        if flag in NARROWING_FLAGS and not (interpreter and flag == "-m"):
            return True
        if token.startswith("-") or token in _WHOLE_TREE:
            continue
        if interpreter and index <= 2:
            continue  # the script or the module (after -m)
        if "::" in token or re.search(r"\.\w{1,5}(?::\d+)?$", token) and not token.startswith(("/", "~")) \
                and tokens[index - 1] not in FILE_FLAGS:
            return True
        if token.startswith(("./", "../")) or "/" in token.strip("/") and not token.endswith("/..."):
            return True
    return False


def masked(command: str | None) -> bool:
    """Whether a command's last step is a filter (`mix dialyzer 2>&1 | grep lib/`): its status is the filter's."""
    if not command or "|" not in command.replace("||", ""):
        return False
    first_line = _QUOTED.sub("''", command.strip().splitlines()[0])
    last = [p for p in re.split(r"\s*\|(?!\|)\s*", first_line) if p.strip()]
    try:
        program = shlex.split(last[-1])[0].rsplit("/", 1)[-1] if last else ""
    except (ValueError, IndexError):
        return False
    return program in FILTERS


def invocation_error(text: str) -> bool:
    """Whether a failed command's output says the command itself was wrong (not found, unknown flag, bad usage)
    rather than that the project failed it."""
    return bool(_INVOCATION.search(text[:1500]))


def kept_running(text: str) -> bool:
    """A server or watcher that was still running when the client stopped waiting (or ran in the background)."""
    return bool(_RUNNING.search(text[:3000]) or _TIMED_OUT.search(text[:300]))


def is_test_command(key: str) -> bool:
    return bool(_TEST.search(key))


def command_label(key: str) -> str:
    return next((label for _, pattern, label in _CATEGORIES if pattern.search(key)), "Run")


_ERROR_AT = re.compile(r"([\w./@-]*[\w@-]\.[A-Za-z0-9]{1,8}):\d+")


def names_file(error: str, path: str) -> bool:
    """Whether an error message points at the file `path` (`internal/a_test.go:207:9: ...`)."""
    for found in _ERROR_AT.finditer(error):
        named = found.group(1).removeprefix("./")
        if path == named or path.endswith("/" + named) or named.endswith("/" + path):
            return True
    return False
