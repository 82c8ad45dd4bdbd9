"""Neo4j through the routing driver: a `neo4j://` URI (what a Neo4j cluster needs) works against
the single Community server `make test` starts, for writes, reads and leases, and as mneme's
NEO4J_URI."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from memory.embeddings.embedders import Embedder
from memory.schema import utcnow
from memory.services import Services
from memory.stores.neo4j import Neo4jGraphStore
from memory.write.episodes import remember
from tests.conftest import make_settings, require_neo4j

pytestmark = pytest.mark.neo4j


def routed() -> str:
    """The test server's URI with the routing scheme."""
    require_neo4j()
    uri = os.environ["NEO4J_URI"]
    assert uri.startswith("bolt://"), uri
    return "neo4j://" + uri.removeprefix("bolt://")


async def test_the_routing_driver_writes_reads_and_leases() -> None:
    store = Neo4jGraphStore(uri=routed(), user="neo4j", password=None, database="neo4j")
    try:
        await store.setup()
        await store._wipe_for_tests()
        lease = await store.leases.take("ada", "bookkeeping", "me", utcnow(), timedelta(seconds=30))
        assert lease.holder == "me"
        other = await store.leases.take(
            "ada", "bookkeeping", "you", utcnow(), timedelta(seconds=30)
        )
        assert other.holder == "me"  # held: the other process does not get it
        assert await store.leases.release("ada", "bookkeeping", "me")
    finally:
        await store.close()


async def test_mneme_runs_on_a_neo4j_uri(tmp_path: Path, embedder: Embedder) -> None:
    settings = make_settings(tmp_path, "neo4j", neo4j_uri=routed())
    services = await Services.open(settings, embedder=embedder, sweep_interval_s=None)
    try:
        await services.graph._wipe_for_tests()  # type: ignore[attr-defined]
        done = await remember(services, tenant="ada", thread_id="t", user_text="I live in Lyon.")
        episode = await services.graph.episodes.get("ada", done.uid)
        assert episode is not None and episode.user_text == "I live in Lyon."
        assert services.graph.backend == "neo4j"
    finally:
        await services.close()
