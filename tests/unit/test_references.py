"""The reference retrievers' BM25 and the floor check of `mneme eval retrieval`."""

from __future__ import annotations

import math

from bench.references import bm25_scores, floor_losses


def test_bm25_is_rank_bm25s_okapi_formula() -> None:
    docs = [["cat", "sat", "mat"], ["dog", "ran"], ["cat", "cat", "dog"], ["bird"], ["fish"]]
    scores = bm25_scores(docs, ["cat"])
    n, df, avg = 5, 2, 10 / 5
    idf = math.log(n - df + 0.5) - math.log(df + 0.5)
    tfs = (1, 0, 2, 0, 0)
    expected = [
        idf * tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * len(d) / avg)) if tf else 0
        for tf, d in zip(tfs, docs, strict=True)
    ]
    assert scores == expected
    assert scores[2] > scores[0] > 0 == scores[1] == scores[3] == scores[4]
    assert bm25_scores([], ["cat"]) == []


def test_a_term_in_most_documents_keeps_a_small_positive_weight() -> None:
    # idf("the") = ln(1.5 / 6.5) < 0: floored at a quarter of the mean idf, as rank-bm25 does
    docs = [["the", w] for w in ("cat", "dog", "bird", "fish", "owl", "eel")] + [["yak"]]
    scores = bm25_scores(docs, ["the"])
    assert len(set(scores[:6])) == 1 and 0 < scores[0] < bm25_scores(docs, ["cat"])[0]
    assert scores[6] == 0


def test_the_floor_is_the_best_single_retriever_less_one_question() -> None:
    mine = {
        "a": {"n": 5.0, "R@10": 0.6, "NDCG@10": 0.5},
        "b": {"n": 5.0, "R@10": 0.6, "NDCG@10": 0.7},
    }
    refs = {
        "BM25": {"a": {"R@10": 1.0, "NDCG@10": 0.6}, "b": {"R@10": 0.8, "NDCG@10": 0.5}},
        "dense": {"a": {"R@10": 0.7, "NDCG@10": 0.9}, "b": {"R@10": 0.7, "NDCG@10": 0.6}},
        "RRF": {"a": {"R@10": 1.0, "NDCG@10": 1.0}, "b": {"R@10": 1.0, "NDCG@10": 1.0}},
    }
    # a: R@10 0.6 < 1.0 - 0.2 and NDCG 0.5 < 0.9 - 0.2; b: 0.6 is within one question of 0.8;
    # RRF is not a single retriever
    assert floor_losses(mine, refs) == [
        ("a", "R@10", 0.6, "BM25", 1.0),
        ("a", "NDCG@10", 0.5, "dense", 0.9),
    ]
