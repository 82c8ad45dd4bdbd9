"""A fact's temporal precision: what the time parser finds in the words that state it, and
whether what it states is timeless by nature. No I/O.

1. A fact whose kind and attribute are timeless by nature (`memory.schema.TIMELESS_ATTRIBUTES`:
   a birthday, a blood type, a sister) is `unbounded`, whatever date it names.
2. Otherwise the time expressions of its text and of the clause of the turn that states it
   (`source_clause`: of the turn's sentences, split where a conjunction brings in a new subject,
   the one sharing most words with it) are read against the turn's time
   (`memory.text.timeparse.parse_time`): one placed against the turn ("last week", "two years
   ago") makes it `relative`; else a day of the calendar makes it `exact`, a wider span of the
   calendar ("in the spring of 2019", "around 2019") `approximate`.
3. With no time expression it is a statement about the present that holds as of the turn:
   `relative`.

The extraction writes dates absolute ("last week" becomes a date in the fact's text), which is
why the source clause is read too: relative words there win over the date they became.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from memory.schema import FactKind, FactPrecision, is_timeless
from memory.text.chunking import split_sentences
from memory.text.sparse import tokenize
from memory.text.timeparse import parse_time

_DAY = timedelta(days=1)
_NEW_SUBJECT = re.compile(
    r";\s+|,?\s+(?:and|but|while|whereas)\s+(?=(?:I|[Ww]e|[Yy]ou|[Hh]e|[Ss]he|[Tt]hey|[A-Z][a-z]+)\b)"
)
"""Where a sentence goes on with another clause of its own ("..., and I will visit in July")."""


def source_clause(text: str, source: str) -> str:
    """The clause of `source` that shares most words with `text` (empty when none does)."""
    words = set(tokenize(text))
    best, shared = "", 0
    for sentence in split_sentences(source):
        for clause in _NEW_SUBJECT.split(sentence):
            n = len(words & set(tokenize(clause)))
            if n > shared:
                best, shared = clause, n
    return best


def precision_of(
    kind: FactKind, attribute: str, text: str, source: str, said_at: datetime
) -> FactPrecision:
    """How precisely a fact (its kind, attribute and text, stated in `source` at `said_at`) is
    placed in time (the module docstring)."""
    if is_timeless(kind, attribute):
        return FactPrecision.UNBOUNDED
    windows = [
        *parse_time(text, said_at).windows,
        *parse_time(source_clause(text, source), said_at).windows,
    ]
    if not windows:
        return FactPrecision.RELATIVE
    if any(w.relative for w in windows):
        return FactPrecision.RELATIVE
    if any(w.end - w.start <= _DAY for w in windows):
        return FactPrecision.EXACT
    return FactPrecision.APPROXIMATE
