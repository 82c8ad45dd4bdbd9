"""A real ChatOpenAI client against endpoints that are down, slow, or answer garbage: every turn
still completes with the heuristic answers, a logged warning, and the failures counted."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graph.agent import builder
from graph.bookkeeping import run_episode
from memory.embeddings.embedders import Embedder
from memory.services import ChatModels, Services, set_services
from tests.conftest import make_settings

Handler = Callable[[dict[str, Any]], tuple[bytes, float]]


def completion(message: dict[str, Any]) -> bytes:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        }
    ).encode()


def garbage(request: dict[str, Any]) -> tuple[bytes, float]:
    return b"<html>502 upstream hiccup</html>", 0.0


def broken_tools(request: dict[str, Any]) -> tuple[bytes, float]:
    if request.get("tools"):
        name = request["tools"][0]["function"]["name"]
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": name, "arguments": "{not: json"},
        }
        return completion({"content": None, "tool_calls": [call]}), 0.0
    return completion({"content": ""}), 0.0


def slow(request: dict[str, Any]) -> tuple[bytes, float]:
    return completion({"content": "late"}), 5.0


@pytest.fixture
async def endpoint() -> AsyncIterator[Callable[[Handler], Any]]:
    servers: list[asyncio.base_events.Server] = []
    seen: list[dict[str, Any]] = []

    async def start(handler: Handler) -> tuple[str, list[dict[str, Any]]]:
        async def on_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode().split("\r\n"):
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":")[1])
                body = json.loads(await reader.readexactly(length) or b"{}")
                seen.append(body)
                payload, delay = handler(body)
                await asyncio.sleep(delay)
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
                    + payload
                )
                await writer.drain()
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(on_conn, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1", seen

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


@pytest.fixture
async def agent(tmp_path: Path, embedder: Embedder) -> AsyncIterator[Services]:
    svc = await Services.open(
        make_settings(tmp_path), embedder=embedder, pipeline=run_episode, sweep_interval_s=None
    )
    set_services(svc)
    try:
        yield svc
    finally:
        set_services(None)
        await svc.close()


def use_endpoint(agent: Services, tmp_path: Path, url: str, timeout_s: float = 2.0) -> None:
    settings = make_settings(tmp_path, llm_base_url=url, llm_timeout_s=timeout_s)
    agent.chat = ChatModels(settings)


async def one_turn(text: str = "My favourite colour is teal. What's my favourite colour?") -> dict:
    app = builder.compile(checkpointer=InMemorySaver())
    return await app.ainvoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": "t"}},
        context={"user_id": "alice"},
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_endpoint_down(agent, tmp_path, caplog) -> None:
    use_endpoint(agent, tmp_path, f"http://127.0.0.1:{free_port()}/v1")
    with caplog.at_level(logging.WARNING, logger="mneme.llm"):
        out = await one_turn()
    assert out["messages"][-1].content  # the heuristic answer
    assert out["episode"]["stored"]
    assert out["usage"]["errors"] == 2  # route (with the ESS) and respond failed once, no retry
    assert "Connection error" in caplog.text


async def test_endpoint_returns_garbage(agent, tmp_path, endpoint, caplog) -> None:
    url, seen = await endpoint(garbage)
    use_endpoint(agent, tmp_path, url)
    with caplog.at_level(logging.WARNING, logger="mneme.llm"):
        out = await one_turn()
    assert out["messages"][-1].content and out["usage"]["fallbacks"] == 2
    assert len(seen) == 2 and "using the heuristic" in caplog.text


async def test_unparseable_tool_calls_are_retried_once_then_fall_back(
    agent, tmp_path, endpoint
) -> None:
    url, seen = await endpoint(broken_tools)
    use_endpoint(agent, tmp_path, url)
    out = await one_turn()
    tasks = out["usage"]["tasks"]
    assert tasks["route"]["calls"] == 2 and tasks["route"]["outcome"] == "fallback"
    assert "ess" not in tasks  # scored by the router's call, which fell back to the cues
    assert out["ess"]["reasoning_type"]
    assert tasks["respond"]["outcome"] == "fallback"  # an empty answer
    assert out["messages"][-1].content
    retry = seen[1]["messages"][-1]["content"]
    assert "could not be used" in retry
    # what the server received follows the llama.cpp rules: max_tokens in the body, tool forced
    assert all("max_tokens" in body for body in seen)
    assert seen[0]["tool_choice"]["function"]["name"] == "TurnAssessment"


async def test_slow_endpoint_times_out(agent, tmp_path, endpoint) -> None:
    url, _ = await endpoint(slow)
    use_endpoint(agent, tmp_path, url, timeout_s=0.5)
    start = time.monotonic()
    out = await one_turn()
    assert out["messages"][-1].content and out["usage"]["errors"] == 2
    assert time.monotonic() - start < 15


async def test_bookkeeping_survives_a_broken_endpoint(agent, tmp_path, endpoint) -> None:
    url, _ = await endpoint(broken_tools)
    use_endpoint(agent, tmp_path, url)
    out = await one_turn("I adopted a parrot named Kiwi in Lisbon.")
    async with asyncio.timeout(120):
        await agent.bookkeeping.drain()
    episode = await agent.graph.episodes.get("alice", out["episode"]["uid"])
    assert episode.status.value == "processed"
    assert await agent.vectors.count("derivatives", "alice") >= 1
    assert agent.chat.totals.snapshot()["extract"]["fallbacks"] >= 1
