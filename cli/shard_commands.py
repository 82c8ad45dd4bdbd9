"""`mneme shards list | promote`: tenant shards on a Qdrant cluster (docs/deployment.md)."""

from __future__ import annotations

import typer

from cli.common import console, opened, run, safe
from memory.services import Services
from memory.stores.base import SchemaMismatch
from memory.stores.qdrant import QdrantIndex


def _index(services: Services) -> QdrantIndex:
    vectors = services.vectors
    if not isinstance(vectors, QdrantIndex) or not vectors.server:
        raise SchemaMismatch(
            "tenant shards live on a Qdrant server: set QDRANT_URL (and create the collections "
            "with MNEME_QDRANT_TENANT_SHARDS=true)"
        )
    return vectors


def list_shards() -> None:
    """Each vector collection's shard keys: `shared` (every tenant without shards of its own)
    and one per promoted tenant."""

    async def main() -> None:
        async with opened() as services:
            index = _index(services)
            keys = await index.tenant_shards()
            if not keys:
                console.print("no collection has tenant shards (MNEME_QDRANT_TENANT_SHARDS)")
            for name, found in keys.items():
                console.print(f"{safe(name)}: {', '.join(safe(k) for k in found)}")

    run(main)


def promote(
    user: str = typer.Option(..., "--user", help="The tenant to give shards of its own."),
) -> None:
    """Give one very large tenant shards of its own in every collection (its points are copied
    inside the cluster, then removed from `shared`); re-running finishes an interrupted one."""

    async def main() -> None:
        async with opened() as services:
            index = _index(services)
            with console.status(f"promoting {safe(user)}…"):
                copied = await index.promote_tenant(user)
            for name, n in copied.items():
                console.print(
                    f"{safe(name)}: {safe(user)} has its own shard"
                    + (f" ({n} points written during the copy carried over)" if n else "")
                )

    run(main)
