"""Offline supersession of standing instructions, on every graph backend with the real embedder:
a new instruction of a scope replaces (or revokes) an old one only when it is about the same
thing; an unrelated instruction of the same scope leaves the old one current."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from memory.embeddings.embedders import Embedder
from memory.knowledge.facts import SAME_INSTRUCTION, same_frame
from memory.schema import FactKind
from memory.services import Services
from tests.integration.test_knowledge import tell

PAIRS = json.loads((Path(__file__).parents[1] / "data" / "instruction_pairs.json").read_text())
PREFIX = "Standing instruction from the user: "
"""How the offline heuristic words an instruction fact (`tasks.facts.patterns.instruction`)."""


async def test_an_unrelated_instruction_of_the_same_scope_leaves_the_old_one_current(
    services: Services,
) -> None:
    story = [
        (0, "Always use tabs for indentation in my code."),
        (1, "From now on, always add type hints to my Python code."),
        (2, "From now on, use four spaces for indentation in my code."),
        (3, "Stop adding type hints to my Python code."),
        (4, "Always use snake_case for variable names in my code."),
    ]
    uids = await tell(services, "ada", story)
    facts = await services.graph.facts.list(
        "ada", kinds=[FactKind.INSTRUCTION], include_superseded=True
    )
    said = {f.uid: s for f in facts for s in await services.graph.facts.sources("ada", f.uid)}
    by_turn = {said[f.uid]: f for f in facts}
    tabs, hints, spaces, stop, snake = (by_turn[u] for u in uids)
    assert {tabs.attribute, hints.attribute, spaces.attribute} == {"instruction:code"}
    # type hints did not replace tabs (the bug: every code instruction replaced the last)
    assert tabs.superseded_by == spaces.uid and tabs.valid_to == spaces.valid_from
    # the revocation ends the type hints, not the indentation
    assert hints.superseded_by == stop.uid
    assert spaces.superseded_by is None and snake.superseded_by is None
    current = await services.graph.facts.list("ada", kinds=[FactKind.INSTRUCTION])
    assert {f.uid for f in current} == {spaces.uid, snake.uid, stop.uid}


async def test_the_threshold_separates_the_tune_pairs(embedder: Embedder) -> None:
    """SAME_INSTRUCTION on its own pairs (tests/data/instruction_pairs.json, `tune`): every
    pair of different things stays apart, and all but one pair about the same thing (Python ->
    Rust code examples, 0.66) replaces."""
    scores = {}
    for label, pairs in PAIRS["tune"].items():
        old = await embedder.embed_documents([PREFIX + a for a, _ in pairs])
        new = await embedder.embed_documents([PREFIX + b for _, b in pairs])
        scores[label] = np.sum(old * new, axis=1)
    assert int((scores["different"] >= SAME_INSTRUCTION).sum()) == 0
    assert int((scores["same"] < SAME_INSTRUCTION).sum()) <= 1


def test_the_same_frame_with_another_value_replaces() -> None:
    """The second test of `_replaces`, for pairs whose cosine the differing value pulls under
    SAME_INSTRUCTION: it joins no pair of different things (tune and held back), and it joins
    the language of code examples said in other words."""
    for part in ("tune", "heldout"):
        assert not any(same_frame(PREFIX + b, PREFIX + a) for a, b in PAIRS[part]["different"])
    assert same_frame(
        PREFIX + "Write code examples in Rust.", PREFIX + "Write code examples in Python."
    )
    assert same_frame(
        PREFIX + "From now on use Python for code examples.",
        PREFIX + "Please always show code examples in TypeScript.",
    )
    assert not same_frame(
        PREFIX + "Always add type hints to Python code.",
        PREFIX + "Always write unit tests for Python code.",
    )
