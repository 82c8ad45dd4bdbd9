"""retrieve: hybrid search with provenance, tenant isolation, temporal neighbours, beliefs,
and a failing store degrading to no memories."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.retrieval.recipes import SIMPLE, TEMPORAL, get_recipe
from memory.retrieval.retrieve import retrieve as search
from memory.schema import Belief, utcnow
from memory.sleep.chapters import KEY as CHAPTERS_KEY
from nodes.retrieve import queries_for, retrieve
from nodes.state import route_state
from tasks.route import RouteDecision, SearchPass
from tests.unit.fake_chat import human, runtime, seed

FACTS = [
    "My dog's name is Biscuit and he is a golden retriever.",
    "I work as a nurse at Saint Mary Hospital in Lyon.",
    "My sister Clara is getting married in June.",
]
SIMPLE_ROUTE = route_state(RouteDecision(kind="SIMPLE", n_results=7))


async def test_finds_the_fact_with_provenance(agent_services, offline) -> None:
    uids = await seed(agent_services, "alice", FACTS, thread="t1")
    state = {**human("What is my dog called?"), "route": SIMPLE_ROUTE}
    out = await retrieve(state, runtime())
    top = out["candidates"][0]
    assert top["episode_uid"] == uids[0] and top["thread_id"] == "t1"
    assert "Biscuit" in top["fragments"][0] and top["similarity"] >= 0.3
    assert datetime.fromisoformat(top["created_at"]).tzinfo is not None
    assert [c["score"] for c in out["candidates"]] == sorted(
        (c["score"] for c in out["candidates"]), reverse=True
    )


async def test_other_tenants_never_see_it(agent_services, offline) -> None:
    await seed(agent_services, "alice", FACTS)
    out = await retrieve(
        {**human("What is my dog called?"), "route": SIMPLE_ROUTE}, runtime(user_id="bob")
    )
    assert out["candidates"] == []


async def test_similarity_floor_drops_unrelated(agent_services, offline) -> None:
    await seed(agent_services, "alice", FACTS)
    found = await search(
        agent_services, "alice", "quantum chromodynamics lattice QCD", SIMPLE, utcnow()
    )
    assert found == []


async def test_temporal_recipe_adds_neighbours(agent_services, offline) -> None:
    start = datetime(2026, 1, 5, 9, tzinfo=UTC)
    turns = [
        "We flew to Lisbon this morning.",
        "The hotel is near the river.",
        "Dinner was grilled sardines.",
        "I bought a blue ceramic tile.",
        "Flying home tomorrow.",
    ]
    uids = []
    for i, text in enumerate(turns):
        uids += await seed(agent_services, "alice", [text], at=start + timedelta(minutes=i))
    found = await search(agent_services, "alice", "grilled sardines for dinner", TEMPORAL, utcnow())
    assert found[0].episode_uid == uids[2] and found[0].source == "search"
    neighbours = {c.episode_uid: c for c in found if c.source == "neighbour"}
    # The next turn may also be found by search (its context derivative quotes the previous
    # turn); either way both temporal neighbours come back, and at least one by expansion.
    assert {c.episode_uid for c in found} >= {uids[1], uids[2], uids[3]}
    assert neighbours and all(c.neighbour_of for c in neighbours.values())
    assert all(c.score < found[0].score for c in neighbours.values())


async def test_aggregation_runs_every_pass(agent_services, offline) -> None:
    uids = await seed(agent_services, "alice", FACTS)
    recipe = get_recipe("AGGREGATION")
    found = await search(
        agent_services,
        "alice",
        ["what is my dog called?", "what is my job?", "tell me about my sister"],
        recipe,
        utcnow(),
    )
    assert set(uids) <= {c.episode_uid for c in found}


async def test_belief_query_brings_beliefs(agent_services, offline) -> None:
    await agent_services.graph.beliefs.upsert(
        Belief(
            tenant="alice",
            topic="remote-work",
            statement="Remote work suits focused tasks.",
            confidence=0.6,
            evidence_count=2,
        )
    )
    route = {**SIMPLE_ROUTE, "kind": "BELIEF_QUERY"}
    out = await retrieve(
        {**human("What do you think about remote work?"), "route": route}, runtime()
    )
    assert out["beliefs"][0]["statement"] == "Remote work suits focused tasks."


async def test_store_failure_means_no_memories(agent_services, offline, monkeypatch) -> None:
    async def broken(*args, **kwargs):
        raise ConnectionError("qdrant is down")

    monkeypatch.setattr(agent_services.vectors, "search", broken)
    out = await retrieve({**human("What is my dog called?"), "route": SIMPLE_ROUTE}, runtime())
    assert out == {
        "candidates": [],
        "beliefs": [],
        "features": [],
        "reveries": [],
        "diary": [],
        "chapters": [],
    }


def test_queries_come_from_passes_or_the_message() -> None:
    assert queries_for(SIMPLE_ROUTE, "q") == ["q"]
    passes = [SearchPass(query="a"), SearchPass(query=None), SearchPass(query="a")]
    routed = route_state(RouteDecision(kind="SIMPLE", passes=passes))
    assert queries_for(routed, "q") == ["a", "q"]


async def test_a_failing_diary_keeps_the_memories(agent_services, offline, monkeypatch) -> None:
    uids = await seed(agent_services, "alice", FACTS, thread="t1")

    async def broken(*args, **kwargs):
        raise ConnectionError("the graph store is down")

    monkeypatch.setattr(agent_services.graph.diary, "list", broken)
    state = {**human("What was my dog called yesterday?"), "route": SIMPLE_ROUTE}
    out = await retrieve(state, runtime())
    assert out["candidates"][0]["episode_uid"] == uids[0]
    assert out["diary"] == []


async def test_failing_chapters_keep_the_memories(agent_services, offline, monkeypatch) -> None:
    uids = await seed(agent_services, "alice", FACTS, thread="t1")
    read = agent_services.graph.state.get

    async def broken(tenant, key):
        if key == CHAPTERS_KEY:
            raise ConnectionError("the graph store is down")
        return await read(tenant, key)

    monkeypatch.setattr(agent_services.graph.state, "get", broken)
    question = "What have I been working on lately at Saint Mary Hospital?"  # a narrative one
    out = await retrieve({**human(question), "route": SIMPLE_ROUTE}, runtime())
    assert out["candidates"][0]["episode_uid"] == uids[1]
    assert out["chapters"] == []
