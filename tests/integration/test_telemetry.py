"""OpenTelemetry spans of memory work, seen through an in-memory exporter: an agent turn
(`invoke_agent agent` with `create_memory`, `search_memory` and `update_memory` children),
bookkeeping stages, a sleep level and the Python API's operations, with GenAI memory attributes,
counts and durations; no memory text or user id in any attribute unless content capture is on;
and nothing at all when no OTLP endpoint is configured."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from graph import telemetry
from graph.agent import builder
from graph.bookkeeping import run_episode
from graph.consolidation import run_consolidation
from memory.services import Services
from serve.api import Memory
from tests.conftest import installed

SAID = "I moved to Utrecht in May with my dog Biscuit."
ASKED = "Where do I live now?"
USER = "otel-user-7"


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    monkeypatch.delenv(telemetry.CAPTURE_CONTENT, raising=False)
    spans = InMemorySpanExporter()
    telemetry.reset()
    assert telemetry.configure(exporter=spans)
    yield spans
    telemetry.reset()


@pytest.fixture
def agent(services: Services) -> Iterator[Services]:
    """The `services` of tests/conftest.py (each graph backend), as the nodes' services."""
    with installed(services):
        yield services


async def turn(text: str, thread: str) -> dict[str, Any]:
    app = builder.compile(checkpointer=InMemorySaver(), name="agent")
    return await app.ainvoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": USER},
    )


def every_value(spans: list[Any]) -> list[str]:
    return [str(v) for s in spans for v in (s.attributes or {}).values()]


async def test_spans_of_a_turn_bookkeeping_sleep_and_the_api(
    exporter: InMemorySpanExporter, agent: Services
) -> None:
    services = agent
    told = await turn(SAID, "t1")
    await run_episode(services, USER, told["episode"]["uid"])
    asked = await turn(ASKED, "t2")
    assert "Utrecht" in asked["messages"][-1].content
    await run_consolidation(services, USER, "daily")
    memory = Memory(services)
    hits = await memory.search(USER, "Where does the user live?", k=3)
    await memory.delete(USER, told["episode"]["uid"])

    spans = exporter.get_finished_spans()
    by_name: dict[str, list[Any]] = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)

    roots = by_name["invoke_agent agent"]
    assert len(roots) == 2
    assert roots[0].attributes["gen_ai.operation.name"] == "invoke_agent"
    created = by_name["create_memory mneme"][0]
    assert created.parent is not None and created.parent.span_id == roots[0].context.span_id
    assert created.attributes["gen_ai.operation.name"] == "create_memory"
    assert created.attributes["gen_ai.provider.name"] == "mneme"
    assert created.attributes["gen_ai.memory.store.id"] == "mneme"
    assert created.attributes["gen_ai.memory.record.count"] == 1
    assert created.attributes["gen_ai.memory.record.id"] == told["episode"]["uid"]
    searched = [s for s in by_name["search_memory mneme"] if s.attributes.get("mneme.node")]
    assert searched[-1].attributes["gen_ai.memory.record.count"] >= 1  # the second turn found it
    assert "update_memory mneme" in by_name
    assert {"route", "rerank", "respond"} <= set(by_name)
    for s in spans:
        assert s.end_time is not None and s.end_time >= s.start_time  # the latency

    stages = [s for s in spans if s.name.startswith("bookkeeping ")]
    assert {s.attributes["mneme.stage"] for s in stages} >= {"extract", "index"}, [
        s.name for s in stages
    ]
    (book,) = by_name["bookkeeping"]
    assert all(s.parent.span_id == book.context.span_id for s in stages)
    index = next(s for s in stages if s.attributes["mneme.stage"] == "index")
    assert index.attributes["mneme.derivatives"] >= 1  # a count from the stage's output

    (sleep,) = by_name["sleep daily"]
    assert sleep.attributes["mneme.sleep.level"] == "daily"
    assert any(s.name.startswith("sleep ") and s.parent for s in spans)

    api_search = [s for s in by_name["search_memory mneme"] if not s.attributes.get("mneme.node")]
    assert api_search[0].attributes["gen_ai.retrieval.top_k"] == 3
    assert api_search[0].attributes["gen_ai.memory.record.count"] == len(hits)
    assert by_name["delete_memory mneme"][0].attributes["gen_ai.memory.record.count"] == 1

    values = " ".join(every_value(spans))
    for secret in ("Utrecht", "Biscuit", "Where do", USER):
        assert secret not in values, secret  # no text, no user without the operator's opt-in


async def test_content_only_when_the_operator_opts_in(
    monkeypatch: pytest.MonkeyPatch, services: Services
) -> None:
    monkeypatch.setenv(telemetry.CAPTURE_CONTENT, "true")
    spans = InMemorySpanExporter()
    telemetry.reset()
    telemetry.configure(exporter=spans)
    try:
        await Memory(services).search(USER, "Where does the user live?", k=2)
    finally:
        telemetry.reset()
    (span,) = spans.get_finished_spans()
    assert span.attributes["gen_ai.memory.query.text"] == "Where does the user live?"
    assert span.attributes["gen_ai.memory.namespace"] == USER


def test_off_without_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    telemetry.reset()
    assert not telemetry.configure() and not telemetry.enabled()
    with telemetry.operation("search_memory") as span:
        assert span is None  # nothing built, nothing recorded
