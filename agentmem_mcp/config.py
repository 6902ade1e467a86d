"""Settings in one place: defaults, environment variables and an optional TOML file.

Precedence: environment variable > TOML file (``$AGENTMEM_HOME/config.toml`` or ``AGENTMEM_CONFIG``) >
default. Every setting is listed once in ``SETTINGS``; the README's configuration table is that list.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from .files import ConfigError

TYPE_CHECKING = False  # importing typing costs each hook process ~5 ms
if TYPE_CHECKING:
    from typing import Any


def default_home() -> Path:
    """The platform's per-user data directory for agentmem."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "agentmem"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming")) / "agentmem"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "agentmem"


class Setting:
    """One setting: its attribute name, type (as written), default, environment variable and meaning.
    A default that is a function is called when the setting is built (e.g. the platform's data dir)."""

    __slots__ = ("name", "type", "default", "env", "doc")

    def __init__(self, name: str, type: str, default: Any, env: str, doc: str) -> None:
        self.name, self.type, self.default, self.env, self.doc = name, type, default, env, doc


FUSIONS = ("score", "rrf")

# A plain table rather than a dataclass: hooks import this module, and `dataclasses` costs them ~8 ms.
SETTINGS: tuple[Setting, ...] = (
    Setting("home", "Path", default_home, "AGENTMEM_HOME",
            "Directory holding the database, index and logs (created 0700). A relative path is taken from your "
            "home directory (`~`), as for the two below, never from the current directory."),
    Setting("db_path", "Path | None", None, "AGENTMEM_DB",
            "SQLite database file. Default: `<home>/agentmem.db`."),
    Setting("index_dir", "Path | None", None, "AGENTMEM_INDEX_DIR",
            "Tantivy BM25 index directory. Default: `<home>/fulltext`."),
    Setting("embed_model", "str", "sentence-transformers/all-MiniLM-L6-v2", "AGENTMEM_EMBED_MODEL",
            "fastembed model name used for vectors."),
    Setting("embed_model_path", "Path | None", None, "AGENTMEM_EMBED_MODEL_PATH",
            "Local folder with the model files (no download). Unset: fastembed downloads and caches it."),
    Setting("embeddings", "bool", True, "AGENTMEM_EMBEDDINGS",
            "Set to 0 to run on BM25 + graph only (no model is loaded)."),
    Setting("shared_embedder", "bool", True, "AGENTMEM_SHARED_EMBEDDER",
            "`agentmem serve` sessions share one embedding model: a process of this user, started on demand and "
            "reached over a Unix socket in the home (0600, never a network port). 0: each server loads its own."),
    Setting("embed_idle_seconds", "int", 600, "AGENTMEM_EMBED_IDLE_SECONDS",
            "The shared embedding process exits after this many seconds without a request (and 5 s after its last "
            "server has gone)."),
    Setting("shared_server", "bool", True, "AGENTMEM_SHARED_SERVER",
            "`agentmem serve` relays its session to the shared process over `<home>/sessions.sock` (0600), which "
            "serves every session of this user with one MCP SDK and one model; 0: each `serve` is a whole server "
            "(as it is when the shared process cannot be reached)."),
    Setting("hook_handoff", "bool", True, "AGENTMEM_HOOK_HANDOFF",
            "Hooks hand their event to the shared embedding process over `<home>/hooks.sock` (0600) when it runs, "
            "which records it; 0: every hook process records its event itself (as it does when none runs)."),
    Setting("hook_starts_process", "bool", True, "AGENTMEM_HOOK_STARTS_PROCESS",
            "A hook that finds no shared process running starts one in the background (once a minute at most), so "
            "that the next hooks hand their events to it; it loads the model only when a server asks, and exits "
            "after `embed_idle_seconds` without a hook or a request. Such a hook, for an event that gets no context "
            "(a tool call, a stop), answers at once and has a child it forks record the event. 0: hooks find one "
            "only while a server runs, and every hook records its event before it answers."),
    Setting("fusion", "str", "score", "AGENTMEM_FUSION",
            "How the retrievers are combined: `score` (each retriever's score divided by its best, weighted; "
            "every candidate gets its exact cosine) or `rrf` (weighted reciprocal rank fusion)."),
    Setting("weight_bm25", "float", 0.4, "AGENTMEM_WEIGHT_BM25",
            "Weight of BM25 in the fusion. With `fusion = score`, a search lowers it when BM25's best match holds "
            "little of the query (against the sum of its words' IDF) and the nearest meaning stands out of the next."),
    Setting("weight_vector", "float", 0.6, "AGENTMEM_WEIGHT_VECTOR",
            "Weight of the vector similarity in the fusion."),
    Setting("weight_graph", "float", 0.3, "AGENTMEM_WEIGHT_GRAPH",
            "Weight of the entity graph in the fusion."),
    Setting("soft_match_weight", "float", 0.5, "AGENTMEM_SOFT_MATCH_WEIGHT",
            "How much a word similar in meaning to a query word counts, as a share of a keyword match "
            "(`fusion = score`; 0 turns it off)."),
    Setting("expansion_weight", "float", 1.0, "AGENTMEM_EXPANSION_WEIGHT",
            "How much a query word's nearest words in the memories' vocabulary count in the keyword search, per "
            "unit of their similarity, when the query's own keywords match poorly (`fusion = score`; 0 turns it "
            "off)."),
    Setting("rrf_k", "int", 60, "AGENTMEM_RRF_K",
            "The k constant of reciprocal rank fusion (`fusion = rrf`)."),
    Setting("vector_copy_chunks", "int", 25000, "AGENTMEM_VECTOR_COPY_CHUNKS",
            "A store of at most this many vector chunks (about two per memory) keeps a copy of their vectors in "
            "each process that searches it (~1.6 KB a chunk), kept in step with every process's writes, so that "
            "search re-scores its candidates without reading them from SQLite; the answers are the same. 0: none."),
    Setting("search_budget_tokens", "int", 2000, "AGENTMEM_SEARCH_BUDGET",
            "Default token budget of one `memory_search` answer."),
    Setting("search_min_score", "float", 0.01, "AGENTMEM_SEARCH_MIN_SCORE",
            "Search leaves out hits scoring under this (0..1, 1 = the best possible match): noise, not memories."),
    Setting("context_budget_tokens", "int", 1500, "AGENTMEM_CONTEXT_BUDGET",
            "Hard token budget of the session-start context."),
    Setting("tool_answer_items", "int", 10, "AGENTMEM_TOOL_ANSWER_ITEMS",
            "The most entries of a list an MCP tool's answer carries (the ids `memory_forget` previews, the versions "
            "of `memory_get`): the count stays whole and the answer says how to see the rest."),
    Setting("tool_answer_chars", "int", 8000, "AGENTMEM_TOOL_ANSWER_CHARS",
            "The size cap of an MCP tool's answer, in characters of JSON (search and the briefing have their token "
            "budgets instead): past it the longest texts are cut, and the answer says so."),
    Setting("prompt_budget_tokens", "int", 400, "AGENTMEM_PROMPT_BUDGET",
            "Token budget of memories injected for a user prompt."),
    Setting("prompt_min_score", "float", 0.35, "AGENTMEM_PROMPT_MIN_SCORE",
            "Relevance threshold (0..1, share of query terms matched) for prompt-time injection."),
    Setting("supersede_jaccard", "float", 0.7, "AGENTMEM_SUPERSEDE_JACCARD",
            "A rewording (same words, other order) supersedes an old memory only above this word-set Jaccard "
            "(and supersede_cosine); a changed value is decided by the same-subject rule."),
    Setting("supersede_cosine", "float", 0.92, "AGENTMEM_SUPERSEDE_COSINE",
            "A rewording supersedes an old memory only above this vector cosine (and supersede_jaccard)."),
    Setting("busy_timeout_ms", "int", 10000, "AGENTMEM_BUSY_TIMEOUT_MS",
            "How long a writer waits for SQLite's lock."),
    Setting("sweep_lock_ms", "int", 500, "AGENTMEM_SWEEP_LOCK_MS",
            "Longest a forgetting sweep holds SQLite's write lock in one transaction; it writes a large store's "
            "decay in many such transactions, letting other writers in between."),
    Setting("max_output_chars", "int", 12000, "AGENTMEM_MAX_OUTPUT_CHARS",
            "Captured tool outputs longer than this keep head + tail."),
    Setting("llm", "str", "off", "AGENTMEM_LLM",
            "`off` (default) or `anthropic` (needs `ANTHROPIC_API_KEY`)."),
    Setting("llm_model", "str", "claude-haiku-4-5", "AGENTMEM_LLM_MODEL",
            "Anthropic model used when the LLM is on."),
    Setting("llm_daily_tokens", "int", 200000, "AGENTMEM_LLM_DAILY_TOKENS",
            "Daily LLM token budget; past it the rules take over."),
    Setting("disabled", "bool", False, "AGENTMEM_DISABLE",
            "Kill switch: `1` (or `disabled = true` in config.toml) makes every hook a no-op: nothing is "
            "recorded or injected."),
    Setting("allow_cross_project", "bool", False, "AGENTMEM_ALLOW_CROSS_PROJECT",
            "Set to 1 to let MCP tools read other projects' memories (`all_projects`, ids of other projects); "
            "by default they reach only the current project and global memories."),
    # team memory (agentmem_mcp/team/, docs/team.md): off unless team_url is set
    Setting("team_url", "str", "", "AGENTMEM_TEAM_URL",
            "PostgreSQL (with pgvector) URL of the team's shared memory, `postgresql://user@host/db?sslmode=...`. "
            "Empty: no team memory, nothing changes. A password in it is never shown or logged."),
    Setting("team_password_file", "Path | None", None, "AGENTMEM_TEAM_PASSWORD_FILE",
            "A file (0600) holding the team server's password, instead of putting it in the URL."),
    Setting("team_author", "str", "", "AGENTMEM_TEAM_AUTHOR",
            "The name shared memories carry as their author. Empty: user@host."),
    Setting("team_read_only", "bool", False, "AGENTMEM_TEAM_READ_ONLY",
            "Read team memory but publish nothing (shares, supersedes and forgets are refused)."),
    Setting("team_share_knowledge", "bool", True, "AGENTMEM_TEAM_SHARE_KNOWLEDGE",
            "Publish the knowledge tiers (semantic, procedural memories of a project) without being asked; 0: "
            "only what `agentmem share` or `memory_save(share=true)` names."),
    Setting("team_refresh_seconds", "int", 120, "AGENTMEM_TEAM_REFRESH_SECONDS",
            "How old this machine's copy of team memory may be before a session start refreshes it (in the "
            "background) and the worker pulls again."),
    Setting("team_ef_search", "int", 400, "AGENTMEM_TEAM_EF_SEARCH",
            "pgvector's `hnsw.ef_search` for team search (1..1000): how many candidates the HNSW walk keeps; higher "
            "finds more of the true nearest memories of a large project, and costs more."),
    Setting("team_iterative_scan", "str", "relaxed_order", "AGENTMEM_TEAM_ITERATIVE_SCAN",
            "pgvector's `hnsw.iterative_scan` for team search: `relaxed_order`, `strict_order` or `off` (the HNSW "
            "walk goes on past `team_ef_search` until the project filter has left enough memories)."),
    Setting("team_max_scan_tuples", "int", 20000, "AGENTMEM_TEAM_MAX_SCAN_TUPLES",
            "pgvector's `hnsw.max_scan_tuples` for team search: where an iterative scan stops looking, in "
            "memories visited."),
    Setting("team_exact_scan_max", "int", 3000, "AGENTMEM_TEAM_EXACT_SCAN_MAX",
            "Up to this many shared memories in the searched projects, team search compares the query's vector "
            "with each of theirs instead of walking the HNSW index (exact, and a few milliseconds per thousand)."),
)  # fmt: skip
_DEFAULTS = {s.name: s.default for s in SETTINGS}


