"""Typed facts with subjects and causes, and semantic features: the store methods of schema
version 2, the same on every backend."""

from __future__ import annotations

import pytest

from memory.schema import Cause, Entity, EntityType, Fact, FactKind, Feature, FeatureCategory
from memory.stores.base import GraphStore, StoreError

from ._support import at, new_episode

KIND = FactKind


def fact(uid: str, minutes: float = 0, **fields: object) -> Fact:
    """A fact of tenant t1 valid from T0 + minutes."""
    values: dict[str, object] = {"text": f"fact {uid}", "valid_from": at(minutes)}
    values.update(fields)
    return Fact(uid=uid, tenant=str(values.pop("tenant", "t1")), **values)  # type: ignore[arg-type]


async def test_list_facts_narrows_by_kind_subject_and_attribute(graph: GraphStore) -> None:
    home = fact("f-home", 0, kind=KIND.ATTRIBUTE, attribute="home", value="Lyon")
    plan = fact("f-plan", 1, kind=KIND.PLAN, attribute="plan:japan trip", value="March")
    rule = fact("f-rule", 2, kind=KIND.INSTRUCTION, attribute="instruction:code")
    sister = fact("f-sis", 3, subject="Claire", attribute="home", value="Lyon")
    for f in (home, plan, rule, sister):
        await graph.facts.add(f)
    await graph.facts.add(fact("other", 0, tenant="t2", attribute="home"))
    porto = fact("f-porto", 10, attribute="home", value="Porto")
    await graph.facts.supersede("t1", "f-home", porto, at(10))

    async def uids(**kw: object) -> list[str]:
        return [f.uid for f in await graph.facts.list("t1", **kw)]  # type: ignore[arg-type]

    assert await uids() == ["f-plan", "f-rule", "f-sis", "f-porto"]
    assert await uids(kinds=[KIND.INSTRUCTION, KIND.PLAN]) == ["f-plan", "f-rule"]
    assert await uids(kinds=[]) == []
    assert await uids(subject="user", attribute="home") == ["f-porto"]
    assert await uids(subject="user", attribute="home", include_superseded=True) == [
        "f-home",
        "f-porto",
    ]
    assert await uids(subject="Claire") == ["f-sis"]
    assert await uids(attribute="nothing") == []
    stored = await graph.facts.get("t1", "f-plan")
    assert stored == plan and stored.kind is KIND.PLAN


async def test_get_facts_and_their_sources_in_bulk(graph: GraphStore) -> None:
    for i, uid in enumerate(["e1", "e2"]):
        await graph.episodes.create(new_episode("t1", uid, i, uid=uid))
    await graph.episodes.create(new_episode("t2", "theirs", uid="e-t2"))
    a, b = fact("fa", 0), fact("fb", 1)
    await graph.facts.add(a, "e2")
    await graph.facts.add(b)
    await graph.facts.cite("t1", "fa", "e1")
    await graph.facts.add(fact("fc", 0, tenant="t2"), "e-t2")

    assert await graph.facts.get_many("t1", ["fb", "missing", "fa", "fb", "fc"]) == [b, a]
    assert await graph.facts.get_many("t1", []) == []
    assert await graph.facts.sources_many("t1", ["fa", "fb", "fc", "fa"]) == {
        "fa": ["e1", "e2"],
        "fb": [],
        "fc": [],
    }
    assert await graph.facts.sources_many("t1", []) == {}


async def test_subject_edges_join_a_fact_and_an_entity_of_one_tenant(graph: GraphStore) -> None:
    await graph.entities.upsert("t1", "Claire", EntityType.PERSON)
    lives = fact("f-lives", 0, subject="Claire", attribute="home", value="Lyon")
    moved = fact("f-moved", 5, subject="Claire", attribute="home", value="Paris")
    await graph.facts.add(lives)
    assert await graph.facts.link_subject("t1", "f-lives", "  claire ") is True
    assert await graph.facts.link_subject("t1", "f-lives", "Claire") is True  # idempotent
    assert await graph.facts.link_subject("t1", "f-lives", "Nobody") is False
    assert await graph.facts.link_subject("t1", "missing", "Claire") is False
    assert await graph.facts.link_subject("t2", "f-lives", "Claire") is False

    await graph.facts.supersede("t1", "f-lives", moved, at(5))
    assert await graph.facts.link_subject("t1", "f-moved", "Claire") is True
    assert await graph.entities.named("t1", ["Claire"]) == [
        Entity(tenant="t1", name="Claire", type=EntityType.PERSON)
    ]


