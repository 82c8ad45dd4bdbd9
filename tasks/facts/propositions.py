"""The extraction's facts as `memory.knowledge.rules.Proposition`s, and how the offline heuristic
(`tasks.facts.patterns`) reads a turn: who "I" is, and what was said just before.

The facts are the extraction call's (`tasks.extract.ExtractedFact`) or, after a fallback, the
heuristic's, which answers the same schema; `propositions` normalises their subjects, resolves the
known-fact ids the model named and measures each one's grounding in the source text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from memory.knowledge.rules import Proposition, grounding
from memory.schema import USER_SUBJECT, Episode, FactKind, as_utc
from memory.write.contextual import speaker_label
from tasks.directives import unsafe_request
from tasks.extract import ExtractedFact
from tasks.facts.patterns import Said, requests_of

_ME = frozenset({"user", "the user", "i", "me", "myself", "speaker", "the speaker"})


def said_of(episode: Episode, previous: Sequence[Episode]) -> Said:
    """How the heuristic reads a turn: who "I" is, and what was said just before."""
    speaker, body = speaker_label(episode.user_text)
    before = ""
    if previous:
        last = previous[-1]
        if speaker is None:
            before = last.agent_text or last.user_text
        else:
            before = speaker_label(last.user_text)[1]
    return Said(
        text=body,
        subject=speaker or USER_SUBJECT,
        when=as_utc(episode.created_at),
        previous=before,
        agent=speaker is None,
    )


def _valid_from(since: str) -> datetime | None:
    try:
        return as_utc(datetime.fromisoformat(since)) if since else None
    except ValueError:
        return None


def admitted(facts: Sequence[ExtractedFact], said: Said) -> list[ExtractedFact]:
    """The facts without the standing instructions the turn gives no ground for: an
    `instruction` fact (the model's or the heuristic's) is kept only when the turn holds the
    user's own standing request to the assistant (`tasks.facts.patterns.requests_of`: not a
    question, not quoted or forwarded text), none of the turn's requests asks for what the
    policy refuses (`tasks.directives.unsafe_request`), and neither does the fact itself."""
    requests = requests_of(said) if any(f.kind is FactKind.INSTRUCTION for f in facts) else []
    grounded = bool(requests) and not any(unsafe_request(r) for r in requests)
    return [
        f
        for f in facts
        if f.kind is not FactKind.INSTRUCTION
        or (grounded and not unsafe_request(f"{f.text} {f.attribute} {f.value}"))
    ]


def propositions(
    facts: Sequence[ExtractedFact],
    said: Said,
    source: str,
    refs: Mapping[str, str] | None = None,
) -> list[Proposition]:
    """Extracted facts as propositions: subjects normalised, ids resolved, grounding measured;
    standing instructions the turn gives no ground for left out (`admitted`)."""
    refs = refs or {}
    out = []
    for f in admitted(facts, said):
        subject = said.subject if f.subject.strip().lower() in _ME else f.subject.strip()
        ignore = [subject, said.subject] if subject != USER_SUBJECT else [said.subject]
        out.append(
            Proposition(
                text=f.text,
                kind=f.kind,
                subject=subject or said.subject,
                attribute=f.attribute,
                value=f.value,
                confidence=f.confidence,
                concepts=tuple(f.concepts),
                valid_from=_valid_from(f.since),
                ends=f.ends,
                replaces=f.replaces,
                grounding=grounding(f.text, source, ignore),
                supersedes=tuple(refs[r] for r in f.supersedes if r in refs),
                because=tuple(refs[r] for r in f.because if r in refs),
            )
        )
    return out
