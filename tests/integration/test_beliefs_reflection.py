"""Reflection scenarios of issue 5 on both graph backends, offline and with a scripted model:
it fires at the trigger, keeps the snapshot's facets, lands patches with provenance, and a
too-short snapshot leaves the previous version current."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import BaseMessage

from graph.consolidation import run_consolidation
from memory.beliefs.evidence import propose_snapshot
from memory.beliefs.revision import MAX_NEW_CONFIDENCE, MAX_PATCH_STEP
from memory.beliefs.sponge import REFLECT_EVERY, load_state, status
from memory.schema import Belief, EvidenceKind
from memory.services import Services
from memory.services.usage import Usage
from tasks.reflect import reflect
from tests.integration.beliefs_support import (
    Mind,
    episode_ids,
    llm_ess,
    mind,
    snapshot_of,
    turn,
)

__all__ = ["mind"]

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TENANT = "ada"
SNAPSHOT = (
    "I am curious about how people live and work. I enjoy concrete examples more than slogans. "
    "I change my mind only for good reasons, and I say so when I do. I keep track of what "
    "matters to this person: their robotics startup, their sister Grace in Lisbon, their long "
    "evening walks. I am warm but direct, and I admit uncertainty plainly."
)
FACETS = [s for s in re.split(r"(?<=\.)\s+", SNAPSHOT) if s]

SUPPORT = (
    "A 2021 meta-analysis in JAMA Psychiatry of 40 randomised trials (about 120,000 "
    "participants) found that regular exercise improves mood and cut the risk of depression "
    "by about 25%."
)
CONTRADICT = (
    "A 2022 randomised trial of 2,000 adults published in The Lancet found that regular exercise "
    "did not improve mood and had no effect on depression scores."
)
SUPPORT_2 = (
    "A 2019 Cochrane review of 35 trials (2,498 participants) found that exercise improves mood "
    "in adults with depression, with moderate-certainty evidence."
)
TURNS = [
    SUPPORT,
    CONTRADICT,
    SUPPORT_2,
    CONTRADICT.replace("2022", "2023"),
    SUPPORT.replace("2021", "2020"),
]


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def scripted_reflection(messages: list[BaseMessage]) -> dict[str, Any]:
    """What a sensible model answers: a bounded-looking patch citing every listed episode, one new
    belief, and the snapshot extended PRESERVE-first."""
    ids = episode_ids(messages)
    return {
        "patches": [
            {
                "topic": "exercise-mood",
                "valence": 0.9,
                "confidence": 0.95,
                "contested": True,
                "evidence": ids,
                "direction": "supports",
                "reasoning": "trials mostly agree, one large trial does not",
            }
        ],
        "new_beliefs": [
            {
                "topic": "walking",
                "statement": "Daily walks lift my mood",
                "valence": 0.9,
                "confidence": 0.9,
                "evidence": ids[:1],
                "reasoning": "follows from the trials",
            }
        ],
        "snapshot": snapshot_of(messages)
        + " Lately I have weighed several trials on exercise and mood: mostly positive, not all.",
        "summary": "exercise evidence integrated",
    }


async def test_reflection_fires_at_the_trigger_keeps_facets_and_lands_patches(
    services: Services, mind: Mind
) -> None:
    mind.script(
        ess={m: llm_ess("empirical", 0.85, "exercise") for m in TURNS},
        assess={
            m: [
                {
                    "topic": "exercise-mood",
                    "direction": "contradicts" if "did not" in m else "supports",
                    "strength": 0.9,
                }
            ]
            for m in TURNS
        },
        reflection=scripted_reflection,
    )
    graph = services.graph
    belief = await graph.beliefs.upsert(
        Belief(
            tenant=TENANT,
            topic="exercise-mood",
            statement="Regular exercise improves mood",
            valence=0.1,
            confidence=0.2,
            updated_at=T0,
        )
    )
    v1 = await graph.snapshots.add(TENANT, SNAPSHOT, T0)

    fired_at = None
    for i, text in enumerate(TURNS, start=1):
        t = await turn(services, TENANT, text, at(i))
        if t.reflection is not None:
            fired_at = i
            break
        assert (await load_state(graph, TENANT)).reflections == 0
    assert fired_at is not None, "the shift trigger never fired"
    assert t.provenance.reflection_due and t.reflection is not None and t.reflection.ran
    state = await load_state(graph, TENANT)
    assert state.reflections == 1 and state.cumulative_shift == 0.0 and state.insights == []

    # The snapshot: a new version, linked to the previous, every facet kept.
    history = await graph.snapshots.history(TENANT)
    assert [s.version for s in history] == [2, 1] and history[1] == v1
    assert t.reflection.snapshot is not None and t.reflection.snapshot.accepted
    assert len(history[0].text) >= 0.6 * len(SNAPSHOT)
    assert all(facet in history[0].text for facet in FACETS)

    # Patches land in the graph, with provenance edges from the episodes they cite.
    revisions = {r.topic: r for r in t.reflection.revisions}
    patch = revisions["exercise-mood"]
    stored = await graph.beliefs.get(TENANT, belief.uid)
    assert stored == patch.after and stored is not None and stored.contested
    assert patch.cited, "a patch must rest on episodes"
    edges = {e.episode_uid: e for e in await graph.beliefs.evidence(TENANT, belief.uid)}
    assert set(patch.cited) <= set(edges)
    assert patch.before is not None
    assert abs(stored.valence - patch.before.valence) <= MAX_PATCH_STEP + 1e-9
    assert abs(stored.confidence - patch.before.confidence) <= MAX_PATCH_STEP + 1e-9
    if mind.name == "scripted":
        new = await graph.beliefs.get_by_topic(TENANT, "walking")
        assert new is not None and new.confidence <= MAX_NEW_CONFIDENCE
        [edge] = await graph.beliefs.evidence(TENANT, new.uid)
        assert edge.kind is EvidenceKind.SUPPORTS and edge.reasoning.startswith("reflection:")
    else:  # offline: the evidence became mixed, and the contradicting trial is cited for it
        assert all(edges[uid].kind is EvidenceKind.CONTRADICTS for uid in patch.cited)


async def test_reflection_fires_every_twenty_interactions(services: Services, mind: Mind) -> None:
    chat = [f"Today I walked {i + 1} kilometres by the river." for i in range(REFLECT_EVERY)]
    mind.script(ess={m: llm_ess("no_argument", 0.1) for m in chat})
    for i, text in enumerate(chat, start=1):
        t = await turn(services, TENANT, text, at(i))
        assert (t.reflection is not None) == (i == REFLECT_EVERY), i
    assert t.reflection is not None and t.reflection.ran
    st = await status(services.graph, TENANT)
    assert st.state.reflections == 1 and st.since_reflection == 0 and not st.due()


async def test_too_short_snapshot_is_rejected_and_the_previous_stays_current(
    services: Services, mind: Mind
) -> None:
    graph = services.graph
    v1 = await graph.snapshots.add(TENANT, SNAPSHOT, T0)
    for text in ("I like facts.", SNAPSHOT[: int(0.5 * len(SNAPSHOT))]):
        outcome = await propose_snapshot(graph, TENANT, text, at(1))
        assert not outcome.accepted and outcome.current == v1 and outcome.reason
    if mind.name == "scripted":  # the same rule guards what reflection proposes
        mind.script(reflection=lambda messages: {"snapshot": "I like facts.", "summary": "terse"})
        result = await reflect(services, TENANT, usage=Usage(), now=at(2), force=True)
        assert result.ran and result.snapshot is not None and not result.snapshot.accepted
    assert await graph.snapshots.current(TENANT) == v1
    assert await graph.snapshots.history(TENANT) == [v1]


async def test_deep_sleep_reflects_on_what_is_pending(services: Services, mind: Mind) -> None:
    """Insights short of the trigger are reflected on at deep sleep, not left waiting for the
    twentieth turn; a micro run does not reflect."""
    mind.script(
        ess={m: llm_ess("empirical", 0.85, "exercise") for m in TURNS[:1]},
        assess={
            m: [{"topic": "exercise-mood", "direction": "supports", "strength": 0.9}]
            for m in TURNS[:1]
        },
        reflection=scripted_reflection,
    )
    await services.graph.beliefs.upsert(
        Belief(
            tenant=TENANT,
            topic="exercise-mood",
            statement="Regular exercise improves mood",
            valence=0.1,
            confidence=0.2,
            updated_at=T0,
        )
    )
    await services.graph.snapshots.add(TENANT, SNAPSHOT, T0)
    t = await turn(services, TENANT, TURNS[0], at(1))
    before = await status(services.graph, TENANT)
    assert t.reflection is None and not before.due() and before.state.insights

    later = (at(1) + timedelta(days=1)).isoformat()
    micro = await run_consolidation(services, TENANT, "micro", later)
    assert micro["report"]["reflection"] is None and "reflect" not in micro["report"]["stages"]
    deep = await run_consolidation(services, TENANT, "deep", later)

    reflection = deep["report"]["reflection"]
    assert reflection["ran"] is True and reflection["reason"] != "triage: skipped"
    assert reflection["reflected"] is True
    state = await load_state(services.graph, TENANT)
    assert state.reflections == 1 and state.insights == []
    if mind.name == "scripted":  # the model's patch and extended snapshot landed
        assert reflection["revisions"] >= 1 and reflection["snapshot_kept"] is True
        assert [s.version for s in await services.graph.snapshots.history(TENANT)] == [2, 1]
