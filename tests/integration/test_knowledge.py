"""Knowledge that stays true, on every graph backend (real SQLite or Neo4j, Qdrant in memory, the
real embedder, offline heuristics): the moved-city story, history, endings, subjects, causes,
and processing an episode twice (or after a crash) leaving the stores as processing it once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from graph.bookkeeping import run_episode
from graph.errors import ServiceError
from memory.retrieval.recipes import SIMPLE, ablate, changed
from memory.retrieval.retrieve import retrieve
from memory.schema import EpisodeStatus, FactKind
from memory.services import Services
from memory.write.episodes import remember, sweep

T0 = datetime(2026, 1, 8, 19, 0, tzinfo=UTC)
STORY = [
    (0, "I live in Lyon, in a small flat near the old town."),
    (20, "I work at Acme Logistics as a data analyst."),
    (60, "My brother Yusuf lives in Leeds."),
    (155, "We finally moved to Porto last week!"),
    (170, "My sister still lives in Lyon, so I visit her often."),
    (200, "After all the long commutes I decided to work closer to home."),
    (230, "I quit my job."),
]
LATER = T0 + timedelta(days=300)


async def tell(services: Services, tenant: str, story: list[tuple[int, str]]) -> list[str]:
    """Each line as a user turn of its day, through remember and the bookkeeping graph."""
    uids = []
    for day, text in story:
        done = await remember(
            services,
            tenant=tenant,
            thread_id=f"day-{day}",
            user_text=text,
            agent_text="Noted.",
            at=T0 + timedelta(days=day),
        )
        await run_episode(services, tenant, done.uid)
        uids.append(done.uid)
    return uids


async def test_the_moved_city_story(services: Services) -> None:
    uids = await tell(services, "nora", STORY)
    graph = services.graph
    current = await graph.facts.list("nora", subject="user", attribute="home")
    (porto,) = current
    assert porto.value == "Porto" and porto.kind is FactKind.ATTRIBUTE
    assert await graph.facts.sources("nora", porto.uid) == [uids[3]]
    history = await graph.facts.list(
        "nora", subject="user", attribute="home", include_superseded=True
    )
    (lyon,) = [f for f in history if f.value == "Lyon"]
    assert lyon.superseded_by == porto.uid and lyon.valid_to == porto.valid_from
    assert lyon.learned_at == T0 and porto.learned_at == T0 + timedelta(days=155)

    # the sister's Lyon is hers: it does not bring the user back to Lyon
    (sister,) = await graph.facts.list("nora", subject="user's sister")
    assert sister.value == "Lyon" and sister.superseded_by is None
    # a named person becomes an entity of the tenant, and their facts carry their name
    assert [e.name for e in await graph.entities.named("nora", ["Yusuf"])] == ["Yusuf"]
    about = await graph.facts.list("nora", subject="Yusuf")
    assert [(f.attribute, f.value) for f in about] == [("home", "Leeds")]

    # "I quit my job" ends the job without a new value; nothing is deleted
    jobs = await graph.facts.list("nora", attribute="work", include_superseded=True)
    acme = next(f for f in jobs if f.value == "Acme Logistics")
    ending = next(f for f in jobs if f.uid == acme.superseded_by)
    assert ending.kind is FactKind.EVENT and "quit" in ending.text
    assert await graph.facts.sources("nora", ending.uid) == [uids[6]]

    now = await retrieve(services, "nora", "Where do I live now?", SIMPLE, LATER)
    assert now[0].kind == "fact" and now[0].uid == porto.uid
    assert now[0].sources == [uids[3]]
    # the user's side of the turn stated the fact and answers; the reply ("Noted.") is context
    assert now[0].sides == {
        "user": pytest.approx(now[0].score),
        "agent": pytest.approx(now[0].score * SIMPLE.turns.reply_weight),
    }
    # a question about what the agent said: a fact may come from its reply, both sides rank
    asked = await retrieve(
        services, "nora", "What did you say about where I live now?", SIMPLE, LATER
    )
    fact = next(c for c in asked if c.uid == porto.uid)
    assert fact.sides == {"user": fact.score, "agent": fact.score}
    rank = {c.uid: i for i, c in enumerate(now)}
    assert rank[porto.uid] < rank.get(uids[0], len(now))
    assert rank[porto.uid] < rank.get(lyon.uid, len(now))

    before = await retrieve(services, "nora", "Where did I live before?", SIMPLE, LATER)
    top = [c for c in before[:3]]
    assert any(c.uid in (lyon.uid, uids[0]) for c in top)


async def test_a_fact_stated_without_a_reply_has_no_sides(services: Services) -> None:
    done = await remember(
        services, tenant="ines", thread_id="d0", user_text="I live in Lyon.", at=T0
    )
    await run_episode(services, "ines", done.uid)
    found = await retrieve(services, "ines", "Where do I live?", SIMPLE, LATER)
    fact = next(c for c in found if c.kind == "fact")
    assert fact.sources == [done.uid] and fact.sides == {}


async def test_a_decision_links_to_what_motivated_it(services: Services) -> None:
    story = [
        (0, "My commute to the office takes two hours every day and it exhausts me."),
        (40, "I decided to look for a job closer to home because of the commute."),
    ]
    uids = await tell(services, "sam", story)
    (decision,) = await services.graph.facts.list("sam", kinds=[FactKind.DECISION])
    (cause,) = await services.graph.facts.causes("sam", decision.uid)
    # no fact captured the commute, so the turn itself is the cause
    assert (cause.kind, cause.uid) == ("episode", uids[0])
    found = await retrieve(services, "sam", "Why did I decide to change jobs?", SIMPLE, LATER)
    assert {decision.uid, uids[0]} <= {c.uid for c in found[:4]}
    # the cause turn, lifted or added, answers with its user's side; its reply is context
    turn = next(c for c in found if c.uid == uids[0])
    assert turn.sides == {
        "user": pytest.approx(turn.score),
        "agent": pytest.approx(turn.score * SIMPLE.turns.reply_weight),
    }


async def snapshot(services: Services, tenant: str) -> dict[str, Any]:
    """The knowledge of a tenant by content (uids differ between tenants)."""
    graph = services.graph
    facts = await graph.facts.list(tenant, include_superseded=True)
    texts = {f.uid: f.text for f in facts}
    sources = await graph.facts.sources_many(tenant, [f.uid for f in facts])
    episodes = {
        e.uid: e.user_text for e in await graph.episodes.get_many(tenant, sum(sources.values(), []))
    }
    rows = []
    for f in facts:
        causes = [texts.get(c.uid, c.uid) for c in await graph.facts.causes(tenant, f.uid)]
        rows.append(
            (
                f.text,
                f.kind.value,
                f.subject,
                f.attribute,
                f.value,
                f.valid_from,
                f.valid_to,
                texts.get(f.superseded_by or "", None),
                tuple(episodes[s] for s in sources[f.uid]),
                tuple(causes),
            )
        )
    return {
        "facts": sorted(rows, key=repr),
        "points": await services.vectors.count("knowledge", tenant),
    }


async def test_processing_twice_or_after_a_crash_is_processing_once(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    await tell(services, "once", STORY)
    expected = await snapshot(services, "once")
    assert expected["facts"] and expected["points"] == len(expected["facts"])

    uids = await tell(services, "twice", STORY)
    for uid in uids:  # everything processed: re-running changes nothing
        await run_episode(services, "twice", uid)
    assert await snapshot(services, "twice") == expected

    real = services.vectors.upsert
    crashed: list[str] = []

    async def crash_once(kind: Any, points: Any) -> None:
        if kind == "knowledge" and not crashed:
            crashed.append(kind)
            raise ConnectionError("vector store went away mid-stage")
        await real(kind, points)

    monkeypatch.setattr(services.vectors, "upsert", crash_once)
    story = list(STORY)
    with pytest.raises(ServiceError, match="ConnectionError"):  # raised for the retry, not noted
        await tell(services, "crash", story)
    monkeypatch.setattr(services.vectors, "upsert", real)
    left = await services.graph.episodes.list_by_status("crash", [EpisodeStatus.INDEXED], limit=10)
    assert len(left) == 1  # the stage failed after indexing: the episode waits at `indexed`
    done = len(await services.graph.episodes.list_uids("crash"))
    for day, text in story[done:]:
        await remember(
            services,
            tenant="crash",
            thread_id=f"day-{day}",
            user_text=text,
            agent_text="Noted.",
            at=T0 + timedelta(days=day),
        )

    async def process(episode: Any) -> None:
        await run_episode(services, "crash", episode.uid)

    report = await sweep(services, tenant="crash", process=process)
    assert report.ok
    assert await snapshot(services, "crash") == expected


async def test_a_turn_a_cause_lifts_has_its_sides_lifted_alike(services: Services) -> None:
    from memory.retrieval.candidates import Candidate
    from memory.retrieval.fact_candidates import _with_cause_turns

    found = Candidate(
        episode_uid="e1",
        score=0.5,
        similarity=0.4,
        created_at=T0,
        thread_id="s1",
        content="I decided to move.",
        sides={"user": 0.5, "agent": 0.25},
        uid="e1",
        sources=["e1"],
    )
    (lifted,) = await _with_cause_turns(services, "nobody", [found], {"e1": 0.8}, LATER, 0.5)
    assert lifted.score == pytest.approx(0.8)
    assert lifted.sides == {"user": pytest.approx(0.8), "agent": pytest.approx(0.4)}
    (kept,) = await _with_cause_turns(services, "nobody", [lifted], {"e1": 0.3}, LATER, 0.5)
    assert kept.score == pytest.approx(0.8) and kept.sides["agent"] == pytest.approx(0.4)


async def test_passes_rank_facts_and_turns_on_one_scale(services: Services) -> None:
    """Passes combine in the units the facts are scored in: a second pass that finds nothing
    changes nothing, where a rank fusion of the passes put every fact ahead of the turns.
    Diversity is off: it demotes a fact under the turn that states it, a later step than the
    passes' scale this test is about (`memory.retrieval.state`)."""
    await tell(services, "pia", STORY)
    recipe = ablate(SIMPLE, "diversity")
    one = await retrieve(services, "pia", "Where do I work?", recipe, LATER)
    two = await retrieve(
        services,
        "pia",
        ["Where do I work?", "qxv zzorp"],
        changed(recipe, {"search.max_passes": 2}),
        LATER,
    )
    assert {c.kind for c in one[:5]} == {"episode", "fact"}
    found = {c.uid for c in one}
    assert [(c.uid, c.score) for c in two if c.uid in found] == [(c.uid, c.score) for c in one]
