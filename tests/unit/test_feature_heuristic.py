"""The offline feature proposal never fails on a message whose claim is a greeting or a list
number ("Hi! I need ...", "1. Buy ..."): a LongMemEval ingest showed it failing the whole
beliefs stage of such turns."""

from __future__ import annotations

import pytest

from memory.schema import FeatureCategory
from tasks.belief_assessment import claim_of, heuristic_features
from tasks.ess import heuristic_ess


@pytest.mark.parametrize(
    "text",
    ["Hi! I need some recommendations for hiking boots.", "1. Buy hiking boots in Denver"],
)
def test_a_claim_too_short_to_be_a_view_proposes_no_view(text: str) -> None:
    features = heuristic_features(text, heuristic_ess(text).record(), claim_of(text))
    assert features and features[0].category is FeatureCategory.INTERESTS
    assert all(f.category is not FeatureCategory.VALUES for f in features)


def test_a_real_claim_is_still_a_view() -> None:
    text = "Coffee is good for the heart, because large cohort studies show lower mortality."
    features = heuristic_features(text, heuristic_ess(text).record(), claim_of(text))
    assert any(f.category is FeatureCategory.VALUES for f in features)


@pytest.mark.parametrize(
    "text",
    [
        "I live in a canal house in Leiden and I work as a product designer at a bike startup.",
        "My job is to review insurance claims all day, the whole office runs on spreadsheets.",
        "Do you think remote work is better for productivity?",
    ],
)
def test_what_the_user_says_of_themselves_or_asks_is_no_feature_of_the_agent(text: str) -> None:
    assert heuristic_features(text, heuristic_ess(text).record(), claim_of(text)) == []


def test_a_view_the_user_reports_is_still_a_view() -> None:
    text = "I read that large cohort studies show coffee lowers mortality in adults."
    features = heuristic_features(text, heuristic_ess(text).record(), claim_of(text))
    assert any(f.category is FeatureCategory.VALUES for f in features)
