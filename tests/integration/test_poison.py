"""No poison pills in the benchmarks: every turn of LoCoMo and LongMemEval (../shared/bench)
goes through every offline bookkeeping heuristic without raising (`mneme bench poison`).
Before issue 10, six LongMemEval turns made the entity heuristic produce a 100+ character name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.poison import bench_poison

BENCH = Path(__file__).resolve().parents[2].parent / "shared" / "bench"
FILES = ["locomo10.memeval.jsonl", "longmemeval_s_dev30.memeval.jsonl"]

pytestmark = pytest.mark.slow


def test_no_turn_of_either_benchmark_is_a_poison_pill() -> None:
    paths = [BENCH / name for name in FILES]
    missing = [p for p in paths if not p.exists()]
    if missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but the benchmarks are missing: {missing}")
        pytest.skip(f"benchmarks not found at {BENCH}")
    report = bench_poison(paths)
    assert report.episodes > 13_000
    assert report.failed == {}
