"""The chapters read back: a question about how the person has changed or what they have been
focused on gets the chapters of that period (`memory.sleep.chapters`), as extra context.

`is_narrative` recognises such a question: it asks about the person's (or the conversations')
course over time, "How have I changed this year?", "What have I been focused on lately?",
"What have we been talking about these past months?". `chapters_for` picks the chapters: those
overlapping the period the message names (`memory.text.timeparse`: "this year", "lately", "in
May"), else the newest `MAX_CHAPTERS`. Like the diary, they are not search results and never
enter the candidates. Chapters name concepts, which quote the user: the reply fences them.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memory.sleep.chapters import Chapter, load_chapters
from memory.text.timeparse import parse_time

if TYPE_CHECKING:
    from memory.services import Services

MAX_CHAPTERS = 4
"""Chapters shown at most: the newest of a longer period."""

_CHANGE = re.compile(
    r"\b(have|has|did) (i|we|my \w+|things|our \w+) (\w+ )?(changed|grown|evolved|shifted)\b"
    r"|\bhow (i|we) (have |'ve )?(changed|grown|evolved)\b"
    r"|\b(my|our) (main |big )?(themes|chapters|focus|preoccupations)\b"
    r"|\bchapters? of (my|our)\b",
    re.IGNORECASE,
)
_FOCUS = re.compile(
    r"\b(i|we|i've|we've) (been |mostly |mainly )*(focus(s)?ed on|preoccupied with|up to|into|"
    r"working on|thinking about|talking about|talked about|caring about|busy with)",
    re.IGNORECASE,
)
_SPAN = re.compile(
    r"\b(lately|recently|these days|this (year|month|season|spring|summer|autumn|fall|winter)|"
    r"over (the|this|these|time)\b|since|past (few |couple of )?(weeks|months|years?)|"
    r"last (few |couple of )?(weeks|months|year))",
    re.IGNORECASE,
)


def is_narrative(text: str) -> bool:
    """True for a question about how the person has changed, or what they (or the two of
    you) have been focused on over a stretch of time."""
    if "?" not in text and not re.match(r"\s*(how|what|tell me)\b", text, re.IGNORECASE):
        return False
    return bool(_CHANGE.search(text)) or bool(_FOCUS.search(text) and _SPAN.search(text))


def pick(chapters: list[Chapter], text: str, now: datetime) -> list[Chapter]:
    """The chapters overlapping the period `text` names, else all; the newest `MAX_CHAPTERS`."""
    window = parse_time(text, now).window
    if window is not None:
        first = window.start.date()
        last = (window.end - timedelta(microseconds=1)).date()  # the window is [start, end)
        chapters = [c for c in chapters if c.first_day <= last and c.last_day >= first]
    return chapters[-MAX_CHAPTERS:]


async def chapters_for(services: Services, tenant: str, text: str, now: datetime) -> list[Chapter]:
    """The tenant's chapters a narrative question is about (oldest first); [] for any other
    message, or before the first deep sleep."""
    if not is_narrative(text):
        return []
    return pick(await load_chapters(services.graph, tenant), text, now)


__all__ = ["MAX_CHAPTERS", "chapters_for", "is_narrative", "pick"]
