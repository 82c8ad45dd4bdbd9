"""What a Qdrant cluster does with writes while a node is down, per write consistency factor.

Three nodes (`bench.qdrant_nodes`), a collection of 3 shards with replication factor 2 and the
given write consistency, 30 points upserted, the last node SIGKILLed, three more upserts of 30
points (each acknowledged or not), a search, then the node restarted: once every replica is
Active again, each node is asked to count the points. Record 0132 rests on its output.

    python -m bench.write_consistency 2    # then 1
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
import uuid
from typing import Any

from qdrant_client import AsyncQdrantClient, models

from bench.qdrant_nodes import Nodes


def _points(k: int) -> list[models.PointStruct]:
    return [
        models.PointStruct(
            id=str(uuid.uuid4()), vector=[random.random() for _ in range(8)], payload={"k": k}
        )
        for _ in range(30)
    ]


def _states(info: models.CollectionClusterInfo) -> list[str]:
    local = [str(s.state.value) for s in info.local_shards]
    return local + [str(s.state.value) for s in info.remote_shards]


async def run(write_consistency: int) -> dict[str, Any]:
    """The experiment for one write consistency factor; its figures."""
    nodes = Nodes.create(size=3).start()
    out: dict[str, Any] = {"write_consistency": write_consistency, "upserts_while_down": []}
    try:
        clients = [
            AsyncQdrantClient(
                url=url, headers={"api-key": nodes.api_key}, timeout=10, check_compatibility=False
            )
            for url in nodes.urls
        ]
        first = clients[0]
        await first.create_collection(
            "t",
            vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE),
            shard_number=3,
            replication_factor=2,
            write_consistency_factor=write_consistency,
        )
        await first.upsert("t", _points(0), wait=True)
        nodes.kill(nodes.nodes[2])
        for k in range(1, 4):
            try:
                await first.upsert("t", _points(k), wait=True)
                out["upserts_while_down"].append("acknowledged")
            except Exception as exc:  # the answer is the figure
                out["upserts_while_down"].append(f"failed: {str(exc)[:120]}")
        hits = await first.query_points("t", query=[0.5] * 8, limit=1000)
        out["search_while_down"] = len(hits.points)
        out["count_while_down"] = (await first.count("t", exact=True)).count
        out["replicas_while_down"] = _states(await first.collection_cluster_info("t"))
        nodes.start_node(nodes.nodes[2])
        began = time.monotonic()
        while time.monotonic() - began < 120:
            states = _states(await first.collection_cluster_info("t"))
            if all(s == "Active" for s in states):
                break
            await asyncio.sleep(0.5)
        out["replicas_after_restart"] = states
        out["count_per_node_after_restart"] = [
            (await c.count("t", exact=True)).count for c in clients
        ]
        for c in clients:
            await c.close()
    finally:
        nodes.stop()
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(int(sys.argv[1]))), indent=2))
