"""The server's lifespan is its composition root: it opens the services with the bookkeeping
graph as their queue's pipeline, and when the stores are down at start-up it keeps trying and
starts bookkeeping once they answer (`serve/webapp.py`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fastapi import FastAPI

import serve.webapp as webapp
from graph.bookkeeping import run_episode
from memory.schema import EpisodeStatus
from memory.services import get_services
from serve.api import Memory


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The process settings point at a private embedded store (no key file: loopback only)."""
    for name in ("NEO4J_URI", "MNEME_GRAPH_BACKEND", "QDRANT_URL", "MNEME_LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name in ("MNEME_API_KEYS", "MNEME_API_KEYS_FILE", "MNEME_SLEEP_SCHEDULE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("QDRANT_PATH", ":memory:")
    path = tmp_path / "data"
    monkeypatch.setenv("MNEME_DATA_DIR", str(path))
    return path


async def test_the_lifespan_opens_the_services_with_the_bookkeeping_graph(data: Path) -> None:
    async with webapp.lifespan(FastAPI()):
        services = await get_services()
        assert services.bookkeeping.pipeline is run_episode
        assert services.graph and (data / "graph.sqlite3").exists()


@pytest.fixture
def blocked(data: Path) -> Path:
    """The data directory's path holds a file: the embedded store cannot open there."""
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("not a directory")
    return data


async def test_stores_down_at_start_up_are_opened_when_they_answer(
    blocked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webapp, "RETRY_OPEN_S", (0.05, 0.2))
    async with webapp.lifespan(FastAPI()):
        await asyncio.sleep(0.3)  # a few tries fail; the server is up meanwhile
        await asyncio.to_thread(blocked.unlink)  # the store is back
        async with asyncio.timeout(60):
            while True:  # a run arriving now opens the process default, or finds it open
                try:
                    services = await get_services()
                except Exception:
                    services = None
                if services is not None and services.bookkeeping.pipeline is run_episode:
                    break
                await asyncio.sleep(0.05)
        memory = Memory(services)
        added = await memory.add("ada", "I moved to Porto last month.")
        await memory.flush()  # bookkept by the queue the lifespan started
        (episode,) = await services.graph.episodes.get_many("ada", added.uids)
        assert episode.status is EpisodeStatus.PROCESSED
