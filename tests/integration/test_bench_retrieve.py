"""`mneme bench retrieve` on a small fill: it runs the real retrieve and reports what it says."""

from __future__ import annotations

from rich.console import Console

from bench.retrieve import bench_retrieve


async def test_bench_retrieve_reports_wall_and_cpu_per_recipe() -> None:
    console = Console(record=True, width=160)
    rows = await bench_retrieve(sizes=[300], queries=3, long=False, console=console)
    assert [(r["derivatives"], r["turns"]) for r in rows] == [(300, "short")]
    row = rows[0]
    assert row["episodes"] >= 100  # short turns: one to three derivatives each
    for recipe in ("SIMPLE", "TEMPORAL"):
        timing = row[recipe]
        assert 0 < timing["p50_ms"] <= timing["p95_ms"]
        assert timing["cpu_ms"] > 0
    text = console.export_text()
    assert "CPU/question" in text and "load average" in text
