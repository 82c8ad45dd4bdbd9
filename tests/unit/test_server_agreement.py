"""`bench.server_agreement.compare`: every search that differs beyond a tie is reported with its
question, also when that question's top 10 came out the same."""

from bench.server_agreement import Search, compare
from memory.stores.base import SearchRequest, VectorHit


def _search(question: int, hits: list[tuple[str, float]]) -> Search:
    return Search(
        SearchRequest("derivatives", dense=[1.0, 0.0]),
        [VectorHit(i, s, {}) for i, s in hits],
        [],
        question,
    )


def test_a_search_differing_under_an_identical_top10_is_reported() -> None:
    embedded = [_search(0, [("a", 0.9), ("b", 0.8)]), _search(1, [("c", 0.7)])]
    server = [_search(0, [("a", 0.9), ("b", 0.8)]), _search(1, [("d", 0.6)])]
    questions = [("q0", ["e1"], ["e1"]), ("q1", ["e2"], ["e2"])]  # both rankings the same

    report = compare(embedded, server, questions)

    assert report["identical_top10"] == 2 and report["different_otherwise"] == []
    assert report["searches_differing_otherwise"] == 1
    assert [d["id"] for d in report["search_differences"]] == ["q1"]
    assert report["search_differences"][0]["reason"].startswith(
        "derivatives: not a fused search, ids differ"
    )


def test_a_tie_is_not_a_difference() -> None:
    embedded = [_search(0, [("a", 0.5), ("b", 0.5)])]
    server = [_search(0, [("b", 0.5), ("a", 0.5)])]

    report = compare(embedded, server, [("q0", ["a", "b"], ["b", "a"])])

    assert report["different_by_ties_only"] == ["q0"]
    assert report["searches_differing_otherwise"] == 0 and report["search_differences"] == []
