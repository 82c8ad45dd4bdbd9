"""Score fusion (`memory.retrieval.fusion`): calibration per list, max-sim per item, the adaptive gain."""

from __future__ import annotations

import pytest

from memory.retrieval.fusion import ScoredList, dense_gain, fuse, lexical_fit
from memory.text.sparse import tokenize


def test_an_item_scores_its_best_fragment() -> None:
    lst = ScoredList("dense", "cosine")
    for score in (0.2, 0.7, 0.4):  # three fragments of one long turn
        lst.add("turn", score)
    assert lst.scores == {"turn": 0.7}


def test_cosine_is_absolute_and_bm25_is_scaled_by_the_best() -> None:
    dense = ScoredList("dense", "cosine", scores={"a": 0.6, "b": -0.1})
    sparse = ScoredList("sparse", "top", scores={"a": 4.0, "c": 8.0})
    out = fuse([dense, sparse], ["a", "b", "c"])
    assert out["a"] == pytest.approx(0.6 + 0.5)
    # b: clamped cosine 0, and the sparse list's lowest value (it ranked below all of them)
    assert out["b"] == pytest.approx(0.0 + 0.5)
    # c: the dense list's lowest value (clamped), and first place on the sparse side
    assert out["c"] == pytest.approx(0.0 + 1.0)


def test_rrf_scales_first_place_everywhere_to_one() -> None:
    dense = ScoredList("dense", "cosine", scores={"a": 0.9, "b": 0.1})
    sparse = ScoredList("sparse", "top", scores={"a": 3.0})
    out = fuse([dense, sparse], ["a", "b"], method="rrf", rrf_k=60)
    assert out["a"] == pytest.approx(1.0)
    assert 0 < out["b"] < out["a"]


def test_empty_lists_take_no_part() -> None:
    dense = ScoredList("dense", "cosine", scores={"a": 0.5})
    assert fuse([dense, ScoredList("sparse", "top")], ["a"]) == {"a": 0.5}


def test_dense_gain_grows_as_the_lexical_hits_miss_the_question() -> None:
    tokens = set(tokenize("sneezing in the living room"))
    assert lexical_fit(tokens, ["my living room is dusty", "sneezing again"]) == pytest.approx(
        2 / 3
    )
    assert dense_gain(1.0, 2.0) == 1.0
    assert dense_gain(0.0, 2.0) == 3.0
    assert dense_gain(0.5, 0.0) == 1.0
