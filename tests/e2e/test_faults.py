"""Durability under random faults (the CI-sized run of `mneme bench faults`): SIGKILLs of the
agent process at random points, the graph store and the vector store down for random
intervals, and a hostile second tenant attacking every tenth turn (a forged `command` into
`remember`, an import claiming the victim's next uids, refused records mid-stream in the
outbox); afterwards 0 acknowledged turns lost, 0 duplicates, 0 orphan vectors, every episode
processed, 0 of the victim's uids held by the attacker, only the attacker's records in the
dead letter, and `mneme doctor` clean but for them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench.fault_child import HOSTILE
from bench.faults import audit, drive
from memory.embeddings.embedders import Embedder

pytestmark = pytest.mark.slow


async def test_random_faults_lose_no_acknowledged_turn(tmp_path: Path, embedder: Embedder) -> None:
    report = await asyncio.to_thread(drive, tmp_path, 40, 3, 7, 420.0, True)
    report = await audit(tmp_path, report, embedder)
    log = (tmp_path / "child.log").read_text(errors="replace")[-3000:]
    assert report.acknowledged + report.told_not_remembered == 40, log
    assert report.kills >= 1 and report.graph_outages >= 1 and report.via_outbox >= 1, report
    assert report.lost == [], report
    assert report.duplicates == 0 and report.orphans == 0 and report.unindexed == 0, report
    assert report.doctor_ok, report.doctor
    assert report.claimed == [], report
    assert set(report.dead_letters) == {HOSTILE} and report.dead_letters[HOSTILE] >= 2, report
    assert not report.failed
