"""What a question says about where its answer is: read from its words, no model.

A memory of an assistant holds both sides of every turn. Most questions are about the user's own
life ("What speed is my new internet plan?"), answered by what the user said; some ask for what
the assistant said ("you recommended a trail", "in our previous conversation"), answered by the
assistant's reply. `addresses_agent` tells them apart, so that the side of a turn that answers
ranks first and the other side (context) follows. Transcripts between people have one side per
turn and are not affected.
"""

from __future__ import annotations

import re

__all__ = ["addresses_agent"]

_ABOUT_AGENT = re.compile(
    r"\b(?:you|your)\b[^.?!]*?\b(?:said|say|mention\w*|recommend\w*|suggest\w*|told|tell|gave|"
    r"give|given|provid\w*|list\w*|explain\w*|describ\w*|wrote|write|written|shar\w*|example)\b"
    r"|\bour (?:previous|last|earlier|past|other) (?:conversation|chat|discussion|talk)",
    re.I,
)


def addresses_agent(question: str) -> bool:
    """True when the question asks what the agent said (its recommendation, its example)."""
    return bool(_ABOUT_AGENT.search(question))
