"""When a tenant is due for which level of sleep: the server schedule's decision, pure.

A deeper level includes the shallower ones (deep runs daily's expiry and micro's rescoring),
so a deep run counts as the last daily and micro run too, and a daily run as the last micro.
A level never run (or whose time is unreadable) is due. The times are those every run of the
sleep graph records per level (`memory.sleep.levels.last_runs`), so a run by `mneme consolidate`
or Studio counts like a scheduled one; a simulated `--now` in the future defers the schedule until
real time passes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memory.schema import as_utc
from memory.sleep.levels import Level

if TYPE_CHECKING:
    from memory.settings import Settings


@dataclass(frozen=True, slots=True)
class Intervals:
    """How long after its last run each level is due again."""

    micro: timedelta
    daily: timedelta
    deep: timedelta

    @classmethod
    def from_settings(cls, settings: Settings) -> Intervals:
        """The intervals of `MNEME_SLEEP_MICRO_S`, `_DAILY_S` and `_DEEP_S`."""
        return cls(
            micro=timedelta(seconds=settings.sleep_micro_s),
            daily=timedelta(seconds=settings.sleep_daily_s),
            deep=timedelta(seconds=settings.sleep_deep_s),
        )


def _when(value: str | None) -> datetime | None:
    try:
        return as_utc(datetime.fromisoformat(value)) if value else None
    except ValueError:
        return None


def due_level(runs: Mapping[str, str], now: datetime, intervals: Intervals) -> Level | None:
    """The deepest level due at `now`, given the last run of each level (ISO times), or None."""
    now = as_utc(now)
    last: datetime | None = None
    for level, every in (
        (Level.DEEP, intervals.deep),
        (Level.DAILY, intervals.daily),
        (Level.MICRO, intervals.micro),
    ):
        ran = _when(runs.get(level.value))
        last = ran if last is None or (ran is not None and ran > last) else last
        if last is None or now - last >= every:
            return level
    return None
