"""The offline rules that decide a goal's status (`memory.knowledge.goals` runs them at deep sleep):
evolved when its fact was superseded by a newer goal, or a later turn of the same speaker says
it changed; completed or abandoned when a later turn of that speaker says so about the goal's
object; abandoned by silence only once the goal's own horizon has passed ("this year", "by
October", "in six months"; `SILENT_DAYS` after the last mention when it names none), else
active. Also what a model judging goals is given (`Case`) and answers (`Verdict`, `Judge`).
Pure functions over the tenant's turns (`Timeline`): no I/O, no model.

A clause is about the goal when it shares its object words: the goal's content words without
goal verbs ("want", "hope"), the subject's name and calendar words ("this year", "October",
"2026": a date in either sentence neither makes nor blocks a match). It must share one of them
that is not the first (the first is mostly the goal's verb: "went for a run" is not about "run
a marathon", "finished the marathon" is), or the only one. Clauses are split at commas, colons,
semicolons, dashes and "and"/"but"/"so", so one item of a list is read on its own; a clause
naming the goal without its words ("I stopped writing it", "I hit my target") reads its whole
sentence and the sentence before. A question says nothing. What a clause about the goal says
(done, given up, changed) is read by `memory.knowledge.goal_reading` from grammatical signals.
"""

from __future__ import annotations

import calendar
import re
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from memory.knowledge.goal_reading import goal_verb, read, read_fact
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
from memory.text.sparse import token_set, tokenize
from memory.text.timeparse import parse_time
from memory.write.contextual import speaker_label

SILENT_DAYS = 90
"""A goal with no horizon of its own, not mentioned for longer than this (at the run's time),
is abandoned; a goal with a horizon is not abandoned by silence before that horizon ends."""

QUOTE = 120
"""Characters of the evidence sentence kept in a reason."""


