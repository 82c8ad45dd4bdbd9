"""LLM plumbing: chat-model tiers, structured calls that degrade to heuristics, usage counting.

Every chat model goes through langchain-openai's `ChatOpenAI` against an OpenAI-compatible
endpoint. A structured call validates the tool-call output against its Pydantic schema, retries
once showing the model its error, and then returns the caller's deterministic heuristic of the
same schema. No endpoint configured (offline mode), an endpoint that is down, slow or returns
garbage: all end in the heuristic with a logged warning, never an exception.

This module owns the process's chat clients (built lazily, once per tier/model) and must not
hold prompts: those live beside their node.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, ValidationError

from memory.settings import Settings, get_settings

log = logging.getLogger("mneme.llm")

T = TypeVar("T", bound=BaseModel)

NOSTREAM: RunnableConfig = {"tags": ["nostream"]}
"""Structured calls are internal decisions; keep them out of the `messages` stream mode."""

RETRY_PROMPT = (
    "Your previous answer could not be used: {error}\n"
    "Answer again by calling the function `{name}` exactly once, with arguments that match its "
    "JSON schema. No prose."
)


class Tier(StrEnum):
    """Which configured chat model a call uses."""

    FAST = "fast"
    STRUCTURED = "structured"
    RESPOND = "respond"


# --------------------------------------------------------------------------- usage


def empty_usage() -> dict[str, Any]:
    """A usage record with nothing counted."""
    return {
        "llm_calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "retries": 0,
        "fallbacks": 0,
        "errors": 0,
        "offline": 0,
        "tasks": {},
    }


def merge_usage(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Reducer: add `right`'s counts to `left`; a `right` marked `reset` starts a new turn."""
    if not right:
        return left or empty_usage()
    base = empty_usage() if right.get("reset") or not left else left
    out = {**empty_usage(), **{k: v for k, v in base.items() if k != "reset"}}
    out["tasks"] = {name: dict(counts) for name, counts in base.get("tasks", {}).items()}
    for key, value in right.items():
        if key in ("tasks", "reset"):
            continue
        if isinstance(value, int | float):
            out[key] = out.get(key, 0) + value
    for name, counts in right.get("tasks", {}).items():
        mine = out["tasks"].setdefault(name, {})
        for key, value in counts.items():
            if isinstance(value, int | float):
                mine[key] = mine.get(key, 0) + value
            else:
                mine[key] = value
    return out


class Usage:
    """Counts the LLM work of one node (or one bookkeeping run) for state metadata."""

    def __init__(self) -> None:
        self.data = empty_usage()

    def _task(self, task: str) -> dict[str, Any]:
        tasks: dict[str, dict[str, Any]] = self.data["tasks"]
        return tasks.setdefault(
            task, {"calls": 0, "input_tokens": 0, "output_tokens": 0, "outcome": "none"}
        )

    def request(self, task: str, message: BaseMessage | None, seconds: float) -> None:
        """Count one request sent to the endpoint and the tokens it reported."""
        inp, out = _tokens(message)
        self.data["llm_calls"] += 1
        self.data["input_tokens"] += inp
        self.data["output_tokens"] += out
        entry = self._task(task)
        entry["calls"] += 1
        entry["input_tokens"] += inp
        entry["output_tokens"] += out
        entry["seconds"] = round(entry.get("seconds", 0.0) + seconds, 3)
        TOTALS.add(task, 1, inp, out)

    def outcome(self, task: str, outcome: str) -> None:
        """Record how a task ended: ok, retried, fallback, error or offline."""
        self._task(task)["outcome"] = outcome
        if outcome == "retried":
            self.data["retries"] += 1
        elif outcome in ("fallback", "error"):
            self.data["fallbacks"] += 1
            if outcome == "error":
                self.data["errors"] += 1
        elif outcome == "offline":
            self.data["offline"] += 1
        if outcome in ("fallback", "error", "offline"):
            TOTALS.fallback(task)

    def update(self, *, reset: bool = False) -> dict[str, Any]:
        """The state update for the `usage` channel."""
        return {**self.data, "reset": True} if reset else dict(self.data)


