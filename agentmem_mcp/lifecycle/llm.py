"""The optional LLM (Anthropic), its daily token budget, and validated JSON answers.

Off by default: `AGENTMEM_LLM=anthropic` plus `ANTHROPIC_API_KEY` turn it on. Every call is checked
against the daily budget and written to the `llm_ledger` table; past the budget, or when the answer
is still malformed after one retry, the caller's rules decide. The `anthropic` package is imported
only when a call is made, and never by the hooks.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..db.connection import Connection, write_transaction

if TYPE_CHECKING:
    from ..config import Settings
    from ..parts import Parts

log = logging.getLogger("agentmem.llm")

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


class LLMError(RuntimeError):
    """The LLM could not be reached or refused the request."""


class BudgetExceeded(LLMError):
    """Today's token budget would be exceeded by this call."""


class Provider(Protocol):
    """Something that completes a prompt: returns (text, input tokens, output tokens)."""

    model: str

    def complete(self, system: str, prompt: str, max_tokens: int) -> tuple[str, int, int]: ...


class AnthropicProvider:
    """Claude through the official `anthropic` client (imported on first use)."""

    def __init__(self, api_key: str, model: str = "claude-haiku-4-5", *, base_url: str | None = None,
                 timeout: float = 60.0, max_retries: int = 2) -> None:
        self.api_key = api_key
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            try:
                import anthropic
            except ImportError as exc:
                raise LLMError("AGENTMEM_LLM=anthropic needs the anthropic package: pip install "
                               "'agentmem-mcp[llm]'") from exc
            self._client = anthropic.Anthropic(api_key=self.api_key, base_url=self.base_url, timeout=self.timeout,
                                               max_retries=self.max_retries)
        return self._client

    def complete(self, system: str, prompt: str, max_tokens: int) -> tuple[str, int, int]:
        import anthropic

        client = self.client()
        try:
            response = client.messages.create(model=self.model, max_tokens=max_tokens, system=system,
                                              messages=[{"role": "user", "content": prompt}])
        except anthropic.AnthropicError as exc:
            raise LLMError(f"{type(exc).__name__}: {exc}") from exc
        text = "".join(getattr(block, "text", "") for block in response.content
                       if getattr(block, "type", "") == "text")
        usage = response.usage
        return text, int(usage.input_tokens or 0), int(usage.output_tokens or 0)


def estimate_tokens(text: str) -> int:
    return len(text) // 4 + 1


def today(now: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(now))


