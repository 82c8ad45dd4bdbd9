"""`mneme bench directives` itself, on both labelled sets: its figures meet the ones recorded in
docs/experiments/directives.md (the "after" column), so a change to the offline heuristic that
makes a turn a wrong instruction or belief fails here, not only when someone reruns the bench."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.directives import DEFAULT
from cli.main import app

pytestmark = pytest.mark.slow

CHECK = DEFAULT.with_name("directives_check.jsonl")

RECORDED = {
    DEFAULT: {"directive": (1.0, 1.0), "belief": (1.0, 1.0)},
    CHECK: {"directive": (1.0, 0.75), "belief": (0.75, 1.0)},
}
"""(precision, recall) of each decision, as docs/experiments/directives.md records them."""


@pytest.mark.parametrize("path", [DEFAULT, CHECK], ids=lambda p: p.name)
def test_the_directives_bench_meets_its_recorded_figures(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEME_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MNEME_LLM_BASE_URL", raising=False)
    out = tmp_path / "report.json"
    args = ["bench", "directives", *([] if path == DEFAULT else [str(path)]), "--json", str(out)]
    result = CliRunner().invoke(app, args)
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["turns"] == sum(1 for line in path.read_text().splitlines() if line.strip())
    for name, (precision, recall) in RECORDED[path].items():
        score = report[name]
        assert score["precision"] >= precision, (name, score["wrong"])
        assert score["recall"] >= recall, (name, score["wrong"])
        assert f"{name}: precision {score['precision']} recall {score['recall']}" in result.output
    # the command exits 1 when either decision has a wrong turn, else 0
    wrong = report["directive"]["wrong"] or report["belief"]["wrong"]
    assert result.exit_code == (1 if wrong else 0), result.output
