"""The many-turn fixture is what its generator writes, and every question's evidence exists."""

from __future__ import annotations

import json
from pathlib import Path

from tests.data.make_many_turns import build

DATA = Path(__file__).parents[1] / "data" / "many_turns.memeval.jsonl"


def test_fixture_is_generated_and_consistent() -> None:
    stored = json.loads(DATA.read_text(encoding="utf-8"))
    assert stored == json.loads(json.dumps(build(), ensure_ascii=False))
    turns = {t["id"] for s in stored["sessions"] for t in s["turns"]}
    assert len(stored["sessions"]) >= 50 and len(stored["questions"]) >= 20
    for q in stored["questions"]:
        assert len(q["evidence"]) >= 2 and set(q["evidence"]) <= turns, q["id"]
