"""Whose request a clause is: the user's own standing request to the assistant, by structure
(`user_request`), as the offline fact heuristic (`tasks.facts.patterns`) and the check on the
model's instruction facts (`tasks.facts.propositions.admitted`) both read it."""

from __future__ import annotations

import re

from tasks.directives import is_question, is_quoted, unquoted
from tasks.facts import lexicon as lex
from tasks.facts.builders import Said

_IMPERATIVE = re.compile(
    r"(?i)^(?:(?:and|also|oh|ok|okay|so|actually|from now on|going forward|in (?:the )?future|"
    r"by default)[,:]?\s+)*(?:please\s+)?(?:always|never|don't|do not|stop|keep|use|write|answer|"
    r"reply|respond|show|give|format|call|address|avoid|include|explain|remember to|make sure|be|"
    r"talk|speak|try to|switch|change|stick|go back|refer to me)\b(?! of\b)"
)


_LASTING = re.compile(
    r"(?i)\b(?:always|never|from now on|going forward|in (?:the )?future|by default|every time|"
    r"each time|whenever|stop|any ?more|no longer)\b"
)
"""What a request put as a question must say to hold beyond this message."""


def user_request(clause: str, said: Said) -> bool:
    """The user's own standing request to the assistant, by structure: a conversation with the
    assistant, not a question (a request put politely is one, when it says it lasts: "could you
    always ...?"), not inside someone else's quoted or forwarded words, and, in the user's own
    words of the clause, addressed to the assistant with a cue that it holds beyond this
    message."""
    if not said.agent or is_question(clause) or is_quoted(clause, said.text):
        return False
    own = unquoted(clause).strip()
    if own.endswith("?") and not _LASTING.search(own):
        return False  # "can you keep them fresh?" asks once; "could you always ...?" lasts
    return addresses_assistant(own) and bool(re.search(lex.STANDING, own))


def addresses_assistant(clause: str) -> bool:
    """A request to the assistant: it says "you"/"your", or opens with an imperative."""
    return bool(
        re.search(r"(?i)\b(you|your|answers?|repl(?:y|ies)|responses?)\b", clause)
        or _IMPERATIVE.search(clause)
    )
