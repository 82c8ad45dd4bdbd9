"""Failures a user will meet: a store that is down, a crash mid-write, a wrong embedder."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memory.embeddings.embedders import Embedder
from memory.schema import EpisodeStatus
from memory.services import Services
from memory.stores.base import StoreUnavailable
from memory.write.episodes import sweep
from tests.conftest import NEO4J_URI, make_settings, require_neo4j

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_neo4j_down_fails_fast_with_the_fix(tmp_path: Path, embedder: Embedder) -> None:
    uri = f"bolt://127.0.0.1:{_free_port()}"
    settings = make_settings(tmp_path, "neo4j", neo4j_uri=uri)
    start = time.monotonic()
    with pytest.raises(StoreUnavailable) as info:
        await Services.open(settings, embedder=embedder)
    assert time.monotonic() - start < 2.5
    assert uri in str(info.value)
    assert "NEO4J_URI" in str(info.value)


async def test_wrong_embedding_dimension_is_refused(tmp_path: Path) -> None:
    from memory.embeddings.embedders import EmbedderError, build_embedder

    settings = make_settings(tmp_path, embedding_dim=512)
    emb = build_embedder(settings)
    with pytest.raises(EmbedderError) as info:
        await emb.embed_documents(["hello"])
    assert "512" in str(info.value) and "384" in str(info.value)
    assert "MNEME_EMBEDDING_DIM" in str(info.value)


CRASH_WRITER = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pathlib import Path
    from memory.write.episodes import index_episode, remember
    from memory.services import Services
    from memory.settings import Settings

    async def main():
        backend, data_dir = sys.argv[1], Path(sys.argv[2])
        settings = Settings(
            _env_file=None, data_dir=data_dir, graph_backend=backend,
            neo4j_uri=os.environ.get("NEO4J_URI") if backend == "neo4j" else None,
            qdrant_path=data_dir / "vectors", llm_base_url=None, llm_api_key=None,
        )
        services = await Services.open(settings)
        for i in range(6):
            r = await remember(services, tenant="ada", thread_id="t1",
                               user_text=f"Fact number {i}: I keep {i} cacti on the sill.")
            if i < 3:
                await index_episode(services, "ada", r.uid)
        print("WRITTEN", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # die between the graph write and the vector write

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
async def test_crash_between_graph_and_vectors_is_repaired_by_the_sweep(
    backend: str, tmp_path: Path, embedder: Embedder
) -> None:
    if backend == "neo4j":
        require_neo4j()
        wipe = await Services.open(make_settings(tmp_path / "w", "neo4j"), embedder=embedder)
        await wipe.graph._wipe_for_tests()  # type: ignore[attr-defined]
        await wipe.close()
    data_dir = tmp_path / "data"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if NEO4J_URI:
        env["NEO4J_URI"] = NEO4J_URI
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", CRASH_WRITER, backend, str(data_dir)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert "WRITTEN" in done.stdout

    settings = make_settings(tmp_path, backend, data_dir=data_dir, qdrant_path=data_dir / "vectors")
    services = await Services.open(settings, embedder=embedder)
    try:
        episodes = await services.graph.episodes.list_by_status("ada", list(EpisodeStatus))
        assert len(episodes) == 6  # nothing written before the crash was lost
        waiting = [e for e in episodes if e.status != EpisodeStatus.INDEXED]
        assert len(waiting) == 3
        report = await sweep(services)
        assert report.ok and sorted(report.done) == sorted(e.uid for e in waiting)
        with_vectors = await services.vectors.scroll_episode_uids("derivatives", "ada")
        assert with_vectors == {e.uid for e in episodes}
        assert await services.vectors.count("derivatives", "ada") == 6  # no duplicates
    finally:
        await services.close()
