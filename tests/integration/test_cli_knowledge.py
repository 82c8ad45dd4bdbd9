"""`mneme ingest`, `mneme facts` and `mneme recall --json` on a real embedded store, as a user
would run them (settings from the environment)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

DATA = Path(__file__).resolve().parents[1] / "data" / "changing_facts.json"
FACT_KEYS = {
    "uid",
    "text",
    "kind",
    "subject",
    "valid_from",
    "valid_to",
    "current",
    "superseded_by",
    "confidence",
    "grounding",
    "sources",
    "precision",
}


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the CLI at a private embedded store through the environment."""
    for name in ("NEO4J_URI", "MNEME_GRAPH_BACKEND", "QDRANT_URL", "QDRANT_PATH", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("MNEME_LLM_BASE_URL", "MNEME_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    monkeypatch.setenv("MNEME_DATA_DIR", str(data))
    return data


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.output


async def cli(*args: str) -> tuple[int, str]:
    """Run a command on its own thread (the CLI runs its own event loop)."""
    return await asyncio.to_thread(_invoke, *args)


async def test_ingest_facts_and_recall(data_dir: Path, tmp_path: Path) -> None:
    conversation = json.loads(DATA.read_text("utf-8"))
    conversation["sessions"] = conversation["sessions"][:8]  # Lyon ... the move to Porto
    conversation.pop("questions")
    path = tmp_path / "nora.jsonl"
    path.write_text(json.dumps(conversation) + "\n", "utf-8")

    code, out = await cli("ingest", str(path), "--user", "nora")
    assert code == 0, out
    assert "24 episodes from 1 conversations (24 new, 0 already remembered" in out
    code, out = await cli("ingest", str(path), "--user", "nora")  # idempotent
    assert code == 0 and "(0 new, 24 already remembered" in out

    code, out = await cli("facts", "--user", "nora", "--json")
    current = json.loads(out)
    assert code == 0 and current and all(set(f) == FACT_KEYS for f in current)
    assert all(f["current"] and f["valid_to"] is None for f in current)
    code, out = await cli("facts", "--user", "nora", "--history", "--json")
    history = json.loads(out)
    (lyon,) = [f for f in history if "Lyon" in f["text"] and f["subject"] == "user"]
    assert not lyon["current"] and lyon["valid_to"] and lyon["superseded_by"]
    (porto,) = [f for f in history if f["uid"] == lyon["superseded_by"]]
    assert "Porto" in porto["text"] and porto["current"]

    code, out = await cli("recall", "Where do I live now?", "--user", "nora", "--json")
    found = json.loads(out)
    assert code == 0 and found["query"] == "Where do I live now?"
    top = found["results"][0]
    assert set(top) == {"kind", "uid", "text", "score", "sources"}
    assert top["kind"] == "fact" and top["uid"] == porto["uid"]
    assert top["sources"] == porto["sources"] and len(top["sources"]) == 1
    scores = [r["score"] for r in found["results"]]
    assert scores == sorted(scores, reverse=True)
    code, out = await cli("facts", "--user", "nora", "--history")
    assert code == 0 and "(until 2026-06-12)" in out


async def test_a_malformed_line_is_named_and_nothing_is_ingested(
    data_dir: Path, tmp_path: Path
) -> None:
    good = {
        "id": "c1",
        "sessions": [
            {
                "id": "s1",
                "date": None,
                "turns": [
                    {"id": "t1", "speaker": "Ana", "role": "user", "text": "I live in Oslo."}
                ],
            }
        ],
    }
    bad = dict(
        good,
        sessions=[
            {"id": "s2", "turns": [{"id": "t2", "speaker": "Ana", "role": "boss", "text": "hi"}]}
        ],
    )
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n{not json\n", "utf-8")
    code, out = await cli("ingest", str(path), "--user", "ana")
    assert code == 2
    assert "broken.jsonl:2" in out and "role 'boss'" in out and "nothing was ingested" in out
    code, out = await cli("facts", "--user", "ana", "--json")
    assert code == 0 and json.loads(out) == []
