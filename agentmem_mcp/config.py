"""Settings in one place: defaults, environment variables and an optional TOML file.

Precedence: environment variable > TOML file (``$AGENTMEM_HOME/config.toml`` or ``AGENTMEM_CONFIG``) >
default. Every setting is listed once in ``SETTINGS``; the README's configuration table is that list.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """A setting has a value agentmem cannot use."""


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
            "Directory holding the database, index and logs (created 0700)."),
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
    Setting("fusion", "str", "score", "AGENTMEM_FUSION",
            "How the retrievers are combined: `score` (each retriever's score divided by its best, weighted; "
            "every candidate gets its exact cosine) or `rrf` (weighted reciprocal rank fusion)."),
    Setting("weight_bm25", "float", 0.4, "AGENTMEM_WEIGHT_BM25",
            "Weight of BM25 in the fusion."),
    Setting("weight_vector", "float", 0.6, "AGENTMEM_WEIGHT_VECTOR",
            "Weight of the vector similarity in the fusion."),
    Setting("weight_graph", "float", 0.3, "AGENTMEM_WEIGHT_GRAPH",
            "Weight of the entity graph in the fusion."),
    Setting("soft_match_weight", "float", 0.5, "AGENTMEM_SOFT_MATCH_WEIGHT",
            "How much a word similar in meaning to a query word counts, as a share of a keyword match "
            "(`fusion = score`; 0 turns it off)."),
    Setting("rrf_k", "int", 60, "AGENTMEM_RRF_K",
            "The k constant of reciprocal rank fusion (`fusion = rrf`)."),
    Setting("search_budget_tokens", "int", 2000, "AGENTMEM_SEARCH_BUDGET",
            "Default token budget of one `memory_search` answer."),
    Setting("search_min_score", "float", 0.01, "AGENTMEM_SEARCH_MIN_SCORE",
            "Search leaves out hits scoring under this (0..1, 1 = the best possible match): noise, not memories."),
    Setting("context_budget_tokens", "int", 1500, "AGENTMEM_CONTEXT_BUDGET",
            "Hard token budget of the session-start context."),
    Setting("prompt_budget_tokens", "int", 300, "AGENTMEM_PROMPT_BUDGET",
            "Token budget of memories injected for a user prompt."),
    Setting("prompt_min_score", "float", 0.35, "AGENTMEM_PROMPT_MIN_SCORE",
            "Relevance threshold (0..1, share of query terms matched) for prompt-time injection."),
    Setting("supersede_jaccard", "float", 0.7, "AGENTMEM_SUPERSEDE_JACCARD",
            "Word-set Jaccard similarity above which a new memory supersedes an old one."),
    Setting("supersede_cosine", "float", 0.92, "AGENTMEM_SUPERSEDE_COSINE",
            "Vector cosine similarity above which a paraphrase supersedes an old memory."),
    Setting("busy_timeout_ms", "int", 10000, "AGENTMEM_BUSY_TIMEOUT_MS",
            "How long a writer waits for SQLite's lock."),
    Setting("max_output_chars", "int", 12000, "AGENTMEM_MAX_OUTPUT_CHARS",
            "Captured tool outputs longer than this keep head + tail."),
    Setting("llm", "str", "off", "AGENTMEM_LLM",
            "`off` (default) or `anthropic` (needs `ANTHROPIC_API_KEY`)."),
    Setting("llm_model", "str", "claude-haiku-4-5", "AGENTMEM_LLM_MODEL",
            "Anthropic model used when the LLM is on."),
    Setting("llm_daily_tokens", "int", 200000, "AGENTMEM_LLM_DAILY_TOKENS",
            "Daily LLM token budget; past it the rules take over."),
    Setting("disabled", "bool", False, "AGENTMEM_DISABLE",
            "Kill switch: `1` makes every hook a no-op."),
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
    fusion: str
    weight_bm25: float
    weight_vector: float
    weight_graph: float
    soft_match_weight: float
    rrf_k: int
    search_budget_tokens: int
    search_min_score: float
    context_budget_tokens: int
    prompt_budget_tokens: int
    prompt_min_score: float
    supersede_jaccard: float
    supersede_cosine: float
    busy_timeout_ms: int
    max_output_chars: int
    llm: str
    llm_model: str
    llm_daily_tokens: int
    disabled: bool

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
        return "Settings(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in _DEFAULTS) + ")"

    @property
    def database(self) -> Path:
        return self.db_path or self.home / "agentmem.db"

    @property
    def fulltext_dir(self) -> Path:
        return self.index_dir or self.home / "fulltext"

    @property
    def log_path(self) -> Path:
        return self.home / "logs" / "agentmem.log"

    @property
    def config_file(self) -> Path:
        return self.home / "config.toml"



def _coerce(name: str, raw: Any, annotation: str) -> Any:
    try:
        if "Path" in annotation:
            return Path(os.path.expanduser(str(raw))).absolute() if raw not in (None, "") else None
        if "bool" in annotation:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(raw)
        if "float" in annotation:
            return float(raw)
        if "int" in annotation:
            return int(raw)
        return str(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"setting {name} has the value {raw!r}, which is not a valid {annotation}") from None


def load_settings(env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Build Settings from the environment, the TOML file and keyword overrides (highest)."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    home_raw = overrides.get("home") or env.get("AGENTMEM_HOME")
    home = Path(os.path.expanduser(str(home_raw))).absolute() if home_raw else default_home()
    config_path = Path(env["AGENTMEM_CONFIG"]) if env.get("AGENTMEM_CONFIG") else home / "config.toml"
    file_values: dict[str, Any] = {}
    if config_path.is_file():
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover
            import tomli as tomllib
        try:
            file_values = tomllib.loads(config_path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read {config_path}: {exc}. Fix or remove the file.") from None
    for f in SETTINGS:
        if f.name in overrides:
            values[f.name] = overrides[f.name]
            continue
        raw = env.get(f.env)
        if raw is None:
            raw = file_values.get(f.name)
        if raw is not None:
            values[f.name] = _coerce(f.env, raw, f.type)
    values["home"] = home
    settings = Settings(**values)
    if settings.fusion not in FUSIONS:
        raise ConfigError(f"AGENTMEM_FUSION must be one of {', '.join(FUSIONS)}, not {settings.fusion!r}")
    if not 0 < settings.supersede_jaccard <= 1:
        raise ConfigError("AGENTMEM_SUPERSEDE_JACCARD must be in (0, 1]")
    return settings


def settings_table() -> str:
    """The Markdown table of every setting (used for the README)."""
    rows = ["| Variable | TOML key | Default | Meaning |", "|---|---|---|---|"]
    for f in SETTINGS:
        default = "platform data dir" if callable(f.default) else f.default
        rows.append(f"| `{f.env}` | `{f.name}` | `{default}` | {f.doc} |")
    return "\n".join(rows)
