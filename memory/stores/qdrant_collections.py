"""The collections of the qdrant-client vector index: setup, layout checks, tenant shards.

A mixin of `qdrant.QdrantIndex` (kept apart so that each module stays readable): creating this
embedder's collections (on a server with the `Layout` of `qdrant_server` and its payload
indexes), checking an existing collection's vectors, dropping an embedder's collections, and
the tenant shards of `qdrant_shards`. The index's state (`_existing`, `_custom`, `layout`) lives
on the index.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from memory.schema import (
    DENSE_VECTOR,
    PAYLOAD_INDEXES,
    SPARSE_VECTOR,
    VECTOR_KINDS,
    collection_name,
)
from memory.stores.base import SchemaMismatch
from memory.stores.qdrant_idf import TERMS_FIELD
from memory.stores.qdrant_query import tenant_filter
from memory.stores.qdrant_server import Endpoints, Layout, payload_index
from memory.stores.qdrant_shards import SHARED, create_shared_key, promote, selector, shard_keys

T = TypeVar("T")


class QdrantCollections:
    """Collection management of `QdrantIndex` (see the module docstring)."""

    location: str
    fingerprint: str
    dim: int
    server: bool
    layout: Layout
    generation: int
    _endpoints: Endpoints
    _existing: set[str]
    _custom: set[str]
    _ready: bool

    async def _call(self, fn: Callable[[AsyncQdrantClient], Awaitable[T]]) -> T:
        return await self._endpoints.call(fn)

    async def _exists(self, names: Iterable[str]) -> set[str]:
        """Which of `names` exist. On a server another process may have created a collection
        since this one last listed them, so a name not seen yet is looked up again."""
        wanted = set(names)
        if self.server and not wanted <= self._existing:
            self._existing = await self._call(collection_names)
        return wanted & self._existing

    # ------------------------------------------------------------------ schema

    async def setup(self, *, rebuild: bool = False) -> None:
        """Create this embedder's collections and payload indexes; idempotent.

        Raises `SchemaMismatch` when the store holds collections of another embedder and none of
        this one's (a model swap not yet re-indexed) unless `rebuild` (`mneme reindex` builds them
        beside the other embedder's, which are kept), or when a same-named collection has another
        dimension or vector layout.
        """
        self._existing = await self._call(collection_names)
        foreign = sorted(n for n in self._existing if _is_ours(n) and not self._mine(n))
        mine = [n for n in self._existing if _is_ours(n) and self._mine(n)]
        if foreign and not mine and not rebuild:
            others = sorted({n.split("__", 1)[1] for n in foreign})
            raise SchemaMismatch(
                f"the vector index at {self._where()} holds collections of embedder(s) "
                f"{', '.join(others)} ({', '.join(foreign)}) but the configured embedder is "
                f"{self.fingerprint}; run `mneme reindex` to build its collections from the graph (the "
                f"other embedder's stay as they are), or set MNEME_EMBEDDING_MODEL (and "
                f"MNEME_EMBEDDING_DIM) back to the old model. Vectors of two models are never "
                f"mixed."
            )
        await asyncio.gather(
            *(self._setup_one(collection_name(kind, self.fingerprint)) for kind in VECTOR_KINDS)
        )
        self._ready = True

    async def _setup_one(self, name: str) -> None:
        if name in self._existing:
            indexed = await self._check_layout(name)
        else:
            await self._create(name)
            indexed = await self._check_layout(name) if name in self._custom else set()
        if self.server:
            await self._payload_indexes(name, indexed)

    async def missing_collections(self) -> list[str]:
        """Collections of this embedder that do not exist yet (for `mneme doctor`)."""
        self._existing = await self._call(collection_names)
        wanted = [collection_name(kind, self.fingerprint) for kind in VECTOR_KINDS]
        return [name for name in wanted if name not in self._existing]

    async def collections(self) -> list[str]:
        """Every mneme collection in the store (any embedder), sorted."""
        self._existing = await self._call(collection_names)
        return sorted(n for n in self._existing if _is_ours(n))

    async def drop_collections(self, fingerprint: str | None) -> list[str]:
        """Drop the collections of one embedder fingerprint, or of every embedder with None.

        For `mneme reindex`: the graph is the source of truth, vectors are rebuilt from it.
        Returns the dropped names.
        """
        dropped = [
            name
            for name in await self.collections()
            if fingerprint is None or name.split("__", 1)[1] == fingerprint
        ]
        for name in dropped:
            await self._call(lambda c, name=name: c.delete_collection(name))  # type: ignore[misc]
        self.generation += 1
        self._existing -= set(dropped)
        self._ready = False
        return dropped

    async def _create(self, name: str) -> None:
        try:
            layout = self.layout.create_args() if self.server else {}
            await self._call(
                lambda c: c.create_collection(
                    name,
                    vectors_config={
                        DENSE_VECTOR: models.VectorParams(
                            size=self.dim, distance=models.Distance.COSINE
                        )
                    },
                    sparse_vectors_config={SPARSE_VECTOR: self._sparse_params()},
                    **layout,  # type: ignore[arg-type]
                )
            )
        except (UnexpectedResponse, ValueError) as exc:
            # Another process created it between our listing and now: harmless, check it.
            if "already exists" in str(exc):
                await self._check_layout(name)
            else:
                raise
        else:
            if self.layout.tenant_shards:
                self._custom.add(name)
                await self._create_shared_key(name)
        self._existing.add(name)

    def _sparse_params(self) -> models.SparseVectorParams:
        # A server computes each tenant's IDF from counts (`qdrant_idf`); the engines in this
        # process compute it themselves over the tenant as corpus.
        if self.server:
            return models.SparseVectorParams()
        return models.SparseVectorParams(modifier=models.Modifier.IDF)

    async def _check_layout(self, name: str) -> set[str]:
        """Check a collection's vectors; return its indexed payload fields."""
        info = await self._call(lambda c: c.get_collection(name))
        params = info.config.params
        vectors = params.vectors if isinstance(params.vectors, dict) else {}
        dense = vectors.get(DENSE_VECTOR)
        sparse = (params.sparse_vectors or {}).get(SPARSE_VECTOR)
        wanted = self._sparse_params().modifier
        if (
            dense is None
            or sparse is None
            or dense.distance != models.Distance.COSINE
            or (sparse.modifier or models.Modifier.NONE) != (wanted or models.Modifier.NONE)
        ):
            what = "plain" if wanted is None else "IDF"
            raise SchemaMismatch(
                f"collection {name} at {self._where()} lacks the cosine {DENSE_VECTOR!r} or the "
                f"{what} {SPARSE_VECTOR!r} vector; it was not made by this version of mneme: run "
                f"`mneme reindex`"
            )
        if dense.size != self.dim:
            raise SchemaMismatch(
                f"collection {name} at {self._where()} holds {dense.size}-dimensional vectors but "
                f"the embedder {self.fingerprint} produces {self.dim}; run `mneme reindex`, or set "
                f"MNEME_EMBEDDING_MODEL / MNEME_EMBEDDING_DIM back to the model that built it"
            )
        if params.sharding_method == models.ShardingMethod.CUSTOM:
            self._custom.add(name)
            if SHARED not in await shard_keys(self._endpoints, name):  # a creation cut short
                await self._create_shared_key(name)
        return set(info.payload_schema or {})

    async def _create_shared_key(self, name: str) -> None:
        await create_shared_key(
            self._endpoints,
            name,
            self.layout.shards,
            self.layout.replication_factor,
            self._where(),
        )

    def _routing(self, name: str, tenant: str | None) -> models.ShardKeySelector | None:
        """Where a tenant's points of `name` are: its own shards, else `shared` (tenant
        shards only; None routes to every shard)."""
        return selector(tenant) if tenant is not None and name in self._custom else None

    async def promote_tenant(self, tenant: str) -> dict[str, int]:
        """Give `tenant` shards of its own in every collection with tenant shards
        (`qdrant_shards.promote`); points copied by this process per collection."""
        if not self._ready:
            await self.setup()
        names = sorted(self._custom)
        if not names:
            raise SchemaMismatch(
                f"the collections at {self._where()} have no tenant shards; they are made with "
                f"MNEME_QDRANT_TENANT_SHARDS=true (new collections: `mneme reindex` rebuilds them)"
            )
        copied: dict[str, int] = {}
        for name in names:
            copied[name] = await promote(
                self._endpoints,
                name,
                tenant,
                tenant_filter(tenant),
                shards=1,
                replication=self.layout.replication_factor,
            )
        self.generation += 1
        return copied

    async def tenant_shards(self) -> dict[str, list[str]]:
        """Each collection with tenant shards and its shard keys (`shared` first)."""
        return {name: await shard_keys(self._endpoints, name) for name in sorted(self._custom)}

    async def _payload_indexes(self, name: str, existing: set[str]) -> None:
        wanted: dict[str, str] = {**PAYLOAD_INDEXES, TERMS_FIELD: "integer"}
        for field, kind in wanted.items():
            if field in existing:
                continue
            schema = payload_index(field, kind)
            await self._call(
                lambda c, field=field, schema=schema: c.create_payload_index(  # type: ignore[misc]
                    name, field, field_schema=schema, wait=True
                )
            )

    # ------------------------------------------------------------------ helpers

    def _mine(self, name: str) -> bool:
        return name.split("__", 1)[1] == self.fingerprint

    def _where(self) -> str:
        return f"QDRANT_URL={self.location}" if self.server else repr(self.location)


def _is_ours(name: str) -> bool:
    kind, sep, rest = name.partition("__")
    return bool(sep and rest) and kind in VECTOR_KINDS


async def collection_names(client: AsyncQdrantClient) -> set[str]:
    """The names of every collection on the server (mneme's and any other)."""
    return {c.name for c in (await client.get_collections()).collections}
