"""The offline rules that decide a goal's status (`memory.knowledge.goals` runs them at deep sleep):
evolved when its fact was superseded by a newer goal, completed or abandoned when a later turn of
the same speaker says so about the goal's object words, abandoned by silence after `SILENT_DAYS`,
else active. Also what a model judging goals is given (`Case`) and answers (`Verdict`, `Judge`).
Pure functions over the tenant's turns (`Timeline`): no I/O, no model.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.schema import (
    USER_SUBJECT,
    Episode,
    Fact,
    FactKind,
    Goal,
    GoalStatus,
    as_utc,
    normalise_text,
)
from memory.text.sparse import token_set
from memory.write.contextual import speaker_label

SILENT_DAYS = 90
"""A goal not mentioned for longer than this (at the run's time) is abandoned."""

QUOTE = 120
"""Characters of the evidence sentence kept in a reason."""


_DONE = re.compile(
    r"\b(finished|finally did|completed|achieved|accomplished|did it|made it|managed to|"
    r"succeeded|passed|graduated|ran|reached|crossed the finish|hit my goal|nailed it|"
    r"done with|got my|learned|learnt)\b",
    re.IGNORECASE,
)
_GAVE_UP = re.compile(
    r"\b(gave up|give up|giving up|given up|stopped|quit|quitting|abandoned|no longer|"
    r"not going to|decided against|dropped|called off|cancelled|canceled|forget about|"
    r"not doing|not anymore)\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(
    r"\b(not|never|no|n't|haven't|hasn't|didn't|don't|won't|yet to)\W*(\w+\W+){0,2}$"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_GOAL_WORDS = token_set(
    "goal goals dream aim aiming resolution want wants wanted hope hoping try trying "
    "working towards toward saving save user"
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A goal's status at a run, why, and the episode it rests on."""

    status: GoalStatus
    reason: str = ""
    evidence_uid: str | None = None


@dataclass(frozen=True, slots=True)
class Mention:
    """A later turn of the goal's speaker that names its object words."""

    episode_uid: str
    at: datetime
    text: str
    """The turn's words (without a speaker label)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """An episode as the rules read it: when, who spoke, the words and their tokens."""

    uid: str
    at: datetime
    speaker: str | None
    body: str
    tokens: frozenset[str]

    @classmethod
    def of(cls, episode: Episode) -> Turn:
        """Read `episode` once."""
        speaker, body = speaker_label(episode.user_text or "")
        return cls(episode.uid, as_utc(episode.created_at), speaker, body, token_set(body))


class Timeline:
    """The tenant's turns in time order, with an index from each word to the turns that say
    it, so that finding a goal's mentions reads only the turns that name its words."""

    def __init__(self, episodes: Sequence[Episode]) -> None:
        ordered = sorted(episodes, key=lambda e: (as_utc(e.created_at), e.uid))
        self.turns = [Turn.of(e) for e in ordered]
        self._position = {t.uid: i for i, t in enumerate(self.turns)}
        self._by_word: dict[str, list[int]] = defaultdict(list)
        for i, turn in enumerate(self.turns):
            for word in turn.tokens:
                self._by_word[word].append(i)

    def naming(self, words: frozenset[str]) -> list[Turn]:
        """The turns that say any of `words`, in time order."""
        found = sorted({i for w in words for i in self._by_word.get(w, ())})
        return [self.turns[i] for i in found]

    def last(self, uids: Sequence[str]) -> str | None:
        """The latest of these episodes (by time) among the turns, or None."""
        known = [(self._position[u], u) for u in uids if u in self._position]
        return max(known)[1] if known else None


@dataclass(frozen=True, slots=True)
class Case:
    """One goal to judge: the goal, its later mentions (oldest first), the offline verdict and
    what silence makes of it (`silence_verdict`: the verdict when no mention says it was done
    or given up)."""

    goal: Goal
    mentions: list[Mention]
    offline: Verdict
    silence: Verdict | None = None


Judge = Callable[[Sequence[Case]], Awaitable[dict[str, Verdict]]]
"""Judges a batch of goals: goal uid -> verdict; a goal it leaves out keeps the offline one."""


def object_words(goal: Goal | Fact) -> frozenset[str]:
    """The content words naming what the goal is about (its text without goal verbs and the
    subject's name)."""
    return token_set(goal.text) - _GOAL_WORDS - token_set(goal.subject)


def _needed(words: frozenset[str]) -> int:
    return max(1, math.ceil(len(words) / 2))


def _is_speaker(subject: str, turn: Turn) -> bool:
    if subject == USER_SUBJECT:
        return turn.speaker is None
    return turn.speaker is not None and normalise_text(turn.speaker) == normalise_text(subject)


def _cue(sentence: str, pattern: re.Pattern[str]) -> bool:
    for match in pattern.finditer(sentence):
        if not _NEGATED.search(sentence[: match.start()].lower()):
            return True
    return False


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= QUOTE else flat[: QUOTE - 1].rstrip() + "…"


def said_verdict(
    goal: Goal, mention: Mention, words: frozenset[str] | None = None
) -> Verdict | None:
    """Completed or abandoned when a sentence of the mention says so about the goal's object
    (`words`: its `object_words`, when the caller has them)."""
    if not (_DONE.search(mention.text) or _GAVE_UP.search(mention.text)):
        return None  # no cue at all: most mentions, and the cheapest test
    words = object_words(goal) if words is None else words
    for sentence in _SENTENCE.split(mention.text):
        if len(token_set(sentence) & words) < _needed(words):
            continue
        for status, pattern in ((GoalStatus.ABANDONED, _GAVE_UP), (GoalStatus.COMPLETED, _DONE)):
            if _cue(sentence, pattern):
                verb = "done" if status is GoalStatus.COMPLETED else "given up"
                return Verdict(
                    status, f'said it was {verb}: "{_quote(sentence)}"', mention.episode_uid
                )
    return None


def silence_verdict(
    goal: Goal, mentions: Sequence[Mention], now: datetime, stated_in: str | None = None
) -> Verdict | None:
    """Rule 3: abandoned when neither its statement nor a mention is within `SILENT_DAYS` of
    `now` (`stated_in`: the turn that stated it, the evidence when nothing mentioned it since);
    None when it was mentioned lately."""
    last = max([as_utc(goal.stated_at), *(as_utc(m.at) for m in mentions)])
    silent = (as_utc(now) - last).days
    if silent <= SILENT_DAYS:
        return None
    return Verdict(
        GoalStatus.ABANDONED,
        f"not mentioned for {silent} days (since {last.date().isoformat()})",
        mentions[-1].episode_uid if mentions else stated_in,
    )


def offline_verdict(
    goal: Goal, mentions: Sequence[Mention], now: datetime, stated_in: str | None = None
) -> Verdict:
    """Rules 2-4 of the module docstring for a goal whose fact is current."""
    words = object_words(goal)
    for mention in mentions:
        found = said_verdict(goal, mention, words)
        if found is not None:
            return found
    return silence_verdict(goal, mentions, now, stated_in) or Verdict(GoalStatus.ACTIVE)


def replaced_verdict(new: Fact, evidence: str | None) -> Verdict:
    """Rule 1: what superseding the goal's fact by `new` makes of the goal."""
    if new.kind is not FactKind.GOAL:
        for status, pattern in ((GoalStatus.ABANDONED, _GAVE_UP), (GoalStatus.COMPLETED, _DONE)):
            if _cue(new.text, pattern):
                return Verdict(status, f"superseded by: {_quote(new.text)}", evidence)
    return Verdict(GoalStatus.EVOLVED, f"replaced by a newer goal: {_quote(new.text)}", evidence)


def mentions_of(
    goal: Goal, timeline: Timeline, sources: Sequence[str], now: datetime
) -> list[Mention]:
    """The turns after the goal was stated (not its own sources, none after `now`) of its
    speaker that share an object word with it, oldest first."""
    stated, until, skip = as_utc(goal.stated_at), as_utc(now), set(sources)
    return [
        Mention(t.uid, t.at, t.body)
        for t in timeline.naming(object_words(goal))
        if stated < t.at <= until and t.uid not in skip and _is_speaker(goal.subject, t)
    ]