class Settings:
    """Resolved settings (immutable). Build them with `load_settings`; `replace` gives a changed copy."""

    __slots__ = tuple(_DEFAULTS)
    home: Path
    db_path: Path | None
    index_dir: Path | None
    embed_model: str
    embed_model_path: Path | None
    embeddings: bool
    shared_embedder: bool
    embed_idle_seconds: int
    shared_server: bool
    hook_handoff: bool
    hook_starts_process: bool
    fusion: str
    weight_bm25: float
    weight_vector: float
    weight_graph: float
    soft_match_weight: float
    expansion_weight: float
    rrf_k: int
    vector_copy_chunks: int
    search_budget_tokens: int
    search_min_score: float
    context_budget_tokens: int
    tool_answer_items: int
    tool_answer_chars: int
    prompt_budget_tokens: int
    prompt_min_score: float
    supersede_jaccard: float
    supersede_cosine: float
    busy_timeout_ms: int
    sweep_lock_ms: int
    max_output_chars: int
    llm: str
    llm_model: str
    llm_daily_tokens: int
    disabled: bool
    allow_cross_project: bool
    team_url: str
    team_password_file: Path | None
    team_author: str
    team_read_only: bool
    team_share_knowledge: bool
    team_refresh_seconds: int
    team_ef_search: int
    team_iterative_scan: str
    team_max_scan_tuples: int
    team_exact_scan_max: int

    def __init__(self, **values: Any) -> None:
        unknown = set(values) - set(_DEFAULTS)
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(sorted(unknown))}")
        for name, default in _DEFAULTS.items():
            value = values[name] if name in values else (default() if callable(default) else default)
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Settings are immutable: use settings.replace(...)")

    def replace(self, **changes: Any) -> Settings:
        return Settings(**({name: getattr(self, name) for name in _DEFAULTS} | changes))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Settings):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in _DEFAULTS)

    def __hash__(self) -> int:
        return hash(tuple(str(getattr(self, n)) for n in _DEFAULTS))

    def __repr__(self) -> str:
        return "Settings(" + ", ".join(f"{n}={self.shown(n)!r}" for n in _DEFAULTS) + ")"

    def shown(self, name: str) -> Any:
        """A setting's value as it may be shown or logged: the team URL without its password."""
        value = getattr(self, name)
        if name == "team_url" and value:
            from .team.credentials import mask_url

            return mask_url(value)
        return value

    @property
    def database(self) -> Path:
        return self.db_path or self.home / "agentmem.db"

    @property
    def fulltext_dir(self) -> Path:
        return self.index_dir or self.home / "fulltext"

    @property
    def log_path(self) -> Path:
        return self.home / "logs" / "agentmem.log"