_ANAPHOR = re.compile(
    r"\b(it|that|this|them|goal|target|plan|dream|aim|resolution)\b", re.IGNORECASE
)
"""A clause that names the goal without its words: "I stopped writing it", "I hit my target"."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSE = re.compile(r"\s*[,;:]\s*|\s+(?:and|but|so)\s+|\s+[-–—]+\s+", re.IGNORECASE)
_GOAL_WORDS = token_set(
    "goal goals dream aim aiming resolution want wants wanted hope hoping try trying "
    "working towards toward saving save user instead"
)
_CALENDAR = frozenset(
    tokenize(
        " ".join(
            [*calendar.month_name[1:], *calendar.month_abbr[1:], *calendar.day_name]
            + "spring summer autumn fall winter year years month months week weeks weekend "
            "day days today tomorrow tonight next this last end now soon later".split()
        )
    )
)
"""Calendar words: when a goal is due, never what it is about."""
_YEAR = re.compile(r"^(1[89]|2[01])\d\d$")
_WITHIN = re.compile(
    r"\b(?:in|within|over)\s+(?:the\s+next\s+)?(\d+|a|an|one|two|three|four|five|six|seven|"
    r"eight|nine|ten|eleven|twelve)\s+(day|week|month|year)s?\b",
    re.IGNORECASE,
)
_END_OF = re.compile(r"\b(?:the\s+)?end\s+of\s+(?:the|this)\s+(year|month|week)\b", re.I)
_COUNTS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_UNIT_DAYS = {"day": 1, "week": 7, "month": 31, "year": 366}


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


def object_terms(goal: Goal | Fact) -> tuple[str, ...]:
    """The content words naming what the goal is about, in the order of its text: without goal
    verbs, the subject's name, calendar words (years, months, "this year") and one-letter
    tokens (the "s" of "the user's")."""
    skip = _GOAL_WORDS | token_set(goal.subject) | _CALENDAR
    seen: dict[str, None] = {}
    for word in tokenize(goal.text):
        if len(word) > 1 and word not in skip and not _YEAR.match(word):
            seen.setdefault(word)
    return tuple(seen)


def object_words(goal: Goal | Fact) -> frozenset[str]:
    """`object_terms` as a set."""
    return frozenset(object_terms(goal))


def about(terms: Sequence[str], words: frozenset[str]) -> bool:
    """True when a sentence's `words` name the goal whose object is `terms` (module docstring):
    one of them that is not the first (the only one, when there is one)."""
    return bool(words.intersection(terms[1:] if len(terms) > 1 else terms))


def _a_year_on(moment: datetime) -> datetime:
    try:
        return moment.replace(year=moment.year + 1)
    except ValueError:  # 29 February
        return moment + timedelta(days=365)


def horizon(goal: Goal | Fact, stated: datetime | None = None) -> datetime | None:
    """When the goal's own time runs out (the end of "this year", "by October", "in six
    months", read against when it was stated), or None when its text names no time. A month or
    season already past when it was said means the next one."""
    said = as_utc(stated or (goal.stated_at if isinstance(goal, Goal) else goal.valid_from))
    text = _END_OF.sub(lambda m: f"this {m.group(1)}", goal.text)
    ends = [w.end if w.end > said else _a_year_on(w.end) for w in parse_time(text, said).windows]
    for m in _WITHIN.finditer(text):
        count = int(m.group(1)) if m.group(1).isdigit() else _COUNTS[m.group(1).lower()]
        ends.append(said + timedelta(days=count * _UNIT_DAYS[m.group(2).lower()]))
    return max(ends) if ends else None


def _is_speaker(subject: str, turn: Turn) -> bool:
    if subject == USER_SUBJECT:
        return turn.speaker is None
    return turn.speaker is not None and normalise_text(turn.speaker) == normalise_text(subject)


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= QUOTE else flat[: QUOTE - 1].rstrip() + "…"


_SAID = {
    GoalStatus.EVOLVED: "said it changed",
    GoalStatus.ABANDONED: "said it was given up",
    GoalStatus.COMPLETED: "said it was done",
}


def said_verdict(
    goal: Goal, mention: Mention, words: frozenset[str] | None = None
) -> Verdict | None:
    """Evolved, abandoned or completed when a clause of the mention about the goal's object
    says so (`goal_reading.read`; `words`: its `object_words`, when the caller has them; the
    order of `object_terms` decides which word is its verb)."""
    terms = object_terms(goal)
    if words is not None:
        terms = tuple(t for t in terms if t in words) or tuple(words)
    if not terms:
        return None
    objects = frozenset(terms[1:] if len(terms) > 1 else terms)
    verb = goal_verb(goal.text)
    before: frozenset[str] = frozenset()
    for sentence in _SENTENCE.split(mention.text):
        said = token_set(sentence)
        context = said | before
        before = said
        if sentence.rstrip().endswith("?"):
            continue
        for clause in _CLAUSE.split(sentence):
            words_of = token_set(clause)
            if _ANAPHOR.search(clause):
                words_of |= context
            if not about(terms, words_of):
                continue
            status = read(clause, sentence, objects, verb)
            if status is not None:
                return Verdict(
                    status, f'{_SAID[status]}: "{_quote(sentence)}"', mention.episode_uid
                )
    return None


def silence_verdict(
    goal: Goal, mentions: Sequence[Mention], now: datetime, stated_in: str | None = None
) -> Verdict | None:
    """Rule 3: abandoned when neither its statement nor a mention is within `SILENT_DAYS` of
    `now` and the goal's `horizon`, when it has one, has ended (`stated_in`: the turn that
    stated it, the evidence when nothing mentioned it since); None otherwise."""
    last = max([as_utc(goal.stated_at), *(as_utc(m.at) for m in mentions)])
    now = as_utc(now)
    silent = (now - last).days
    due = horizon(goal)
    if silent <= SILENT_DAYS or (due is not None and now < due):
        return None
    reason = f"not mentioned for {silent} days (since {last.date().isoformat()})"
    if due is not None:
        reason += f", past its horizon ({(due - timedelta(days=1)).date().isoformat()})"
    return Verdict(
        GoalStatus.ABANDONED, reason, mentions[-1].episode_uid if mentions else stated_in
    )


def offline_verdict(
    goal: Goal, mentions: Sequence[Mention], now: datetime, stated_in: str | None = None
) -> Verdict:
    """What the later mentions, then silence, make of a goal whose fact is current."""
    words = object_words(goal)
    for mention in mentions:
        found = said_verdict(goal, mention, words)
        if found is not None:
            return found
    return silence_verdict(goal, mentions, now, stated_in) or Verdict(GoalStatus.ACTIVE)


def replaced_verdict(new: Fact, evidence: str | None) -> Verdict:
    """Rule 1: what superseding the goal's fact by `new` makes of the goal."""
    if new.kind is not FactKind.GOAL:
        status = read_fact(new.text)
        if status is not None:
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
