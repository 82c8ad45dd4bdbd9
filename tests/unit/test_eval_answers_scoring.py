"""How `mneme eval answers` judges a reply (`bench.eval_answers`): the match strings, the stale
value, and the recipe settings of `--variant`."""

from __future__ import annotations

import pytest

from bench.eval_answers import agent_recipes, judged, stale_given
from cli.eval_commands import recipe_changes
from memory.retrieval.recipes import RECIPES, get_recipe

JOB = {
    "question": "What do I do for a living these days, and for which company?",
    "category": "current",
    "answer": "senior product designer at Fietsly",
    "match": ["Fietsly"],
    "stale_value": "UX designer at Veldkamp Verzekeringen",
}
KETO = {
    "question": "Am I still doing keto?",
    "category": "current",
    "answer": "no, quit",
    "match": ["no", "quit"],
    "stale_value": "keto",
}


def test_a_reply_answers_with_the_match_and_without_the_stale_value() -> None:
    now = "On 14 June you told me that you signed with Fietsly as senior product designer."
    assert judged(JOB, now) == {"match": True, "stale": False, "answered": True, "short": False}
    # a word the stale value shares with the answer ("designer") does not make it stale
    old = "On 27 January you told me that you are a UX designer at Veldkamp."
    assert judged(JOB, old) == {"match": False, "stale": True, "answered": False, "short": False}
    both = "You left Veldkamp Verzekeringen for Fietsly."
    assert judged(JOB, both) == {"match": True, "stale": True, "answered": False, "short": False}
    assert judged(JOB, "fietsly!")["answered"]  # case-insensitive


def test_a_reply_that_holds_only_a_short_match_string_is_flagged() -> None:
    done = {"question": "Is the kitchen finished?", "category": "goal", "match": ["yes", "done"]}
    assert judged(done, 'Yesterday you told me: "New kitchen."')["short"]
    assert not judged(done, "Yesterday you told me it is done.")["short"]


def test_a_stale_value_the_question_names_needs_all_its_words() -> None:
    assert stale_given("On 2 May you told me that you started keto.", KETO)
    assert not stale_given("On 2 May you told me that you quit the diet.", KETO)
    assert stale_given("Carnivore still, day 40.", {"stale_value": "carnivore / keto"})
    assert not stale_given("anything", {"stale_value": None})


def test_only_current_questions_are_judged_for_the_stale_value() -> None:
    past = {**JOB, "category": "past", "match": ["Veldkamp"]}
    assert judged(past, "You worked at Veldkamp Verzekeringen.")["answered"]


def test_a_variant_changes_every_recipe_the_agent_reads_and_restores_them() -> None:
    changes = recipe_changes("rerank.newest=true, rerank.oldest=true")
    assert changes == {"rerank.newest": True, "rerank.oldest": True}
    before = dict(RECIPES)
    with agent_recipes(changes):
        for name in ("SIMPLE", "TEMPORAL", "AGGREGATION", "BELIEF_QUERY"):
            assert get_recipe(name).rerank.newest and get_recipe(name).rerank.oldest
    assert RECIPES == before and not get_recipe("BELIEF_QUERY").rerank.newest
    with pytest.raises(ValueError, match="rerank.newer"):
        recipe_changes("rerank.newer=true")
    with pytest.raises(ValueError, match="step.field=value"):
        recipe_changes("rerank.newest")
