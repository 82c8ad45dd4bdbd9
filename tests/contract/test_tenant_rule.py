"""The tenant rule in the graph store (`memory.tenant`, `memory.stores.graph.kind`): every public
method of every kind, and the store's erase, refuses an id that breaks the rule with
`InvalidTenant` before the backend sees it, and never cleans it into another tenant's id."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from memory.schema import (
    Belief,
    Concept,
    DiaryEntry,
    Emotion,
    EpisodeStatus,
    Fact,
    Feature,
    FeatureCategory,
    Goal,
    SessionSummary,
)
from memory.stores.base import GraphStore
from memory.tenant import InvalidTenant

from ._support import BAD_TENANTS, at, new_episode

KINDS = (
    "episodes",
    "topics",
    "entities",
    "beliefs",
    "facts",
    "features",
    "snapshots",
    "summaries",
    "state",
    "concepts",
    "diary",
    "coretrieval",
    "leases",
    "goals",
    "emotions",
)
WITHOUT_TENANT = {("episodes", "list_tenants")}
"""The one call that names no tenant: the maintenance list of every tenant."""


def record_calls(graph: GraphStore, bad: str) -> dict[str, Any]:
    """The writes whose tenant is the record's, each with a record of the `bad` tenant."""
    t0 = at(0)
    return {
        "episodes.create": lambda: graph.episodes.create(new_episode(bad, "hi", uid="ep")),
        "beliefs.upsert": lambda: graph.beliefs.upsert(
            Belief(tenant=bad, topic="t", statement="s")
        ),
        "facts.add": lambda: graph.facts.add(Fact(tenant=bad, text="x", valid_from=t0), "ep"),
        "features.upsert": lambda: graph.features.upsert(
            Feature(tenant=bad, category=FeatureCategory.INTERESTS, text="tea")
        ),
        "summaries.upsert": lambda: graph.summaries.upsert(
            SessionSummary(
                uid="s",
                tenant=bad,
                thread_id="th",
                text="s",
                started_at=t0,
                ended_at=t0,
                episode_uids=(),
            )
        ),
        "concepts.put": lambda: graph.concepts.put(
            Concept(uid="c", tenant=bad, label="c", first_seen=t0, last_seen=t0, updated_at=t0),
            [],
            [],
        ),
        "diary.put": lambda: graph.diary.put(
            DiaryEntry(uid="d", tenant=bad, day="2024-05-01", text="d", created_at=t0), []
        ),
        "goals.put": lambda: graph.goals.put(
            Goal(uid="g", tenant=bad, fact_uid="f", text="g", stated_at=t0, changed_at=t0)
        ),
    }


async def populate(graph: GraphStore, tenant: str) -> None:
    await graph.episodes.create(new_episode(tenant, "I live in Lyon.", uid=f"{tenant}-ep"))
    await graph.topics.link(tenant, f"{tenant}-ep", ["home"])
    await graph.facts.add(
        Fact(uid=f"{tenant}-f", tenant=tenant, text="lives in Lyon", valid_from=at(0)),
        f"{tenant}-ep",
    )
    await graph.state.put(tenant, "sponge", "{}")
    await graph.emotions.put(
        tenant,
        f"{tenant}-ep",
        [
            Emotion(
                uid=f"{tenant}-m",
                tenant=tenant,
                episode_uid=f"{tenant}-ep",
                name="calm",
                intensity=0.2,
                felt_at=at(0),
            )
        ],
    )


async def footprint(graph: GraphStore, tenant: str) -> tuple[object, ...]:
    return (
        await graph.episodes.list_uids(tenant),
        await graph.topics.of_episode(tenant, f"{tenant}-ep"),
        [f.uid for f in await graph.facts.list(tenant)],
        await graph.state.get(tenant, "sponge"),
        [e.name for e in await graph.emotions.list(tenant)],
    )


@pytest.mark.parametrize("bad", BAD_TENANTS.values(), ids=list(BAD_TENANTS))
async def test_every_call_refuses_a_tenant_id_that_breaks_the_rule(
    graph: GraphStore, bad: str
) -> None:
    await populate(graph, "alice")
    await populate(graph, "a" * 128)
    before = {t: await footprint(graph, t) for t in ("alice", "a" * 128)}

    checked = 0
    for kind_name in KINDS:
        kind = getattr(graph, kind_name)
        for name, method in inspect.getmembers(kind, inspect.iscoroutinefunction):
            if name.startswith("_") or (kind_name, name) in WITHOUT_TENANT:
                continue
            params = inspect.signature(method).parameters
            if "tenant" not in params:
                continue  # a write whose tenant is its record's: below
            # Every other argument is a placeholder: the tenant is refused before any is read.
            args = {p: None for p, spec in params.items() if spec.default is spec.empty}
            with pytest.raises(InvalidTenant):
                await method(**{**args, "tenant": bad})
            checked += 1
    for call in record_calls(graph, bad).values():
        with pytest.raises(InvalidTenant):
            await call()
        checked += 1
    with pytest.raises(InvalidTenant):
        await graph.erase_tenant(bad)

    public = sum(
        1
        for k in KINDS
        for n, _ in inspect.getmembers(getattr(graph, k), inspect.iscoroutinefunction)
        if not n.startswith("_") and (k, n) not in WITHOUT_TENANT
    )
    assert checked == public  # no public method left unchecked
    assert {t: await footprint(graph, t) for t in before} == before  # nothing touched
    assert "alice" in await graph.episodes.list_tenants()


async def test_erasing_alice_with_a_nul_touches_nothing_of_alice(graph: GraphStore) -> None:
    await populate(graph, "alice")
    before = await footprint(graph, "alice")
    with pytest.raises(InvalidTenant, match="control character U\\+0000"):
        await graph.erase_tenant("alice\x00")
    assert await footprint(graph, "alice") == before
    assert await graph.erase_tenant("alice") > 0
    assert await graph.episodes.list_uids("alice") == []


async def test_the_maintenance_views_still_take_no_tenant(graph: GraphStore) -> None:
    await populate(graph, "alice")
    statuses = [EpisodeStatus.PENDING]
    assert [e.uid for e in await graph.episodes.list_by_status(None, statuses)] == ["alice-ep"]
    assert await graph.episodes.list_uids(None) == ["alice-ep"]
    assert await graph.episodes.list_tenants() == ["alice"]
