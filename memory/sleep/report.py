"""What a consolidation run did, per tenant: the report `mneme consolidate --json` prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

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

    def summary(self) -> dict[str, object]:
        """The counts as a dict (the CLI's JSON and the graph's output)."""
        return {
            "tenant": self.tenant,
            "level": self.level.value,
            "now": self.now.isoformat(),
            "rescored": self.rescored,
            "expired": self.expired,
            "kept": self.kept,
            "archived": self.archived,
            "forgotten": self.forgotten,
            "protected": self.protected,
            "pinned": self.pinned,
            "facts_deleted": self.facts_deleted,
            "reveries": self.reveries,
            "links_reweighed": self.links_reweighed,
            "links_pruned": self.links_pruned,
            "beliefs_decayed": self.beliefs_decayed,
            "beliefs_reassessed": self.beliefs_reassessed,
            "beliefs_resolved": self.beliefs_resolved,
            "beliefs_removed": self.beliefs_removed,
            "goals": self.goals,
            "goals_changed": dict(self.goals_changed),
            "apperception": self.apperception,
            "resumed": self.resumed,
            "summaries": self.summaries,
            "notes": list(self.notes),
        }
