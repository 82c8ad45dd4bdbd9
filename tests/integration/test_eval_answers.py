"""`mneme eval answers` on a tiny conversation written here (one fact that changes): the agent's
offline replies and their verdicts, on every graph backend through the harness's own pieces,
and end to end through the command (its embedded memory, a stored ingest reused)."""

from __future__ import annotations

import json
from datetime import timedelta
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


async def test_the_agent_answers_on_each_backend(services: Services, data: Path) -> None:
    conv = read_memeval(data)[0]
    services.chat = ChatModels.offline_for(services.settings)
    ingested = await ingest(services, "memeval-1", conv, default_bookkeep)
    now = ingested.last + SESSION_GAP
    for changes in (None, NEWEST):
        rows = []
        for q in conv.questions:
            state = await ask_on(services, "memeval-1", q, now, changes)
            rows.append(scored_row(conv, q, state, ingested, now))
        print(changes, json.dumps(rows, indent=1))
        print(summarise_rows(rows))
