"""`mneme setup`, `mneme doctor` and `mneme sweep` on a real embedded store."""

from __future__ import annotations

import asyncio
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from memory.embeddings.embedders import Embedder
from memory.services import Services
from memory.write.episodes import index_episode, remember
from tests.conftest import make_settings

T0 = datetime(2020, 1, 1, tzinfo=UTC)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the CLI at a private embedded store through the environment, as a user would."""
    for name in ("NEO4J_URI", "MNEME_GRAPH_BACKEND", "QDRANT_URL", "QDRANT_PATH", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    monkeypatch.setenv("MNEME_DATA_DIR", str(data))
    return data


def _run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


async def _cli(*args: str) -> tuple[int, str]:
    """Run the CLI as a user would; in a thread, since it runs its own event loop."""
    return await asyncio.to_thread(_run_cli, *args)


async def _open(data: Path, embedder: Embedder) -> Services:
    settings = make_settings(data.parent, data_dir=data, qdrant_path=data / "vectors")
    return await Services.open(settings, embedder=embedder)


async def test_doctor_reports_health_and_each_inconsistency(
    data_dir: Path, embedder: Embedder
) -> None:
    code, out = await _cli("setup")
    assert code == 0, out
    code, out = await _cli("doctor")
    assert code == 0, out
    assert "FAIL" not in out and "schema" in out
    assert "fidelity: never checked (deep sleep checks it)" in out

    services = await _open(data_dir, embedder)
    kept = await remember(
        services, tenant="ada", thread_id="t", user_text="I grow tomatoes.", at=T0
    )
    lost = await remember(services, tenant="ada", thread_id="t", user_text="I fly kites.", at=T0)
    orphan = await remember(services, tenant="bob", thread_id="t", user_text="I sing.", at=T0)
    stuck = await remember(services, tenant="bob", thread_id="t", user_text="I knit.", at=T0)
    for uid, tenant in ((kept.uid, "ada"), (lost.uid, "ada"), (orphan.uid, "bob")):
        await index_episode(services, tenant, uid)
    await services.vectors.delete_by_episode("ada", lost.uid)  # graph says indexed, no vectors
    await services.graph.episodes.delete("bob", orphan.uid)  # vectors left without an episode
    await services.close()

    code, out = await _cli("doctor")
    assert code == 1
    assert "FAIL episodes without vectors: 1" in out and lost.uid in out
    assert "FAIL vectors without episodes: 1" in out and orphan.uid in out
    assert "FAIL stuck episodes" in out and stuck.uid in out

    code, out = await _cli("sweep")
    assert code == 0, out
    # Full bookkeeping: the pending episode and the two only indexed ones end `processed`.
    assert "3 episodes completed" in out
    code, out = await _cli("reindex", "--yes")
    assert code == 0, out
    code, out = await _cli("doctor")
    # Re-indexing rebuilt the lost vectors and dropped the orphans; all is well again.
    assert code == 0, out


async def test_vectors_of_an_earlier_version_are_rebuilt_by_reindex(
    data_dir: Path, embedder: Embedder
) -> None:
    """A data directory whose vectors are still in qdrant-client local-mode files: mneme says the
    one command that moves them (rebuilt from the graph) into Qdrant Edge, and it works."""
    from memory.stores.qdrant import QdrantIndex

    services = await _open(data_dir, embedder)
    told = await remember(services, tenant="ada", thread_id="t", user_text="I grow tomatoes.")
    await services.close()
    shutil.rmtree(data_dir / "vectors")  # as an earlier version left it: no Edge index ...
    legacy = await QdrantIndex.open(
        str(data_dir / "qdrant"), fingerprint=embedder.fingerprint, dim=embedder.dim
    )
    await legacy.setup()  # ... and local-mode files
    await legacy.close()

    code, out = await _cli("recall", "tomatoes", "--user", "ada")
    assert code == 2 and "mneme reindex" in out and "qdrant-client local mode" in out
    code, out = await _cli("doctor")
    assert code == 1 and "FAIL vector files" in out
    code, out = await _cli("reindex", "--yes")
    assert code == 0 and "1 episodes re-indexed, 0 failed" in out, out
    code, out = await _cli("recall", "tomatoes", "--user", "ada")
    assert code == 0 and "tomatoes" in out
    services = await _open(data_dir, embedder)
    try:
        assert services.vectors.backend == "qdrant-edge"
        assert await services.vectors.scroll_episode_uids("derivatives", "ada") == {told.uid}
    finally:
        await services.close()


def test_bad_settings_exit_with_the_fix(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEME_GRAPH_BACKEND", "neo4j")
    code, out = _run_cli("doctor")
    assert code == 1
    assert "NEO4J_URI" in out
