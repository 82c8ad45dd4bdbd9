"""What a question says about where its answer is: read from its words, no model.

A memory of an assistant holds both sides of every turn. Most questions are about the user's own
life ("What speed is my new internet plan?"), answered by what the user said; some ask for what
the assistant said ("you recommended a trail", "in our previous conversation"), answered by the
assistant's reply. A request for new words ("what would you suggest?", "can you list ...?") is
not one: its answer is what the user told (their preferences, their instructions), so the tense
decides: a verb of saying in the past after "you", or "did you" before one. `addresses_agent`
tells them apart, so that the side of a turn that answers ranks first and the other side
(context) follows. Transcripts between people have one side per turn and are not affected.
"""

from __future__ import annotations

import re

__all__ = ["addresses_agent"]

_SAY = (
    r"say|mention|recommend|suggest|tell|give|provide|list|explain|describe|write|share|advise|"
    r"propose"
)
_SAID = (
    r"said|mentioned|recommended|suggested|told|gave|given|provided|listed|explained|described|"
    r"wrote|written|shared|advised|proposed"
)
_ABOUT_AGENT = re.compile(
    # what the agent said: its words in the past ("you recommended", "you just said", "did you
    # suggest"), not a request for new ones ("what would you suggest?", "can you list ...?")
    rf"\byou\s+(?:\w+\s+){{0,2}}?(?:{_SAID})\b"
    rf"|\bdid you\s+(?:\w+\s+)?(?:{_SAY})\b"
    r"|\byour (?:previous|last|earlier) (?:answer|reply|response|recommendation|suggestion|advice)"
    r"|\bour (?:previous|last|earlier|past|other) (?:conversation|chat|discussion|talk)",
    re.I,
)


def addresses_agent(question: str) -> bool:
    """True when the question asks what the agent said (its recommendation, its example): a
    verb of saying in the past after "you" ("you recommended", "you just said"), "did you" before
    one, the agent's earlier answer, or an earlier conversation. A request for new words ("What
    would you suggest?", "Can you give me a summary?") asks the agent to answer now from what
    the user said, so it is not one."""
    return bool(_ABOUT_AGENT.search(question))
