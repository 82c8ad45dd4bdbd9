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
        await graph.add_fact(f)
    await graph.add_fact(fact("other", 0, tenant="t2", attribute="home"))
    porto = fact("f-porto", 10, attribute="home", value="Porto")
    await graph.supersede_fact("t1", "f-home", porto, at(10))

    async def uids(**kw: object) -> list[str]:
        return [f.uid for f in await graph.list_facts("t1", **kw)]  # type: ignore[arg-type]

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
    stored = await graph.get_fact("t1", "f-plan")
    assert stored == plan and stored.kind is KIND.PLAN


async def test_get_facts_and_their_sources_in_bulk(graph: GraphStore) -> None:
    for i, uid in enumerate(["e1", "e2"]):
        await graph.create_episode(new_episode("t1", uid, i, uid=uid))
    await graph.create_episode(new_episode("t2", "theirs", uid="e-t2"))
    a, b = fact("fa", 0), fact("fb", 1)
    await graph.add_fact(a, "e2")
    await graph.add_fact(b)
    await graph.cite_fact("t1", "fa", "e1")
    await graph.add_fact(fact("fc", 0, tenant="t2"), "e-t2")

    assert await graph.get_facts("t1", ["fb", "missing", "fa", "fb", "fc"]) == [b, a]
    assert await graph.get_facts("t1", []) == []
    assert await graph.sources_of_facts("t1", ["fa", "fb", "fc", "fa"]) == {
        "fa": ["e1", "e2"],
        "fb": [],
        "fc": [],
    }
    assert await graph.sources_of_facts("t1", []) == {}


async def test_subject_edges_join_a_fact_and_an_entity_of_one_tenant(graph: GraphStore) -> None:
    await graph.upsert_entity("t1", "Claire", EntityType.PERSON)
    lives = fact("f-lives", 0, subject="Claire", attribute="home", value="Lyon")
    moved = fact("f-moved", 5, subject="Claire", attribute="home", value="Paris")
    await graph.add_fact(lives)
    assert await graph.link_fact_subject("t1", "f-lives", "  claire ") is True
    assert await graph.link_fact_subject("t1", "f-lives", "Claire") is True  # idempotent
    assert await graph.link_fact_subject("t1", "f-lives", "Nobody") is False
    assert await graph.link_fact_subject("t1", "missing", "Claire") is False
    assert await graph.link_fact_subject("t2", "f-lives", "Claire") is False

    await graph.supersede_fact("t1", "f-lives", moved, at(5))
    assert await graph.link_fact_subject("t1", "f-moved", "Claire") is True
    assert await graph.entities_named("t1", ["Claire"]) == [
        Entity(tenant="t1", name="Claire", type=EntityType.PERSON)
    ]


async def test_causes_link_facts_and_episodes_to_a_decision(graph: GraphStore) -> None:
    await graph.create_episode(new_episode("t1", "my knee hurts", uid="e-knee"))
    await graph.create_episode(new_episode("t2", "theirs", uid="e-t2"))
    await graph.add_fact(fact("f-knee", 0, text="The user's knee hurts"))
    await graph.add_fact(fact("f-swim", 5, kind=KIND.DECISION, text="The user decided to swim"))

    assert await graph.link_cause("t1", "f-swim", "f-knee") is True
    assert await graph.link_cause("t1", "f-swim", "e-knee") is True
    assert await graph.link_cause("t1", "f-swim", "e-knee") is True  # idempotent
    assert await graph.link_cause("t1", "f-swim", "f-swim") is False
    assert await graph.link_cause("t1", "f-swim", "missing") is False
    assert await graph.link_cause("t1", "f-swim", "e-t2") is False
    assert await graph.link_cause("t1", "missing", "f-knee") is False
    assert await graph.causes_of("t1", "f-swim") == [
        Cause(kind="episode", uid="e-knee"),
        Cause(kind="fact", uid="f-knee"),
    ]
    assert await graph.causes_of("t2", "f-swim") == []
    assert await graph.causes_of("t1", "f-knee") == []

    assert await graph.delete_episode("t1", "e-knee") is True
    assert await graph.causes_of("t1", "f-swim") == [Cause(kind="fact", uid="f-knee")]


async def test_features_are_replaced_whole_and_deleted_only_when_asked(graph: GraphStore) -> None:
    for i, uid in enumerate(["e1", "e2"]):
        await graph.create_episode(new_episode("t1", uid, i, uid=uid))
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
    assert await graph.upsert_feature(style, "e1") == style
    await graph.upsert_feature(interest)
    updated = style.model_copy(
        update={"text": "explains with numbers", "strength": 0.8, "evidence_count": 2}
    )
    assert await graph.upsert_feature(updated, "e2") == updated
    await graph.upsert_feature(updated, "e2")
    assert await graph.feature_sources("t1", "ft-style") == ["e1", "e2"]
    assert await graph.get_feature("t1", "ft-style") == updated
    assert await graph.get_features("t1", ["ft-int", "nope", "ft-style"]) == [interest, updated]
    assert [f.uid for f in await graph.list_features("t1")] == ["ft-int", "ft-style"]
    assert await graph.list_features("t1", FeatureCategory.STYLE) == [updated]
    assert await graph.list_features("t2") == []
    assert await graph.get_feature("t2", "ft-style") is None

    with pytest.raises(StoreError):
        await graph.upsert_feature(style.model_copy(update={"tenant": "t2"}))

    assert await graph.delete_feature("t1", "ft-style") is True
    assert await graph.delete_feature("t1", "ft-style") is False
    assert await graph.feature_sources("t1", "ft-style") == []
    assert [f.uid for f in await graph.list_features("t1")] == ["ft-int"]
