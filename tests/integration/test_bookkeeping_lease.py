"""One process at a time bookkeeps a tenant (`memory.services.queue`): while another process
holds the tenant's bookkeeping lease a queue waits for it, then runs; one that waits it out
leaves the episode to a later sweep without counting a failure. Two `Services` on one SQLite
file stand for two replicas (the lease lives in the graph store)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

import memory.services.queue as queue_module
from graph.bookkeeping import run_episode
from memory.embeddings.embedders import Embedder
from memory.schema import EpisodeStatus
from memory.services import Services
from memory.services.queue import BOOKKEEPING
from memory.sleep.leases import holding
from memory.write import quarantine
from memory.write.episodes import remember
from tests.conftest import make_settings


async def two_replicas(tmp_path: Path, embedder: Embedder) -> tuple[Services, Services]:
    """Two services on one SQLite file (and one in-memory vector index each)."""
    settings = make_settings(tmp_path, sqlite_path=tmp_path / "shared.sqlite3")
    first = await Services.open(
        settings, embedder=embedder, sweep_interval_s=None, pipeline=run_episode
    )
    second = await Services.open(
        settings, embedder=embedder, sweep_interval_s=None, pipeline=run_episode
    )
    return first, second


async def test_a_queue_waits_while_another_process_bookkeeps_the_tenant(
    tmp_path: Path, embedder: Embedder
) -> None:
    first, second = await two_replicas(tmp_path, embedder)
    try:
        done = await remember(second, tenant="ada", thread_id="t", user_text="I moved to Porto.")
        async with holding(first.graph, "ada", timedelta(seconds=30), name=BOOKKEEPING):
            assert second.bookkeeping.submit("ada", done.uid)
            await asyncio.sleep(1.0)
            episode = await second.graph.episodes.get("ada", done.uid)
            assert episode is not None and episode.status == EpisodeStatus.PENDING
        async with asyncio.timeout(60):
            await second.bookkeeping.drain()
        episode = await second.graph.episodes.get("ada", done.uid)
        assert episode is not None and episode.status == EpisodeStatus.PROCESSED
        assert second.bookkeeping.stats.processed == 1
    finally:
        await first.close()
        await second.close()


async def test_a_lease_held_throughout_defers_without_a_failure(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queue_module, "LEASE_WAIT_S", 0.5)
    first, second = await two_replicas(tmp_path, embedder)
    try:
        done = await remember(second, tenant="ada", thread_id="t", user_text="I moved to Porto.")
        async with holding(first.graph, "ada", timedelta(seconds=30), name=BOOKKEEPING):
            assert second.bookkeeping.submit("ada", done.uid)
            async with asyncio.timeout(30):
                await second.bookkeeping.drain()
        assert second.bookkeeping.stats.deferred == 1
        assert second.bookkeeping.stats.failed == 0
        assert await quarantine.failures(second.graph, "ada") == {}
        report = await second.bookkeeping.sweep_once("ada")  # the lease is free: it runs
        assert report.done == [done.uid]
    finally:
        await first.close()
        await second.close()
