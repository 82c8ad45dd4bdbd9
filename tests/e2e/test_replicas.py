"""Several mneme replicas on one memory (the CI-sized run of `mneme bench replicas`): three
worker processes on the test Neo4j, reached through the routing driver (`neo4j://`), and one
Qdrant server; one replica's graph writes fail for a while (its turns go to its outbox), then it
is SIGKILLed mid-stream and its unanswered turns are retried on the others. Then 0 acknowledged
turns lost or doubled, no episode bookkept with effect twice, no two consolidations of a tenant
at once, the dead replica's outbox filed by the survivors, every episode processed, doctor
clean. Without NEO4J_URI the replicas share one SQLite file instead (CI=true insists on Neo4j)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.replicas import bench_replicas
from tests.conftest import IN_CI, require_qdrant_binary

pytestmark = pytest.mark.slow


async def test_a_killed_replica_loses_nothing_and_nothing_runs_twice(tmp_path: Path) -> None:
    require_qdrant_binary()
    uri = os.environ.get("NEO4J_URI")
    if IN_CI and not uri:
        pytest.fail("CI=true but NEO4J_URI is not set: the replicas must share the test Neo4j")
    report = await bench_replicas(replicas=3, turns=24, tenants=4, neo4j_uri=uri, work=tmp_path)
    log = "\n".join((tmp_path / "r0.log").read_text(errors="replace").splitlines()[-20:])
    assert report.graph.startswith("neo4j at neo4j://" if uri else "one SQLite")
    assert report.killed == "r0" and report.acknowledged == 24, (report, log)
    assert report.lost == [] and report.duplicates == 0, report
    assert report.double_bookkept == [] and report.consolidation_overlaps == 0, report
    assert report.dead_outbox_records >= 1, report
    assert report.dead_outbox_filed_by_others == report.dead_outbox_records, report
    assert report.unprocessed == 0 and report.doctor_ok, report.doctor
