"""Questions about the order of events ("what happened first", "in what order did ...").

Such a question needs every event it names, and the answer needs them in time order with their
dates. `is_ordering` recognises the question, `events_named` splits out the events it names
(each becomes its own search pass, so one event's turns cannot crowd out another's), and
`in_time_order` sorts what was recalled oldest first. The reply prompt then shows the memories
chronologically, each with its date (`nodes.respond`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memory.schema import as_utc
from memory.sparse import tokenize

_ORDERING = re.compile(
    r"\b((what|which|who) (\w+ ){0,3}(happened|came|was|were|did|started|began|finished) "
    r"(first|earlier|last|later|before|after)|in (what|which) order|what order|the order (of|in)|"
    r"chronolog\w*|timeline|sequence of|before or after|after or before|earlier or later|"
    r"(first|earlier|sooner),? .{1,80}\bor\b)",
    re.IGNORECASE,
)

_CUE = re.compile(
    r"^.*?\b(first|earlier|sooner|order|sequence|timeline|chronologically|before or after|"
    r"after or before|earlier or later)\b[:,]?\s*",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"\s*(?:,|;|\bor\b|\band then\b|\bthen\b|\bor did\b)\s*", re.IGNORECASE)
_SPLIT_LIST = re.compile(r"\s*(?:,|;|\bor\b|\band then\b|\bthen\b|\band\b)\s*", re.IGNORECASE)
_PAIR = re.compile(r"\s+(before or after|after or before|earlier or later)\s+", re.IGNORECASE)
_LEAD = re.compile(
    r"^(and|did|do|does|i|we|you|my|the|a|an|was|were|it|to|is|has|have|had)\s+", re.IGNORECASE
)

MAX_EVENTS = 3


def is_ordering(text: str) -> bool:
    """True for a question about which of some events came first, or their order."""
    return bool(_ORDERING.search(text))


def events_named(text: str) -> list[str]:
    """The events an ordering question names, when it names two or more (else [])."""
    if not is_ordering(text):
        return []
    text = text.strip().rstrip("?.! ")
    pair = _PAIR.search(text)
    if pair:  # "did I X before or after Y"
        parts = [text[: pair.start()], text[pair.end() :]]
    else:
        rest = _CUE.sub("", text, count=1)
        split = _SPLIT_LIST if "," in rest else _SPLIT
        parts = split.split(rest)
    events = []
    for part in parts:
        part = part.strip(" ,;:")
        while _LEAD.match(part):
            part = _LEAD.sub("", part, count=1)
        if len(tokenize(part)) >= 1 and part.lower() not in ("happened", "came"):
            events.append(part)
    events = list(dict.fromkeys(events))
    return events[:MAX_EVENTS] if len(events) >= 2 else []


def _moment(memory: Mapping[str, Any]) -> float:
    fact = memory.get("fact") or {}
    value = fact.get("valid_from") or memory.get("created_at")
    if isinstance(value, datetime):
        return as_utc(value).timestamp()
    try:
        return as_utc(datetime.fromisoformat(str(value))).timestamp()
    except ValueError:
        return float("inf")  # undated last


def in_time_order(memories: Sequence[Mapping[str, Any]]) -> list[int]:
    """Indices of `memories` (candidate dicts) sorted oldest first; a fact counts from the time
    it became true, an episode from when it was said; ties keep their rank."""
    return sorted(range(len(memories)), key=lambda i: (_moment(memories[i]), i))
