"""Every field of every stored record model round-trips on every backend.

The values are generated from the models' own field lists (`fields_of`), every one different
from its default, and written the way each backend stores them (its row or property mapper, on
a separate connection); the store's public reads must give back the identical record. A field
added to a model is covered here without editing this file: it round-trips once the model has it
and (for SQLite) the table has its column.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from enum import Enum
from typing import Any, TypeVar

import pytest_asyncio

from memory.schema import (
    Belief,
    Entity,
    Evidence,
    Fact,
    Feature,
    PersonalitySnapshot,
    Record,
    entity_key,
)
from memory.stores.base import GraphStore
from memory.stores.graph.fields import FieldKind, fields_of

from ._support import T0, new_episode

R = TypeVar("R", bound=Record)
Writer = Callable[[str, Record, dict[str, object]], Awaitable[None]]
TENANT = "t-records"


def sample(model: type[R], **given: object) -> R:
    """A valid record of `model` whose every field differs from that field's default."""
    values: dict[str, object] = {}
    for i, spec in enumerate(fields_of(model)):
        info = model.model_fields[spec.name]
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        if spec.kind is FieldKind.TEXT:
            value: object = f"{spec.name} {i} ünï \u2028 '\"` $x"
        elif spec.kind is FieldKind.NUMBER:
            value = 7 + i if spec.type is int else 0.25 + i / 128
        elif spec.kind is FieldKind.BOOL:
            value = not default
        elif spec.kind is FieldKind.DATETIME:
            value = T0 + timedelta(minutes=i, microseconds=i)
        elif spec.kind is FieldKind.ENUM:
            members: list[Enum] = list(spec.type)
            value = [m for m in members if m != default][-1]
        elif spec.kind is FieldKind.TEXT_LIST:
            value = (f"{spec.name} {i} ünï", "'\"` $x", "")
        else:
            value = sample(spec.type)
        values[spec.name] = value
    record = model.model_validate(values | given)
    for spec in fields_of(model):
        info = model.model_fields[spec.name]
        if not info.is_required():
            default = info.get_default(call_default_factory=True)
            assert getattr(record, spec.name) != default, f"{model.__name__}.{spec.name}"
    return record


@pytest_asyncio.fixture
async def write_raw(graph: GraphStore) -> AsyncIterator[Writer]:
    """Write a record as the backend stores it, beside the store (same file or server)."""
    if graph.backend == "sqlite":
        from memory.stores.sqlite.rows import insert_sql, to_row

        conn = sqlite3.connect(graph.path, isolation_level=None)  # type: ignore[attr-defined]

        async def write_row(table: str, record: Record, extra: dict[str, object]) -> None:
            conn.execute(insert_sql(table, type(record), tuple(extra)), to_row(record, **extra))

        yield write_row
        conn.close()
        return

    import neo4j

    from memory.stores.neo4j.props import to_props

    password = os.environ.get("NEO4J_PASSWORD")
    auth = None if not password else (os.environ.get("NEO4J_USER", "neo4j"), password)
    driver = neo4j.AsyncGraphDatabase.driver(os.environ["NEO4J_URI"], auth=auth)
    labels = {
        "episodes": "Episode",
        "beliefs": "Belief",
        "facts": "Fact",
        "features": "Feature",
        "snapshots": "PersonalitySnapshot",
        "entities": "Entity",
    }

    async def write_node(table: str, record: Record, extra: dict[str, object]) -> None:
        props: dict[str, Any] = to_props(record) | extra
        async with driver.session(database=os.environ.get("NEO4J_DATABASE", "neo4j")) as s:
            if isinstance(record, Evidence):  # an edge: the kind is its type, the ends its nodes
                props = to_props(record, exclude=("episode_uid", "belief_uid", "kind")) | extra
                query = (
                    "MATCH (e:Episode {uid: $e}), (b:Belief {uid: $b}) "
                    f"CREATE (e)-[r:{record.kind.value}]->(b) SET r = $props"
                )
                await s.run(query, e=record.episode_uid, b=record.belief_uid, props=props)
            else:
                await s.run(f"CREATE (n:{labels[table]}) SET n = $props", props=props)

    yield write_node
    await driver.close()


async def test_every_episode_field_round_trips(graph: GraphStore, write_raw: Writer) -> None:
    from memory.schema import Episode

    episode = sample(Episode, uid="ep-all", tenant=TENANT)
    await write_raw("episodes", episode, {})
    assert await graph.episodes.get(TENANT, "ep-all") == episode
    assert await graph.episodes.get_many(TENANT, ["ep-all"]) == [episode]


async def test_every_belief_fact_feature_and_snapshot_field_round_trips(
    graph: GraphStore, write_raw: Writer
) -> None:
    belief = sample(Belief, tenant=TENANT)
    fact = sample(Fact, tenant=TENANT)
    feature = sample(Feature, tenant=TENANT)
    snapshot = sample(PersonalitySnapshot, tenant=TENANT)
    await write_raw("beliefs", belief, {})
    await write_raw("facts", fact, {})
    await write_raw("features", feature, {})
    await write_raw("snapshots", snapshot, {})
    assert await graph.beliefs.get(TENANT, belief.uid) == belief
    assert await graph.facts.get(TENANT, fact.uid) == fact
    assert await graph.facts.get_many(TENANT, [fact.uid]) == [fact]
    assert await graph.features.get(TENANT, feature.uid) == feature
    assert await graph.snapshots.current(TENANT) == snapshot


async def test_every_entity_and_evidence_field_round_trips(
    graph: GraphStore, write_raw: Writer
) -> None:
    entity = sample(Entity, tenant=TENANT)
    await write_raw("entities", entity, {"key": entity_key(entity.name)})
    assert await graph.entities.named(TENANT, [entity.name]) == [entity]

    await graph.episodes.create(new_episode(TENANT, "the source", uid="ep-src"))
    belief = await graph.beliefs.upsert(Belief(uid="b-ev", tenant=TENANT, topic="x", statement="s"))
    evidence = sample(Evidence, episode_uid="ep-src", belief_uid=belief.uid)
    await write_raw("evidence", evidence, {"tenant": TENANT})
    assert await graph.beliefs.evidence(TENANT, belief.uid) == [evidence]
