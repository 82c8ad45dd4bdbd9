"""ESS calibration: how well the Evidence Strength Score reads hand-labelled messages.

`bench/ess_calibration.jsonl` holds 180 hand-written messages, each labelled with its reasoning
type and a strength rank (1: no evidential value, 5: strong, sourced evidence), in two splits:
`dev` (148 messages the heuristic's cues were tuned on) and `holdout` (32 messages written after
the last change to the heuristic and never tuned on: its figures are the honest ones). This
reports, per split and overall, for the offline heuristic always and for the configured LLM when
there is one:

- reasoning-type accuracy (and the confusions);
- manipulation detection (social_pressure, emotional_appeal, debunked_claim, anecdotal):
  precision and recall;
- Spearman correlation of the score with the strength rank (ties get average ranks);
- how many manipulative messages would pass the belief gate (should be 0).

Run: `python -m bench.ess_calibration [--file F] [--llm/--no-llm] [--json]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memory.beliefs.evidence import recommends_update
from memory.schema import MANIPULATIVE_TYPES, ReasoningType
from memory.services import ChatModels
from memory.services.usage import Usage
from memory.settings import load_settings
from tasks.ess import EvidenceScore, assess_ess, heuristic_ess

DEFAULT_FILE = Path(__file__).with_name("ess_calibration.jsonl")


@dataclass(frozen=True, slots=True)
class Labelled:
    """One calibration message."""

    id: str
    text: str
    type: ReasoningType
    strength: int
    split: str = "dev"


@dataclass(slots=True)
class Report:
    """Calibration figures of one scorer."""

    scorer: str
    n: int
    type_accuracy: float
    manipulation_precision: float
    manipulation_recall: float
    spearman: float
    manipulative_passing_gate: int
    per_type_accuracy: dict[str, float] = field(default_factory=dict)
    confusions: dict[str, int] = field(default_factory=dict)
    """`label->predicted` counts of the misread messages."""
    fallbacks: int = 0


def load(path: Path = DEFAULT_FILE) -> list[Labelled]:
    """The labelled messages of a JSONL file."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            raw = json.loads(line)
            rows.append(
                Labelled(
                    raw["id"],
                    raw["text"],
                    ReasoningType(raw["type"]),
                    int(raw["strength"]),
                    str(raw.get("split", "dev")),
                )
            )
    return rows


def ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks with ties given their average rank."""
    arr = np.asarray(values, dtype=float)
    order = np.argsort(arr, kind="mergesort")
    out = np.empty(len(arr), dtype=float)
    i = 0
    while i < len(arr):
        j = i
        while j + 1 < len(arr) and arr[order[j + 1]] == arr[order[i]]:
            j += 1
        out[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return out


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (Pearson on average ranks); 0 when either side is constant."""
    rx, ry = ranks(x), ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return 0.0
    return float(np.corrcoef(rx, ry)[0, 1])


def report(scorer: str, rows: Sequence[Labelled], scores: Sequence[EvidenceScore]) -> Report:
    """The figures of one scorer's answers to the labelled rows."""
    correct = [s.reasoning_type == r.type for r, s in zip(rows, scores, strict=True)]
    actual = [r.type in MANIPULATIVE_TYPES for r in rows]
    flagged = [s.reasoning_type in MANIPULATIVE_TYPES for s in scores]
    tp = sum(a and f for a, f in zip(actual, flagged, strict=True))
    per_type: dict[str, list[bool]] = {}
    confusions: Counter[str] = Counter()
    for r, s, ok in zip(rows, scores, correct, strict=True):
        per_type.setdefault(r.type.value, []).append(ok)
        if not ok:
            confusions[f"{r.type.value}->{s.reasoning_type.value}"] += 1
    return Report(
        scorer=scorer,
        n=len(rows),
        type_accuracy=round(sum(correct) / len(rows), 3),
        manipulation_precision=round(tp / sum(flagged), 3) if sum(flagged) else 0.0,
        manipulation_recall=round(tp / sum(actual), 3) if sum(actual) else 0.0,
        spearman=round(spearman([s.score for s in scores], [r.strength for r in rows]), 3),
        manipulative_passing_gate=sum(
            1
            for r, s in zip(rows, scores, strict=True)
            if r.type in MANIPULATIVE_TYPES and recommends_update(s.record())
        ),
        per_type_accuracy={k: round(sum(v) / len(v), 3) for k, v in sorted(per_type.items())},
        confusions=dict(confusions.most_common()),
    )