# What each setting accepts beyond its type: (low, high) bounds, both included (None: unbounded), or choices.
_BOUNDS: dict[str, tuple[float | None, float | None]] = {
    "weight_bm25": (0, None), "weight_vector": (0, None), "weight_graph": (0, None), "soft_match_weight": (0, None),
    "expansion_weight": (0, None),
    "rrf_k": (1, None), "search_budget_tokens": (1, None), "context_budget_tokens": (0, None),
    "vector_copy_chunks": (0, None),
    "prompt_budget_tokens": (0, None), "prompt_min_score": (0, 1), "supersede_jaccard": (0, 1),
    "supersede_cosine": (0, 1), "busy_timeout_ms": (0, 3_600_000), "sweep_lock_ms": (1, 60_000),
    "max_output_chars": (100, None), "tool_answer_items": (1, 1000), "tool_answer_chars": (1000, None),
    "llm_daily_tokens": (0, None), "embed_idle_seconds": (1, 7 * 86400), "team_refresh_seconds": (1, 86400),
    "team_ef_search": (1, 1000), "team_max_scan_tuples": (1, 2_147_483_647), "team_exact_scan_max": (0, 10_000_000),
}  # fmt: skip
_ABOVE_ZERO = ("supersede_jaccard", "supersede_cosine")  # 0 itself is not allowed
_CHOICES = {"fusion": FUSIONS, "llm": ("off", "anthropic"),
            "team_iterative_scan": ("relaxed_order", "strict_order", "off")}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


