"""Temporal context: eight parts of the day, human gaps, conversations, the user's timezone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from tasks.temporal import days_ago, describe, humanize_gap, part_of_day, sessions

NOW = datetime(2026, 3, 10, 18, 30, tzinfo=UTC)  # a Tuesday


@pytest.mark.parametrize(
    ("hour", "name"),
    [
        (1, "late night"),
        (4, "early morning"),
        (7, "morning"),
        (10, "late morning"),
        (13, "early afternoon"),
        (16, "late afternoon"),
        (19, "evening"),
        (22, "night"),
    ],
)
def test_eight_parts_of_day(hour: int, name: str) -> None:
    assert part_of_day(datetime(2026, 1, 1, hour)) == name


def test_humanize_gap() -> None:
    assert humanize_gap(timedelta(seconds=20)) == "less than a minute"
    assert humanize_gap(timedelta(minutes=3)) == "3 minutes"
    assert humanize_gap(timedelta(hours=1)) == "1 hour"
    assert humanize_gap(timedelta(days=4)) == "4 days"
    assert humanize_gap(timedelta(days=14)) == "2 weeks"
    assert humanize_gap(timedelta(days=400)) == "1 year"


def test_sessions_split_on_silence() -> None:
    t = NOW - timedelta(days=1)
    times = [t, t + timedelta(minutes=10), t + timedelta(hours=5)]
    assert sessions(times) == [
        (t, t + timedelta(minutes=10)),
        (t + timedelta(hours=5), t + timedelta(hours=5)),
    ]


def test_gap_since_last_conversation_and_the_one_before() -> None:
    earlier = [NOW - timedelta(days=18), NOW - timedelta(days=4)]
    info = describe(NOW, ZoneInfo("UTC"), earlier)
    assert info["since_last"] == "4 days" and info["before_that"] == "2 weeks"
    assert "It's been 4 days since our previous conversation; before that, 2 weeks" in info["text"]
    assert info["part_of_day"] == "evening" and info["weekday"] == "Tuesday"


def test_current_conversation_is_not_a_gap() -> None:
    info = describe(NOW, ZoneInfo("UTC"), [NOW - timedelta(days=2), NOW - timedelta(minutes=5)])
    assert info["in_conversation"] and info["since_last"] == "2 days"
    first = describe(NOW, ZoneInfo("UTC"), [])
    assert "first conversation" in first["text"]


def test_timezone_changes_the_part_of_day() -> None:
    tokyo = describe(NOW, ZoneInfo("Asia/Tokyo"), [])
    assert tokyo["part_of_day"] == "early morning" and tokyo["weekday"] == "Wednesday"


def test_days_ago() -> None:
    assert days_ago(NOW, NOW) == "today"
    assert days_ago(NOW, NOW - timedelta(days=1)) == "yesterday"
    assert days_ago(NOW, NOW - timedelta(days=3)) == "3 days ago"
