"""The dense head's place (`memory.retrieval.floor`): which episodes the dense list ranks first
that no lexical hit found, and where they go: right after the lexical list's best, in dense
order, when they rank lower; nothing leaves the list and the scores stay in order."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.retrieval.accumulate import Found
from memory.retrieval.candidates import Candidate
from memory.retrieval.floor import dense_head, with_dense_head
from memory.retrieval.recipes import PARTS, SIMPLE, ablate

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def cand(uid: str, score: float, sources: list[str] | None = None) -> Candidate:
    return Candidate(
        episode_uid=uid,
        score=score,
        similarity=None,
        created_at=NOW,
        thread_id="t",
        content=uid,
        uid=uid,
        sources=sources or [uid],
        sides={"user": score, "agent": score / 2},
    )


def test_the_head_is_the_dense_lists_first_that_no_lexical_hit_found() -> None:
    one = {
        "lex": Found(dense=0.30, sparse=9.0),
        "para": Found(dense=0.45),  # the paraphrase: dense only
        "both": Found(dense=0.50, sparse=2.0),
        "far": Found(dense=0.20),
        "summ": Found(),  # brought by a summary or the graph: neither list's
    }
    two = {"far": Found(dense=0.60)}  # a second pass finds it best of all
    unmatched, best = dense_head([one, two], 3)
    assert unmatched == ["far", "para"]  # the head is far, both, para; both has a lexical hit
    assert best == "lex"
    assert dense_head([one], 1) == ([], "lex")  # the head is `both`, which the lexicon found
    # a turn the facts demoted (it stated only a superseded fact) is not lifted
    assert dense_head([one, two], 3, demoted={"far": 0.5}) == (["para"], "lex")
    assert dense_head([{"x": Found(dense=0.4)}], 2) == (["x"], None)


def test_each_goes_right_after_the_lexical_best_in_dense_order() -> None:
    out = [cand(u, s) for u, s in [("a", 1.0), ("lex", 0.9), ("b", 0.8), ("c", 0.7)]]
    out += [cand("p1", 0.6), cand("d", 0.5), cand("p2", 0.4)]
    moved = with_dense_head(out, ["p2", "p1"], "lex")
    assert [c.uid for c in moved] == ["a", "lex", "p2", "p1", "b", "c", "d"]
    scores = [c.score for c in moved]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores)
    p2 = moved[2]
    assert p2.sides == {"user": p2.score, "agent": p2.score / 2}  # sides scaled alike


def test_one_already_above_its_place_stays_and_holds_none() -> None:
    out = [cand("p1", 1.0), cand("lex", 0.9), cand("b", 0.8), cand("p2", 0.7)]
    moved = with_dense_head(out, ["p1", "p2"], "lex")
    assert [c.uid for c in moved] == ["p1", "lex", "p2", "b"]


def test_a_fact_stands_for_its_episode_and_nothing_moves_without_an_anchor() -> None:
    fact = cand("f", 0.5, sources=["p"])
    out = [cand("lex", 1.0), cand("b", 0.8), fact, cand("p", 0.3)]
    moved = with_dense_head(out, ["p"], "lex")
    assert [c.uid for c in moved] == ["lex", "f", "b", "p"]  # the first candidate holding p
    assert [c.uid for c in with_dense_head(out, ["p"], None)] == ["lex", "b", "f", "p"]
    assert [c.uid for c in with_dense_head(out, ["p"], "gone")] == ["lex", "b", "f", "p"]
    assert [c.uid for c in with_dense_head(out, ["absent"], "lex")] == ["lex", "b", "f", "p"]


def test_the_part_turns_it_off() -> None:
    assert SIMPLE.rerank.dense_head == 2
    assert "densehead" in PARTS
    assert ablate(SIMPLE, "densehead").rerank.dense_head == 0
