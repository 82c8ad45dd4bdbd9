"""Words for the people around someone: what "my sister" or "my boss" names.

Shared by the supersession rule (`memory.knowledge.facts`: one manager at a time, several sisters), by
retrieval (`memory.retrieval.facts`: "where does my brother live?" is about the brother, not the
user) and by the offline fact heuristic (`tasks.facts.lexicon`). General English, no data set.
"""

from __future__ import annotations

import re

PARTNER = frozenset(
    "boyfriend girlfriend husband wife partner fiance fiancé fiancee fiancée spouse".split()
)
FAMILY = frozenset(
    """sister brother mother mom mum father dad son daughter aunt uncle cousin grandmother grandma
    granny grandfather grandpa grandad niece nephew stepmother stepfather stepson stepdaughter
    twin""".split()
)
OTHER_RELATIONS = frozenset(
    """manager boss roommate flatmate housemate landlord landlady doctor dentist therapist coach
    teacher tutor colleague coworker co-worker neighbour neighbor mentor trainer friend
    bestie supervisor""".split()
)
RELATIONS = PARTNER | FAMILY | OTHER_RELATIONS
SINGLE_RELATIONS = frozenset(
    "partner manager boss supervisor landlord landlady therapist dentist doctor mentor coach tutor".split()
)
"""Relations (as fact attributes; every partner word is `partner`) a person usually has one of
at a time: a new one replaces the old."""

MY_RELATION = re.compile(
    r"(?i)\b(?:my|our)\s+(?:\w+\s+)?("
    + "|".join(sorted(RELATIONS, key=len, reverse=True))
    + r")(?:'s)?\b"
)
"""A relation of the speaker's named in a text ("my older sister", "our landlord's")."""
