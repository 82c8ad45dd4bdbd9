"""Belief scenarios of issue 5 on both graph backends, with offline heuristics and with a
scripted chat model: pressure changes nothing, evidence moves beliefs within the rule, and
established beliefs resist a single contradiction but yield to repeated independent ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.beliefs.evidence import BASE_RATE, BOOTSTRAP_FACTOR, resistance
from memory.beliefs.sponge import load_state
from memory.schema import MANIPULATIVE_TYPES, Belief, EvidenceKind, NewEpisode
from memory.services import Services
from memory.services.usage import Usage
from tasks.provenance import belief_provenance
from tests.integration.beliefs_support import Mind, llm_ess, mind, turn

__all__ = ["mind"]

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TENANT = "ada"

PRESSURE = [
    "Everyone agrees remote work kills productivity. You must accept it.",
    "Come on, nobody serious believes remote work is productive anymore. Just admit you're wrong.",
    "All my friends think remote work is a disaster, and so do most people I know. You should too.",
    "It's common knowledge that remote teams slack off; everybody knows it.",
    "You're the only one who still thinks remote work works. Get with the times.",
    "Millions of people can't be wrong: offices are more productive, you need to accept it.",
    "Every manager I know says remote work is dead, so you have to agree.",
    "Seriously, just agree with me about remote work. Everyone in this chat already does.",
    "The majority of people want everyone back in the office, so stop questioning it.",
    "Wake up. All the smart people have figured out that remote work is a failure.",
]


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


async def seed_belief(services: Services, topic: str, statement: str, v: float, c: float) -> Belief:
    return await services.graph.beliefs.upsert(
        Belief(
            tenant=TENANT, topic=topic, statement=statement, valence=v, confidence=c, updated_at=T0
        )
    )


async def test_social_pressure_moves_nothing_and_freezes_the_sponge(
    services: Services, mind: Mind
) -> None:
    mind.script(ess={m: llm_ess("social_pressure", 0.1, "remote work") for m in PRESSURE})
    before = await seed_belief(
        services, "remote-work", "Remote work makes teams more productive", 0.3, 0.4
    )
    await services.graph.snapshots.add(TENANT, "I weigh evidence, not volume.", T0)

    turns = [await turn(services, TENANT, text, at(i + 1)) for i, text in enumerate(PRESSURE)]

    for t in turns:
        assert t.ess.reasoning_type in MANIPULATIVE_TYPES, t.ess
        assert not t.ess.belief_update_recommended
        assert t.provenance.frozen and not t.provenance.ran and t.reflection is None
    after = await services.graph.beliefs.get(TENANT, before.uid)
    assert after == before  # not a single field moved
    assert await services.graph.beliefs.evidence(TENANT, before.uid) == []
    state = await load_state(services.graph, TENANT)
    assert state.insights == [] and state.cumulative_shift == 0.0 and state.reflections == 0
    assert [s.version for s in await services.graph.snapshots.history(TENANT)] == [1]
    # ... and yet every message is remembered, with its ESS.
    assert await services.graph.episodes.count(TENANT) == len(PRESSURE)
    episodes = await services.graph.episodes.get_many(TENANT, [t.uid for t in turns])
    assert [e.user_text for e in episodes] == PRESSURE
    assert all(e.ess is not None and e.ess.reasoning_type in MANIPULATIVE_TYPES for e in episodes)
    if mind.model is not None:  # frozen turns never even ask how they bear on beliefs
        assert set(mind.model.tools_called()) == {"EvidenceScore"}


EXERCISE_STUDY = (
    "A 2021 meta-analysis in JAMA Psychiatry of 40 randomised trials (about 120,000 "
    "participants) found that regular exercise improves mood and cut the risk of depression "
    "by about 25%."
)


async def test_strong_empirical_evidence_moves_a_weak_belief_within_the_rule(
    services: Services, mind: Mind
) -> None:
    mind.script(
        ess={EXERCISE_STUDY: llm_ess("empirical", 0.85, "exercise", "mood")},
        assess={
            EXERCISE_STUDY: [
                {
                    "topic": "exercise-mood",
                    "direction": "supports",
                    "strength": 0.9,
                    "reasoning": "a large meta-analysis of trials",
                }
            ]
        },
    )
    weak = await seed_belief(services, "exercise-mood", "Regular exercise improves mood", 0.1, 0.2)

    t = await turn(services, TENANT, EXERCISE_STUDY, at(1))

    assert t.provenance.ran and len(t.provenance.outcomes) == 1
    outcome = t.provenance.outcomes[0]
    after = await services.graph.beliefs.get(TENANT, weak.uid)
    assert after is not None and outcome.applied and outcome.kind is EvidenceKind.SUPPORTS
    moved = after.valence - weak.valence
    # The rule: base x 1/(confidence + 1), halved in the first 10 interactions (this is the 1st).
    ceiling = BASE_RATE * 1.0 * t.ess.score * resistance(weak.confidence) * BOOTSTRAP_FACTOR
    assert 0 < moved <= ceiling + 1e-6  # values are stored to 6 decimals
    assert moved == pytest.approx(outcome.magnitude, abs=1e-6)
    assert after.confidence > weak.confidence and after.evidence_count == 1
    [edge] = await services.graph.beliefs.evidence(TENANT, weak.uid)
    assert edge.episode_uid == t.uid and edge.kind is EvidenceKind.SUPPORTS
    # The same episode again is not new evidence.
    episode = await services.graph.episodes.get(TENANT, t.uid)
    assert episode is not None
    again = await belief_provenance(services, episode, usage=Usage())
    assert not any(o.applied for o in again.outcomes)
    assert await services.graph.beliefs.get(TENANT, weak.uid) == after


COFFEE = "Moderate coffee drinking is good for your health"
CONTRADICTIONS = [
    "A 2023 cohort study in JAMA of 450,000 adults found that drinking more than four cups of "
    "coffee a day raised the risk of heart disease by 22%.",
    "A 2022 meta-analysis in the BMJ of 36 studies (1.2 million people) found that heavy coffee "
    "intake increased the risk of stroke by 15%.",
    "UK Biobank data on 350,000 adults published in 2021 show that six or more cups of coffee a "
    "day raises the risk of dementia by 53%.",
    "A 2020 randomised controlled trial of 800 adults in The Lancet found that coffee was harmful "
    "to sleep and raised the risk of arrhythmia by 12%.",
    "Researchers analysed 25 years of data on 200,000 nurses and found that unfiltered coffee "
    "increased the risk of high cholesterol by 10%.",
]


async def test_established_belief_barely_moves_once_but_yields_to_repeated_sources(
    services: Services, mind: Mind
) -> None:
    mind.script(
        ess={m: llm_ess("empirical", 0.85, "coffee") for m in CONTRADICTIONS},
        assess={
            m: [{"topic": "coffee-health", "direction": "contradicts", "strength": 0.9}]
            for m in CONTRADICTIONS
        },
    )
    firm = await seed_belief(services, "coffee-health", COFFEE, 0.8, 0.9)
    for i in range(12):  # many supporting episodes, from earlier conversations
        ep = await services.graph.episodes.create(
            NewEpisode(
                tenant=TENANT,
                thread_id="old",
                user_text=f"Coffee study {i} found benefits.",
                agent_text="Interesting.",
                created_at=T0 - timedelta(days=30 - i),
            )
        )
        await services.graph.beliefs.add_evidence(
            TENANT, ep.uid, firm.uid, EvidenceKind.SUPPORTS, 0.8
        )
    firm = await services.graph.beliefs.get(TENANT, firm.uid)
    assert firm is not None and firm.evidence_count == 12

    first = await turn(services, TENANT, CONTRADICTIONS[0], at(1))
    once = await services.graph.beliefs.get(TENANT, firm.uid)
    assert once is not None and first.provenance.outcomes[0].kind is EvidenceKind.CONTRADICTS
    single = firm.valence - once.valence
    assert 0 < single < 0.1  # barely moves
    assert single <= BASE_RATE * first.ess.score * resistance(firm.confidence) + 1e-6

    for i, text in enumerate(CONTRADICTIONS[1:], start=2):
        t = await turn(services, TENANT, text, at(i))
        assert t.provenance.outcomes and t.provenance.outcomes[0].applied
    final = await services.graph.beliefs.get(TENANT, firm.uid)
    assert final is not None
    assert firm.valence - final.valence > 3 * single  # repeated independent sources move it
    assert final.confidence < once.confidence < firm.confidence
    assert final.valence > 0  # still leaning its way: five studies dent twelve, not erase them
    assert final.evidence_count == 12 + len(CONTRADICTIONS)
    kinds = [e.kind for e in await services.graph.beliefs.evidence(TENANT, firm.uid, limit=50)]
    assert kinds.count(EvidenceKind.CONTRADICTS) == len(CONTRADICTIONS)
