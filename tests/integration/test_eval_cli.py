"""`mneme eval retrieval` end to end on a tiny memeval file written here (not LoCoMo)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.eval_retrieval import ranked_turns, run_eval
from bench.memeval import EvalInputError, read_memeval
from cli.main import app
from memory.embeddings.embedders import Embedder
from tests.conftest import make_settings

pytestmark = pytest.mark.slow

CONVERSATION = {
    "id": "tiny-1",
    "source": "test",
    "sessions": [
        {
            "id": "A",
            "date": "2024-03-02T10:00",
            "turns": [
                {
                    "id": "t1",
                    "speaker": "Ana",
                    "role": None,
                    "text": "Hi Ben! I adopted a grey kitten called Pixel yesterday.",
                },
                {
                    "id": "t2",
                    "speaker": "Ben",
                    "role": None,
                    "text": "That's lovely! What breed is it?",
                },
                {
                    "id": "t3",
                    "speaker": "Ana",
                    "role": None,
                    "text": "A British Shorthair. She sleeps on my keyboard.",
                },
                {
                    "id": "t4",
                    "speaker": "Ben",
                    "role": None,
                    "text": "Ha! I started learning the cello this week.",
                },
            ],
        },
        {
            "id": "B",
            "date": "2024-04-15T18:30",
            "turns": [
                {
                    "id": "t5",
                    "speaker": "Ben",
                    "role": None,
                    "text": "My first cello recital went well on Saturday.",
                },
                {
                    "id": "t6",
                    "speaker": "Ana",
                    "role": None,
                    "text": "Congrats! I ran a half marathon in Lisbon.",
                },
                {"id": "t7", "speaker": "Ben", "role": None, "text": "Thanks!"},
                {"id": "t8", "speaker": "Ben", "role": None, "text": "Thanks!"},
            ],
        },
        {
            "id": "C",
            "date": None,
            "turns": [
                {
                    "id": "u1",
                    "speaker": "user",
                    "role": "user",
                    "text": "Remind me to water the ferns.",
                },
                {
                    "id": "u2",
                    "speaker": "assistant",
                    "role": "assistant",
                    "text": "Noted: water the ferns.",
                },
            ],
        },
    ],
    "questions": [
        {
            "id": "q1",
            "question": "What is the name of Ana's kitten?",
            "date": None,
            "category": "single-hop",
            "answer": "Pixel",
            "evidence": ["t1"],
            "evidence_sessions": ["A"],
        },
        {
            "id": "q2",
            "question": "Which instrument is Ben learning?",
            "date": None,
            "category": "multi-hop",
            "answer": "cello",
            "evidence": ["t4", "t5"],
            "evidence_sessions": ["A", "B"],
        },
        {
            "id": "q3",
            "question": "Where did Ana run a half marathon in April 2024?",
            "date": "2024-05-01T09:00",
            "category": "temporal",
            "answer": "Lisbon",
            "evidence": ["t6"],
            "evidence_sessions": ["B"],
        },
        {
            "id": "q4",
            "question": "What plants need water?",
            "date": None,
            "category": "adversarial",
            "answer": "ferns",
            "evidence": ["u1"],
            "evidence_sessions": ["C"],
        },
    ],
}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.memeval.jsonl"
    path.write_text(json.dumps(CONVERSATION) + "\n", encoding="utf-8")
    return path


async def test_run_eval_finds_the_evidence(data: Path, tmp_path: Path, embedder: Embedder) -> None:
    result = await run_eval(data, settings=make_settings(tmp_path), embedder=embedder)
    ranked = {q["id"]: q["ranked"] for q in result.questions}
    assert set(ranked) == {"q1", "q2", "q3", "q4"}
    assert "t1" in ranked["q1"][:2]  # the turns after it carry it as context
    assert {"t4", "t5"} <= set(ranked["q2"][:5])
    assert ranked["q3"][0] == "t6"
    assert "u1" in ranked["q4"][:3] and "u2" in ranked["q4"][:3]  # one episode, both turns
    # every turn id appears once; the same words said twice (t7, t8) are two episodes
    assert all(len(r) == len(set(r)) == 10 for r in ranked.values())
    summary = result.summary
    assert summary["ingest"]["turns"] == 10
    assert summary["ingest"]["duplicates"] == 0
    assert summary["ingest"]["failed_episodes"] == 0
    assert summary["ingest"]["failed_conversations"] == []
    assert summary["metrics"]["overall"]["n"] == 4
    assert summary["metrics"]["overall_no_adversarial"]["n"] == 3
    assert summary["metrics"]["single-hop"]["R@5"] == 1.0
    assert summary["latency_ms"]["n"] == 4


def test_cli_writes_json_and_prints_the_table(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEME_DATA_DIR", str(tmp_path / "unused"))
    monkeypatch.delenv("MNEME_LLM_BASE_URL", raising=False)
    out = tmp_path / "out" / "eval.json"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "retrieval",
            str(data),
            "--json",
            str(out),
            "--recipe",
            "SIMPLE",
            "--ablate",
            "rerank",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "overall w/o adversarial" in result.output
    assert "p95" in result.output
    assert "beside the reference retrievers" in result.output
    doc = json.loads(out.read_text())["benchmarks"]["tiny"]
    assert len(doc["questions"]) == 4
    assert doc["summary"]["ablate"] == "rerank"
    refs = doc["summary"]["references"]
    assert set(refs) == {"BM25", "dense", "RRF"}
    assert all(refs[r]["overall"]["n"] == 4 for r in refs)
    assert refs["dense"]["temporal"]["R@5"] == 1.0  # "half marathon" is t6's alone


def test_cli_rejects_unknown_parts_and_bad_files(data: Path, tmp_path: Path) -> None:
    bad = CliRunner().invoke(app, ["eval", "retrieval", str(data), "--ablate", "nonsense"])
    assert bad.exit_code == 2
    assert "unknown part" in bad.output
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x"}\n', encoding="utf-8")
    with pytest.raises(EvalInputError, match="broken.jsonl:1"):
        read_memeval(broken)


def test_ranked_turns_pads_with_latest_turns() -> None:
    from bench.eval_retrieval import Ingested

    ingested = Ingested(turn_ids={"e1": ["t1"], "e2": ["t2", "t3"]}, order=["t1", "t2", "t3", "t4"])
    assert ranked_turns([("e2", 1.0, {})], ingested, minimum=4) == ["t2", "t3", "t4", "t1"]
    found = [("e2", 1.0, {}), ("e1", 0.5, {})]
    assert ranked_turns(found, ingested, minimum=1) == ["t2", "t3", "t1"]


def test_the_context_side_of_a_turn_follows_the_answering_sides_of_the_next() -> None:
    from bench.eval_retrieval import Ingested

    ingested = Ingested(
        turn_ids={"e1": ["u1", "a1"], "e2": ["u2", "a2"]}, order=["u1", "a1", "u2", "a2"]
    )
    # e1's user side answers (1.0), its reply is context (0.5): e2's user side (0.8) goes between
    found = [("e1", 1.0, {"user": 1.0, "agent": 0.5}), ("e2", 0.8, {"user": 0.8, "agent": 0.4})]
    assert ranked_turns(found, ingested, minimum=1) == ["u1", "u2", "a1", "a2"]
    # a question about what the agent said ranks the reply first
    found = [("e1", 1.0, {"agent": 1.0, "user": 0.5})]
    assert ranked_turns(found, ingested, minimum=1) == ["a1", "u1"]


def test_the_llm_order_keeps_the_sides_of_a_fact_s_source() -> None:
    from datetime import UTC, datetime

    from bench.eval_retrieval import by_rank
    from memory.retrieval.candidates import Candidate

    fact = Candidate(
        episode_uid="e1",
        score=0.8,
        similarity=None,
        created_at=datetime(2024, 1, 1, tzinfo=UTC),
        thread_id="s1",
        content="The user lives in Porto.",
        sides={"user": 0.8, "agent": 0.4},
        kind="fact",
        uid="f1",
        sources=["e1"],
    )
    # ranked first by the model: the user's side at 1, the reply as context at half of it
    assert by_rank(["e1"], [fact]) == [("e1", 1.0, {"user": 1.0, "agent": 0.5})]


async def test_a_stored_ingest_is_reused_until_the_data_changes(
    data: Path, tmp_path: Path, embedder: Embedder
) -> None:
    store = tmp_path / "store"
    settings = make_settings(tmp_path)
    first = await run_eval(data, settings=settings, embedder=embedder, store=store)
    assert first.summary["ingest"]["reused"] == 0
    kept = [p for p in store.iterdir() if not p.name.startswith(".")]
    assert len(kept) == 1 and (kept[0] / "ingested.json").is_file()
    assert not [p for p in store.iterdir() if p.name.startswith(".partial")]

    second = await run_eval(data, settings=settings, embedder=embedder, store=store)
    assert second.summary["ingest"]["reused"] == 1
    assert second.questions == first.questions  # same memory, fresh copy: same rankings
    assert second.summary["ingest"]["seconds"] == first.summary["ingest"]["seconds"]

    changed = json.loads(json.dumps(CONVERSATION))
    changed["sessions"][0]["turns"][0]["text"] = "Hi Ben! I adopted a black puppy called Rex."
    other = tmp_path / "changed.memeval.jsonl"
    other.write_text(json.dumps(changed) + "\n", encoding="utf-8")
    third = await run_eval(other, settings=settings, embedder=embedder, store=store)
    assert third.summary["ingest"]["reused"] == 0  # different sessions: ingested again
    assert len([p for p in store.iterdir() if not p.name.startswith(".")]) == 2


async def test_an_unreadable_stored_ingest_is_ingested_again(
    data: Path, tmp_path: Path, embedder: Embedder
) -> None:
    store = tmp_path / "store"
    settings = make_settings(tmp_path)
    await run_eval(data, settings=settings, embedder=embedder, store=store)
    (kept,) = [p for p in store.iterdir() if not p.name.startswith(".")]
    (kept / "ingested.json").write_text("{not json", encoding="utf-8")  # a damaged store
    again = await run_eval(data, settings=settings, embedder=embedder, store=store)
    assert again.summary["ingest"]["reused"] == 0
    assert again.summary["metrics"]["single-hop"]["R@5"] == 1.0
    healed = await run_eval(data, settings=settings, embedder=embedder, store=store)
    assert healed.summary["ingest"]["reused"] == 1  # the damaged copy was replaced