def _kind(annotation: str) -> str:
    for kind in ("Path", "bool", "float", "int"):
        if kind in annotation:
            return kind
    return "str"


DATA_PATHS = ("home", "db_path", "index_dir")  # where data lands: a relative value is taken from the user's home


def user_path(text: str) -> Path:
    """A data location as written (AGENTMEM_HOME, AGENTMEM_DB, AGENTMEM_INDEX_DIR or their TOML keys): `~` expanded,
    and a relative one taken from the user's home directory, never from the current directory, which differs in
    every project a hook or a command runs in (and would put the data inside a repository's working tree)."""
    path = Path(os.path.expanduser(text.strip()))
    return path if path.is_absolute() else Path(os.path.normpath(Path.home() / path))


def _parse_env(raw: str, kind: str) -> Any:
    """An environment variable's text as a value of `kind` (ValueError when it is not one)."""
    text = raw.strip()
    if kind == "Path":
        return Path(os.path.expanduser(text)).absolute() if text else None
    if kind == "bool":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError("expected 1/0, true/false, yes/no or on/off")
    if kind == "float":
        return float(text)
    if kind == "int":
        return int(text)
    return raw


def _parse_toml(raw: Any, kind: str) -> Any:
    """A TOML value as a value of `kind`: the TOML type must fit (a number for a number, a boolean for a
    switch, a string for a path or a name); ValueError otherwise."""
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        raise ValueError("expected true or false")
    if kind in ("float", "int"):
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise ValueError("expected a number")
        if kind == "int" and isinstance(raw, float):
            raise ValueError("expected a whole number")
        return raw
    if not isinstance(raw, str):
        raise ValueError("expected a string")
    return _parse_env(raw, kind) if kind == "Path" else raw


