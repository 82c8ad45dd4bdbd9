"""`mneme eval convert`: LoCoMo and LongMemEval records into memeval conversations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.convert import ConvertError, convert
from cli.main import app

LOCOMO = [
    {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a kitten!"},
                {
                    "speaker": "Ben",
                    "dia_id": "D1:2",
                    "text": "Look at mine.",
                    "img_url": ["x"],
                    "blip_caption": "a photo of a grey cat",
                },
            ],
            "session_2_date_time": "9:05 am on 10 June, 2023",
            "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "She is called Pixel."}],
        },
        "qa": [
            {
                "question": "What did Ana adopt?",
                "answer": "a kitten",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "Pets?",
                "answer": 2,
                "evidence": ["D1:1; D2:01", "D:1:2", "D9:9"],
                "category": 1,
            },
            {
                "question": "Nothing?",
                "adversarial_answer": "no",
                "evidence": ["D7:1"],
                "category": 5,
            },
        ],
    }
]

LME = {
    "question_id": "q1",
    "question_type": "knowledge-update",
    "question": "Where do I live now?",
    "answer": "Porto",
    "question_date": "2023/06/01 (Thu) 08:00",
    "haystack_dates": ["2023/06/01 (Thu) 09:00", "2023/01/02 (Mon) 10:00"],
    "haystack_session_ids": ["answer_b", "answer_a"],
    "answer_session_ids": ["answer_a", "answer_b"],
    "haystack_sessions": [
        [
            {"role": "user", "content": "We moved to Porto.", "has_answer": True},
            {"role": "assistant", "content": "Congratulations!"},
        ],
        [{"role": "user", "content": "I live in Lyon.", "has_answer": True}],
    ],
}


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_locomo(tmp_path: Path) -> None:
    raw = tmp_path / "locomo10.json"
    raw.write_text(json.dumps(LOCOMO), encoding="utf-8")
    assert convert("locomo", raw, tmp_path / "out.jsonl") == 1
    (conv,) = read(tmp_path / "out.jsonl")
    assert [s["id"] for s in conv["sessions"]] == ["S1", "S2"]
    assert conv["sessions"][0]["date"] == "2023-05-08T13:56"
    assert conv["sessions"][0]["turns"][1]["text"] == "Look at mine. [shares a photo of a grey cat]"
    q0, q1 = conv["questions"]  # the third names no turn and is dropped
    assert q0 == {
        "id": "conv-1-q0",
        "question": "What did Ana adopt?",
        "date": None,
        "category": "single-hop",
        "answer": "a kitten",
        "evidence": ["D1:1"],
        "evidence_sessions": ["S1"],
    }
    assert q1["evidence"] == ["D1:1", "D2:1", "D1:2"] and q1["category"] == "multi-hop"
    assert q1["answer"] == "2" and q1["evidence_sessions"] == ["S1", "S2"]


def test_longmemeval(tmp_path: Path) -> None:
    folder = tmp_path / "lme"
    folder.mkdir()
    (folder / "q1.json").write_text(json.dumps(LME), encoding="utf-8")
    (folder / "q2.json").write_text(json.dumps({**LME, "question_id": "q2_abs"}), "utf-8")
    assert convert("longmemeval", folder, tmp_path / "out.jsonl") == 1
    (conv,) = read(tmp_path / "out.jsonl")
    assert [(s["id"], s["date"]) for s in conv["sessions"]] == [
        ("S2", "2023-01-02T10:00"),
        ("S1", "2023-06-01T09:00"),
    ]
    assert conv["sessions"][1]["turns"][1] == {
        "id": "S1:2",
        "speaker": "assistant",
        "role": "assistant",
        "text": "Congratulations!",
    }
    (q,) = conv["questions"]
    assert q["evidence"] == ["S1:1", "S2:1"] and q["evidence_sessions"] == ["S1", "S2"]
    assert q["date"] == "2023-06-01T09:01"  # never before the last session


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    raw = tmp_path / "x.json"
    raw.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConvertError, match="not readable JSON"):
        convert("locomo", raw, tmp_path / "o.jsonl")
    raw.write_text(json.dumps([{"sample_id": "s", "conversation": {}}]), encoding="utf-8")
    with pytest.raises(ConvertError, match="sample s is not LoCoMo's format"):
        convert("locomo", raw, tmp_path / "o.jsonl")
    assert not (tmp_path / "o.jsonl").exists()
    result = CliRunner().invoke(app, ["eval", "convert", "nope", str(raw), str(tmp_path / "o")])
    assert result.exit_code == 2 and "unknown benchmark" in result.output


def test_demo_conversation_converts_to_the_notebooks_sample(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "sample.memeval.jsonl"
    assert convert("demo", root / "cli" / "data" / "sample_conversation.json", out) == 1
    assert out.read_text() == (root / "notebooks" / "data" / "sample.memeval.jsonl").read_text()
    (conv,) = [json.loads(line) for line in out.read_text().splitlines()]
    turns = {t["id"]: t for s in conv["sessions"] for t in s["turns"]}
    knee = next(q for q in conv["questions"] if "knee" in q["question"])
    assert [turns[t]["text"] for t in knee["evidence"]] == [
        "My knee hurt after the 12 km run on Saturday, so my physio, Dr. Lefevre, told me to rest "
        "it for a week."
    ]  # whole words: "Brest" holds "rest" and is no evidence
