"""The belief math of docs/design.md section 6, with exact numbers: no stores, no models."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from memory.beliefs.evidence import (
    BASE_RATE,
    BOOTSTRAP_FACTOR,
    MIN_SNAPSHOT_CHARS,
    as_kind,
    belief_strength,
    contested,
    decayed,
    effective_magnitude,
    move,
    recommends_update,
    resistance,
    snapshot_rejection,
)
from memory.beliefs.revision import MAX_PATCH_STEP, bounded_step
from memory.beliefs.sponge import Insight, SpongeState, SpongeStatus
from memory.beliefs.views import rrf_rank
from memory.schema import ESS, Belief, Evidence, EvidenceKind, ReasoningType
from tasks.reflection import VIEWS_HEADER, heuristic_snapshot, short_ids

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def ess(score: float, kind: ReasoningType = ReasoningType.EMPIRICAL) -> ESS:
    return ESS(
        score=score,
        specificity=0.5,
        grounding=0.5,
        rigor=0.5,
        source_quality=0.5,
        objectivity=0.5,
        reasoning_type=kind,
    )


def belief(topic: str, confidence: float, n: int, valence: float = 0.5) -> Belief:
    return Belief(
        uid=topic,
        tenant="t",
        topic=topic,
        statement=f"{topic} is good",
        valence=valence,
        confidence=confidence,
        evidence_count=n,
        updated_at=T0,
    )


def test_resistance_is_one_over_confidence_plus_one() -> None:
    assert resistance(0.0) == 1.0
    assert resistance(1.0) == 0.5
    assert resistance(0.9) == pytest.approx(1 / 1.9)


def test_effective_magnitude_is_base_times_resistance() -> None:
    assert effective_magnitude(1.0, 0.0) == pytest.approx(BASE_RATE)
    assert effective_magnitude(0.8, 0.25, quality=0.5) == pytest.approx(BASE_RATE * 0.4 / 1.25)


def test_first_ten_interactions_are_dampened_by_half() -> None:
    full = effective_magnitude(0.9, 0.2, quality=0.8, interaction_index=11)
    for index in (1, 5, 10):
        damp = effective_magnitude(0.9, 0.2, quality=0.8, interaction_index=index)
        assert damp == pytest.approx(full * BOOTSTRAP_FACTOR)


def test_move_is_bounded_by_the_magnitude_and_confidence_follows_agreement() -> None:
    up = move(0.3, 0.4, EvidenceKind.SUPPORTS, 0.1)
    assert up.valence == pytest.approx(0.4) and up.agrees
    assert up.confidence == pytest.approx(0.4 + 0.1 * 0.6)  # toward 1, diminishing
    down = move(0.3, 0.4, EvidenceKind.CONTRADICTS, 0.1)
    assert down.valence == pytest.approx(0.2) and not down.agrees
    assert down.confidence == pytest.approx(0.3)
    assert move(0.95, 0.5, EvidenceKind.SUPPORTS, 0.2).valence == 1.0  # clamped
    assert move(0.0, 0.0, EvidenceKind.CONTRADICTS, 0.1).agrees  # no view yet: it forms one


def test_established_belief_moves_less_than_a_weak_one() -> None:
    weak = effective_magnitude(0.9, 0.2, quality=0.85, interaction_index=50)
    firm = effective_magnitude(0.9, 0.9, quality=0.85, interaction_index=50)
    assert firm / weak == pytest.approx(1.2 / 1.9)


def test_strength_doubles_at_twenty_pieces_of_evidence() -> None:
    assert belief_strength(0.5, 0) == 0.5
    assert belief_strength(0.5, 20) == pytest.approx(1.0)
    assert belief_strength(0.8, 5) == pytest.approx(0.8 * (1 + math.log(6) / math.log(21)))


def test_update_needs_strong_arguing_non_manipulative_evidence() -> None:
    assert recommends_update(ess(0.7))
    assert not recommends_update(ess(0.3))
    assert not recommends_update(None)
    for kind in (
        ReasoningType.SOCIAL_PRESSURE,
        ReasoningType.EMOTIONAL_APPEAL,
        ReasoningType.DEBUNKED_CLAIM,
        ReasoningType.ANECDOTAL,
        ReasoningType.NO_ARGUMENT,
    ):
        assert not recommends_update(ess(0.95, kind))


def test_direction_words() -> None:
    assert as_kind("supports") is EvidenceKind.SUPPORTS
    assert as_kind("contradicts") is EvidenceKind.CONTRADICTS
    with pytest.raises(ValueError, match="neither"):
        as_kind("sideways")


def test_contested_when_the_weaker_side_weighs_a_third() -> None:
    def edge(kind: EvidenceKind, s: float, uid: str) -> Evidence:
        return Evidence(episode_uid=uid, belief_uid="b", kind=kind, strength=s)

    pro = [edge(EvidenceKind.SUPPORTS, 0.8, "a"), edge(EvidenceKind.SUPPORTS, 0.7, "b")]
    assert not contested(pro)
    assert not contested([*pro, edge(EvidenceKind.CONTRADICTS, 0.3, "c")])  # 0.3 < 0.45
    assert contested([*pro, edge(EvidenceKind.CONTRADICTS, 0.5, "c")])


def test_decay_goes_toward_neutral_and_reaches_zero_confidence() -> None:
    v, c = decayed(0.8, 0.6, 90)
    assert v == pytest.approx(0.4) and c == 0.0
    v, c = decayed(-0.8, 0.6, 30)
    assert -0.8 < v < 0 and c == pytest.approx(0.3)


def test_snapshot_rule() -> None:
    assert snapshot_rejection("too short", None) is not None
    assert snapshot_rejection("x" * MIN_SNAPSHOT_CHARS, None) is None
    previous = "y" * 1000
    assert "60%" in (snapshot_rejection("z" * 599, previous) or "")
    assert snapshot_rejection("z" * 600, previous) is None


def test_rrf_fuses_similarity_and_strength() -> None:
    near_weak = belief("coffee", 0.1, 0)
    far_strong = belief("exercise", 0.9, 20)
    both = belief("sleep", 0.95, 20)
    sims = {"coffee": 0.9, "exercise": 0.1, "sleep": 0.8}
    ranked = rrf_rank([near_weak, far_strong, both], sims)
    scores = {b.topic: s for b, s in ranked}
    assert [b.topic for b, _ in ranked] == ["sleep", "coffee", "exercise"]
    assert scores["sleep"] == pytest.approx(1 / 62 + 1 / 61)  # 2nd similar, 1st strongest
    assert scores["coffee"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["exercise"] == pytest.approx(1 / 63 + 1 / 62)


def test_patch_steps_are_bounded() -> None:
    assert bounded_step(0.2, 0.9, -1, 1) == pytest.approx(0.2 + MAX_PATCH_STEP)
    assert bounded_step(0.2, 0.1, -1, 1) == pytest.approx(0.1)
    assert bounded_step(0.2, None, -1, 1) == 0.2


def test_sponge_trigger_and_round_trip() -> None:
    state = SpongeState(
        episodes_at_reflection=5,
        cumulative_shift=0.05,
        insights=[Insight("learned", "2026-03-01T00:00:00+00:00", "e1")],
    )
    assert SpongeState.from_json(state.to_json()) == state
    assert not SpongeStatus(state, 24).due()
    assert SpongeStatus(state, 25).due()  # 20 interactions since
    state.cumulative_shift = 0.11
    assert SpongeStatus(state, 6).due()  # shift > 0.1
    assert SpongeState.from_json("{not json") == SpongeState()


def test_short_ids_are_unambiguous_prefixes() -> None:
    ids = short_ids(["abcdef0123", "abcdef0199", "zzzzzzzz11"])
    assert set(ids.values()) == {"abcdef0123", "abcdef0199", "zzzzzzzz11"}
    assert all(len(k) >= 8 for k in ids)


def test_heuristic_snapshot_preserves_the_narrative() -> None:
    narrative = "I am curious and careful. I like concrete examples and honest doubts."
    firm = belief("exercise", 0.8, 6, valence=0.7)
    text = heuristic_snapshot(narrative, [firm])
    assert text is not None and text.startswith(narrative) and VIEWS_HEADER in text
    assert "I think exercise is good (fairly firmly, after 6 pieces" in text
    assert heuristic_snapshot(text, [firm]) is None  # nothing new: no new version
    again = heuristic_snapshot(text, [firm.model_copy(update={"confidence": 0.3})])
    assert again is not None and again.startswith(narrative) and "tentatively" in again
