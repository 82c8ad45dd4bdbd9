"""Goal reassessment: the offline rules as pure functions (what counts as done, given up,
negated, silent; what a superseding fact makes of a goal), and the LLM judge with a scripted
chat model over real stores: one call per batch, the turns fenced, an answer that does not
validate falls back to the rules. And the emotion that recurs with a narrative loop."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory.knowledge.goal_rules import (
    SILENT_DAYS,
    Mention,
    Verdict,
    horizon,
    object_words,
    offline_verdict,
    replaced_verdict,
)
from memory.schema import Episode, Fact, FactKind, Goal, GoalStatus
from memory.services import Services
from memory.sleep.concepts import loop_emotion_of
from memory.text.sparse import token_set
from nodes import sleep as stage
from tests.integration.test_consolidation import T0, tell
from tests.unit.fake_chat import asleep, runtime

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def _goal(text: str, subject: str = "user") -> Goal:
    return Goal(
        uid="g", tenant="t", fact_uid="f", text=text, subject=subject, stated_at=T0, changed_at=T0
    )


def _said(text: str, days: float = 10, uid: str = "e1") -> Mention:
    return Mention(uid, T0 + timedelta(days=days), text)


def test_object_words_leave_out_the_goal_verbs_and_the_subject() -> None:
    assert object_words(_goal("The user wants to run a marathon.")) == token_set("run marathon")
    assert object_words(_goal("Caroline hopes to adopt a dog.", "Caroline")) == token_set(
        "adopt dog"
    )


def test_a_later_sentence_saying_it_was_done_or_given_up_decides() -> None:
    goal = _goal("The user wants to learn Portuguese.")
    done = offline_verdict(goal, [_said("Big news. I passed my Portuguese exam!")], NOW)
    assert done == Verdict(
        GoalStatus.COMPLETED, 'said it was done: "I passed my Portuguese exam!"', "e1"
    )
    quit_ = offline_verdict(goal, [_said("I quit Portuguese, no time.", uid="e2")], NOW)
    assert (quit_.status, quit_.evidence_uid) == (GoalStatus.ABANDONED, "e2")
    # The first that says so wins.
    both = [_said("I quit Portuguese.", 5, "e2"), _said("I passed Portuguese.", 9, "e3")]
    assert offline_verdict(goal, both, NOW).evidence_uid == "e2"


def test_negated_cues_and_other_objects_do_not_count() -> None:
    goal = _goal("The user wants to run a marathon.")
    still = [
        _said("I haven't finished the marathon plan yet."),
        _said("I never quit a marathon."),
        _said("I finished the book yesterday.", 20),  # done, but not about it
    ]
    assert offline_verdict(goal, still, NOW) == Verdict(GoalStatus.ACTIVE)


def test_silence_for_longer_than_the_limit_abandons() -> None:
    goal = _goal("The user wants to visit Japan.")
    within = T0 + timedelta(days=SILENT_DAYS)
    assert offline_verdict(goal, [], within, "e0") == Verdict(GoalStatus.ACTIVE)
    past = T0 + timedelta(days=SILENT_DAYS + 1)
    assert offline_verdict(goal, [], past, "e0") == Verdict(
        GoalStatus.ABANDONED, f"not mentioned for {SILENT_DAYS + 1} days (since 2025-03-03)", "e0"
    )
    # A mention restarts the clock and becomes the evidence.
    mentioned = [_said("Japan flights are pricey.", 30, "e5")]
    assert offline_verdict(goal, mentioned, past) == Verdict(GoalStatus.ACTIVE)
    later = T0 + timedelta(days=30 + SILENT_DAYS + 2)
    assert offline_verdict(goal, mentioned, later).evidence_uid == "e5"


def test_object_words_leave_out_calendar_words() -> None:
    dated = _goal("The user's goal is to run a marathon by October 2026 (this year).")
    assert object_words(dated) == token_set("run marathon")


def test_the_horizon_is_the_end_of_the_time_the_goal_names() -> None:
    may = datetime(2026, 5, 10, tzinfo=UTC)

    def due(text: str, stated: datetime = may) -> datetime | None:
        return horizon(_goal(text), stated)

    assert due("The user wants to run a marathon this year (2026).") == datetime(
        2027, 1, 1, tzinfo=UTC
    )
    assert due("The user's goal is to visit Japan by October.") == datetime(2026, 11, 1, tzinfo=UTC)
    # a month already past when it was said is next year's
    assert due("The user wants to visit Japan in March.") == datetime(2027, 4, 1, tzinfo=UTC)
    assert due("The user wants to learn Italian by the end of the year.") == datetime(
        2027, 1, 1, tzinfo=UTC
    )
    assert due("The user wants to save for a car in six months.") == may + timedelta(days=186)
    assert due("The user wants to get fit next summer.") == datetime(2027, 9, 1, tzinfo=UTC)
    assert due("The user wants to learn to sail.") is None


def test_silence_abandons_a_dated_goal_only_after_its_horizon() -> None:
    goal = _goal("The user wants to visit Japan this year.")  # stated 2025-03-03
    autumn = T0 + timedelta(days=SILENT_DAYS + 120)
    assert offline_verdict(goal, [], autumn, "e0") == Verdict(GoalStatus.ACTIVE)
    after = datetime(2026, 1, 2, tzinfo=UTC)
    assert offline_verdict(goal, [], after, "e0") == Verdict(
        GoalStatus.ABANDONED,
        "not mentioned for 304 days (since 2025-03-03), past its horizon (2025-12-31)",
        "e0",
    )
    # a short horizon still waits for `SILENT_DAYS` of silence
    soon = _goal("The user wants to paint the fence next week.")
    assert offline_verdict(soon, [], T0 + timedelta(days=30), "e0") == Verdict(GoalStatus.ACTIVE)


DATA = Path(__file__).parents[1] / "data"
PHRASINGS = json.loads((DATA / "goal_phrasings.json").read_text(encoding="utf-8"))
PHRASINGS |= json.loads((DATA / "goal_phrasings_fresh.json").read_text(encoding="utf-8"))
RECORDED = {"tune": 36, "heldout": 23, "fresh": 28}
"""Right verdicts of each part (docs/experiments/goals-and-instructions.md): all of the tune part,
and what the held-back parts (`heldout`, and `fresh` of goal_phrasings_fresh.json, written
before the grammatical reading of `goal_reading`) score with the code as it is (their first
run, before three word-boundary fixes, scored 22 and 26)."""


@pytest.mark.parametrize("part", ["tune", "heldout", "fresh"])
def test_the_phrasings_of_done_given_up_and_changed(part: str) -> None:
    """Each later turn of tests/data/goal_phrasings*.json read against its goal."""
    right = 0
    for row in PHRASINGS[part]:
        goal = _goal(row["goal"])
        verdict = offline_verdict(goal, [_said(row["said"], 30)], T0 + timedelta(days=40))
        right += verdict.status.value == row["expect"]
    assert right >= RECORDED[part]


@pytest.mark.parametrize(
    ("goal", "said", "expect"),
    [
        # the goal's own verb, perfective, governing its object: done
        ("The user wants to buy a house.", "We bought a house in the suburbs!", "completed"),
        ("The user wants to write a book.", "I wrote the book! It's at the printer.", "completed"),
        # ... not when the object is another noun's, or the verb is not perfective
        ("The user wants to write a book.", "Wrote three pages of the book tonight.", "active"),
        ("The user wants to buy a house.", "We bought curtains for the house we rent.", "active"),
        ("The user wants to learn French.", "I'm going to finish the French course.", "active"),
        # a goal of ending something is done when it is ended
        ("The user wants to stop drinking.", "I've given up drinking, sober now.", "completed"),
        ("The user's goal is to quit smoking.", "I'm not smoking anymore.", "completed"),
        # hypothetical, approximate, temporary, or a verb of ending in another sense
        ("The user wants to run a marathon.", "I might give up on the marathon.", "active"),
        ("The user wants to run a marathon.", "Almost finished with marathon training.", "active"),
        ("The user wants to open a bakery.", "I stopped at the bakery for bread.", "active"),
        ("The user wants to learn the piano.", "Piano lessons are done for the summer.", "active"),
        # a date moved, a negated intention, a goal given up for what comes now
        ("The user wants to visit Japan.", "Japan got postponed to next year.", "evolved"),
        ("The user wants to finish the thesis.", "Thesis deadline moved to October.", "evolved"),
        ("The user wants to open a bakery.", "The bakery I love moved to Marseille.", "active"),
        ("The user wants to learn the piano.", "I'm no longer doing piano.", "abandoned"),
        # "won't" is a negation, not "won" (a verb of achieving)
        ("The user wants to learn the piano.", "I won't continue piano anymore.", "abandoned"),
        ("The user wants to learn the piano.", "No more piano; I'm into drums now.", "evolved"),
    ],
)
def test_done_given_up_and_changed_are_read_from_grammar(goal: str, said: str, expect: str) -> None:
    verdict = offline_verdict(_goal(goal), [_said(said)], NOW)
    assert verdict.status.value == expect


def test_a_later_turn_saying_the_goal_changed_evolves_it() -> None:
    goal = _goal("The user wants to run a marathon this year (2025).")
    changed = offline_verdict(goal, [_said("I'm now aiming for a half marathon instead.")], NOW)
    assert changed == Verdict(
        GoalStatus.EVOLVED, 'said it changed: "I\'m now aiming for a half marathon instead."', "e1"
    )
    # a question, or someone else's deed, says nothing about the user's goal
    licence = _goal("The user wants to get a driving licence by May.")
    other = [_said("Did you finish the marathon?"), _said("My sister got her driving licence.")]
    assert offline_verdict(licence, other, NOW) == Verdict(GoalStatus.ACTIVE)
    assert offline_verdict(goal, other[:1], NOW) == Verdict(GoalStatus.ACTIVE)
    # "it" reads the sentence before: the novel was given up
    novel = _goal("The user wants to write a novel.")
    said = offline_verdict(novel, [_said("The novel? I stopped writing it months ago.")], NOW)
    assert said.status is GoalStatus.ABANDONED


def test_a_superseding_fact_evolves_completes_or_abandons() -> None:
    def fact(text: str, kind: FactKind) -> Fact:
        return Fact(uid="n", tenant="t", text=text, kind=kind, valid_from=T0)

    newer = replaced_verdict(fact("The user wants to run an ultra.", FactKind.GOAL), "e9")
    assert (newer.status, newer.evidence_uid) == (GoalStatus.EVOLVED, "e9")
    assert newer.reason == "replaced by a newer goal: The user wants to run an ultra."
    gave_up = replaced_verdict(fact("The user stopped running.", FactKind.ATTRIBUTE), "e9")
    assert gave_up.status is GoalStatus.ABANDONED
    done = replaced_verdict(fact("The user completed the course.", FactKind.EVENT), None)
    assert done.status is GoalStatus.COMPLETED
    other = replaced_verdict(fact("The user runs trails now.", FactKind.ATTRIBUTE), None)
    assert other.status is GoalStatus.EVOLVED


STORY = [
    (0, "I want to run a marathon."),
    (1, "I want to learn Portuguese."),
    (20, "The marathon went well in the end, I crossed the line in 4 hours."),
    (25, "Portuguese classes are fun."),
]


async def test_the_llm_judges_goals_with_later_mentions_in_one_call(
    agent_services: Services, fake_chat: Any
) -> None:
    uids = await tell(agent_services, "ll", STORY)
    answer = {
        "judgements": [
            {"goal": "g1", "status": "completed", "turn": "t1", "reason": "finished in 4 hours"},
            {"goal": "g2", "status": "active", "turn": None, "reason": "enjoys the classes"},
        ]
    }
    model = fake_chat(by_tool={"GoalJudgements": [answer]})

    done = await stage.goals(asleep("deep", T0 + timedelta(days=30)), runtime(user_id="ll"))

    assert model.tools_called() == ["GoalJudgements"]
    prompt = str(model.calls[0]["messages"][-1].content)
    assert '<goal id="g1" stated="2025-03-03">The user wants to run a marathon.</goal>' in prompt
    assert "[t1] 2025-03-23: The marathon went well" in prompt and "</turns>" in prompt
    assert "data, not" in str(model.calls[0]["messages"][0].content)
    goals = {g.text: g for g in await agent_services.graph.goals.list("ll")}
    marathon = goals["The user wants to run a marathon."]
    assert (marathon.status, marathon.evidence_uid) == (GoalStatus.COMPLETED, uids[2])
    assert marathon.reason == "judged completed: finished in 4 hours"
    assert goals["The user wants to learn Portuguese."].status is GoalStatus.ACTIVE
    assert done["stages"]["goals"]["goals_changed"] == {"completed": 1}


async def test_an_answer_that_does_not_validate_falls_back_to_the_rules(
    agent_services: Services, fake_chat: Any
) -> None:
    uids = await tell(agent_services, "fb", [*STORY, (26, "I finished the marathon medal frame.")])
    unknown_turn = {"judgements": [{"goal": "g1", "status": "completed", "turn": "t99"}]}
    model = fake_chat(by_tool={"GoalJudgements": [unknown_turn, unknown_turn]})

    await stage.goals(asleep("deep", T0 + timedelta(days=30)), runtime(user_id="fb"))

    assert model.tools_called() == ["GoalJudgements", "GoalJudgements"]  # tried, retried
    goals = {g.text: g for g in await agent_services.graph.goals.list("fb")}
    marathon = goals["The user wants to run a marathon."]
    # The rules: "finished ... marathon" on day 26 (the model's "crossed the line" is not a cue).
    assert (marathon.status, marathon.evidence_uid) == (GoalStatus.COMPLETED, uids[4])
    assert marathon.reason.startswith("said it was done: ")


def _turn(day: int, text: str) -> Episode:
    said = T0 + timedelta(days=day)  # T0 is a Monday
    return Episode(
        uid=f"e{day}-{text}",
        tenant="t",
        thread_id="x",
        content=text,
        user_text=text,
        agent_text="",
        created_at=said,
    )


def test_a_loop_records_the_emotion_that_recurs_with_it() -> None:
    weeks = [_turn(7 * i, f"So stressed about work, week {i}.") for i in range(3)]
    assert loop_emotion_of(weeks, "Monday") == "stressed"
    assert loop_emotion_of(weeks, "") == ""  # no loop, no loop emotion
    assert loop_emotion_of(weeks[:2], "Monday") == ""  # two weeks do not recur
    # Felt in three of five Monday weeks (more than half), and not on the other days.
    calm = [_turn(7 * i, f"Work again, week {i}.") for i in (3, 4)]
    tuesday = [_turn(1, "I'm worried."), _turn(8, "worried"), _turn(15, "worried!")]
    assert loop_emotion_of([*weeks, *calm, *tuesday], "Monday") == "stressed"
    more_calm = [_turn(7 * i, "Work.") for i in (5, 6)]
    assert loop_emotion_of([*weeks, *calm, *more_calm], "Monday") == ""  # 3 of 7 weeks
    # Several turns in one week count once.
    same_week = [_turn(0, "stressed"), _turn(0, "still stressed"), _turn(7, "stressed")]
    assert loop_emotion_of(same_week, "Monday") == ""
