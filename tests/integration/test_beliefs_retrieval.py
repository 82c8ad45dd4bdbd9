"""BELIEF_QUERY retrieval and belief decay on both graph backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.beliefs.evidence import (
    CONFIDENCE_DECAY_PER_DAY,
    STALE_AFTER,
    decay_beliefs,
    list_active_beliefs,
)
from memory.beliefs.sponge import add_shift, load_state
from memory.beliefs.views import belief_views
from memory.schema import Belief, EvidenceKind, NewEpisode
from memory.services import Services

T0 = datetime(2026, 1, 10, 8, 0, tzinfo=UTC)
TENANT = "ada"


async def episode(services: Services, text: str, days: int) -> str:
    result = await services.graph.episodes.create(
        NewEpisode(
            tenant=TENANT,
            thread_id="t",
            user_text=text,
            agent_text="Noted.",
            created_at=T0 + timedelta(days=days),
        )
    )
    return result.uid


async def belief(services: Services, topic: str, statement: str, v: float, c: float) -> Belief:
    return await services.graph.beliefs.upsert(
        Belief(
            tenant=TENANT, topic=topic, statement=statement, valence=v, confidence=c, updated_at=T0
        )
    )


async def test_belief_query_brings_the_belief_and_its_evidence_by_strength(
    services: Services,
) -> None:
    coffee = await belief(
        services, "coffee-health", "Moderate coffee drinking is good for your health", 0.6, 0.7
    )
    await belief(services, "tomato-pruning", "Pruning tomato suckers raises yields", 0.4, 0.5)
    weak = await episode(services, "A small survey said coffee drinkers feel better.", 1)
    strong = await episode(
        services,
        "A 2021 cohort of 500,000 adults linked 2-3 cups of coffee a day to 12% lower mortality.",
        2,
    )
    against = await episode(services, "A trial found coffee raised blood pressure.", 3)
    graph = services.graph
    await graph.beliefs.add_evidence(
        TENANT, weak, coffee.uid, EvidenceKind.SUPPORTS, 0.3, "small survey"
    )
    await graph.beliefs.add_evidence(
        TENANT, strong, coffee.uid, EvidenceKind.SUPPORTS, 0.9, "cohort"
    )
    await graph.beliefs.add_evidence(
        TENANT, against, coffee.uid, EvidenceKind.CONTRADICTS, 0.6, "trial"
    )

    views = await belief_views(services, TENANT, "What do you think about drinking coffee?")

    assert [v.belief.topic for v in views] == ["coffee-health"]  # the garden is not relevant
    view = views[0]
    assert view.belief.evidence_count == 3 and view.similarity >= 0.3
    assert [e.episode_uid for e in view.evidence] == [strong, against, weak]
    assert view.evidence[0].created_at == T0 + timedelta(days=2)
    assert "500,000 adults" in view.evidence[0].user_text
    assert view.evidence[1].kind is EvidenceKind.CONTRADICTS
    as_dict = view.as_dict()
    assert as_dict["topic"] == "coffee-health" and len(as_dict["evidence"]) == 3  # type: ignore[arg-type]


async def test_unsupported_beliefs_decay_toward_neutral_and_go_at_zero(services: Services) -> None:
    graph = services.graph
    kept = await belief(services, "exercise-mood", "Regular exercise improves mood", 0.8, 0.6)
    fading = await belief(services, "cold-showers", "Cold showers boost immunity", 0.5, 0.08)
    uid = await episode(services, "A trial found exercise improves mood.", 0)
    await graph.beliefs.add_evidence(TENANT, uid, kept.uid, EvidenceKind.SUPPORTS, 0.8)
    await add_shift(services, TENANT, 0.05)  # the sponge state is a reserved record, never decayed

    early = await decay_beliefs(services, TENANT, T0 + timedelta(days=20))
    assert early.decayed == [] and early.removed == []  # within the grace period

    now = T0 + STALE_AFTER + timedelta(days=10)
    report = await decay_beliefs(services, TENANT, now)
    assert report.decayed == ["exercise-mood"] and report.removed == ["cold-showers"]
    after = await graph.beliefs.get(TENANT, kept.uid)
    assert after is not None
    assert after.confidence == round(0.6 - 10 * CONFIDENCE_DECAY_PER_DAY, 6)
    assert 0 < after.valence < 0.8
    assert await graph.beliefs.get(TENANT, fading.uid) is None
    # Running it again at the same time changes nothing more.
    again = await decay_beliefs(services, TENANT, now)
    assert again.removed == [] and await graph.beliefs.get(TENANT, kept.uid) == after
    assert [b.topic for b in await list_active_beliefs(graph, TENANT)] == ["exercise-mood"]
    assert (await load_state(graph, TENANT)).cumulative_shift == 0.05
