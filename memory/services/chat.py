"""The process's chat clients: one `ChatOpenAI` per (model, max_tokens), built on first use.

Every chat model is reached through langchain-openai's `ChatOpenAI` against an OpenAI-compatible
endpoint, in three tiers (fast, structured, respond) named by the settings; a run's context may
name another model per tier. With no endpoint configured, `get` returns None and callers answer
with their heuristics (offline mode). Tests inject one model for every tier (`override`).

This module holds clients and counters only: no prompts (those live beside their node) and no
call logic (`tasks.llm` validates, retries and falls back).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any

from memory.services.usage import UsageTotals
from memory.settings import Settings

if TYPE_CHECKING:
    import httpx
    from langchain_core.language_models import BaseChatModel


class Tier(StrEnum):
    """Which configured chat model a call uses."""

    FAST = "fast"
    STRUCTURED = "structured"
    RESPOND = "respond"


class ChatModels:
    """The chat clients of one process, and the LLM counters of everything they answered."""

    def __init__(self, settings: Settings, override: BaseChatModel | None = None) -> None:
        """Clients for `settings`; `override` answers every tier (tests, notebooks)."""
        self.settings = settings
        self.override = override
        self.totals = UsageTotals()
        """Process-wide LLM counters by task (read by `mneme bench` and the eval)."""
        self._cache: dict[tuple[str, int], BaseChatModel] = {}
        self._http: httpx.AsyncClient | None = None
        """The clients' own connection pool (closed with the services; langchain's default one
        is shared by the whole process and never closed)."""

    @classmethod
    def offline_for(cls, settings: Settings) -> ChatModels:
        """Chat models that never call an endpoint (the heuristics answer everything)."""
        return cls(settings.model_copy(update={"llm_base_url": None, "llm_api_key": None}))

    @property
    def offline(self) -> bool:
        """True when no chat endpoint is configured and no model is injected."""
        return self.override is None and not self.settings.llm_configured

    @property
    def timeout_s(self) -> float:
        """Seconds a single request may take before the heuristic answers instead."""
        return self.settings.llm_timeout_s

    def model_name(self, tier: Tier, model: str | None = None) -> str:
        """The model a tier resolves to (a per-run override wins)."""
        if model:
            return model
        s = self.settings
        return {
            Tier.FAST: s.llm_model_fast,
            Tier.STRUCTURED: s.llm_model_structured,
            Tier.RESPOND: s.llm_model_respond,
        }[tier]

    def get(
        self, tier: Tier, model: str | None = None, max_tokens: int = 512
    ) -> BaseChatModel | None:
        """The chat model for a tier, or None in offline mode."""
        if self.override is not None:
            return self.override
        if self.offline:
            return None
        name = self.model_name(tier, model)
        key = (name, max_tokens)
        if key not in self._cache:
            self._cache[key] = self._build(name, max_tokens)
        return self._cache[key]

    async def aclose(self) -> None:
        """Close the HTTP connections of the clients built (they are rebuilt on next use)."""
        self._cache = {}
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()

    def _build(self, name: str, max_tokens: int) -> BaseChatModel:
        import httpx
        from langchain_openai import ChatOpenAI

        s = self.settings
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=s.llm_timeout_s)
        kwargs: dict[str, Any] = {
            "http_async_client": self._http,
            "model": name,
            "temperature": 0,
            "timeout": s.llm_timeout_s,
            "max_retries": 0,
            "api_key": s.llm_api_key.get_secret_value() if s.llm_api_key else "not-needed",
        }
        if s.llm_base_url:
            # OpenAI-compatible servers (llama.cpp, vLLM, Ollama) read `max_tokens`; langchain
            # rewrites the field to `max_completion_tokens`, which they ignore.
            kwargs["base_url"] = s.llm_base_url
            kwargs["extra_body"] = {"max_tokens": max_tokens}
        else:
            kwargs["max_completion_tokens"] = max_tokens
        return ChatOpenAI(**kwargs)