def _check_value(name: str, value: Any) -> str | None:
    """What is wrong with `value` for setting `name` (None: nothing)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number"
    if name in _CHOICES and str(value).strip().lower() not in _CHOICES[name]:
        return f"must be one of {', '.join(_CHOICES[name])}"
    if name in _BOUNDS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "must be a number"
        low, high = _BOUNDS[name]
        if name in _ABOVE_ZERO and value <= 0:
            return f"must be above 0 and at most {high}"
        if low is not None and value < low:
            return f"must be at least {low}" + (f" and at most {high}" if high is not None else "")
        if high is not None and value > high:
            return f"must be at most {high}"
    if name == "embed_model" and not str(value).strip():
        return "must name a model"
    if name == "team_url" and value and not str(value).strip().startswith(("postgresql://", "postgres://")):
        return "must be a postgresql:// URL (or empty for no team memory)"
    return None


def _warn(message: str) -> None:
    import logging

    logging.getLogger("agentmem.config").warning("%s", message)


CONFIG_CACHE = "config.cache.json"  # in the home: config.toml as JSON, so that a hook need not import tomllib
_CACHE_SCALARS = (str, int, float, bool)


def _file_key(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _cached_config(config_path: Path, cache_path: Path, key: list[int]) -> dict[str, Any] | None:
    """config.toml's values as last parsed, if the cache describes this very file (same inode, size, times) and
    only this user can have written the cache; None otherwise."""
    import json

    from .files import check_private_file

    try:
        cached = json.loads(cache_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(cached, dict) or cached.get("path") != str(config_path) or cached.get("key") != key:
        return None
    values = cached.get("values")
    if not isinstance(values, dict) or check_private_file(cache_path):
        return None
    return values


def _store_config_cache(config_path: Path, cache_path: Path, key: list[int], values: dict[str, Any]) -> None:
    """Write the cache (0600, atomically) into a home agentmem owns; values other than scalars are not cached."""
    import json

    from .files import is_owned

    if not all(isinstance(v, _CACHE_SCALARS) for v in values.values()) or not is_owned(cache_path.parent):
        return
    tmp = cache_path.with_name(f"{cache_path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"path": str(config_path), "key": key, "values": values}, out)
        os.replace(tmp, cache_path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _read_config_file(config_path: Path, home: Path) -> dict[str, Any]:
    from .files import check_private_file

    try:
        st = os.stat(config_path)
    except OSError:
        return {}
    if not os.path.isfile(config_path):
        return {}
    problem = check_private_file(config_path)
    if problem:
        raise ConfigError(f"{problem}; agentmem does not read a config file someone else could have written")
    cache_path, key = home / CONFIG_CACHE, _file_key(st)
    cached = _cached_config(config_path, cache_path, key)
    if cached is not None:
        return cached
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        values = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {config_path}: {exc}. Fix or remove the file.") from None
    _store_config_cache(config_path, cache_path, key, values)
    return values


def load_settings(env: Mapping[str, str] | None = None, *, on_warning: Callable[[str], None] | None = None,
                  **overrides: Any) -> Settings:
    """Build Settings from the environment, the TOML file and keyword overrides (highest).

    Every value is checked (type, range, NaN); a bad one raises ConfigError naming the environment variable or
    the TOML key as the user wrote it. Unknown TOML keys are reported through `on_warning` (default: the
    `agentmem.config` logger) and ignored. A config file that another user could have written (not owned by this
    user, or writable by group or others) is refused."""
    env = os.environ if env is None else env
    warn = on_warning or _warn
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    home_raw = overrides.get("home") or env.get("AGENTMEM_HOME")
    home = user_path(str(home_raw)) if home_raw else default_home()
    config_path = Path(env["AGENTMEM_CONFIG"]) if env.get("AGENTMEM_CONFIG") else home / "config.toml"
    file_values = _read_config_file(config_path, home)
    known = {f.name: f for f in SETTINGS}
    by_env = {f.env: f.name for f in SETTINGS}
    for key in file_values:
        if key not in known:
            hint = f" (the TOML key for {key} is `{by_env[key]}`)" if key in by_env else ""
            warn(f"{config_path}: unknown setting `{key}` ignored{hint}")
    for f in SETTINGS:
        if f.name in overrides:
            values[f.name], sources[f.name] = overrides[f.name], f"setting {f.name}"
            continue
        raw, source = env.get(f.env), f"{f.env}={env.get(f.env)!r}" if f.name != "team_url" else f.env
        parse = _parse_env
        if raw is None and f.name in file_values and f.name != "home":
            raw, source, parse = file_values[f.name], f"`{f.name}` in {config_path}", _parse_toml
        if raw is None:
            continue
        try:
            values[f.name] = parse(raw, _kind(f.type))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: {raw!r} is not a valid {f.type} ({exc})") from None
        if f.name in DATA_PATHS and values[f.name] is not None:
            values[f.name] = user_path(raw)
        sources[f.name] = source
    for name, value in values.items():
        problem = _check_value(name, value)
        if problem:
            shown = value if name != "team_url" else "(the URL given)"  # it may hold a password
            raise ConfigError(f"{sources[name]}: {shown!r} {problem} (default {_DEFAULTS[name]!r})")
    values["home"] = home
    settings = Settings(**values)
    if settings.weight_bm25 + settings.weight_vector + settings.weight_graph <= 0:
        raise ConfigError("weight_bm25, weight_vector and weight_graph are all 0: at least one must be above 0")
    _check_paths(settings, sources)
    return settings


def _check_paths(settings: Settings, sources: dict[str, str]) -> None:
    """The index folder is emptied when the index is rebuilt: it must not be, or hold, the home or the database."""
    index, home, database = settings.fulltext_dir, settings.home, settings.database
    if index == home or home.is_relative_to(index) or database.is_relative_to(index):
        where = sources.get("index_dir", "the index folder")
        raise ConfigError(f"{where}: the BM25 index folder {index} would hold the home {home} or the database "
                          f"{database}, and agentmem empties that folder when it rebuilds the index. Point it at "
                          "a folder of its own (e.g. <home>/fulltext, the default)")
