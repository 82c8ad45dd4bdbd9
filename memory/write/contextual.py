"""Contextual derivatives: fragments embedded with what makes them findable on their own.

A turn such as "Yes, last week, with my sister!" says little by itself. Bookkeeping indexes, for
every episode, besides its exact chunks (kept verbatim, so nothing is lost):

- a **context** derivative: the session date, the previous turns of the same thread (shortened)
  and the turn itself, so that the words of the question that prompted a reply find the reply;
- a **third-person** paraphrase of each chunk as its prospective question vector, when the
  speaker is known: "Caroline: I went to a support group yesterday" is also indexed as
  "Caroline went to a support group yesterday (7 May 2023)", which is how people later ask
  about it ("When did Caroline go to the support group?").

Speakers: a turn of a transcript between people is stored as `Name: text` in `user_text` (the
usual transcript convention); `speaker_label` reads the name back. Agent turns (user + agent text)
have no label and get no paraphrase, only the context derivative.

Pure text work plus one graph read (the previous episodes); no LLM, no model, no prompt.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.schema import Episode, as_utc
from memory.stores.base import GraphStore
from memory.text.chunking import Derivative, split_turn
from memory.text.timeparse import format_day, parse_time

__all__ = [
    "CONTEXT_ROLE",
    "Contextualised",
    "contextualise",
    "dates_resolved",
    "relative_dates",
    "speaker_label",
    "third_person",
]

CONTEXT_ROLE = "context"
"""`Derivative.role` of the context derivative (scored, but never shown as the fragment)."""
CONTEXT_TURNS = 2
"""Previous turns of the same thread included in the context derivative."""
CONTEXT_WORDS = 60
"""Each previous turn is cut to this many words in the context derivative."""

_LABEL = re.compile(r"^\s*([A-Z][\w.'\-]*(?:\s+[A-Z][\w.'\-]*){0,3})\s*:\s+(?=\S)")
_NOT_SPEAKERS = frozenset(
    {"User", "Agent", "Note", "Re", "Update", "Summary", "Q", "A", "PS", "TODO"}
)

_FIRST_PERSON: tuple[tuple[str, str], ...] = (
    (r"\bI'm\b", "{s} is"),
    (r"\bI am\b", "{s} is"),
    (r"\bI've\b", "{s} has"),
    (r"\bI'd\b", "{s} would"),
    (r"\bI'll\b", "{s} will"),
    (r"\bI\b", "{s}"),
    (r"\b[Mm]y\b", "{s}'s"),
    (r"\b[Mm]ine\b", "{s}'s"),
    (r"\b[Mm]yself\b", "{s}"),
    (r"\bme\b", "{s}"),
)
_SECOND_PERSON: tuple[tuple[str, str], ...] = (
    (r"\byou're\b", "{a} is"),
    (r"\byou've\b", "{a} has"),
    (r"\byou'd\b", "{a} would"),
    (r"\byou'll\b", "{a} will"),
    (r"\byours\b", "{a}'s"),
    (r"\byour\b", "{a}'s"),
    (r"\byourself\b", "{a}"),
    (r"\byou\b", "{a}"),
)
_RELATIVE = re.compile(
    r"\b(the day before yesterday|yesterday|today|tonight|last (?:week|weekend|month|year|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|this (?:week|weekend|month|year)|"
    r"next (?:week|weekend|month|year)|(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|"
    r"ten|a couple of|a few) (?:days?|weeks?|months?|years?) ago)\b",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Contextualised:
    """The derivatives to index for an episode and the speaker (a Person entity), if known."""

    derivatives: list[Derivative]
    speaker: str | None


def speaker_label(text: str) -> tuple[str | None, str]:
    """Split `Name: text` into (name, text); (None, text) when there is no speaker label."""
    match = _LABEL.match(text)
    if not match or match.group(1) in _NOT_SPEAKERS or re.search(r"https?$", match.group(1)):
        return None, text
    return match.group(1).strip(), text[match.end() :]


def third_person(text: str, speaker: str, addressee: str | None = None) -> str:
    """Rewrite first-person words as the speaker's name (and "you" as the addressee's)."""
    out = text.replace("\u2019", "'")
    for pattern, repl in _FIRST_PERSON:
        out = re.sub(pattern, repl.format(s=speaker), out)
    if addressee:
        for pattern, repl in _SECOND_PERSON:
            out = re.sub(pattern, repl.format(a=addressee), out, flags=re.I)
    return out


def relative_dates(text: str, episode: Episode) -> str:
    """Add the absolute date after relative expressions ("yesterday (7 May 2023)")."""
    return dates_resolved(text, episode.created_at)


def dates_resolved(text: str, when: datetime) -> str:
    """Add the absolute date, seen from `when`, after relative expressions."""

    def resolve(match: re.Match[str]) -> str:
        window = parse_time(match.group(0), as_utc(when)).window
        if window is None:
            return match.group(0)
        return f"{match.group(0)} ({_describe(window.start, window.end)})"

    return _RELATIVE.sub(resolve, text)


def _describe(start: datetime, end: datetime) -> str:
    """A window as people write it: a day, "the week of ...", a month or a year."""
    days = (end - start).days
    if days <= 1:
        return format_day(start)
    if days <= 8:
        return f"the week of {format_day(start)}"
    if days <= 31:
        return f"{calendar.month_name[start.month]} {start.year}"
    return str(start.year)


def _shorten(text: str, words: int) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def _turn_text(episode: Episode) -> str:
    if episode.agent_text:
        return f"User: {episode.user_text}\nAgent: {episode.agent_text}"
    return episode.user_text


async def contextualise(
    graph: GraphStore,
    episode: Episode,
    derivatives: Sequence[Derivative] | None = None,
    *,
    context_turns: int = CONTEXT_TURNS,
) -> Contextualised:
    """The episode's exact chunks (with third-person paraphrases) plus one context derivative.

    `derivatives` are the chunks made so far (LLM or splitter); None uses the splitter. Chunks
    that already carry questions keep them; a paraphrase is added while there is room (4 each).
    """
    speaker, _ = speaker_label(episode.user_text)
    previous: list[Episode] = []
    if context_turns > 0:
        neighbours = await graph.episodes.neighbours(episode.tenant, episode.uid, context_turns)
        previous = [
            n.episode
            for n in neighbours
            if n.offset < 0 and n.episode.thread_id == episode.thread_id
        ]
    addressee = None
    for before in reversed(previous):
        name, _ = speaker_label(before.user_text)
        if name and name != speaker:
            addressee = name
            break

    base = (
        list(derivatives)
        if derivatives is not None
        else split_turn(episode.user_text, episode.agent_text)
    )
    out: list[Derivative] = []
    for d in base:
        questions = list(d.questions)
        if speaker and d.role in ("user", "chunk") and len(questions) < 4:
            _, body = speaker_label(d.text)
            paraphrase = relative_dates(third_person(body, speaker, addressee), episode)
            if paraphrase.strip() and paraphrase != d.text:
                questions.append(
                    f"{speaker}: {paraphrase}" if speaker not in paraphrase else paraphrase
                )
        out.append(Derivative(text=d.text, questions=tuple(questions), role=d.role))

    when = format_day(as_utc(episode.created_at))
    lines = [f"({when})"]
    lines += [_shorten(_turn_text(p), CONTEXT_WORDS) for p in previous]
    lines.append(_turn_text(episode))
    context = "\n".join(lines)
    if out and previous:
        out.append(Derivative(text=context, role=CONTEXT_ROLE))
    return Contextualised(derivatives=out, speaker=speaker)
