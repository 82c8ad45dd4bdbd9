"""`memory.text.query.addresses_agent`: questions about what the assistant said."""

from __future__ import annotations

import pytest

from memory.text.query import addresses_agent


@pytest.mark.parametrize(
    "question",
    [
        "You recommended a hiking trail last time, what was it called?",
        "Can you remind me what you said about the colour scheme?",
        "I wanted to follow up on our previous conversation about budgeting apps.",
        "How did you recommend structuring the backend?",
        "You just mentioned a library, which one was it?",
    ],
)
def test_questions_about_the_agents_words(question: str) -> None:
    assert addresses_agent(question)


@pytest.mark.parametrize(
    "question",
    [
        "What speed is my new internet plan?",
        "Where did Ana go hiking?",
        "Do you think it might be my living room?",
        # requests for new words: the answer is what the user told (a preference, a plan)
        "What approaches would you suggest I explore for state management?",
        "Can you give me a summary of everything we covered about my resume analyzer?",
        "Can you list the order in which I brought up the features I mentioned?",
        "What is the board game where you have to find the imposter that John mentions?",
    ],
)
def test_questions_about_the_users_life(question: str) -> None:
    assert not addresses_agent(question)
