"""Questions about the order of events ("what happened first", "in what order did ...").

The answer needs the events in time order with their dates. `is_ordering` recognises the
question and `in_time_order` sorts what was recalled oldest first; the reply prompt then shows
the memories chronologically, each with its date (`tasks.respond`). Retrieval itself is the
usual one: a search pass per event the question names was tried and lowered the evidence found
(docs/adr/0098-ordering-questions.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memory.schema import as_utc

_ORDERING = re.compile(
    r"\b((what|which|who) (\w+ ){0,3}(happened|came|was|were|did|started|began|finished) "
    r"(first|earlier|last|later|before|after)|in (what|which) order|what order|the order (of|in)|"
    r"chronolog\w*|timeline|sequence of|before or after|after or before|earlier or later|"
    r"(first|earlier|sooner),? .{1,80}\bor\b)",
    re.IGNORECASE,
)


def is_ordering(text: str) -> bool:
    """True for a question about which of some events came first, or their order."""
    return bool(_ORDERING.search(text))


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
