"""Test helpers for the agent: a scripted chat model, a network guard, services injection.

`assessment(route, evidence)` builds the arguments of the router's shared call
(`TurnAssessment`), with neutral defaults for either half.

`ScriptedChatModel` is a `GenericFakeChatModel`-style fake whose `bind_tools` (and therefore
`with_structured_output`) works: each scripted entry is a text reply, the arguments of a tool
call, a ready `AIMessage`, an exception to raise, a `Delay`, or a callable of the messages.
Entries can be keyed by tool name (`by_tool`) so a whole agent turn can be scripted regardless
of node order.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from memory.embeddings.embedders import Embedder
from memory.services import ChatModels, Services, set_services
from tests.conftest import make_settings


@dataclass
class Delay:
    """Sleep `seconds`, then answer with `then` (tests timeouts)."""

    seconds: float
    then: Any = "too late"


class ScriptedChatModel(BaseChatModel):
    """A chat model that replays a script; records every call it receives."""

    script: list[Any] = Field(default_factory=list)
    by_tool: dict[str, list[Any]] = Field(default_factory=dict)
    default_text: str | None = None
    calls: list[dict[str, Any]] = Field(default_factory=list)
    tool_name: str | None = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        name = convert_to_openai_tool(tools[0])["function"]["name"] if tools else None
        return self.model_copy(update={"tool_name": name})  # shares script and calls

    def _next(self, messages: list[BaseMessage]) -> Any:
        tool = self.tool_name
        self.calls.append({"tool": tool, "messages": list(messages)})
        queue = self.by_tool.get(tool) if tool in self.by_tool else self.script
        if queue:
            return queue.pop(0)
        if tool is None and self.default_text is not None:
            return self.default_text
        raise AssertionError(f"ScriptedChatModel: nothing scripted for tool={tool!r}")

    def _message(self, item: Any, messages: list[BaseMessage]) -> AIMessage:
        if callable(item) and not isinstance(item, BaseMessage | type):
            item = item(messages)
        if isinstance(item, BaseException):
            raise item
        usage = {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18}
        n = len(self.calls)
        if isinstance(item, AIMessage):
            return item
        if isinstance(item, dict):
            return AIMessage(
                content="",
                tool_calls=[{"name": self.tool_name or "tool", "args": item, "id": f"call_{n}"}],
                usage_metadata=usage,  # type: ignore[arg-type]
            )
        return AIMessage(content=str(item), usage_metadata=usage)  # type: ignore[arg-type]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        item = self._next(messages)
        if isinstance(item, Delay):
            raise AssertionError("Delay needs the async path")
        return ChatResult(generations=[ChatGeneration(message=self._message(item, messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        item = self._next(messages)
        if isinstance(item, Delay):
            await asyncio.sleep(item.seconds)
            item = item.then
        return ChatResult(generations=[ChatGeneration(message=self._message(item, messages))])

    def tools_called(self) -> list[str | None]:
        """The tool bound at each call, in order (None: a plain text call)."""
        return [c["tool"] for c in self.calls]


class NetworkBlocked(RuntimeError):
    """A unit test tried to reach the network."""


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any attempt to open an internet socket or resolve a name."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NetworkBlocked(f"unit tests must not use the network: {args[1:] or kwargs}")

    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            refuse(self, address)
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


async def open_agent_services(tmp_path: Path, embedder: Embedder, **overrides: Any) -> Services:
    """Real services on a fresh embedded memory (offline, the bookkeeping graph on a queue that
    sweeps only at start), installed as the process's services."""
    from graph.bookkeeping import run_episode

    svc = await Services.open(
        make_settings(tmp_path, "sqlite", **overrides),
        embedder=embedder,
        pipeline=run_episode,
        sweep_interval_s=None,
    )
    set_services(svc)
    return svc


@pytest.fixture
async def agent_services(tmp_path: Path, embedder: Embedder) -> AsyncIterator[Services]:
    """Real SQLite + in-memory Qdrant + the real embedder, as the agent's services, offline.

    Bookkeeping runs on the services' queue without the periodic sweep; tests drain it.
    """
    svc = await open_agent_services(tmp_path, embedder)
    try:
        yield svc
    finally:
        set_services(None)
        await svc.close()


@pytest.fixture
def fake_chat(agent_services: Services) -> Iterator[Callable[..., ScriptedChatModel]]:
    """Make a scripted model the chat model of every tier of the agent's services."""
    previous = agent_services.chat

    def use(**kwargs: Any) -> ScriptedChatModel:
        model = ScriptedChatModel(**kwargs)
        agent_services.chat = ChatModels(agent_services.settings, override=model)
        return model

    yield use
    agent_services.chat = previous


@pytest.fixture
def offline(agent_services: Services) -> Services:
    """Offline mode: the agent's services with no chat endpoint configured."""
    agent_services.chat = ChatModels.offline_for(agent_services.settings)
    return agent_services


def runtime(**context: Any) -> Any:
    """A `Runtime` carrying a `Context` built from keyword arguments (user_id defaults to alice)."""
    from langgraph.runtime import Runtime

    from nodes.context import Context

    context.setdefault("user_id", "alice")
    return Runtime(context=Context(**context))


def asleep(level: str, at: Any) -> dict[str, Any]:
    """A hand-built state of the sleep graph's stages: the level and the run's checked time."""
    return {"level": level, "at": at.isoformat()}


async def loaded(uid: str, **context: Any) -> dict[str, Any]:
    """A bookkeeping state after `load` read episode `uid`: what every later stage is given."""
    from nodes.bookkeeping import load

    state = {"episode_uid": uid}
    return {**state, **await load(state, runtime(**context))}


def human(text: Any) -> dict[str, Any]:
    """A hand-built agent state holding one user message."""
    from langchain_core.messages import HumanMessage

    from tasks.content import read_turn

    messages = [HumanMessage(content=text, id="m1")]
    return {"messages": messages, "turn": read_turn(messages)}


async def seed(
    services: Services, tenant: str, facts: Sequence[str], thread: str = "t0", at: Any = None
) -> list[str]:
    """Remember each fact as a turn and run its bookkeeping now (with the current chat model)."""
    from graph.bookkeeping import run_episode
    from memory.write.episodes import remember

    uids = []
    for fact in facts:
        result = await remember(
            services, tenant=tenant, thread_id=thread, user_text=fact, agent_text="Noted.", at=at
        )
        await run_episode(services, tenant, result.uid)
        uids.append(result.uid)
    return uids


NEUTRAL_EVIDENCE: dict[str, Any] = {
    "score": 0.1,
    "specificity": 0.1,
    "grounding": 0.1,
    "rigor": 0.1,
    "source_quality": 0.1,
    "objectivity": 0.5,
    "reasoning_type": "no_argument",
}
"""The evidence half of a scripted router answer for a message that argues nothing."""


def assessment(
    route: dict[str, Any] | None = None, evidence: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Arguments of a scripted `TurnAssessment` call (the router's one call per turn)."""
    return {
        "route": route or {"kind": "SIMPLE", "passes": [{"query": None}]},
        "evidence": evidence or NEUTRAL_EVIDENCE,
    }
