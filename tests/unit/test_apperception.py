"""Bulk apperception: the score from its components, and the reply's prompt it changes."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime

import pytest

from memory.beliefs.apperception import KEY, score
from memory.schema import Episode
from nodes.respond import respond
from tests.unit.fake_chat import human, runtime

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def episode(uid: str, text: str) -> Episode:
    return Episode(
        uid=uid,
        tenant="alice",
        thread_id="t",
        content=text,
        user_text=text,
        agent_text="",
        created_at=NOW,
    )


def test_an_empty_memory_is_low_and_each_component_saturates() -> None:
    empty = score([], {}, topics=0, facts=0, now=NOW)
    assert (empty.score, empty.level, empty.episodes) == (0.0, "low", 0)

    felt = ["I was so happy", "then sad", "angry!", "proud", "anxious", "grateful", "lonely"]
    eps = [episode(f"e{i}", text) for i, text in enumerate(felt)]
    links = {"e0": 40, "e1": 15, "e2": 15, "e3": 1}
    found = score(eps, links, topics=150, facts=15, now=NOW)
    assert found.density == 1.0  # 71 edges over 7 turns: past the scale of 8 a turn
    assert found.cornerstones == pytest.approx(3 / 5)
    assert found.coverage == 1.0  # saturates
    assert found.emotional_range == pytest.approx(round(7 / 12, 4))
    assert found.knowledge == pytest.approx(0.5)
    parts = (found.density, 0.6, 1.0, found.emotional_range, 0.5)
    assert found.score == pytest.approx(round(sum(parts) / 5, 4))
    assert found.level == "high"
    assert score(eps, links, topics=10, facts=1, now=NOW).level == "medium"


@pytest.mark.parametrize(
    ("level", "expected", "absent"),
    [("low", "ask one open question", "Anticipate"), ("high", "Anticipate", "open question")],
)
async def test_the_score_changes_the_reply_prompt(
    agent_services, fake_chat, level: str, expected: str, absent: str
) -> None:
    model = fake_chat(script=["Hello!", "Hello!"])
    await respond({**human("Hi there"), "memories": []}, runtime())
    before = model.calls[0]["messages"][0].content
    assert "# How well you know this person" not in before  # no deep sleep yet: no hint

    stored = score([], {}, topics=0, facts=0, now=NOW)
    value = asdict(stored) | {"level": level, "score": 0.1 if level == "low" else 0.8}
    await agent_services.graph.state.put("alice", KEY, json.dumps(value))
    await respond({**human("Hi there"), "memories": []}, runtime())
    system = model.calls[1]["messages"][0].content
    assert "# How well you know this person" in system
    assert f'<acquaintance level="{level}"' in system
    assert expected in system and absent not in system
