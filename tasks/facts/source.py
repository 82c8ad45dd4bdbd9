"""Where a turn's words came from: the speaker's own, or another person's they pass on.

A turn is `third_party` when it holds another's words (a quotation, a forwarded or `>`-quoted
text, text after "Anna wrote:", or a statement under another's reporting frame: "Anna said
that I love jazz") and none of the speaker's own: every clause outside the quoted parts is a
third person's reporting frame, with or without what they said ("Anna wrote:"): the frame of
`tasks.facts.patterns.hearsay`, whose few words before the verb hold no I or we, nor the
listener's "you", with a finite verb ("let's say" reports nothing); a question is never one.
Otherwise it is `stated`: a request before a pasted text ("Elaborate on this: ...") is the
speaker's own. The knowledge stage records it on the episode and then stores no fact about the
speaker from such a turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.knowledge.rules import Proposition
from memory.schema import EpisodeSource, normalise_text
from tasks.directives import quoted_parts, unquoted
from tasks.facts.patterns import FIRST_PERSON, REPORTED, Said, clauses

_LISTENER = frozenset({"you", "you've", "you'd", "you're", "you'll"})
_NOT_FINITE = frozenset(
    {"to", "let's", "lets", "let", "would", "will", "can", "could", "should", "must", "might"}
)
"""The word before a reporting verb that makes it no report of what someone said."""


def _frame_at_start(clause: str) -> bool:
    """True when the clause opens with a third person's reporting frame ("my mom thinks"): not
    the speaker's own ("I still can't believe"), not the listener's ("do you think ...?", "you
    said"), and not a question."""
    words = clause.split()
    if clause.rstrip().endswith("?"):
        return False
    for n in range(2, min(len(words), 6) + 1):
        frame = REPORTED.search(" ".join(words[:n]))
        if frame is not None and frame.start() == 0:
            before = frame.group(1).lower().split()
            if before[-1] in _NOT_FINITE:
                return False  # "let's say", "true to say", "I would say": no report
            return not (FIRST_PERSON | _LISTENER) & set(before)
    return False


def _another_s(clause: str) -> bool:
    """A clause of another's: a third person's reporting frame, with or without what they said
    ("Anna said that ...", "Anna wrote:"); a request before a colon ("Elaborate on this:") is
    the speaker's own."""
    return _frame_at_start(clause.rstrip().rstrip(":"))


def turn_source(said: Said) -> EpisodeSource:
    """`third_party` when the turn passes on another's words and says nothing of its own
    (the module docstring), else `stated`."""
    own = [c for c in clauses(unquoted(said.text)) if any(ch.isalnum() for ch in c)]
    passed_on = bool(quoted_parts(said.text)) or any(_frame_at_start(c) for c in own)
    if passed_on and all(_another_s(c) for c in own):
        return EpisodeSource.THIRD_PARTY
    return EpisodeSource.STATED


def not_of_the_speaker(
    props: Sequence[Proposition], said: Said, source: EpisodeSource
) -> list[Proposition]:
    """The propositions to store from a turn of this source: from a `third_party` turn, none
    about the speaker (another's claim about them is not their own fact); all the others."""
    if source is not EpisodeSource.THIRD_PARTY:
        return list(props)
    speaker = normalise_text(said.subject)
    return [p for p in props if normalise_text(p.subject) != speaker]
