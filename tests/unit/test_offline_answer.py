"""The offline answer: one sentence from the best relevant memory, in the second person, with
when it was said; a plain "I don't remember" when nothing bears on the question."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memory.text.questions import asks_share, is_bare_question
from tasks.offline_answer import NOTHING, offline_answer, plain_answer, when_said
from tasks.second_person import second_person

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def turn(user: str, agent: str = "", *, on: datetime, similarity: float | None = 0.6) -> dict:
    return {
        "kind": "episode",
        "created_at": on.isoformat(),
        "content": f"User: {user}\nAgent: {agent}" if agent else f"User: {user}",
        "fragments": [user],
        "similarity": similarity,
    }


def fact(text: str, *, on: datetime, current: bool = True, until: datetime | None = None) -> dict:
    facts: dict[str, Any] = {"valid_from": on.isoformat(), "current": current}
    if until is not None:
        facts["valid_to"] = until.isoformat()
    return {"kind": "fact", "created_at": on.isoformat(), "content": text, "fact": facts}


OCT20 = datetime(2026, 10, 20, 19, 40, tzinfo=UTC)


@pytest.mark.parametrize(
    ("said", "back"),
    [
        ("I work as a nurse in Leeds.", "you work as a nurse in Leeds."),
        ("My sister and I were at my place.", "Your sister and you were at your place."),
        (
            "I'm moving; we've found a flat near our office.",
            "you're moving; you've found a flat near your office.",
        ),
        ("I was born in the US.", "you were born in the US."),
        ("Can you tell me what you think?", "Can I tell you what I think?"),
    ],
)
def test_second_person(said: str, back: str) -> None:
    assert second_person(said) == back


def test_when_it_was_said() -> None:
    assert when_said(OCT20, NOW) == "On 20 October"
    assert when_said(datetime(2025, 3, 2, tzinfo=UTC), NOW) == "On 2 March 2025"
    assert when_said(datetime(2026, 11, 29, 23, 0, tzinfo=UTC), NOW) == "Yesterday"
    assert when_said(datetime(2026, 11, 30, 8, 0, tzinfo=UTC), NOW) == "Earlier today"


def test_answers_from_the_best_memory_in_the_second_person() -> None:
    memories = [
        turn(
            "Hi! I'm Sam. I work as a marine biologist at the Oceanographic Institute in Brest.",
            "That sounds fascinating.",
            on=OCT20,
        ),
        turn("My dog is called Pixel.", on=OCT20),
    ]
    assert offline_answer(memories, "Where do I work?", NOW) == (
        "On 20 October you told me that you work as a marine biologist at the Oceanographic "
        "Institute in Brest."
    )


def test_sentences_keep_abbreviations_and_lose_their_openers() -> None:
    memories = [
        turn("My knee hurt, so my physio, Dr. Lefevre, told me to rest it.", on=OCT20),
        turn("Big news: my sister Maya is getting married in Porto.", on=OCT20),
    ]
    assert offline_answer(memories, "What did my physio say?", NOW) == (
        "On 20 October you told me that your knee hurt, so your physio, Dr. Lefevre, told you to "
        "rest it."
    )
    assert offline_answer(memories[1:], "Where is my sister getting married?", NOW) == (
        "On 20 October you told me that your sister Maya is getting married in Porto."
    )


def test_facts_are_said_to_the_user_with_their_history() -> None:
    moved = fact("The user lives in Porto.", on=datetime(2026, 6, 3, tzinfo=UTC))
    assert offline_answer([moved], "Where do I live?", NOW) == (
        "On 3 June you told me that you live in Porto."
    )
    old = fact(
        "The user's office is in Lyon.",
        on=datetime(2026, 1, 9, tzinfo=UTC),
        current=False,
        until=datetime(2026, 6, 3, tzinfo=UTC),
    )
    assert offline_answer([old], "Where is my office?", NOW) == (
        "On 9 January you told me that your office is in Lyon; that changed on 3 june."
    )


def test_other_speakers_and_the_agent_are_quoted() -> None:
    said = turn("Caroline: I went to the support group yesterday.", on=OCT20)
    assert offline_answer([said], "When did Caroline go to the support group?", NOW) == (
        'On 20 October Caroline said: "I went to the support group yesterday."'
    )
    asked = turn(
        "Can you suggest a name for my bakery?",
        "How about Crumb & Co. for a neighbourhood bakery?",
        on=OCT20,
    )
    assert offline_answer([asked], "What name did you suggest for my bakery?", NOW) == (
        'On 20 October I told you: "How about Crumb & Co. for a neighbourhood bakery?"'
    )


def test_nothing_relevant_is_said_plainly() -> None:
    unrelated = turn("My dog is called Pixel.", on=OCT20, similarity=0.05)
    assert offline_answer([unrelated], "What is my blood type?", NOW) == NOTHING
    assert offline_answer([], "What is my blood type?", NOW) == NOTHING
    question = turn("Where do I work?", "On 20 October you told me that you work.", on=OCT20)
    assert offline_answer([question], "Where do I work?", NOW) == NOTHING


def test_bare_questions() -> None:
    assert is_bare_question("Where do I work?", "")
    assert is_bare_question("Where do I work?", "On 20 October you told me that you work here.")
    assert not is_bare_question("Melanie: How was the concert? Did you go?", "")  # two people
    assert not is_bare_question("I moved to Porto. Any tips?", "")
    assert not is_bare_question("Any tips for Porto?", "Try the Ribeira at dusk.")
    assert not is_bare_question("/help", "")


def test_the_share_of_a_text_that_asks() -> None:
    assert asks_share("I painted a lake.") == 0.0
    assert asks_share("Wow! What did you paint?") == 0.5
    assert asks_share("Did you go? How was it?") == 1.0
    assert asks_share("") == 0.0


def test_a_day_no_memory_answers_by_its_words_is_told_from_the_diary_else_its_turns() -> None:
    question = "What did we talk about on October 20?"
    kitten = turn("I adopted a kitten called Miso.", on=OCT20, similarity=0.05)
    other_day = turn("My landlord repaints the stairs.", on=datetime(2026, 10, 17, tzinfo=UTC))
    other_day["similarity"] = 0.05
    assert offline_answer([kitten, other_day], question, NOW) == NOTHING  # by its words
    diary = [{"day": "2026-10-20", "text": "We talked about Miso, the new kitten."}]
    told = plain_answer({"text": question}, [kitten, other_day], [], {}, NOW, diary=diary)
    assert told == 'On 20 October, my diary says: "We talked about Miso, the new kitten."'
    told = plain_answer({"text": question}, [other_day, kitten], [], {}, NOW)
    assert told == "On 20 October you told me that you adopted a kitten called Miso."
    assert plain_answer({"text": question}, [other_day], [], {}, NOW) == NOTHING
    assert plain_answer({"text": "What did we talk about?"}, [kitten], [], {}, NOW) == NOTHING


def test_the_agents_reply_to_the_users_question_is_not_what_the_user_said() -> None:
    asked = turn(
        "Where do I live again?",
        "You live in Utrecht, near the central station, as you told me.",  # perhaps wrong
        on=OCT20,
        similarity=0.8,
    )
    moved = turn("We moved to Rotterdam in October.", on=OCT20, similarity=0.5)
    assert offline_answer([asked, moved], "Where do I live now?", NOW) == (
        "On 20 October you told me that you moved to Rotterdam in October."
    )
    # asked what the agent said, its reply is the answer
    assert offline_answer([asked], "What did you tell me about where I live?", NOW).startswith(
        'On 20 October I told you: "You live in Utrecht'
    )
