"""The sleep schedule's decision: which level a tenant is due for, from its last runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.settings import load_settings
from memory.sleep.levels import Level
from memory.sleep.schedule import Intervals, due_level

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
EVERY = Intervals(micro=timedelta(hours=1), daily=timedelta(days=1), deep=timedelta(days=7))


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).isoformat()


def test_a_level_never_run_is_due_deepest_first() -> None:
    assert due_level({}, NOW, EVERY) is Level.DEEP
    assert due_level({"deep": ago(days=1)}, NOW, EVERY) is Level.DAILY
    assert due_level({"deep": ago(days=1), "daily": ago(hours=2)}, NOW, EVERY) is Level.MICRO


def test_a_deeper_run_counts_as_the_shallower_ones() -> None:
    assert due_level({"deep": ago(minutes=10)}, NOW, EVERY) is None
    runs = {"deep": ago(days=3), "daily": ago(hours=3), "micro": ago(minutes=5)}
    assert due_level(runs, NOW, EVERY) is None
    runs = {"deep": ago(days=3), "daily": ago(hours=3), "micro": ago(hours=2)}
    assert due_level(runs, NOW, EVERY) is Level.MICRO
    runs = {"deep": ago(days=8), "daily": ago(hours=3), "micro": ago(minutes=1)}
    assert due_level(runs, NOW, EVERY) is Level.DEEP


def test_intervals_are_inclusive_and_future_runs_defer() -> None:
    assert due_level({"deep": ago(days=7)}, NOW, EVERY) is Level.DEEP
    simulated = (NOW + timedelta(days=30)).isoformat()  # `mneme consolidate --now` ahead
    assert due_level({"deep": simulated}, NOW, EVERY) is None


def test_an_unreadable_time_counts_as_never_run() -> None:
    assert due_level({"deep": "yesterday", "daily": ago(hours=1)}, NOW, EVERY) is Level.DEEP


def test_intervals_come_from_the_settings() -> None:
    settings = load_settings(sleep_micro_s=60, sleep_daily_s=600, sleep_deep_s=6000)
    assert Intervals.from_settings(settings) == Intervals(
        timedelta(minutes=1), timedelta(minutes=10), timedelta(minutes=100)
    )
    assert load_settings().sleep_schedule is True  # the server sleeps unless told not to
    assert load_settings(sleep_schedule=False).sleep_schedule is False