def _tokens(message: BaseMessage | None) -> tuple[int, int]:
    meta = getattr(message, "usage_metadata", None) or {}
    return int(meta.get("input_tokens", 0) or 0), int(meta.get("output_tokens", 0) or 0)


class UsageTotals:
    """Process-wide LLM counters by task (read by `mneme bench`)."""

    def __init__(self) -> None:
        self.by_task: dict[str, dict[str, int]] = {}

    def _entry(self, task: str) -> dict[str, int]:
        return self.by_task.setdefault(
            task, {"calls": 0, "input_tokens": 0, "output_tokens": 0, "fallbacks": 0}
        )

    def add(self, task: str, calls: int, inp: int, out: int) -> None:
        """Count requests and tokens."""
        entry = self._entry(task)
        entry["calls"] += calls
        entry["input_tokens"] += inp
        entry["output_tokens"] += out

    def fallback(self, task: str) -> None:
        """Count a heuristic answer."""
        self._entry(task)["fallbacks"] += 1

    def snapshot(self) -> dict[str, dict[str, int]]:
        """A copy of the counters."""
        return {task: dict(counts) for task, counts in self.by_task.items()}

    def reset(self) -> None:
        """Forget every count."""
        self.by_task.clear()


TOTALS = UsageTotals()


# --------------------------------------------------------------------------- models


