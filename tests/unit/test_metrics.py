"""The memeval metrics on hand-checked rankings."""

from __future__ import annotations

import math

import pytest

from bench.metrics import (
    Ordered,
    Scored,
    all_at,
    hit_at,
    ndcg_at,
    percentile,
    question_metrics,
    recall_at,
    stale_order,
    summarise,
    summarise_order,
)

RANKED = ["a", "b", "c", "d", "e"]


def test_recall_all_hit() -> None:
    assert recall_at(RANKED, ["b", "z"], 1) == 0.0
    assert recall_at(RANKED, ["b", "z"], 5) == 0.5
    assert recall_at(RANKED, ["a", "e"], 5) == 1.0
    assert all_at(RANKED, ["a", "e"], 4) == 0.0
    assert all_at(RANKED, ["a", "e"], 5) == 1.0
    assert hit_at(RANKED, ["e", "z"], 4) == 0.0
    assert hit_at(RANKED, ["e", "z"], 5) == 1.0


def test_ndcg() -> None:
    assert ndcg_at(RANKED, ["a"]) == 1.0
    assert ndcg_at(RANKED, ["b"]) == pytest.approx(1 / math.log2(3))
    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at(RANKED, ["a", "c"]) == pytest.approx((1 + 1 / math.log2(4)) / ideal)
    assert ndcg_at(RANKED, ["z"]) == 0.0
    assert ndcg_at(["a", "a", "b"], ["a", "b"]) == pytest.approx((1 + 1 / math.log2(4)) / ideal)


def test_empty_evidence_counts_as_found() -> None:
    assert recall_at(RANKED, [], 1) == 1.0
    assert ndcg_at(RANKED, []) == 1.0


def test_summary_per_category_and_without_adversarial() -> None:
    rows = [
        Scored("single-hop", question_metrics(RANKED, ["a"])),
        Scored("single-hop", question_metrics(RANKED, ["z"])),
        Scored("adversarial", question_metrics(RANKED, ["z"])),
    ]
    summary = summarise(rows)
    assert summary["single-hop"]["R@1"] == 0.5
    assert summary["single-hop"]["n"] == 2
    assert summary["overall"]["R@1"] == pytest.approx(1 / 3)
    assert summary["overall_no_adversarial"]["R@1"] == 0.5
    assert set(summary["overall"]) >= {"R@1", "R@5", "R@10", "R@20", "all@10", "hit@10", "NDCG@10"}


def test_percentile() -> None:
    assert percentile([], 95) == 0.0
    assert percentile([5.0], 50) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile(list(map(float, range(101))), 95) == 95.0


def test_stale_order_answer_above_the_old_value_and_first() -> None:
    ranked = ["D5:1", "D1:3", "D9:1"]
    assert stale_order("current", ranked, ["D5:1"], ["D1:3"]) == Ordered("current", True, True)
    late = stale_order("current", ranked, ["D9:1"], ["D1:3"])
    assert (late.above, late.first) == (False, False)
    # A stale turn missing from the ranking ranks below all; neither present fails.
    assert stale_order("past", ranked, ["D9:1"], ["D7:7"]).above
    assert not stale_order("past", ranked, ["D8:8"], ["D7:7"]).above


def test_summarise_order_shares_per_category_and_overall() -> None:
    rows = [
        Ordered("current", True, True),
        Ordered("current", True, False),
        Ordered("past", False, False),
    ]
    out = summarise_order(rows)
    assert out["current"] == {"n": 2.0, "above_stale": 1.0, "first": 0.5}
    assert out["past"]["above_stale"] == 0.0
    assert out["overall"]["n"] == 3.0 and abs(out["overall"]["above_stale"] - 2 / 3) < 1e-9
