"""Retrieval recipes: named, declarative search strategies for `memory.retrieval.retrieve`.

A recipe is data, so an experiment is a config change: copy one with `dataclasses.replace` and
pass it in. The router picks the recipe by name (DESIGN section 5) and may override its result
count, temporal expansion and credibility weights per turn.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from memory.schema import VectorKind


@dataclass(frozen=True, slots=True)
class Recipe:
    """How one retrieval runs."""

    name: str
    kinds: tuple[VectorKind, ...] = ("derivatives", "prospective")
    """Vector collections searched; every hit points back at its episode."""
    dense: bool = True
    """Search the dense (embedding) vectors."""
    sparse: bool = True
    """Search the sparse (BM25-like lexical) vectors."""
    n_results: int = 7
    """Candidates wanted after deduplication by episode (the router may override it)."""
    overfetch: float = 2.0
    """Each underlying search asks for `overfetch * n_results` points."""
    rrf_k: int = 60
    """Reciprocal-rank-fusion constant: score = sum of 1 / (k + rank) over the ranked lists."""
    similarity_floor: float = 0.3
    """An episode is kept only if one of its points has dense cosine similarity at least this."""
    neighbours: int = 0
    """Episodes before and after each seed along TEMPORAL_NEXT to add (0: none)."""
    neighbour_seeds: int = 3
    """How many top candidates get their neighbours."""
    max_passes: int = 1
    """Most query passes (sub-queries) one retrieval runs; extra ones are ignored."""
    max_candidates: int = 50
    """Hard cap on what `retrieve` returns (the rerank reads at most 50)."""


SIMPLE = Recipe(name="SIMPLE")
"""One pass, dense + sparse over derivatives and prospective questions, RRF, floor 0.3."""

TEMPORAL = Recipe(name="TEMPORAL", neighbours=2)
"""SIMPLE, then the 2 episodes before and after the best candidates."""

AGGREGATION = Recipe(name="AGGREGATION", n_results=10, max_passes=4)
"""Up to 4 sub-queries, every ranked list fused together with RRF."""

RECIPES: dict[str, Recipe] = {r.name: r for r in (SIMPLE, TEMPORAL, AGGREGATION)}
"""Recipes by name."""


def get_recipe(name: str) -> Recipe:
    """The recipe called `name` (BELIEF_QUERY searches like SIMPLE); ValueError names the options."""
    key = name.upper()
    if key == "BELIEF_QUERY":
        return SIMPLE
    try:
        return RECIPES[key]
    except KeyError:
        raise ValueError(
            f"unknown retrieval recipe {name!r}; use one of {sorted(RECIPES)}"
        ) from None


def with_overrides(
    recipe: Recipe, *, n_results: int | None = None, neighbours: int | None = None
) -> Recipe:
    """A copy of `recipe` with the router's per-turn choices applied."""
    if n_results is not None:
        recipe = replace(recipe, n_results=max(1, min(20, n_results)))
    if neighbours is not None:
        recipe = replace(recipe, neighbours=max(0, neighbours))
    return recipe
