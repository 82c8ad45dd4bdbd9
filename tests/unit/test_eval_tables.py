"""`mneme eval retrieval`'s development sets and its table beside the reference retrievers."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from cli.eval_commands import DEV_BENCHMARKS, dev_benchmarks, references_table


def test_the_three_development_sets_are_found_or_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="beam500k_dev4"):
        dev_benchmarks(tmp_path)
    for name in DEV_BENCHMARKS:
        (tmp_path / name).write_text("", encoding="utf-8")
    found = dev_benchmarks(tmp_path)
    assert [p.name for p in found] == [
        "locomo10.memeval.jsonl",
        "longmemeval_s_dev30.memeval.jsonl",
        "beam500k_dev4.memeval.jsonl",
    ]


def test_the_reference_table_shows_the_margin_to_the_best_reference() -> None:
    def row(r10: float, ndcg: float) -> dict[str, float]:
        return {"R@10": r10, "NDCG@10": ndcg, "n": 8.0}

    summary = {
        "metrics": {"preference": row(0.5, 0.4), "overall": row(0.6, 0.5)},
        "references": {
            "BM25": {"preference": row(0.8, 0.3), "overall": row(0.4, 0.3)},
            "dense": {"preference": row(0.6, 0.45), "overall": row(0.5, 0.2)},
            "RRF": {"preference": row(0.7, 0.35), "overall": row(0.55, 0.35)},
        },
    }
    out = Console(width=200, record=True)
    out.print(references_table(summary, "set"))
    text = out.export_text()
    preference = next(line for line in text.splitlines() if "preference" in line)
    overall = next(line for line in text.splitlines() if "overall" in line)
    assert "-0.300 / -0.050" in preference  # below BM25's R@10 and dense's NDCG
    assert "+0.050 / +0.150" in overall
