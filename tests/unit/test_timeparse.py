"""Time expressions resolve against the question's date into the windows a person means."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memory.text.timeparse import format_day, parse_time

NOW = datetime(2023, 7, 17, 14, 0, tzinfo=UTC)  # a Monday


def days(text: str, now: datetime = NOW) -> list[tuple[date, date]]:
    return [(w.start.date(), w.end.date()) for w in parse_time(text, now).windows]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What did she do yesterday?", [(date(2023, 7, 16), date(2023, 7, 17))]),
        ("anything today", [(date(2023, 7, 17), date(2023, 7, 18))]),
        ("What happened 3 days ago", [(date(2023, 7, 14), date(2023, 7, 15))]),
        ("last week", [(date(2023, 7, 10), date(2023, 7, 17))]),
        ("this week", [(date(2023, 7, 17), date(2023, 7, 24))]),
        ("last weekend", [(date(2023, 7, 15), date(2023, 7, 17))]),
        ("next month", [(date(2023, 8, 1), date(2023, 9, 1))]),
        ("last month", [(date(2023, 6, 1), date(2023, 7, 1))]),
        ("in May 2023", [(date(2023, 5, 1), date(2023, 6, 1))]),
        ("in June", [(date(2023, 6, 1), date(2023, 7, 1))]),
        ("in December", [(date(2022, 12, 1), date(2023, 1, 1))]),
        ("on 7 May 2023", [(date(2023, 5, 7), date(2023, 5, 8))]),
        ("on May 7th, 2023", [(date(2023, 5, 7), date(2023, 5, 8))]),
        ("on 2023-05-07", [(date(2023, 5, 7), date(2023, 5, 8))]),
        ("in 2022", [(date(2022, 1, 1), date(2023, 1, 1))]),
        ("last Friday", [(date(2023, 7, 14), date(2023, 7, 15))]),
        ("this summer", [(date(2023, 6, 1), date(2023, 9, 1))]),
        ("two years ago", [(date(2021, 1, 1), date(2022, 1, 1))]),
        # A deadline is the coming one; "this December" is this year's, not last year's.
        ("run a marathon by October", [(date(2023, 10, 1), date(2023, 11, 1))]),
        ("done by 3 March", [(date(2024, 3, 3), date(2024, 3, 4))]),
        ("this December", [(date(2023, 12, 1), date(2024, 1, 1))]),
        ("I moved in October", [(date(2022, 10, 1), date(2022, 11, 1))]),
    ],
)
def test_expressions_resolve_to_windows(text: str, expected: list[tuple[date, date]]) -> None:
    assert days(text) == expected


def test_the_verb_may_is_not_a_month() -> None:
    assert days("What may happen if she moves?") == []
    assert days("She may come in May") == [(date(2023, 5, 1), date(2023, 6, 1))]


def test_no_time_words_no_window() -> None:
    resolution = parse_time("What is Caroline's favourite book?", NOW)
    assert resolution.windows == ()
    assert resolution.window is None
    assert not resolution.asks_when


def test_when_questions_and_anchored_expressions_are_flagged() -> None:
    assert parse_time("When did Melanie go camping?", NOW).asks_when
    anchored = parse_time("What did she do two days before the wedding?", NOW)
    assert anchored.anchored
    assert anchored.windows == ()


def test_union_window_spans_every_expression() -> None:
    window = parse_time("between May 2023 and last week", NOW).window
    assert window is not None
    assert window.start.date() == date(2023, 5, 1)
    assert window.end.date() == date(2023, 7, 17)
    assert window.contains(datetime(2023, 6, 1, 12, tzinfo=UTC))
    assert not window.contains(datetime(2023, 7, 20, tzinfo=UTC))


def test_naive_now_is_utc_and_format_day() -> None:
    assert days("yesterday", datetime(2023, 1, 1, 0, 30)) == [
        (date(2022, 12, 31), date(2023, 1, 1))
    ]
    assert format_day(datetime(2023, 5, 7, tzinfo=UTC)) == "7 May 2023"


def test_an_impossible_day_degrades_to_its_month() -> None:
    assert days("on 31 February 2023") == [(date(2023, 2, 1), date(2023, 3, 1))]