class Budget:
    """The daily token budget, kept in the `llm_ledger` table (shared by every process)."""

    def __init__(self, connection: Callable[[], Connection], daily_tokens: int,
                 clock: Callable[[], float] = time.time) -> None:
        self._connection = connection
        self.daily_tokens = daily_tokens
        self.clock = clock

    @classmethod
    def for_store(cls, store: Parts) -> Budget:
        return cls(lambda: store.conn, store.settings.llm_daily_tokens, store.now)

    def spent_today(self) -> int:
        row = self._connection().execute(
            "SELECT COALESCE(SUM(input_tokens + output_tokens), 0) FROM llm_ledger WHERE day = ?",
            (today(self.clock()),)).fetchone()
        return int(row[0])

    def remaining(self) -> int:
        return max(0, self.daily_tokens - self.spent_today())

    def check(self, estimate: int) -> None:
        """Raise BudgetExceeded when a call of about `estimate` tokens would go past today's budget."""
        left = self.remaining()
        if estimate > left:
            raise BudgetExceeded(f"LLM budget: {left} of {self.daily_tokens} tokens left today, this call needs "
                                 f"about {estimate}; raise AGENTMEM_LLM_DAILY_TOKENS or let the rules decide")

    def record(self, purpose: str, model: str, input_tokens: int, output_tokens: int) -> None:
        now = self.clock()
        with write_transaction(self._connection()) as conn:
            conn.execute("INSERT INTO llm_ledger (at, day, purpose, model, input_tokens, output_tokens) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (now, today(now), purpose, model, input_tokens, output_tokens))


def provider_from_settings(settings: Settings, env: Mapping[str, str] | None = None) -> Provider | None:
    """The configured provider, or None when the LLM is off or has no API key."""
    env = os.environ if env is None else env
    if settings.llm.strip().lower() != "anthropic":
        return None
    key = env.get("ANTHROPIC_API_KEY", "").strip()
    if not key:
        log.warning("AGENTMEM_LLM=anthropic but ANTHROPIC_API_KEY is not set: the rules decide")
        return None
    return AnthropicProvider(key, settings.llm_model, base_url=env.get("ANTHROPIC_BASE_URL") or None)


def parse_json(text: str) -> Any:
    """The JSON value in a model's answer (tolerating a code fence or words around one object)."""
    text = _FENCE.sub("", text.strip())
    try:
        return json.loads(text)
    except ValueError:
        start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
        end = max(text.rfind("}"), text.rfind("]"))
        if start < 0 or end <= start:
            raise ValueError("the answer holds no JSON") from None
        return json.loads(text[start:end + 1])


def need(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    """`value` if it is of `kind` (a bool is not a number here), else ValueError naming `what`."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or isinstance(value, bool) and bool not in kinds:
        names = " or ".join(k.__name__ for k in kinds)
        raise ValueError(f"{what} must be {names}, got {type(value).__name__}")
    return value


def need_text(value: Any, what: str, limit: int, minimum: int = 1) -> str:
    text = need(value, str, what).strip()
    if not minimum <= len(text) <= limit:
        raise ValueError(f"{what} must be {minimum}..{limit} characters, got {len(text)}")
    return text


def need_unit(value: Any, what: str) -> float:
    number = float(need(value, (int, float), what))
    if not 0 <= number <= 1:
        raise ValueError(f"{what} must be between 0 and 1")
    return number


def need_ids(value: Any, allowed: Iterable[Any], what: str) -> list[Any]:
    """A non-empty list whose items all come from `allowed`."""
    allowed = set(allowed)
    items = need(value, list, what)
    if not items or any(item not in allowed for item in items):
        raise ValueError(f"{what} must list ids given in the prompt")
    return list(dict.fromkeys(items))


@dataclass
class LLM:
    """A provider with its budget: ask for JSON, get a validated value or None (then the rules decide)."""

    provider: Provider
    budget: Budget
    calls: int = 0

    @classmethod
    def from_store(cls, store: Parts, provider: Provider | None = None) -> LLM | None:
        provider = provider or provider_from_settings(store.settings)
        return cls(provider, Budget.for_store(store)) if provider is not None else None

    def ask_json(self, purpose: str, system: str, prompt: str, validate: Callable[[Any], Any],
                 max_tokens: int = 1024) -> Any | None:
        """Ask, parse and validate; a malformed answer is retried once. None: over budget, unreachable,
        or malformed twice."""
        return ask_json(self.provider, self.budget, purpose, system, prompt, validate, max_tokens, self)


def ask_json(provider: Provider, budget: Budget | None, purpose: str, system: str, prompt: str,
             validate: Callable[[Any], Any], max_tokens: int = 1024, counter: LLM | None = None) -> Any | None:
    """See `LLM.ask_json`; `budget` None means no budget check and no ledger row."""
    system = system + "\nAnswer with one JSON value and nothing else."
    ask = prompt
    for attempt in (1, 2):
        try:
            if budget is not None:
                budget.check(estimate_tokens(system + ask) + max_tokens)
            text, input_tokens, output_tokens = provider.complete(system, ask, max_tokens)
        except BudgetExceeded as exc:
            log.info("%s: %s", purpose, exc)
            return None
        except Exception as exc:  # an unreachable or failing LLM never stops the work: the rules decide
            log.warning("%s: LLM call failed (%s); the rules decide", purpose, exc)
            return None
        if counter is not None:
            counter.calls += 1
        if budget is not None:
            budget.record(purpose, getattr(provider, "model", "unknown"), input_tokens, output_tokens)
        try:
            return validate(parse_json(text))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            log.info("%s: malformed LLM answer (attempt %d): %s", purpose, attempt, exc)
            ask = (f"{prompt}\n\nYour previous answer could not be used ({str(exc)[:200]}). Answer again with "
                   "valid JSON in exactly the requested shape.")
    return None
