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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .db.connection import Connection, write_transaction

if TYPE_CHECKING:
    from .config import Settings
    from .store import Store

log = logging.getLogger("agentmem.llm")

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
JUDGE_ACTIONS = ("ADD", "UPDATE", "DELETE", "NOOP")


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


@dataclass
class ScriptedProvider:
    """A provider for tests: answers with queued responses and records every call.

    A response is a text (tokens estimated from its length), a (text, input_tokens, output_tokens)
    tuple, or an exception to raise. With no response left it raises LLMError.
    """

    responses: list[Any] = field(default_factory=list)
    model: str = "scripted"
    calls: list[dict[str, Any]] = field(default_factory=list)

    def queue(self, *responses: Any) -> None:
        self.responses.extend(responses)

    def complete(self, system: str, prompt: str, max_tokens: int) -> tuple[str, int, int]:
        self.calls.append({"system": system, "prompt": prompt, "max_tokens": max_tokens})
        if not self.responses:
            raise LLMError("the scripted provider has no response left")
        response = self.responses.pop(0)
        if isinstance(response, BaseException):
            raise response
        if isinstance(response, tuple):
            return response
        return response, estimate_tokens(system + prompt), estimate_tokens(response)


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
    def for_store(cls, store: Store) -> Budget:
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
    def from_store(cls, store: Store, provider: Provider | None = None) -> LLM | None:
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


# -- the ADD / UPDATE / DELETE / NOOP judgement on saves (Mem0's write path) ----------------------------

@dataclass
class Judgement:
    """What to do with a new memory given similar existing ones.

    action: ADD (store it as new), UPDATE (target_id gets `content` as its new version), DELETE (target_id
    is contradicted and obsolete; store the new one), NOOP (already known, store nothing).
    by: "llm", or "rules" when no LLM answered (then the caller's rules decide and action is ADD).
    """

    action: str
    target_id: str | None = None
    content: str | None = None
    reason: str = ""
    by: str = "llm"


JUDGE_SYSTEM = """You maintain a coding agent's long-term memory. A new memory arrives; existing memories that may
overlap are listed. Decide one action:
ADD: the new memory says something none of them says.
UPDATE: it refines or corrects one of them; give the merged text that should replace it.
DELETE: it makes one of them false or obsolete (the new one is stored, the old one removed).
NOOP: one of them already says the same thing.
Return {"action": "ADD|UPDATE|DELETE|NOOP", "target": "<id of the existing memory or null>",
"content": "<merged text for UPDATE, else null>", "reason": "<one short sentence>"}."""


def _candidate_fields(candidate: Any) -> tuple[str, str]:
    get = candidate.get if isinstance(candidate, Mapping) else lambda key: getattr(candidate, key, None)
    return str(get("id")), str(get("content") or get("title") or "")


def judge_save(provider: Provider | None, new_content: str, candidates: Sequence[Any],
               budget: Budget | None = None) -> Judgement:
    """Ask the LLM whether `new_content` adds to, updates, deletes or repeats one of `candidates`
    (Memory objects or mappings with id and content). Without an LLM, over budget or on a malformed
    answer (after one retry) it returns Judgement("ADD", by="rules"): the caller's rules decide."""
    rules = Judgement("ADD", reason="no LLM judgement: the rules decide", by="rules")
    if provider is None:
        return rules
    if not candidates:
        return Judgement("ADD", reason="nothing similar is stored", by="rules")
    listed = [_candidate_fields(c) for c in candidates[:10]]
    ids = {memory_id for memory_id, _ in listed}
    prompt = "Existing memories:\n" + "\n".join(f"- id {i}: {c[:600]}" for i, c in listed)
    prompt += f"\n\nNew memory:\n{new_content[:2000]}"

    def validate(answer: Any) -> Judgement:
        answer = need(answer, dict, "the answer")
        action = need(answer.get("action"), str, "action").strip().upper()
        if action not in JUDGE_ACTIONS:
            raise ValueError(f"action must be one of {', '.join(JUDGE_ACTIONS)}")
        target = answer.get("target")
        if action in ("UPDATE", "DELETE", "NOOP") and target not in ids:
            raise ValueError(f"{action} needs the id of one listed memory as target")
        content = answer.get("content")
        if action == "UPDATE":
            content = need_text(content, "content", 4000, 8)
        reason = answer.get("reason") if isinstance(answer.get("reason"), str) else ""
        return Judgement(action, target if action != "ADD" else None,
                         content if action == "UPDATE" else None, reason[:300])

    judged = ask_json(provider, budget, "judge_save", JUDGE_SYSTEM, prompt, validate, max_tokens=600)
    return judged if judged is not None else rules