class ChatModels:
    """The process's chat clients, one per (tier, model, max_tokens), built on first use."""

    def __init__(self, settings: Settings, override: BaseChatModel | None = None) -> None:
        self.settings = settings
        self.override = override
        self._cache: dict[tuple[str, int], BaseChatModel] = {}

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

    def _build(self, name: str, max_tokens: int) -> BaseChatModel:
        from langchain_openai import ChatOpenAI

        s = self.settings
        kwargs: dict[str, Any] = {
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


_models: ChatModels | None = None


def get_chat_models() -> ChatModels:
    """The process's chat models (from settings on first use)."""
    global _models
    if _models is None:
        _models = ChatModels(get_settings())
    return _models


def set_chat_models(models: ChatModels | None) -> None:
    """Replace the process's chat models (tests, notebooks); None rebuilds from settings."""
    global _models
    _models = models


@contextmanager
def use_chat_model(model: BaseChatModel | None, settings: Settings | None = None) -> Iterator[None]:
    """Route every tier to `model` (None: offline) within the block."""
    global _models
    previous = _models
    base = settings or get_settings()
    if model is None:
        base = base.model_copy(update={"llm_base_url": None, "llm_api_key": None})
    _models = ChatModels(base, override=model)
    try:
        yield
    finally:
        _models = previous


# --------------------------------------------------------------------------- calls


def describe_error(exc: BaseException) -> str:
    """A one-line description of an endpoint failure for the log."""
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return "timed out"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _raw_text(message: object) -> str:
    if not isinstance(message, AIMessage):
        return ""
    calls = [str(c.get("args", "")) for c in message.invalid_tool_calls]
    calls += [str(c.get("args", "")) for c in message.tool_calls]
    text = message.content if isinstance(message.content, str) else str(message.content)
    return "\n".join([*calls, text]).strip()[:2000] or "(empty answer)"


def _validated(schema: type[T], out: object) -> tuple[T | None, str]:
    if not isinstance(out, dict):
        return None, "the answer was not a function call"
    parsed, error = out.get("parsed"), out.get("parsing_error")
    if error is not None:
        return None, _short_error(error)
    if parsed is None:
        return None, f"you did not call the function `{schema.__name__}`"
    try:
        value = parsed if isinstance(parsed, schema) else schema.model_validate(parsed)
    except ValidationError as exc:
        return None, _short_error(exc)
    return value, ""


def _short_error(error: object) -> str:
    if isinstance(error, ValidationError):
        parts = [
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in error.errors()
        ]
        return "; ".join(parts[:8])
    cause = getattr(error, "__cause__", None)
    if isinstance(cause, ValidationError):
        return _short_error(cause)
    return str(error).strip()[:500] or type(error).__name__


async def structured(
    task: str,
    schema: type[T],
    messages: Sequence[BaseMessage],
    *,
    fallback: Callable[[], T],
    usage: Usage,
    tier: Tier = Tier.STRUCTURED,
    model: str | None = None,
    max_tokens: int = 1024,
    check: Callable[[T], str | None] | None = None,
) -> T:
    """Ask for `schema` through function calling; validate, retry once, else `fallback()`.

    `check` adds validation the schema cannot express (e.g. ids that must exist): it returns
    an error message for the model, or None when the value is usable.
    """
    models = get_chat_models()
    chat = models.get(tier, model, max_tokens)
    if chat is None:
        usage.outcome(task, "offline")
        return fallback()
    try:
        bound = chat.with_structured_output(schema, method="function_calling", include_raw=True)
    except Exception as exc:  # a model class without tool calling
        log.warning(
            "%s: the chat model cannot call functions (%s); using the heuristic",
            task,
            describe_error(exc),
        )
        usage.outcome(task, "error")
        return fallback()
    convo = list(messages)
    for attempt in (1, 2):
        started = time.perf_counter()
        try:
            out = await asyncio.wait_for(
                bound.ainvoke(convo, config=NOSTREAM), timeout=models.timeout_s + 1.0
            )
        except Exception as exc:
            usage.request(task, None, time.perf_counter() - started)
            log.warning(
                "%s: the chat endpoint failed (%s); using the heuristic", task, describe_error(exc)
            )
            usage.outcome(task, "error")
            return fallback()
        raw = out.get("raw") if isinstance(out, dict) else None
        usage.request(
            task, raw if isinstance(raw, BaseMessage) else None, time.perf_counter() - started
        )
        value, error = _validated(schema, out)
        if value is not None and check is not None:
            error = check(value) or ""
            value = None if error else value
        if value is not None:
            usage.outcome(task, "ok" if attempt == 1 else "retried")
            return value
        log.info("%s: attempt %d did not validate: %s", task, attempt, error)
        convo += [
            AIMessage(content=_raw_text(raw)),
            HumanMessage(content=RETRY_PROMPT.format(error=error, name=schema.__name__)),
        ]
    log.warning("%s: the model's answer did not validate twice; using the heuristic", task)
    usage.outcome(task, "fallback")
    return fallback()


async def generate(
    task: str,
    messages: Sequence[BaseMessage],
    *,
    usage: Usage,
    tier: Tier = Tier.RESPOND,
    model: str | None = None,
    max_tokens: int = 512,
) -> str | None:
    """Free-text generation; None when offline, failed or empty (the caller's heuristic answers)."""
    models = get_chat_models()
    chat = models.get(tier, model, max_tokens)
    if chat is None:
        usage.outcome(task, "offline")
        return None
    started = time.perf_counter()
    try:
        reply = await asyncio.wait_for(chat.ainvoke(list(messages)), timeout=models.timeout_s + 1.0)
    except Exception as exc:
        usage.request(task, None, time.perf_counter() - started)
        log.warning(
            "%s: the chat endpoint failed (%s); answering without it", task, describe_error(exc)
        )
        usage.outcome(task, "error")
        return None
    usage.request(task, reply, time.perf_counter() - started)
    text = reply.text if isinstance(reply, BaseMessage) else ""
    if not text.strip():
        log.warning("%s: the model returned an empty answer; answering without it", task)
        usage.outcome(task, "fallback")
        return None
    usage.outcome(task, "ok")
    return text.strip()
