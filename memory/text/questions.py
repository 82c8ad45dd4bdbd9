"""Bare questions in memory: a turn in which the user only asked something (and the agent's side
holds nothing new) is kept as an episode (it happened, and "what did I ask you about X?" finds it)
but is no answer: it must not outrank the statements that answer it, however well its words
match the question asked now (they often match it word for word).

Pure functions: no I/O, no model.
"""

from __future__ import annotations

import re

from memory.write.contextual import speaker_label

BARE_QUESTION_FACTOR = 0.6
"""A bare question's score is scaled by this before the final sort."""

_SENTENCES = re.compile(r"(?<=[.!?])\s+")
OFFLINE_ECHO = re.compile(
    r"^(?:On \d{1,2} [A-Z][a-z]+(?: \d{4})?|Earlier today|Yesterday) "
    r"(?:you told me|I told you|[^\n:\"]{1,100} said:)|^I don't remember you telling me|"
    r"^Here is what I remember that may help:"
)
"""How the offline reply begins when it quotes memory back (`tasks.offline_answer`, and the
older `tasks.content.RECALL_HEADER` list): no new information."""


def is_bare_question(user_text: str, agent_text: str) -> bool:
    """True when every sentence the user wrote to the agent asks something and the agent's
    side is empty or only quoted memory back. A turn of a conversation between two people
    (`Name: text`) is never one: there a question is part of what happened ("Did you adopt the
    kitten?" is evidence of the adoption with the answer that follows it)."""
    agent = agent_text.strip()
    if agent and not OFFLINE_ECHO.match(agent):  # the cheap tests first: texts can be long
        return False
    speaker, said = speaker_label(user_text.strip())
    said = said.strip()
    if speaker is not None or not said.endswith("?"):
        return False
    return asks_share(said) == 1.0


def asks_share(text: str) -> float:
    """The share of a text's sentences that ask something (end with "?"): 0 for "I painted a
    lake.", 0.5 for "Wow! What did you paint?", 1 for "Did you go?". Retrieval scales a
    one-sided turn by it (`Turns.question_discount`)."""
    sentences = [s for s in _SENTENCES.split(text.strip()) if s.strip()]
    if not sentences:
        return 0.0
    asking = [s for s in sentences if s.rstrip().endswith("?")]
    return len(asking) / len(sentences)
