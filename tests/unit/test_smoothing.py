"""Neighbour smoothing: each episode gains its weight x its better neighbour's relevance."""

from __future__ import annotations

import pytest

from memory.retrieval.ranking import smooth

RELEVANCE = {"a": 1.0, "b": 0.2, "c": 0.4, "d": 0.1}
ADJACENT = {"b": ("a", "c"), "c": ("b", None), "d": (None, "x")}


def test_one_weight_for_all() -> None:
    out = smooth(RELEVANCE, ADJACENT, 0.5)
    assert out == pytest.approx({"a": 1.0, "b": 0.2 + 0.5, "c": 0.4 + 0.1, "d": 0.1})


def test_paired_episodes_take_their_own_weight() -> None:
    out = smooth(RELEVANCE, ADJACENT, 0.5, paired={"b"}, paired_weight=0.1)
    assert out == pytest.approx({"a": 1.0, "b": 0.2 + 0.1, "c": 0.4 + 0.1, "d": 0.1})
    only_paired = smooth(RELEVANCE, ADJACENT, 0.0, paired={"b"}, paired_weight=0.1)
    assert only_paired == pytest.approx({"a": 1.0, "b": 0.3, "c": 0.4, "d": 0.1})


def test_no_weight_changes_nothing() -> None:
    assert smooth(RELEVANCE, ADJACENT, 0.0) == RELEVANCE
    assert smooth(RELEVANCE, ADJACENT, 0.0, paired={"b"}, paired_weight=0.0) == RELEVANCE
