"""The retrieval-evaluation notebook executes from top to bottom: on its LoCoMo slice when the
benchmark is beside the clone, and on the sample shipped in the repository otherwise; its plots
render inline."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
LOCOMO = ROOT.parent / "shared" / "bench" / "locomo10.memeval.jsonl"
SAMPLE = ROOT / "notebooks" / "data" / "sample.memeval.jsonl"


def run_notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: Path) -> tuple[str, int]:
    """Execute the notebook on `data`; its printed output and how many images it showed."""
    for key in [k for k in os.environ if k.startswith(("OPENAI_", "NEO4J_", "MNEME_", "QDRANT_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("MNEME_EVAL_SESSIONS", "2" if data == LOCOMO else "4")
    monkeypatch.setenv("MNEME_MEMEVAL", str(data))
    monkeypatch.setenv("MNEME_DATA_DIR", str(tmp_path / "data"))
    nb = nbformat.read(ROOT / "notebooks" / "02_retrieval_eval.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    text = "\n".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs
    )
    images = sum("image/png" in o.get("data", {}) for o in outputs)
    return text, images


def test_retrieval_notebook_runs_on_the_shipped_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, images = run_notebook(tmp_path, monkeypatch, SAMPLE)
    assert "data: sample.memeval.jsonl" in text
    assert "overall w/o adversarial" in text and "p95" in text
    assert images == 2  # recall@k and latency, shown inline


def test_retrieval_notebook_runs_on_locomo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not LOCOMO.is_file():
        message = f"{LOCOMO} is not there (it ships beside the repository in shared/)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)  # CI always has shared/ beside the clone: a miss is a failure
        pytest.skip(message)
    text, images = run_notebook(tmp_path, monkeypatch, LOCOMO)
    assert "data: locomo10.memeval.jsonl" in text
    assert "overall w/o adversarial" in text and "p95" in text
    assert images == 2
