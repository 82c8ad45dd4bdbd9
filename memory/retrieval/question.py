"""The question as one retrieval reads it, once its passes have run: the values that travel
together from the passes to the final scores (the query words the rerank covers, the names it
recognised, whom it is about, the time windows it names, the time it is asked at).

Data only; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memory.retrieval.facts import subjects_named
from memory.retrieval.recipes import Recipe
from memory.schema import normalise_text
from memory.text.query import addresses_agent
from memory.text.sparse import tokenize
from memory.text.timeparse import Resolution, TimeWindow

__all__ = ["Question"]


@dataclass(frozen=True, slots=True)
class Question:
    """What one retrieval was asked (one query per pass), read once."""

    queries: tuple[str, ...]
    cutoff: datetime
    """Now: nothing created later is returned, and time words are read against it (UTC)."""
    windows: tuple[TimeWindow, ...] = ()
    """The time windows the queries name (one at most per query)."""
    tokens: tuple[set[str], ...] = ()
    """Each query's content tokens (`sparse.tokenize`): what the coverage rerank looks for."""
    named: frozenset[str] = frozenset()
    """Normalised names of the entities the queries name (a speaker named: `speaker_boost`)."""
    subjects: frozenset[str] = frozenset()
    """Normalised fact subjects the question is about (`facts.subjects_named`)."""
    about_agent: bool = False
    """It asks what the agent said, and the recipe ranks a reply below the user's side."""
    signal_weights: Mapping[str, float] | None = field(default=None, compare=False)
    """Credibility weights the route asked for (None: none)."""

    @classmethod
    def read(
        cls,
        queries: Sequence[str],
        cutoff: datetime,
        times: Sequence[Resolution],
        entities: Sequence[str],
        recipe: Recipe,
        signal_weights: Mapping[str, float] | None = None,
    ) -> Question:
        """The question of `queries` asked at `cutoff`, whose time words resolved to `times`
        and in which the passes recognised `entities` (one list, pass after pass)."""
        return cls(
            queries=tuple(queries),
            cutoff=cutoff,
            windows=tuple(t.window for t in times if t.window is not None),
            tokens=tuple(set(tokenize(q)) for q in queries),
            named=frozenset(normalise_text(n) for n in entities),
            subjects=frozenset(subjects_named(queries, entities)),
            about_agent=recipe.turns.reply_weight < 1.0
            and any(addresses_agent(q) for q in queries),
            signal_weights=signal_weights,
        )
