"""The agent's typed channels match what fills them, and each field says what it is."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import HumanMessage

from graph.agent import after_route, graph
from memory.retrieval.candidates import Candidate
from nodes.state import (
    Evidence,
    Found,
    Route,
    SearchPlan,
    evidence_state,
    found_state,
    route_of,
    route_state,
    turn_of,
)
from tasks.content import Turn, read_turn
from tasks.ess import EvidenceScore, heuristic_ess
from tasks.route import RouteDecision, SearchPass, heuristic_route

GATE_FIELDS = {"manipulative", "passed"}


def test_each_channel_type_has_the_fields_of_what_fills_it() -> None:
    assert set(Route.__annotations__) == set(RouteDecision.model_fields)
    assert set(SearchPlan.__annotations__) == set(SearchPass.model_fields)
    assert set(Evidence.__annotations__) - GATE_FIELDS == set(EvidenceScore.model_fields)
    kept = {"rank", "detail"}  # what the rerank and the reply add to the memories they keep
    assert set(Found.__annotations__) - kept == {f.name for f in dataclasses.fields(Candidate)}
    told = read_turn([HumanMessage(content="I moved to Porto", id="m1")])
    assert set(told) == set(Turn.__annotations__)


def test_the_channel_values_are_what_the_tasks_answered() -> None:
    decision = heuristic_route("When did I move to Porto?")
    route = route_state(decision)
    assert route["kind"] == "TEMPORAL" and route["temporal_expansion"]
    assert RouteDecision.model_validate(route) == decision
    score = heuristic_ess("A 2023 study of 4,000 people found it.")
    assert EvidenceScore.model_validate(evidence_state(score)) == score
    found = Candidate(
        episode_uid="e1",
        score=0.5,
        similarity=0.4,
        created_at=datetime(2026, 1, 2, tzinfo=UTC),
        thread_id="t",
        content="User: hi",
    )
    assert found_state(found)["created_at"] == "2026-01-02T00:00:00+00:00"


def test_a_state_without_a_route_or_turn_has_the_one_default() -> None:
    empty: dict[str, Any] = {}
    route = route_of(empty)  # type: ignore[arg-type]
    assert route == route_state(RouteDecision(kind="SIMPLE"))
    assert route["n_results"] is None and route["passes"] == []
    assert after_route(empty) == ["retrieve", "ess_gate"]  # type: ignore[arg-type]
    assert turn_of(empty)["empty"] and turn_of(empty)["missing"]  # type: ignore[arg-type]
    assert after_route({"route": route_state(RouteDecision(kind="NONE"))}) == [
        "respond",
        "ess_gate",
    ]


def test_the_published_state_schema_describes_every_channel_field() -> None:
    schema = graph.get_output_jsonschema()
    defs = schema["$defs"]
    for name in ("Turn", "Route", "SearchPlan", "Evidence", "Recorded", "Found"):
        for field, prop in defs[name]["properties"].items():
            assert prop.get("description"), f"{name}.{field}"
