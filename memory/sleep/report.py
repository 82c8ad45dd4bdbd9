"""What a consolidation run did, per tenant: the report `mneme consolidate --json` prints.

Each stage of the sleep graph returns what it did under the report's field names; `Report.add`
folds those outputs in, in the order the stages ran: counts add up (forgetting, expiry and a
finished plan all archive or protect), notes follow one another, and the stage's `seconds` go to
`stages`, which so also names the stages that ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from memory.sleep.levels import Level


@dataclass(slots=True)
class Report:
    """What a run did, per tenant."""

    tenant: str
    level: Level
    now: datetime
    rescored: int = 0
    expired: int = 0
    kept: int = 0
    archived: int = 0
    forgotten: int = 0
    protected: int = 0
    context: int = 0
    """Turns kept because they are next to a protected one on its thread
    (`memory.sleep.protection`)."""
    pinned: int = 0
    facts_deleted: int = 0
    reveries: int = 0
    links_reweighed: int = 0
    links_pruned: int = 0
    beliefs_decayed: int = 0
    beliefs_reassessed: int = 0
    beliefs_resolved: int = 0
    beliefs_removed: int = 0
    goals: int = 0
    goals_changed: dict[str, int] = field(default_factory=dict)
    """Goal status changes written at deep sleep, by the new status."""
    apperception: float | None = None
    resumed: int = 0
    summaries: int = 0
    """Session summaries written (finished sessions, `memory.write.sessions`) or rebuilt (forgetting)."""
    notes: list[str] = field(default_factory=list)
    reflection: dict[str, Any] | None = None
    """What deep sleep's reflection did (ran, reason, revisions, snapshot kept); None below deep."""
    fidelity: dict[str, Any] | None = None
    """What deep sleep's fidelity check found (`memory.sleep.fidelity`); None below deep."""
    stages: dict[str, float] = field(default_factory=dict)
    """The stages that ran, in order, with their seconds."""

    def add(self, stage: str, output: Mapping[str, Any]) -> None:
        """Fold in what `stage` did; `ValueError` for a key that is no field of the report."""
        for key, value in output.items():
            if key == "seconds":
                self.stages[stage] = round(float(value), 3)
            elif key == "notes":
                self.notes += [str(note) for note in value]
            elif key == "goals_changed":
                for status, n in value.items():
                    self.goals_changed[status] = self.goals_changed.get(status, 0) + int(n)
            elif key in ("apperception", "reflection", "fidelity"):
                setattr(self, key, value)
            elif key in _COUNTS:
                setattr(self, key, getattr(self, key) + int(value))
            else:
                raise ValueError(f"sleep stage {stage!r} reported {key!r}, not a report field")

    def summary(self) -> dict[str, object]:
        """The report as a dict (the CLI's JSON and the graph's output)."""
        out: dict[str, object] = {
            "tenant": self.tenant,
            "level": self.level.value,
            "now": self.now.isoformat(),
        }
        for f in fields(self):
            if f.name not in out:
                value = getattr(self, f.name)
                out[f.name] = value.copy() if isinstance(value, dict | list) else value
        return out


_COUNTS = frozenset(f.name for f in fields(Report) if f.type == "int")
"""The report's counts (annotations are strings under `from __future__ import annotations`)."""
