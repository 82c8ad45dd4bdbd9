"""Small per-tenant state: stored, replaced, read back verbatim, never seen by another tenant."""

from __future__ import annotations

from memory.stores.base import GraphStore

HOSTILE = "'; DROP TABLE tenant_state; -- `}) DETACH DELETE n //` $value"


async def test_put_get_replace(graph: GraphStore) -> None:
    assert await graph.get_tenant_state("ada", "sponge") is None
    await graph.put_tenant_state("ada", "sponge", '{"n": 1}')
    assert await graph.get_tenant_state("ada", "sponge") == '{"n": 1}'
    await graph.put_tenant_state("ada", "sponge", '{"n": 2}')
    assert await graph.get_tenant_state("ada", "sponge") == '{"n": 2}'
    assert await graph.get_tenant_state("ada", "other") is None


async def test_tenants_are_isolated_and_values_verbatim(graph: GraphStore) -> None:
    await graph.put_tenant_state("ada", "k", HOSTILE)
    await graph.put_tenant_state(HOSTILE, "k", "bob's")
    assert await graph.get_tenant_state("ada", "k") == HOSTILE
    assert await graph.get_tenant_state(HOSTILE, "k") == "bob's"
    assert await graph.get_tenant_state("carol", "k") is None
    assert await graph.list_beliefs("ada") == []  # state is not a belief
