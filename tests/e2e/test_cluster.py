"""A three-node Qdrant cluster under a node kill (the CI-sized run of `mneme bench cluster`):
every node in QDRANT_URL, replication factor 2, write consistency 1; the first node (the one
requests go to) SIGKILLed after a third of the turns and restarted after two thirds. Then 0
acknowledged turns lost or doubled, every episode processed and with vectors, every search made
while the node was down answered (probe questions exactly as after recovery), replicas
consistent again and `mneme doctor` clean, with the cluster in its report."""

from __future__ import annotations

import pytest

from bench.cluster import bench_cluster
from memory.embeddings.embedders import Embedder
from tests.conftest import require_qdrant_binary

pytestmark = pytest.mark.slow


async def test_a_killed_node_loses_nothing_and_searches_keep_answering(
    embedder: Embedder,
) -> None:
    require_qdrant_binary()
    report = await bench_cluster(nodes=3, turns=24, tenants=3, kill_node=0, embedder=embedder)
    assert report.killed == "node0" and report.down_s > 0
    assert report.acknowledged == 24 + 12 and report.lost == [], report  # + the probe tenant
    assert report.duplicates == 0 and report.unprocessed == 0 and report.without_vectors == 0
    assert report.searches_while_down > 0 and report.search_failures_while_down == 0, report
    assert report.probes_while_down > 0
    assert report.probes_complete == report.probes_while_down, report
    assert report.failovers >= 1  # the node requests went to was the one killed
    assert report.replicas_consistent, report.doctor
    assert report.doctor_ok, report.doctor
    assert any(line.startswith("ok vector cluster: 3 peers") for line in report.doctor)
