"""The LLM stand-in for tests: a provider that answers with queued responses and records every call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentmem_mcp.lifecycle.llm import LLMError, estimate_tokens


@dataclass
class ScriptedProvider:
    """A provider for tests: answers with queued responses and records every call.

    A response is a text (tokens estimated from its length), a (text, input_tokens, output_tokens)
    tuple, or an exception to raise. With no response left it raises LLMError.
    """

    responses: list[Any] = field(default_factory=list)
    model: str = "scripted"
    calls: list[dict[str, Any]] = field(default_factory=list)

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
