"""Memory's state in the ranking, the pure parts: the state terms, association by links,
and diversity against candidates that hold the same sources."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.retrieval.candidates import Candidate
from memory.retrieval.recipes import SIMPLE, ablate, changed
from memory.retrieval.state import MemoryState, diversified, state_terms, state_weighs
from tests.unit.test_retrieval_steps import NOW, episode, question

DESIGN = changed(
    SIMPLE,
    {
        "priors.salience_weight": 0.3,
        "priors.recency_weight": 0.2,
        "priors.association_weight": 0.2,
    },
)


def test_state_terms_weigh_salience_recency_of_use_and_association() -> None:
    priors = DESIGN.priors
    asked = question("Where do I work?")
    old = episode("o", "I work at St. Anne's.", created_at=NOW - timedelta(days=300), salience=0.4)
    # Never used: recency of its creation, 300 days ago.
    expected = 0.3 * 0.4 + 0.2 * (1 / (1 + 300 / 30)) + 0.2 * 0.5
    assert state_terms(old, 0.5, asked, priors) == pytest.approx(expected)
    # Used yesterday: recent again (retrieval strengthens memory).
    used = old.model_copy(update={"last_accessed": NOW - timedelta(days=1)})
    assert state_terms(used, 0.0, asked, priors) == pytest.approx(
        0.3 * 0.4 + 0.2 * (1 / (1 + 1 / 30))
    )
    assert state_terms(used, 1.0, asked, SIMPLE.priors) == 0.0  # the agent's weights: 0


def test_state_weighs_only_when_a_term_or_the_hop_is_on() -> None:
    assert state_weighs(SIMPLE.priors)
    assert not state_weighs(ablate(SIMPLE, "state").priors)
    assert state_weighs(changed(ablate(SIMPLE, "state"), {"priors.concept_hops": 1}).priors)


def test_association_is_the_best_linked_relevance_times_the_link() -> None:
    state = MemoryState(on=True)
    state.link("a", "b", 0.5)
    state.link("a", "c", 1.0)
    state.link("a", "a", 1.0)  # no link to itself
    state.link("b", "a", 0.2)  # the stronger kept, both ways
    relevance = {"a": 1.0, "b": 0.8, "c": 0.3}
    assert state.association("a", relevance) == pytest.approx(max(0.8 * 0.5, 0.3 * 1.0))
    assert state.association("b", relevance) == pytest.approx(1.0 * 0.5)
    assert state.association("d", relevance) == 0.0
    assert "a" not in state.links["a"]


def cand(uid: str, score: float, sources: list[str], kind: str = "episode") -> Candidate:
    return Candidate(
        episode_uid=sources[0],
        score=score,
        similarity=None,
        created_at=NOW,
        thread_id="t",
        content=uid,
        kind=kind,  # type: ignore[arg-type]
        uid=uid,
        sources=sources,
        sides={"user": score, "agent": score / 2},
    )


def test_diversity_scales_what_better_candidates_already_hold() -> None:
    found = [
        cand("e1", 1.0, ["e1"]),
        cand("f1", 0.9, ["e1"], "fact"),  # the fact of e1: held
        cand("f2", 0.85, ["e1", "e2"], "fact"),  # e2 is new: kept
        cand("e2", 0.8, ["e2"]),  # held by f2 now
        cand("e3", 0.6, ["e3"]),
    ]
    out = diversified(found, 0.7)
    scores = {c.uid: c.score for c in out}
    assert scores == pytest.approx({"e1": 1.0, "f1": 0.63, "f2": 0.85, "e2": 0.56, "e3": 0.6})
    assert [c.uid for c in out] == ["e1", "f2", "f1", "e3", "e2"]
    f1 = next(c for c in out if c.uid == "f1")
    assert f1.sides == pytest.approx({"user": 0.63, "agent": 0.315})
    same = [cand("x", 1.0, ["x"]), cand("y", 0.5, ["x"])]
    assert [c.score for c in diversified(same, 1.0)] == [1.0, 0.5]
