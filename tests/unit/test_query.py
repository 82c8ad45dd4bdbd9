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
    ],
)
def test_questions_about_the_users_life(question: str) -> None:
    assert not addresses_agent(question)
