"""Settings in one place: defaults, environment variables and an optional TOML file.

Precedence: environment variable > TOML file (``$AGENTMEM_HOME/config.toml`` or ``AGENTMEM_CONFIG``) >
default. Every setting is listed once in ``SETTINGS``; the README's configuration table is that list.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
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


@dataclass(frozen=True)
class Settings:
    home: Path = field(default_factory=default_home, metadata={
        "env": "AGENTMEM_HOME", "doc": "Directory holding the database, index and logs (created 0700)."})
    db_path: Path | None = field(default=None, metadata={
        "env": "AGENTMEM_DB", "doc": "SQLite database file. Default: `<home>/agentmem.db`."})
    index_dir: Path | None = field(default=None, metadata={
        "env": "AGENTMEM_INDEX_DIR", "doc": "Tantivy BM25 index directory. Default: `<home>/fulltext`."})
    embed_model: str = field(default="sentence-transformers/all-MiniLM-L6-v2", metadata={
        "env": "AGENTMEM_EMBED_MODEL", "doc": "fastembed model name used for vectors."})
    embed_model_path: Path | None = field(default=None, metadata={
        "env": "AGENTMEM_EMBED_MODEL_PATH",
        "doc": "Local folder with the model files (no download). Unset: fastembed downloads and caches it."})
    embeddings: bool = field(default=True, metadata={
        "env": "AGENTMEM_EMBEDDINGS", "doc": "Set to 0 to run on BM25 + graph only (no model is loaded)."})
    weight_bm25: float = field(default=0.4, metadata={
        "env": "AGENTMEM_WEIGHT_BM25", "doc": "Weight of the BM25 ranking in reciprocal rank fusion."})
    weight_vector: float = field(default=0.6, metadata={
        "env": "AGENTMEM_WEIGHT_VECTOR", "doc": "Weight of the vector ranking in reciprocal rank fusion."})
    weight_graph: float = field(default=0.3, metadata={
        "env": "AGENTMEM_WEIGHT_GRAPH", "doc": "Weight of the entity-graph ranking in reciprocal rank fusion."})
    rrf_k: int = field(default=60, metadata={
        "env": "AGENTMEM_RRF_K", "doc": "The k constant of reciprocal rank fusion."})
    search_budget_tokens: int = field(default=2000, metadata={
        "env": "AGENTMEM_SEARCH_BUDGET", "doc": "Default token budget of one `memory_search` answer."})
    context_budget_tokens: int = field(default=1500, metadata={
        "env": "AGENTMEM_CONTEXT_BUDGET", "doc": "Hard token budget of the session-start context."})
    prompt_budget_tokens: int = field(default=300, metadata={
        "env": "AGENTMEM_PROMPT_BUDGET", "doc": "Token budget of memories injected for a user prompt."})
    prompt_min_score: float = field(default=0.35, metadata={
        "env": "AGENTMEM_PROMPT_MIN_SCORE",
        "doc": "Relevance threshold (0..1, share of query terms matched) for prompt-time injection."})
    supersede_jaccard: float = field(default=0.7, metadata={
        "env": "AGENTMEM_SUPERSEDE_JACCARD",
        "doc": "Word-set Jaccard similarity above which a new memory supersedes an old one."})
    supersede_cosine: float = field(default=0.92, metadata={
        "env": "AGENTMEM_SUPERSEDE_COSINE",
        "doc": "Vector cosine similarity above which a paraphrase supersedes an old memory."})
    busy_timeout_ms: int = field(default=10000, metadata={
        "env": "AGENTMEM_BUSY_TIMEOUT_MS", "doc": "How long a writer waits for SQLite's lock."})
    max_output_chars: int = field(default=12000, metadata={
        "env": "AGENTMEM_MAX_OUTPUT_CHARS", "doc": "Captured tool outputs longer than this keep head + tail."})
    llm: str = field(default="off", metadata={
        "env": "AGENTMEM_LLM", "doc": "`off` (default) or `anthropic` (needs `ANTHROPIC_API_KEY`)."})
    llm_model: str = field(default="claude-haiku-4-5", metadata={
        "env": "AGENTMEM_LLM_MODEL", "doc": "Anthropic model used when the LLM is on."})
    llm_daily_tokens: int = field(default=200000, metadata={
        "env": "AGENTMEM_LLM_DAILY_TOKENS", "doc": "Daily LLM token budget; past it the rules take over."})
    disabled: bool = field(default=False, metadata={
        "env": "AGENTMEM_DISABLE", "doc": "Kill switch: `1` makes every hook a no-op."})

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


SETTINGS = [f for f in fields(Settings)]


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
        annotation = str(f.type)
        if f.name in overrides:
            values[f.name] = overrides[f.name]
            continue
        raw = env.get(f.metadata["env"])
        if raw is None:
            raw = file_values.get(f.name)
        if raw is not None:
            values[f.name] = _coerce(f.metadata["env"], raw, annotation)
    values["home"] = home
    settings = Settings(**values)
    if not 0 < settings.supersede_jaccard <= 1:
        raise ConfigError("AGENTMEM_SUPERSEDE_JACCARD must be in (0, 1]")
    return settings


def settings_table() -> str:
    """The Markdown table of every setting (used for the README)."""
    rows = ["| Variable | TOML key | Default | Meaning |", "|---|---|---|---|"]
    for f in SETTINGS:
        default = f.default if f.default_factory is MISSING else "platform data dir"
        rows.append(f"| `{f.metadata['env']}` | `{f.name}` | `{default}` | {f.metadata['doc']} |")
    return "\n".join(rows)
