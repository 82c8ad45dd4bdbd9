"""The newest statement of the same thing first (`memory.retrieval.current`): the tense of a
question, the group the best candidates form by similarity, the move that keeps every score in
place, and the offline answer that quotes the statement that took a relevant one's place."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memory.retrieval.candidates import Candidate
from memory.retrieval.current import group, moved, said, tense
from memory.retrieval.question import Question
from memory.retrieval.recipes import PARTS, SIMPLE, changed
from memory.text.timeparse import parse_time
from tasks.offline_answer import offline_answer

NOW = datetime(2025, 6, 1, 12, tzinfo=UTC)


def asked(text: str) -> Question:
    return Question.read([text], NOW, [parse_time(text, NOW)], [], SIMPLE)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Where do I live at the moment?", "present"),
        ("Who's my boss right now?", "present"),
        ("What sport am I playing these days?", "present"),  # a window that holds now
        ("Am I still engaged?", "present"),
        ("Where did I live before my current place?", "past"),
        ("What was I driving in 2024?", None),  # a time that has ended: its window answers
        ("Who was my first manager at Kiezkraft?", "past"),
        ("What did I do last week?", None),
        ("Who went hiking in June 2023?", None),
        ("Did I ever get that sailing certificate?", "past"),
        ("Tell me about the trip to Skye", None),  # no tense form, no time
        ("Where does Caroline live now?", None),  # a third person: events, not a changed value
        ("Where does my sister live now?", "present"),
    ],
)
def test_the_tense_of_a_question(text: str, expected: str | None) -> None:
    assert tense(asked(text)) == expected


def unit(*rows: list[float]) -> np.ndarray:
    m = np.array(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_the_newest_of_the_anchors_group_comes_first() -> None:
    question = unit([1, 0, 0])[0]
    texts = unit(
        [1, 1, 0],  # 0: the anchor (old), close to the question
        [0, 0, 1],  # 1: about something else
        [1, 1.2, 0],  # 2: says what the anchor says, later
        [0.8, 1, 0.1],  # 3: the same again, latest, but only asks
    )
    days = [1, 9, 5, 7]
    assert group(days, [True, True, True, False], question, texts) == [2, 0, 3]
    # a text that states something may take the place; the oldest for a past question
    assert group(days, [True, True, True, True], question, texts) == [3, 0, 2]
    assert group([-d for d in days], [True] * 4, question, texts) == []  # the anchor is oldest
    # the anchor newest already, or alone: nothing moves
    assert group([9, 1, 5, 7], [True] * 4, question, texts) == []
    assert group(days, [True] * 4, question, unit([1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 1])) == []


def candidate(uid: str, score: float, text: str, day: int) -> Candidate:
    return Candidate(
        episode_uid=uid,
        score=score,
        similarity=None,
        created_at=NOW - timedelta(days=100 - day),
        thread_id="t",
        content=f"User: {text}\nAgent: Noted.",
        uid=uid,
        sources=[uid],
        sides={"user": score, "agent": score * 0.5},
    )


def test_the_newest_takes_the_place_and_the_others_move_down_not_out() -> None:
    found = [
        candidate("old", 1.0, "I work at Veldkamp.", 1),
        candidate("other", 0.8, "Lasagne tonight.", 50),
        candidate("older", 0.6, "Long week at Veldkamp.", 20),
        candidate("new", 0.4, "Started at Fietsly.", 90),
    ]
    out = moved(found, [3, 0, 2])
    assert [c.uid for c in out] == ["new", "other", "old", "older"]
    assert [c.score for c in out] == [1.0, 0.8, 0.6, 0.4]  # the places keep their scores
    assert out[0].sides == {"user": 1.0, "agent": 0.5} and out[0].replaces == "old"
    assert out[2].sides == {"user": 0.6, "agent": 0.3} and out[2].replaces == ""
    assert said(out[0]) == "Started at Fietsly."


def test_the_step_is_off_by_default_and_turns_on_by_recipe() -> None:
    # off by default (ADR 0152: it cost `mneme bench sleep`'s changed facts), so no part to ablate
    assert "newest" not in PARTS and "oldest" not in PARTS
    assert not SIMPLE.rerank.newest and not SIMPLE.rerank.oldest
    on = changed(SIMPLE, {"rerank.newest": True, "rerank.oldest": True})
    assert on.rerank.newest and on.rerank.oldest


def test_the_offline_answer_quotes_the_statement_that_took_a_relevant_ones_place() -> None:
    new = candidate("new", 1.0, "Started my new job at Fietsly this week.", 90).as_dict()
    old = candidate("old", 0.9, "I work at Veldkamp Insurance.", 1).as_dict()
    question = "Where do I work now?"
    # by its words alone the new statement bears on nothing the question asks
    assert "Veldkamp" in offline_answer([new, old], question, NOW)
    new["replaces"] = "old"
    assert "Fietsly" in offline_answer([new, old], question, NOW)
