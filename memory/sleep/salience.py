"""Salience and utility of episodes (docs/design.md section 7): pure functions, no stores.

Salience (how much a memory matters):

    base = exp(-age_days / 365)                  (1 for a cornerstone, a pinned episode, the
                                                  only evidence of what memory holds true or a
                                                  source of a timeless fact)
    resistance = min(3 * identity + 2 * emotion, 1)
    effective = base + resistance * (1 - base)
    salience = effective * (1 + ln(access + 1) + novelty + 0.5 * ln(connections + 1)) / 4

Utility (how useful it is to keep, FSRS + ACT-R):

    utility = ln(n + 2) * ess_score * R(t, S),   R = 1 / (1 + t / (9 S)),
    S = 30 * (0.5 + mean of the 5 credibility signals) days,  t = days since the last access
    (since creation when never accessed).

`appraise` estimates emotion, identity and novelty from the turn's own words and its stored
ESS (the offline heuristic; no LLM estimates them yet). It reads general English cues, not a
data set: emotion words and exclamations; statements about who the speaker is (name, work,
home, family, health, values); and how much specific content the turn carries.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

from memory.schema import SIGNAL_NAMES, Episode, ReasoningType, as_utc
from memory.text.sparse import token_set

CORNERSTONE_CONNECTIONS = 15
"""An episode with this many edges (topics, entities, facts, beliefs) is a cornerstone."""

NEUTRAL_ESS = 0.5
"""The ESS score of an episode that has none (written before the router scored it)."""

_EMOTION = re.compile(
    r"\b(love[ds]?|loving|hate[ds]?|happy|happiest|sad|saddest|angry|furious|upset|scared|"
    r"afraid|terrified|anxious|anxiety|worried|worry|excited|thrilled|proud|ashamed|"
    r"embarrassed|lonely|heartbroken|devastated|grief|grieving|cried|crying|tears|miss(?:ed)?|"
    r"depressed|stressed|overwhelmed|frustrated|disappointed|grateful|jealous|nervous|"
    r"amazing|awful|terrible|wonderful|horrible|died|passed away|funeral|divorce[d]?|"
    r"breakup|broke up|panic|hurt|joy|delighted|miserable|relieved)\b",
    re.IGNORECASE,
)
_INTENSIFIER = re.compile(r"\b(so|really|very|extremely|incredibly|totally)\b", re.IGNORECASE)
_IDENTITY = re.compile(
    r"\b(my name is|call me|i am an?|i'm an?|i work(?:ed)? (?:as|at|for|in)|my job|my career|"
    r"i live in|i grew up|i was born|i moved to|my (?:wife|husband|partner|boyfriend|"
    r"girlfriend|son|daughter|kids?|children|mom|mum|mother|dad|father|sister|brother|family|"
    r"parents?|dog|cat)|i'm allergic|i am allergic|allergic to|i'm vegan|i'm vegetarian|"
    r"i believe|i value|i've always|i have always|i never|diagnosed|my health|"
    r"my birthday|i'm from|i am from|i studied|my degree|i graduated)\b",
    re.IGNORECASE,
)

_NOVEL_TOKENS = 25
"""Distinct content words at which a turn counts as fully informative."""


@dataclass(frozen=True, slots=True)
class Appraisal:
    """The three estimates salience needs, each 0..1."""

    emotion: float = 0.0
    identity: float = 0.0
    novelty: float = 0.0


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def appraise(episode: Episode) -> Appraisal:
    """Heuristic emotion intensity, identity relevance and novelty of the user's side of a turn."""
    text = episode.user_text or ""
    emotions = len(_EMOTION.findall(text))
    exclaims = min(text.count("!"), 2)
    emotional_appeal = bool(
        episode.ess and episode.ess.reasoning_type == ReasoningType.EMOTIONAL_APPEAL
    )
    emotion = 0.0
    if emotions:
        emotion = 0.15 * emotions + 0.05 * min(len(_INTENSIFIER.findall(text)), 2)
    emotion += 0.05 * exclaims + (0.2 if emotional_appeal else 0.0)
    identity = 0.1 * len(_IDENTITY.findall(text))
    specificity = episode.ess.specificity if episode.ess else 0.0
    words = len(token_set(text))
    novelty = min(1.0, words / _NOVEL_TOKENS) * (0.5 + 0.5 * specificity)
    return Appraisal(emotion=_clamp(emotion), identity=_clamp(identity), novelty=_clamp(novelty))


def emotion_words(text: str) -> set[str]:
    """The emotion words of `text` (lower case): what the turn says it felt."""
    return {m.lower() for m in _EMOTION.findall(text or "")}


def is_cornerstone(connections: int) -> bool:
    """A node with at least `CORNERSTONE_CONNECTIONS` connections never decays."""
    return connections >= CORNERSTONE_CONNECTIONS


def _days(since: datetime, now: datetime) -> float:
    return max(0.0, (as_utc(now) - as_utc(since)).total_seconds() / 86400.0)


def salience(
    age_days: float,
    access_count: int,
    connections: int,
    appraisal: Appraisal,
    *,
    timeless: bool = False,
) -> float:
    """docs/design.md's salience; a cornerstone or a timeless memory does not decay."""
    base = 1.0 if timeless or is_cornerstone(connections) else math.exp(-max(0.0, age_days) / 365.0)
    resistance = min(3.0 * appraisal.identity + 2.0 * appraisal.emotion, 1.0)
    effective = base + resistance * (1.0 - base)
    boost = (
        1.0
        + math.log(max(0, access_count) + 1)
        + appraisal.novelty
        + 0.5 * math.log(max(0, connections) + 1)
    )
    return effective * boost / 4.0


def episode_salience(
    episode: Episode, connections: int, now: datetime, *, sole_evidence: bool = False
) -> float:
    """The salience of `episode` at `now`, with its number of graph connections. What sleep
    protects does not decay, like a cornerstone: a pinned episode, and with `sole_evidence` the
    only evidence of an active belief, the only source of a current fact or a source of a
    current timeless fact (`EpisodeStore.sole_evidence`), so a protected turn stays above
    retrieval's salience floor however old it grows."""
    return salience(
        _days(episode.created_at, now),
        episode.access_count,
        connections,
        appraise(episode),
        timeless=episode.pinned or sole_evidence,
    )


def retrievability(days: float, stability_days: float) -> float:
    """FSRS's power forgetting curve R(t, S) = 1 / (1 + t / (9 S))."""
    return 1.0 / (1.0 + max(0.0, days) / (9.0 * max(stability_days, 1e-9)))


def utility(access_count: int, ess_score: float, signals: dict[str, float], days: float) -> float:
    """ln(n + 2) x ess_score x R(t, S), S = 30 x (0.5 + mean of the five signals) days."""
    mean = sum(signals.get(n, 0.0) for n in SIGNAL_NAMES) / len(SIGNAL_NAMES)
    stability = 30.0 * (0.5 + mean)
    return math.log(max(0, access_count) + 2) * ess_score * retrievability(days, stability)


def episode_utility(episode: Episode, now: datetime) -> float:
    """The utility of `episode` at `now`: t runs from its last access (else its creation)."""
    last = episode.last_accessed or episode.created_at
    ess = episode.ess
    score = ess.score if ess else NEUTRAL_ESS
    signals = ess.signals() if ess else {n: NEUTRAL_ESS for n in SIGNAL_NAMES}
    return utility(episode.access_count, score, signals, _days(last, now))
