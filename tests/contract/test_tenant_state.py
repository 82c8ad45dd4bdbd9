"""Small per-tenant state: stored, replaced, read back verbatim, never seen by another tenant."""

from __future__ import annotations

from memory.stores.base import GraphStore

HOSTILE = "'; DROP TABLE tenant_state; -- `}) DETACH DELETE n //` $value"


async def test_put_get_replace(graph: GraphStore) -> None:
    assert await graph.state.get("ada", "sponge") is None
    await graph.state.put("ada", "sponge", '{"n": 1}')
    assert await graph.state.get("ada", "sponge") == '{"n": 1}'
    await graph.state.put("ada", "sponge", '{"n": 2}')
    assert await graph.state.get("ada", "sponge") == '{"n": 2}'
    assert await graph.state.get("ada", "other") is None


async def test_tenants_are_isolated_and_values_verbatim(graph: GraphStore) -> None:
    await graph.state.put("ada", "k", HOSTILE)
    await graph.state.put(HOSTILE, "k", "bob's")
    assert await graph.state.get("ada", "k") == HOSTILE
    assert await graph.state.get(HOSTILE, "k") == "bob's"
    assert await graph.state.get("carol", "k") is None
    assert await graph.beliefs.list("ada") == []  # state is not a belief


async def test_keys_by_prefix_in_order_and_per_tenant(graph: GraphStore) -> None:
    for key in ("thread:b", "thread:a", "sponge", "thread%", "threads", "thread:é"):
        await graph.state.put("ada", key, "v")
    await graph.state.put("bob", "thread:c", "v")
    assert await graph.state.keys("ada", "thread:") == ["thread:a", "thread:b", "thread:é"]
    assert await graph.state.keys("ada", "thread%") == ["thread%"]  # no pattern characters
    assert await graph.state.keys("ada") == sorted(
        ["thread:b", "thread:a", "sponge", "thread%", "threads", "thread:é"]
    )
    assert await graph.state.keys("carol", "thread:") == []
