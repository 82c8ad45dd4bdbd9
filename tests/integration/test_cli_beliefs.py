"""`mneme beliefs` and `mneme snapshot --history` on a real embedded store."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from memory.embeddings.embedders import Embedder
from memory.schema import Belief, EvidenceKind, NewEpisode
from memory.services import Services
from tests.conftest import make_settings

T0 = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the CLI at a private embedded store through the environment, as a user would."""
    for name in ("NEO4J_URI", "MNEME_GRAPH_BACKEND", "QDRANT_URL", "QDRANT_PATH", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    monkeypatch.setenv("MNEME_DATA_DIR", str(data))
    return data


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.output


async def cli(*args: str) -> tuple[int, str]:
    """Run a command as a user would, on its own thread (the CLI runs its own event loop)."""
    return await asyncio.to_thread(_invoke, *args)


async def test_beliefs_and_snapshot_history(data_dir: Path, embedder: Embedder) -> None:
    code, out = await cli("beliefs", "--user", "ada")
    assert code == 0 and "No beliefs yet" in out
    code, out = await cli("snapshot", "--user", "ada")
    assert code == 0 and "No personality snapshot yet" in out

    settings = make_settings(data_dir.parent, data_dir=data_dir, qdrant_path=data_dir / "vectors")
    services = await Services.open(settings, embedder=embedder)
    graph = services.graph
    coffee = await graph.beliefs.upsert(
        Belief(
            tenant="ada",
            topic="coffee-health",
            statement="Coffee is good for you",
            valence=0.4,
            confidence=0.6,
            updated_at=T0,
        )
    )
    for i, kind in enumerate(
        [EvidenceKind.SUPPORTS, EvidenceKind.SUPPORTS, EvidenceKind.CONTRADICTS]
    ):
        ep = await graph.episodes.create(
            NewEpisode(
                tenant="ada", thread_id="t", user_text=f"study {i}", agent_text="ok", created_at=T0
            )
        )
        await graph.beliefs.add_evidence("ada", ep.uid, coffee.uid, kind, 0.7)
    await graph.beliefs.upsert(coffee.model_copy(update={"contested": True, "evidence_count": 3}))
    await graph.snapshots.add("ada", "I am curious and careful with evidence.", T0)
    await graph.snapshots.add("ada", "I am curious and careful with evidence. I like coffee.", T0)
    await services.close()

    code, out = await cli("beliefs", "--user", "ada")
    assert code == 0, out
    assert "coffee-health" in out and "3 (2/1)" in out and "yes" in out and "+0.40" in out
    code, out = await cli("beliefs", "--user", "bob")
    assert code == 0 and "No beliefs yet" in out  # tenants never mix

    code, out = await cli("snapshot", "--user", "ada")
    assert code == 0 and "v2" in out and "v1" not in out and "I like coffee." in out
    code, out = await cli("snapshot", "--user", "ada", "--history")
    assert code == 0 and out.index("v2") < out.index("v1") and "+15 chars" in out
