"""`mneme eval answers` on a tiny conversation written here (one fact that changes): the agent's
offline replies and their verdicts, on every graph backend through the harness's own pieces,
and end to end through the command (its embedded memory, a stored ingest reused)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.eval_answers import ask_on, run_answers, scored_row, summarise_rows
from bench.eval_ingest import default_bookkeep, ingest
from bench.memeval import SESSION_GAP, read_memeval
from cli.main import app
from memory.embeddings.embedders import Embedder
from memory.services import ChatModels, Services
from tests.conftest import make_settings

pytestmark = pytest.mark.slow


def turn(tid: str, role: str, text: str) -> dict[str, object]:
    return {"id": tid, "speaker": role, "role": role, "text": text}


CONVERSATION = {
    "id": "jonas",
    "source": "test",
    "sessions": [
        {
            "id": "S1",
            "date": "2024-01-10T19:00",
            "turns": [
                turn("D1:1", "user", "Hi! I'm Jonas. I live in Utrecht and I work as a baker."),
                turn("D1:2", "assistant", "Nice to meet you, Jonas!"),
                turn("D1:3", "user", "My cat is called Miso, she sleeps on the bread books."),
                turn("D1:4", "assistant", "Miso is a lovely name."),
            ],
        },
        {
            "id": "S2",
            "date": "2024-05-02T18:30",
            "turns": [
                turn("D2:1", "user", "Big news: we moved to Rotterdam last week, near the Maas."),
                turn("D2:2", "assistant", "Congratulations on the move!"),
            ],
        },
    ],
    "questions": [
        {
            "id": "q0",
            "question": "Where do I live now?",
            "date": None,
            "category": "current",
            "answer": "Rotterdam",
            "evidence": ["D2:1"],
            "stale": ["D1:1"],
            "match": ["Rotterdam"],
            "stale_value": "Utrecht",
        },
        {
            "id": "q1",
            "question": "Where did I live before Rotterdam?",
            "date": None,
            "category": "past",
            "answer": "Utrecht",
            "evidence": ["D1:1"],
            "stale": ["D2:1"],
            "match": ["Utrecht"],
        },
        {
            "id": "q2",
            "question": "What is my cat called?",
            "date": None,
            "category": "unchanged",
            "answer": "Miso",
            "evidence": ["D1:3"],
            "match": ["Miso"],
        },
    ],
}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "jonas.memeval.jsonl"
    path.write_text(json.dumps(CONVERSATION) + "\n", encoding="utf-8")
    return path


NEWEST = {"rerank.newest": True, "rerank.oldest": True}
PLAIN_COUNTS = {"current": (0, 1), "past": (0, 1), "unchanged": (1, 1), "all": (1, 3)}
"""What the agent answers offline as it is: the move to Rotterdam, said in passing, loses to
"I live in Utrecht" (issue 30's newcomer), and "before Rotterdam" quotes the move."""
NEWEST_COUNTS = {"current": (1, 1), "past": (0, 1), "unchanged": (1, 1), "all": (2, 3)}
"""With the newest/oldest step on (ADR 0152) the move answers the present."""


def counts(summary: dict[str, dict[str, object]]) -> dict[str, tuple[object, object]]:
    """(answered, n) per category."""
    return {name: (row["answered"], row["n"]) for name, row in summary.items()}


async def test_the_agent_answers_on_each_backend(services: Services, data: Path) -> None:
    conv = read_memeval(data)[0]
    services.chat = ChatModels.offline_for(services.settings)
    ingested = await ingest(services, "memeval-1", conv, default_bookkeep)
    now = ingested.last + SESSION_GAP
    plain = [
        scored_row(conv, q, await ask_on(services, "memeval-1", q, now), ingested, now)
        for q in conv.questions
    ]
    current, past, cat = plain
    assert "Utrecht" in current["reply"] and "Rotterdam" not in current["reply"]
    assert current["stale"] and current["cause"] == "stale quoted"
    assert current["evidence_rank"] is not None and current["evidence_rank"] <= 2
    assert past["cause"] == "other memory" and "Rotterdam" in past["reply"]
    assert cat["answered"] and "Miso" in cat["reply"] and cat["cause"] is None
    assert counts(summarise_rows(plain)) == PLAIN_COUNTS

    newest = [
        scored_row(conv, q, await ask_on(services, "memeval-1", q, now, NEWEST), ingested, now)
        for q in conv.questions
    ]
    assert "Rotterdam" in newest[0]["reply"] and newest[0]["evidence_rank"] == 1
    assert counts(summarise_rows(newest)) == NEWEST_COUNTS


def stored_graph(store: Path) -> bytes:
    (kept,) = [p for p in store.iterdir() if not p.name.startswith(".")]
    return (kept / "memory" / "graph.sqlite3").read_bytes()


async def test_the_eval_reuses_the_stored_ingest_and_leaves_it_as_it_was(
    data: Path, tmp_path: Path, embedder: Embedder
) -> None:
    store = tmp_path / "store"
    settings = make_settings(tmp_path)
    variants = {"agent": None, "newest": NEWEST}
    first = await run_answers(
        data, variants=variants, settings=settings, embedder=embedder, store=store
    )
    assert first.summary["reused_ingests"] == 0
    kept = stored_graph(store)
    second = await run_answers(
        data, variants=variants, settings=settings, embedder=embedder, store=store
    )
    assert second.summary["reused_ingests"] == 1
    assert stored_graph(store) == kept  # the questions ran on copies
    assert [r["reply"] for r in second.rows["agent"]] == [r["reply"] for r in first.rows["agent"]]
    by_variant = second.summary["variants"]
    assert counts(by_variant["agent"]["categories"]) == PLAIN_COUNTS
    assert counts(by_variant["newest"]["categories"]) == NEWEST_COUNTS
    assert by_variant["newest"]["changes"] == NEWEST


def test_the_command_prints_the_table_and_writes_json(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEME_DATA_DIR", str(tmp_path / "unused"))
    monkeypatch.delenv("MNEME_LLM_BASE_URL", raising=False)
    out = tmp_path / "answers.json"
    variant = "rerank.newest=true,rerank.oldest=true"
    result = CliRunner().invoke(
        app, ["eval", "answers", str(data), "--json", str(out), "--variant", variant]
    )
    assert result.exit_code == 0, result.output
    assert "the agent's offline replies" in result.output and "1/3" in result.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    summary = doc["benchmarks"]["jonas"]["summary"]
    assert counts(summary["variants"]["agent"]["categories"]) == PLAIN_COUNTS
    assert counts(summary["variants"][variant]["categories"]) == NEWEST_COUNTS
    assert [r["id"] for r in doc["benchmarks"]["jonas"]["questions"]["agent"]] == [
        "q0",
        "q1",
        "q2",
    ]
    bad = CliRunner().invoke(app, ["eval", "answers", str(data), "--variant", "rerank.newer=1"])
    assert bad.exit_code == 2 and "rerank.newer" in bad.output
