"""`mneme eval retrieval --ablate`: which runs a value asks for."""

from __future__ import annotations

import pytest

from cli.eval_commands import ablation_parts
from memory.retrieval.recipes import PARTS


def test_no_value_is_the_full_recipe_and_one_part_is_that_part_alone() -> None:
    assert ablation_parts(None, PARTS) == [None]
    assert ablation_parts("sparse", PARTS) == ["sparse"]


def test_several_parts_run_after_the_full_recipe() -> None:
    assert ablation_parts("sparse, dense,sparse", PARTS) == [None, "sparse", "dense"]
    assert ablation_parts("all", PARTS) == [None, *sorted(PARTS)]


def test_an_unknown_part_is_named() -> None:
    with pytest.raises(ValueError, match="nope"):
        ablation_parts("dense,nope", PARTS)