async def test_causes_link_facts_and_episodes_to_a_decision(graph: GraphStore) -> None:
    await graph.episodes.create(new_episode("t1", "my knee hurts", uid="e-knee"))
    await graph.episodes.create(new_episode("t2", "theirs", uid="e-t2"))
    await graph.facts.add(fact("f-knee", 0, text="The user's knee hurts"))
    await graph.facts.add(fact("f-swim", 5, kind=KIND.DECISION, text="The user decided to swim"))

    assert await graph.facts.link_cause("t1", "f-swim", "f-knee") is True
    assert await graph.facts.link_cause("t1", "f-swim", "e-knee") is True
    assert await graph.facts.link_cause("t1", "f-swim", "e-knee") is True  # idempotent
    assert await graph.facts.link_cause("t1", "f-swim", "f-swim") is False
    assert await graph.facts.link_cause("t1", "f-swim", "missing") is False
    assert await graph.facts.link_cause("t1", "f-swim", "e-t2") is False
    assert await graph.facts.link_cause("t1", "missing", "f-knee") is False
    assert await graph.facts.causes("t1", "f-swim") == [
        Cause(kind="episode", uid="e-knee"),
        Cause(kind="fact", uid="f-knee"),
    ]
    assert await graph.facts.causes("t2", "f-swim") == []
    assert await graph.facts.causes("t1", "f-knee") == []

    assert await graph.episodes.delete("t1", "e-knee") is True
    assert await graph.facts.causes("t1", "f-swim") == [Cause(kind="fact", uid="f-knee")]


async def test_features_are_replaced_whole_and_deleted_only_when_asked(graph: GraphStore) -> None:
    for i, uid in enumerate(["e1", "e2"]):
        await graph.episodes.create(new_episode("t1", uid, i, uid=uid))
    style = Feature(
        uid="ft-style",
        tenant="t1",
        category=FeatureCategory.STYLE,
        text="explains with concrete numbers",
        created_at=at(0),
        updated_at=at(0),
    )
    interest = Feature(
        uid="ft-int",
        tenant="t1",
        category=FeatureCategory.INTERESTS,
        text="urban cycling",
        created_at=at(1),
        updated_at=at(1),
    )
    assert await graph.features.upsert(style, "e1") == style
    await graph.features.upsert(interest)
    updated = style.model_copy(
        update={"text": "explains with numbers", "strength": 0.8, "evidence_count": 2}
    )
    assert await graph.features.upsert(updated, "e2") == updated
    await graph.features.upsert(updated, "e2")
    assert await graph.features.sources("t1", "ft-style") == ["e1", "e2"]
    assert await graph.features.get("t1", "ft-style") == updated
    assert await graph.features.get_many("t1", ["ft-int", "nope", "ft-style"]) == [
        interest,
        updated,
    ]
    assert [f.uid for f in await graph.features.list("t1")] == ["ft-int", "ft-style"]
    assert await graph.features.list("t1", FeatureCategory.STYLE) == [updated]
    assert await graph.features.list("t2") == []
    assert await graph.features.get("t2", "ft-style") is None

    with pytest.raises(StoreError):
        await graph.features.upsert(style.model_copy(update={"tenant": "t2"}))

    assert await graph.features.delete("t1", "ft-style") is True
    assert await graph.features.delete("t1", "ft-style") is False
    assert await graph.features.sources("t1", "ft-style") == []
    assert [f.uid for f in await graph.features.list("t1")] == ["ft-int"]
