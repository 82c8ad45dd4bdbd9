"""The memeval metrics on hand-checked rankings."""

from __future__ import annotations

import math

import pytest

from bench.metrics import (
    Scored,
    all_at,
    hit_at,
    ndcg_at,
    percentile,
    question_metrics,
    recall_at,
    summarise,
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
