"""Support for the belief scenario tests: a `mind` fixture (offline heuristics or a scripted chat
model that answers like a sensible LLM would), and `turn`, which runs one user turn through the
belief path: ESS -> remember (with the ESS) -> bookkeeping's belief provenance -> reflection
when due.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from memory.services import ChatModels, Services
from memory.services.usage import Usage
from memory.write.episodes import remember
from tasks.ess import EvidenceScore, assess_ess
from tasks.provenance import ProvenanceResult, belief_provenance
from tasks.reflect import ReflectionResult, reflect
from tasks.route import heuristic_route
from tests.conftest import installed
from tests.unit.fake_chat import ScriptedChatModel

Answer = Callable[[list[BaseMessage]], dict[str, Any]]


def llm_ess(kind: str, score: float, *topics: str) -> dict[str, Any]:
    """An ESS answer as a model would give it."""
    strong = kind in ("empirical", "expert", "logical") and score >= 0.45
    return {
        "score": score,
        "specificity": 0.8 if strong else 0.2,
        "grounding": 0.85 if strong else 0.1,
        "rigor": 0.8 if strong else 0.1,
        "source_quality": 0.85 if strong else 0.05,
        "objectivity": 0.9 if strong else 0.1,
        "reasoning_type": kind,
        "topics": list(topics),
        "summary": "scripted",
        "belief_update_recommended": strong,
        "urgency": "low",
    }


def message_of(messages: list[BaseMessage]) -> str:
    """The user message inside the <message> fence of a prompt."""
    text = str(messages[-1].content)
    match = re.search(r"<message>\n(.*)\n</message>", text, re.S)
    return match.group(1) if match else text


def snapshot_of(messages: list[BaseMessage]) -> str:
    """The current snapshot inside the <snapshot> fence of the reflection prompt."""
    match = re.search(r"<snapshot>\n(.*)\n</snapshot>", str(messages[-1].content), re.S)
    return match.group(1) if match else ""


def episode_ids(messages: list[BaseMessage]) -> list[str]:
    """The short episode ids listed in the reflection prompt."""
    return re.findall(r"^- \[([0-9a-f\-]+)\]", str(messages[-1].content), re.M)


@dataclass
class Mind:
    """How the turn is thought about: `offline` heuristics or a `scripted` chat model."""

    name: str
    model: ScriptedChatModel | None = None

    def script(
        self,
        *,
        ess: dict[str, dict[str, Any]] | None = None,
        assess: dict[str, list[dict[str, Any]]] | None = None,
        reflection: Answer | None = None,
    ) -> None:
        """What the scripted model answers, by user message (no-op offline)."""
        if self.model is None:
            return
        ess_table, assess_table = ess or {}, assess or {}

        def score(messages: list[BaseMessage]) -> dict[str, Any]:
            return ess_table[message_of(messages)]

        def routed(messages: list[BaseMessage]) -> dict[str, Any]:
            text = message_of(messages)
            return {"route": heuristic_route(text).model_dump(), "evidence": ess_table[text]}

        def bearing(messages: list[BaseMessage]) -> dict[str, Any]:
            text = message_of(messages)
            return {"assessments": assess_table.get(text, []), "insight": f"Learned: {text[:80]}"}

        def triage(messages: list[BaseMessage]) -> dict[str, Any]:
            return {"reflect": True, "reason": "scripted"}

        def deep(messages: list[BaseMessage]) -> dict[str, Any]:
            return reflection(messages) if reflection else {"summary": "nothing"}

        self.model.by_tool.update(
            {
                "EvidenceScore": [score] * 200,
                "TurnAssessment": [routed] * 200,
                "BeliefAssessment": [bearing] * 200,
                "Triage": [triage] * 50,
                "Reflection": [deep] * 50,
            }
        )


@pytest.fixture(params=["offline", "scripted"])
def mind(request: pytest.FixtureRequest, services: Services) -> Iterator[Mind]:
    """Run the test once on offline heuristics and once with a scripted chat model (installed
    as the chat models of the parametrised services, which the agent's nodes then use)."""
    if request.param == "offline":
        with installed(services, ChatModels.offline_for(services.settings)):
            yield Mind("offline")
    else:
        model = ScriptedChatModel()
        with installed(services, ChatModels(services.settings, override=model)):
            yield Mind("scripted", model)


@dataclass
class Turn:
    """What one turn did on the belief path."""

    uid: str
    ess: EvidenceScore
    provenance: ProvenanceResult
    reflection: ReflectionResult | None


async def turn(services: Services, tenant: str, text: str, at: datetime) -> Turn:
    """One user turn through the belief path, as the agent and bookkeeping run it."""
    usage = Usage()
    ess = await assess_ess(text, chat=services.chat, usage=usage)
    stored = await remember(
        services,
        tenant=tenant,
        thread_id="t1",
        user_text=text,
        agent_text="I see.",
        at=at,
        ess=ess.record(),
    )
    episode = await services.graph.episodes.get(tenant, stored.uid)
    assert episode is not None
    provenance = await belief_provenance(services, episode, usage=usage)
    reflection = None
    if provenance.reflection_due:
        reflection = await reflect(services, tenant, usage=usage, now=at)
    return Turn(stored.uid, ess, provenance, reflection)
