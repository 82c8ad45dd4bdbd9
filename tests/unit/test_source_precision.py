"""Where a turn's words came from (`tasks.facts.source`) and how precisely a fact sits in time
(`memory.knowledge.precision`): the time parser's reading plus the attributes timeless by
nature, never a list of phrases."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memory.knowledge.precision import precision_of, source_clause
from memory.knowledge.rules import Proposition
from memory.schema import EpisodeSource, FactKind, FactPrecision, attribute_key, is_timeless
from memory.text.timeparse import parse_time
from tasks.facts.patterns import Said
from tasks.facts.source import not_of_the_speaker, turn_source
from tasks.offline_answer import offline_answer
from tasks.respond import MEMORY_RULES, memory_entry

NOW = datetime(2025, 6, 1, 12, tzinfo=UTC)
K = FactKind
P = FactPrecision


@pytest.mark.parametrize(
    ("kind", "attribute", "text", "said", "expected"),
    [
        (K.ATTRIBUTE, "blood type", "The user's blood type is O negative.", "My blood type is O negative.", P.UNBOUNDED),
        (K.ATTRIBUTE, "allergy:nuts", "The user is allergic to nuts.", "I'm allergic to nuts.", P.UNBOUNDED),
        (K.ATTRIBUTE, "birthplace", "The user was born in Porto in 1990.", "I was born in Porto in 1990.", P.UNBOUNDED),
        (K.RELATIONSHIP, "sister", "The user's sister is Carla.", "My sister is Carla.", P.UNBOUNDED),
        # the extraction made "last week" a date; the words that said it were relative
        (K.EVENT, "", "The user went to Paris on 2025-05-20.", "I went to Paris last week.", P.RELATIVE),
        (K.EVENT, "", "The user sold the car two years ago.", "Sold the car two years ago.", P.RELATIVE),
        (K.EVENT, "", "The user started a new job on 3 March 2024.", "I started a new job on 3 March 2024.", P.EXACT),
        (K.ATTRIBUTE, "home", "The user moved to Berlin in the spring of 2019.", "We moved to Berlin in the spring of 2019.", P.APPROXIMATE),
        (K.EVENT, "", "The user visited Japan around 2019.", "We visited Japan around 2019.", P.APPROXIMATE),
        # a statement about the present holds as of the turn
        (K.ATTRIBUTE, "home", "The user lives in Lisbon.", "I live in Lisbon.", P.RELATIVE),
        # a sister is timeless, a manager is not
        (K.RELATIONSHIP, "manager", "The user's manager is Ines.", "My manager is Ines.", P.RELATIVE),
    ],
)  # fmt: skip
def test_precision_reads_time_words_and_timeless_attributes(
    kind: FactKind, attribute: str, text: str, said: str, expected: FactPrecision
) -> None:
    assert precision_of(kind, attribute, text, said, NOW) is expected


def test_the_source_clause_is_the_one_that_states_the_fact() -> None:
    turn = "We got back on Sunday. I went to Paris last week. It rained."
    assert source_clause("The user went to Paris.", turn) == "I went to Paris last week."
    assert source_clause("Nothing shared here", turn) == ""


def test_timeless_attributes_are_keyed_by_kind() -> None:
    assert attribute_key("Blood type") == "blood_type" == attribute_key("blood-type:ABO")
    assert is_timeless(K.ATTRIBUTE, "Blood type") and is_timeless(K.RELATIONSHIP, "brother")
    assert not is_timeless(K.ATTRIBUTE, "sister")  # a relation only as a relationship fact
    assert not is_timeless(K.ATTRIBUTE, "home")


def test_time_windows_say_whether_they_are_placed_against_now() -> None:
    relative = {
        w.expression: w.relative for w in parse_time("last week, in the spring", NOW).windows
    }
    assert relative == {"last week": True, "in the spring": False}
    assert [w.relative for w in parse_time("this summer", NOW).windows] == [True]
    assert [w.relative for w in parse_time("last May", NOW).windows] == [True]
    assert [w.relative for w in parse_time("in May 2024", NOW).windows] == [False]
    (around,) = parse_time("around 2019", NOW).windows
    assert (around.start.year, around.end.year, around.relative) == (2019, 2020, False)


def said(text: str, subject: str = "user") -> Said:
    return Said(text=text, subject=subject, when=NOW, previous="", agent=subject == "user")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Anna said that I love jazz.", EpisodeSource.THIRD_PARTY),
        ("My mom thinks I'm stubborn.", EpisodeSource.THIRD_PARTY),
        ('Anna wrote: "I am moving to Rome next month, finally!"', EpisodeSource.THIRD_PARTY),
        ("> I will be late tomorrow, sorry about that", EpisodeSource.THIRD_PARTY),
        ("Tom told me that he is quitting his job.", EpisodeSource.THIRD_PARTY),
        # the speaker's own words beside another's, or a frame of their own
        ("Anna said that I love jazz. I don't, though.", EpisodeSource.STATED),
        ("I still can't believe I won.", EpisodeSource.STATED),
        ("I gotta say the movie was great.", EpisodeSource.STATED),
        ("What do you think is the hardest part of this game?", EpisodeSource.STATED),
        ("You said that I should rest more.", EpisodeSource.STATED),
        (
            'Elaborate on this: "Germany\'s aggressive expansionism and territorial ambitions"',
            EpisodeSource.STATED,
        ),
        (
            "Can you tell me more about the Spider-Man: Miles Morales game? I'm curious.",
            EpisodeSource.STATED,
        ),
        ("Lets say there are 88 million acres and 5.8 percent are lost", EpisodeSource.STATED),
        ("My blood type is O negative.", EpisodeSource.STATED),
    ],
)
def test_a_turn_that_only_passes_on_another_s_words_is_third_party(
    text: str, expected: EpisodeSource
) -> None:
    assert turn_source(said(text)) is expected


def test_no_fact_about_the_speaker_comes_from_another_s_words() -> None:
    props = [
        Proposition(text="Ben loves jazz.", kind=K.PREFERENCE, subject="Ben"),
        Proposition(text="Anna is moving to Rome.", kind=K.PLAN, subject="Anna"),
    ]
    ben = said("Anna said that I love jazz and she is moving to Rome.", subject="Ben")
    kept = not_of_the_speaker(props, ben, EpisodeSource.THIRD_PARTY)
    assert [p.subject for p in kept] == ["Anna"]
    assert not_of_the_speaker(props, ben, EpisodeSource.STATED) == props


def recalled(user_text: str, said_from: str) -> dict[str, Any]:
    return {
        "kind": "episode",
        "created_at": NOW.isoformat(),
        "content": f"User: {user_text}",
        "fragments": [user_text],
        "similarity": 0.7,
        "said": said_from,
    }


def test_the_reply_sees_whose_words_a_memory_holds() -> None:
    forwarded = recalled('Anna wrote: "I am moving to Rome next month"', "third_party")
    entry = memory_entry(forwarded, 1, NOW, "detailed")
    assert entry.startswith('<memory id="1"') and 'from="another person"' in entry.splitlines()[0]
    assert 'from="an app"' in memory_entry(recalled("Ada drinks tea", "inferred"), 2, NOW, "brief")
    own = memory_entry(recalled("I am moving to Rome", "stated"), 3, NOW, "detailed")
    assert "from=" not in own
    assert 'from="another person"' in MEMORY_RULES


def test_the_offline_answer_quotes_another_s_words_never_as_the_user_s() -> None:
    question = "Who is moving to Rome?"
    forwarded = recalled("Anna said that I am moving to Rome next month.", "third_party")
    assert "someone else's words" in offline_answer([forwarded], question, NOW)
    assert "I am moving to Rome" in offline_answer([forwarded], question, NOW)
    own = recalled("I am moving to Rome next month.", "stated")
    assert "you are moving to Rome" in offline_answer([own], question, NOW)