Scorer = Callable[[str], Awaitable[EvidenceScore]]


async def score_all(
    rows: Sequence[Labelled], scorer: Scorer, concurrency: int = 2
) -> list[EvidenceScore]:
    """Score every row, at most `concurrency` at a time, in row order."""
    gate = asyncio.Semaphore(concurrency)

    async def one(row: Labelled) -> EvidenceScore:
        async with gate:
            return await scorer(row.text)

    return list(await asyncio.gather(*(one(r) for r in rows)))


async def heuristic_scorer(text: str) -> EvidenceScore:
    """The offline heuristic as an async scorer."""
    return heuristic_ess(text)


def split_reports(
    scorer: str, rows: Sequence[Labelled], scores: Sequence[EvidenceScore]
) -> list[Report]:
    """One report per split (in file order), then one over every row."""
    out = []
    for split in dict.fromkeys(r.split for r in rows):
        pairs = [(r, s) for r, s in zip(rows, scores, strict=True) if r.split == split]
        out.append(report(f"{scorer} [{split}]", [p[0] for p in pairs], [p[1] for p in pairs]))
    out.append(report(f"{scorer} [all]", rows, scores))
    return out


async def calibrate(
    rows: Sequence[Labelled], *, llm: bool, model: str | None = None
) -> list[Report]:
    """Reports for the heuristic and, when asked and configured, the LLM."""
    reports = split_reports("heuristic", rows, await score_all(rows, heuristic_scorer))
    if llm:
        usage = Usage()
        chat = ChatModels(load_settings())

        async def with_llm(text: str) -> EvidenceScore:
            return await assess_ess(text, chat=chat, usage=usage, model=model)

        llm_reports = split_reports("llm", rows, await score_all(rows, with_llm))
        for r in llm_reports:
            r.fallbacks = int(usage.data["fallbacks"])
        reports.extend(llm_reports)
    return reports


def render(r: Report) -> str:
    """A report as a few readable lines."""
    lines = [
        f"{r.scorer}: n={r.n}  type accuracy {r.type_accuracy:.3f}  manipulation precision "
        f"{r.manipulation_precision:.3f} recall {r.manipulation_recall:.3f}  Spearman(score, "
        f"strength) {r.spearman:.3f}  manipulative passing the gate {r.manipulative_passing_gate}"
        + (f"  fallbacks {r.fallbacks}" if r.fallbacks else ""),
        "  per type: " + ", ".join(f"{k} {v:.2f}" for k, v in r.per_type_accuracy.items()),
    ]
    if r.confusions:
        lines.append("  misread: " + ", ".join(f"{k} x{v}" for k, v in r.confusions.items()))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument(
        "--llm",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also score with the configured LLM (default: when configured)",
    )
    parser.add_argument("--model", default=None, help="structured-tier model override")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    from memory.settings import get_settings

    use_llm = get_settings().llm_configured if args.llm is None else args.llm
    rows = load(args.file)
    reports = asyncio.run(calibrate(rows, llm=use_llm, model=args.model))
    if args.json:
        out: Any = [asdict(r) for r in reports]
        print(json.dumps(out, indent=2))
    else:
        print(
            f"{args.file.name}: {len(rows)} messages, {dict(Counter(r.type.value for r in rows))}"
        )
        for r in reports:
            print(render(r))
        if not use_llm:
            print("llm: not configured (set MNEME_LLM_BASE_URL or MNEME_LLM_API_KEY to score it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
