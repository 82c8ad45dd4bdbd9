"""Tenant shards on a Qdrant cluster: small tenants share a shard, a very large one gets its own.

Payload partitioning (one collection per kind, a `tenant` keyword index with `is_tenant`, an
HNSW graph per tenant) serves many small tenants. A tenant that grows very large (millions of
points) can be given shards of its own, so that its indexing and its searches run apart from
everyone else's: Qdrant's tiered multitenancy. A collection created with
`MNEME_QDRANT_TENANT_SHARDS=true` uses custom sharding with one shard key, `shared`, that holds
every tenant; every read and write names the tenant's own shard key with `shared` as fallback
(`selector`), so a tenant goes to its own shards once they exist and to `shared` until then.
`promote` (`mneme shards promote --user ID`) moves one tenant:

1. create the tenant's shard key (`Partial`: not read from yet; Qdrant writes to it and to the
   fallback while it fills);
2. copy the tenant's points into it inside the cluster (`replicate_points` with the tenant
   filter) and wait until its replicas are `Active` (reads now go there);
3. copy again, from this process, any point of the tenant still only in `shared` (a write that
   raced the transfer), then delete the tenant's points from `shared`.

Every step is idempotent: a promotion interrupted anywhere is finished by running it again.
Custom sharding needs Qdrant in distributed mode (a cluster, or one node with
`cluster.enabled`). docs/deployment.md has the layout, its reasons and the measurements.
"""

from __future__ import annotations

import asyncio
from functools import partial

from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from memory.schema import clean_text
from memory.stores.errors import SchemaMismatch, StoreError
from memory.stores.qdrant_server import Endpoints

SHARED = "shared"
"""The shard key every tenant uses until it has shards of its own."""
COPY_PAGE = 256
PROMOTE_TIMEOUT_S = 3600.0


def tenant_key(tenant: str) -> str:
    """The shard key of a tenant's own shards (its id as stored)."""
    return clean_text(tenant)


def selector(tenant: str) -> models.ShardKeyWithFallback:
    """Route to the tenant's own shards when they exist, else to `shared`."""
    return models.ShardKeyWithFallback(target=tenant_key(tenant), fallback=SHARED)


async def create_shared_key(
    nodes: Endpoints, name: str, shards: int, replication: int, where: str
) -> None:
    """Create the `shared` shard key of a new custom-sharded collection."""
    try:
        await nodes.call(
            lambda c: c.create_shard_key(
                name, SHARED, shards_number=shards, replication_factor=replication
            )
        )
    except UnexpectedResponse as exc:
        if "Distributed mode disabled" not in str(exc):
            raise
        raise SchemaMismatch(
            f"MNEME_QDRANT_TENANT_SHARDS=true needs Qdrant in distributed mode at {where} "
            f"(cluster.enabled; one node is enough); unset it to keep every tenant in one shard"
        ) from None


async def shard_keys(nodes: Endpoints, name: str) -> list[str]:
    """The collection's shard keys, `shared` first."""

    async def keys(c: AsyncQdrantClient) -> list[str]:
        return [str(k.key) for k in (await c.list_shard_keys(name)).shard_keys or []]

    found = await nodes.call(keys)
    return sorted(found, key=lambda k: (k != SHARED, k))


async def promote(
    nodes: Endpoints,
    name: str,
    tenant: str,
    tenant_filter: models.Filter,
    *,
    shards: int = 1,
    replication: int = 1,
    timeout_s: float = PROMOTE_TIMEOUT_S,
) -> int:
    """Give `tenant` its own shards in collection `name` (steps in the module docstring);
    return how many of its points were copied by this process in step 3."""
    key = tenant_key(tenant)
    if key == SHARED:
        raise StoreError(f"the tenant {tenant!r} has the name of the shared shard key")
    existing = await shard_keys(nodes, name)
    if key not in existing:
        await nodes.call(
            lambda c: c.create_shard_key(
                name,
                key,
                shards_number=shards,
                replication_factor=replication,
                initial_state=models.ReplicaState.PARTIAL,
            )
        )
    if not await _active(nodes, name, key):
        await nodes.call(
            lambda c: c.cluster_collection_update(
                name,
                cluster_operation=models.ReplicatePointsOperation(
                    replicate_points=models.ReplicatePoints(
                        filter=tenant_filter, from_shard_key=SHARED, to_shard_key=key
                    )
                ),
            )
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not await _active(nodes, name, key):
            if loop.time() > deadline:
                raise StoreError(
                    f"the shards of {tenant!r} in {name} did not become active within "
                    f"{timeout_s:g} s; run the promotion again to finish it"
                )
            await asyncio.sleep(0.5)
    copied = await _copy_stragglers(nodes, name, key, tenant_filter)
    await nodes.call(
        lambda c: c.delete(
            name,
            points_selector=models.FilterSelector(filter=tenant_filter),
            shard_key_selector=SHARED,
            wait=True,
        )
    )
    return copied


async def _active(nodes: Endpoints, name: str, key: str) -> bool:
    """True when every replica of the shard key's shards is Active (reads go there)."""

    async def states(c: AsyncQdrantClient) -> list[models.ReplicaState] | None:
        info = await c.collection_cluster_info(name)
        shards = [s for s in info.local_shards + info.remote_shards if s.shard_key == key]
        return [s.state for s in shards] if shards else None

    found = await nodes.call(states)
    return found is not None and all(s == models.ReplicaState.ACTIVE for s in found)


async def _copy_stragglers(
    nodes: Endpoints, name: str, key: str, tenant_filter: models.Filter
) -> int:
    """Upsert into the tenant's shards each of its points that is in `shared` only."""
    copied = 0
    offset: models.ExtendedPointId | None = None
    while True:
        page, offset = await nodes.call(partial(_shared_page, name, tenant_filter, offset))
        if page:
            ids = [p.id for p in page]
            have = await nodes.call(partial(_present, name, key, ids))
            missing = [
                models.PointStruct(id=p.id, vector=p.vector or {}, payload=p.payload)  # type: ignore[arg-type]
                for p in page
                if p.id not in have
            ]
            if missing:
                await nodes.call(partial(_upsert, name, key, missing))
                copied += len(missing)
        if offset is None:
            return copied


async def _shared_page(
    name: str,
    tenant_filter: models.Filter,
    offset: models.ExtendedPointId | None,
    client: AsyncQdrantClient,
) -> tuple[list[models.Record], models.ExtendedPointId | None]:
    return await client.scroll(
        name,
        scroll_filter=tenant_filter,
        limit=COPY_PAGE,
        offset=offset,
        with_payload=True,
        with_vectors=True,
        shard_key_selector=SHARED,
    )


async def _present(
    name: str, key: str, ids: list[models.ExtendedPointId], client: AsyncQdrantClient
) -> set[models.ExtendedPointId]:
    found = await client.retrieve(name, ids, with_payload=False, shard_key_selector=key)
    return {p.id for p in found}


async def _upsert(
    name: str, key: str, points: list[models.PointStruct], client: AsyncQdrantClient
) -> None:
    await client.upsert(name, points=points, wait=True, shard_key_selector=key)
