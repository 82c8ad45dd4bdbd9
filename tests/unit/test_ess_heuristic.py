"""The offline ESS: cues a careful reader would weigh, the schema, the LLM path, calibration."""

from __future__ import annotations

import pytest

from bench.ess_calibration import calibrate, load, spearman
from memory.schema import MANIPULATIVE_TYPES, ReasoningType
from memory.services.usage import Usage
from tasks.ess import EvidenceScore, assess_ess, heuristic_ess

SOURCED = (
    "A 2021 meta-analysis in The Lancet of 40 randomised trials (120,000 participants) found "
    "that regular exercise cut the risk of depression by about 25%."
)


def test_sourced_quantified_study_is_strong_empirical_evidence() -> None:
    e = heuristic_ess(SOURCED)
    assert e.reasoning_type is ReasoningType.EMPIRICAL
    assert e.score >= 0.7 and e.belief_update_recommended
    assert e.source_quality >= 0.5 and e.specificity >= 0.5 and e.rigor >= 0.5
    assert "exercise" in e.topics or "depression" in e.topics


def test_vague_study_claim_is_weaker_than_a_specific_one() -> None:
    vague = heuristic_ess("Studies show exercise is good for you.")
    assert vague.reasoning_type is ReasoningType.EMPIRICAL
    assert vague.score < heuristic_ess(SOURCED).score


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (
            "Everyone agrees that remote work is the future. You must accept it.",
            ReasoningType.SOCIAL_PRESSURE,
        ),
        (
            "Come on, nobody serious believes that anymore. Just admit you're wrong.",
            ReasoningType.SOCIAL_PRESSURE,
        ),
        (
            "If you really cared about animals you'd go vegan. How can you live with yourself?",
            ReasoningType.EMOTIONAL_APPEAL,
        ),
        (
            "Vaccines cause autism; the MMR shot is why autism rates went up.",
            ReasoningType.DEBUNKED_CLAIM,
        ),
        ("We only use 10% of our brains, imagine the rest!", ReasoningType.DEBUNKED_CLAIM),
        (
            "My grandfather smoked a pack a day and lived to 94, so smoking can't be that bad.",
            ReasoningType.ANECDOTAL,
        ),
        (
            "As a pediatric nurse for 15 years, I can tell you most toddler fevers need no "
            "medication.",
            ReasoningType.EXPERT,
        ),
        (
            "If every key is only on the user's device, then the company cannot decrypt the data, "
            "so it cannot hand it over.",
            ReasoningType.LOGICAL,
        ),
        ("What do you think about electric cars?", ReasoningType.NO_ARGUMENT),
        ("My sister's birthday is on the 14th of March.", ReasoningType.NO_ARGUMENT),
    ],
)
def test_reasoning_types(text: str, kind: ReasoningType) -> None:
    e = heuristic_ess(text)
    assert e.reasoning_type is kind
    if kind in MANIPULATIVE_TYPES or kind is ReasoningType.NO_ARGUMENT:
        assert not e.belief_update_recommended and e.score < 0.45


def test_refuting_a_myth_is_not_a_debunked_claim() -> None:
    e = heuristic_ess(
        "A Danish registry study of 657,461 children found no increased risk of autism after "
        "MMR vaccination."
    )
    assert e.reasoning_type is ReasoningType.EMPIRICAL and e.belief_update_recommended


def test_pressure_lowers_objectivity_and_hedging_is_not_penalised() -> None:
    calm = heuristic_ess("Some research suggests standing desks probably reduce sitting time.")
    loud = heuristic_ess("Everyone knows standing desks are better!!! You have to agree!!")
    assert calm.objectivity > loud.objectivity
    assert calm.rigor >= 0.3


def test_empty_message_scores_zero() -> None:
    e = heuristic_ess("   ")
    assert e.score == 0.0 and e.reasoning_type is ReasoningType.NO_ARGUMENT and e.topics == []


def test_schema_rejects_out_of_range_scores() -> None:
    with pytest.raises(ValueError):
        EvidenceScore.model_validate({**heuristic_ess(SOURCED).model_dump(), "score": 3})


async def test_llm_answer_is_used_and_its_recommendation_follows_the_rule(
    agent_services, fake_chat
) -> None:
    answer = {
        **heuristic_ess(SOURCED).model_dump(mode="json"),
        "reasoning_type": "anecdotal",
        "score": 0.9,
        "belief_update_recommended": True,
    }
    fake_chat(by_tool={"EvidenceScore": [answer]})
    usage = Usage()
    e = await assess_ess("My uncle says it worked for him.", chat=agent_services.chat, usage=usage)
    assert e.reasoning_type is ReasoningType.ANECDOTAL and e.score == 0.9
    assert not e.belief_update_recommended  # anecdotes never move beliefs, whatever the model says
    assert usage.data["llm_calls"] == 1


async def test_offline_falls_back_to_the_heuristic(offline) -> None:
    usage = Usage()
    e = await assess_ess(SOURCED, chat=offline.chat, usage=usage)
    assert e == heuristic_ess(SOURCED) and usage.data["offline"] == 1


def test_spearman_with_ties() -> None:
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(0.866, abs=1e-3)
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0


async def test_calibration_set_meets_the_bar() -> None:
    rows = load()
    assert len(rows) >= 80 and len({r.type for r in rows}) == 8
    reports = {r.scorer: r for r in await calibrate(rows, llm=False)}
    overall, holdout = reports["heuristic [all]"], reports["heuristic [holdout]"]
    assert overall.spearman >= 0.6 and holdout.spearman >= 0.6
    assert overall.manipulation_precision >= 0.9
    assert overall.manipulative_passing_gate == 0 and holdout.manipulative_passing_gate == 0
