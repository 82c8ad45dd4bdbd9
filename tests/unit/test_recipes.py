"""Recipes as nested configs: the named recipes, the ablation parts and the router's overrides."""

from __future__ import annotations

import dataclasses

import pytest

from memory.retrieval.recipes import (
    AGGREGATION,
    PARTS,
    RECIPES,
    SIMPLE,
    TEMPORAL,
    Recipe,
    ablate,
    changed,
    get_recipe,
    with_overrides,
)


def settings(recipe: Recipe) -> dict[str, object]:
    """Every setting of a recipe as `step.field`: value."""
    out: dict[str, object] = {}
    for step in dataclasses.fields(recipe):
        config = getattr(recipe, step.name)
        if dataclasses.is_dataclass(config):
            for f in dataclasses.fields(config):
                out[f"{step.name}.{f.name}"] = getattr(config, f.name)
    return out


def differences(a: Recipe, b: Recipe) -> dict[str, object]:
    mine, theirs = settings(a), settings(b)
    return {k: theirs[k] for k in mine if mine[k] != theirs[k]}


def test_named_recipes_differ_from_simple_only_where_they_say() -> None:
    assert differences(SIMPLE, TEMPORAL) == {"time.boost": 0.25, "time.neighbours": 2}
    assert differences(SIMPLE, AGGREGATION) == {"search.max_passes": 4}
    priors = SIMPLE.priors  # the state weights at 0 by measurement (ADR 0148), the hop on
    assert (priors.salience_weight, priors.recency_weight, priors.association_weight) == (0, 0, 0)
    assert priors.concept_hops == 2 and SIMPLE.rerank.diversity == 0.7
    assert "CONTEXT" not in RECIPES  # one ranking: every recipe reads memory's state
    assert get_recipe("belief_query") is SIMPLE and get_recipe("temporal") is TEMPORAL
    with pytest.raises(ValueError, match="AGGREGATION"):
        get_recipe("FANCY")


def test_every_part_names_settings_that_exist_and_changes_them() -> None:
    for part, changes in PARTS.items():
        off = ablate(TEMPORAL, part)  # TEMPORAL: every part is on (its neighbours too)
        now = settings(off)
        assert {path: now[path] for path in changes} == changes, part
        assert differences(TEMPORAL, off), part  # turning it off changes something
        assert set(differences(TEMPORAL, off)) <= set(changes), part  # and nothing else
        assert off.name == TEMPORAL.name
    with pytest.raises(ValueError, match="rerank"):
        ablate(SIMPLE, "nonsense")


def test_changed_refuses_a_setting_that_does_not_exist() -> None:
    for path in ("search.nothing", "nothing.dense", "name.x", "search"):
        with pytest.raises(ValueError, match="unknown recipe setting"):
            changed(SIMPLE, {path: 1})
    both = changed(SIMPLE, {"graph.smoothing": 0.1, "graph.paired_smoothing": 0.2})
    assert (both.graph.smoothing, both.graph.paired_smoothing) == (0.1, 0.2)
    assert SIMPLE.graph.smoothing == 0.35  # the original is untouched


def test_recipes_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SIMPLE.search.dense = False  # type: ignore[misc]


def test_the_router_turns_the_temporal_expansion_on() -> None:
    assert with_overrides(SIMPLE, neighbours=2).time.neighbours == 2
    assert with_overrides(SIMPLE, neighbours=-1).time.neighbours == 0
    assert with_overrides(TEMPORAL) == TEMPORAL
