"""Time expressions in a question, resolved against the question's date into time windows.

"last week", "in May 2023", "yesterday", "3 days ago", "on 7 May", "this summer", "in 2022":
each becomes a `TimeWindow` [start, end) in UTC that retrieval uses as a soft boost (or a
filter). Expressions anchored on another event ("two days before the wedding") cannot be resolved
here; they come back as `anchored=True` so the caller can expand around what it finds instead.

Pure computation on English text: no I/O, no model, deterministic for a given `now`. Unknown
phrasing yields no window, never an exception.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

__all__ = ["TimeWindow", "Resolution", "parse_time", "format_day"]

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3,
    "several": 3,
}  # fmt: skip
SEASONS = {
    "spring": (3, 6),
    "summer": (6, 9),
    "autumn": (9, 12),
    "fall": (9, 12),
    "winter": (12, 3),
}

_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_NUM = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple of|few|several)"
_UNIT = r"(day|week|month|year|weekend)s?"
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"

_ANCHORED = re.compile(
    rf"\b{_NUM}?\s*{_UNIT}?\s*(before|after|prior to|following)\s+(?!{_MONTH}\b|\d)(the|her|his|my|their|our|a|an)\b",
    re.I,
)


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A half-open UTC interval [start, end) that a question points at."""

    start: datetime
    end: datetime
    expression: str
    """The words it was read from."""
    relative: bool = False
    """Read from words placed against `now` ("last week", "3 days ago", "this summer"), not
    from the calendar ("on 7 May", "in the spring of 2019", "in 2022")."""

    def contains(self, when: datetime) -> bool:
        """True if `when` (aware, any zone) falls in the window."""
        moment = when if when.tzinfo else when.replace(tzinfo=UTC)
        return self.start <= moment < self.end


@dataclass(frozen=True, slots=True)
class Resolution:
    """What the time words of a question resolve to."""

    windows: tuple[TimeWindow, ...] = ()
    anchored: bool = False
    """The question places something relative to another event ("before the wedding")."""
    asks_when: bool = False
    """The question asks for a time ("when", "what date", "how long ago")."""

    @property
    def window(self) -> TimeWindow | None:
        """The union of the windows (earliest start, latest end), or None."""
        if not self.windows:
            return None
        start = min(w.start for w in self.windows)
        end = max(w.end for w in self.windows)
        words = " / ".join(w.expression for w in self.windows)
        return TimeWindow(start, end, words)


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _add_months(year: int, month: int, n: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + n
    return index // 12, index % 12 + 1


def _month_window(year: int, month: int, expression: str) -> TimeWindow:
    ny, nm = _add_months(year, month, 1)
    return TimeWindow(_month_start(year, month), _month_start(ny, nm), expression)


def _count(word: str | None) -> int:
    if not word:
        return 1
    word = word.lower().strip()
    return int(word) if word.isdigit() else NUMBER_WORDS.get(word, 1)


def _year_of_month(month: int, now: datetime, *, past: bool = True) -> int:
    """The year of the most recent (or coming) `month` seen from `now`."""
    if past:
        return now.year if month <= now.month else now.year - 1
    return now.year if month >= now.month else now.year + 1


def format_day(moment: datetime) -> str:
    """A date as words, e.g. `7 May 2023`, the way people write it in questions."""
    return f"{moment.day} {calendar.month_name[moment.month]} {moment.year}"


def parse_time(text: str, now: datetime) -> Resolution:
    """Resolve the time expressions of `text` against `now` (aware; naive means UTC)."""
    now = (now if now.tzinfo else now.replace(tzinfo=UTC)).astimezone(UTC)
    low = text.lower()
    found = _Found()
    # Most specific first: a span already read is not read again by a vaguer expression.
    _read_dates(low, now, found)
    _read_months_and_years(low, now, found)
    _read_relative(low, now, found)
    asks_when = bool(
        re.search(r"\b(when|what (?:date|day|time|year|month)|how long ago|since when)\b", low)
    )
    anchored = bool(_ANCHORED.search(low))
    windows = sorted(found.windows, key=lambda w: (w.start, w.end))
    return Resolution(windows=tuple(windows), anchored=anchored, asks_when=asks_when)


class _Found:
    """The windows read so far and the spans of the text they were read from."""

    def __init__(self) -> None:
        self.windows: list[TimeWindow] = []
        self.spans: list[tuple[int, int]] = []
        self.relative = False
        """Whether the expressions being read are placed against `now`."""

    def add(self, match: re.Match[str], window: TimeWindow | None) -> None:
        """Keep `window` unless a more specific expression already covers `match`."""
        if window is None:
            return
        if any(s <= match.start() < e or s < match.end() <= e for s, e in self.spans):
            return  # covered by a more specific expression already read
        self.spans.append((match.start(), match.end()))
        self.windows.append(replace(window, relative=self.relative))


def _read_dates(low: str, now: datetime, found: _Found) -> None:
    """Days of the calendar: "on 7 May 2023", "May 7, 2023", "7 May", "May 7", ISO dates."""
    for m in re.finditer(
        rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b,?\s*(\d{{4}})?", low
    ):
        month = MONTHS[m.group(2)[:3]]
        year = int(m.group(3)) if m.group(3) else _year_of_month(month, now, past=_past(low, m))
        found.add(m, _day_window(year, month, int(m.group(1)), m.group(0)))
    for m in re.finditer(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s*(\d{{4}}))?", low):
        month = MONTHS[m.group(1)[:3]]
        year = int(m.group(3)) if m.group(3) else _year_of_month(month, now, past=_past(low, m))
        found.add(m, _day_window(year, month, int(m.group(2)), m.group(0)))
    for m in re.finditer(r"\b(\d{4})-(\d{2})-(\d{2})\b", low):
        found.add(m, _day_window(int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(0)))


def _read_months_and_years(low: str, now: datetime, found: _Found) -> None:
    """Months and years: "in May 2023", "May 2023", "in May", "last May", "in 2022"."""
    for m in re.finditer(rf"\b(?:(last|this|next)\s+)?{_MONTH}\b(?:\s+(?:of\s+)?(\d{{4}}))?", low):
        word = m.group(2)
        if word == "may" and not m.group(1) and not m.group(3):
            before = low[max(0, m.start() - 4) : m.start()]
            if not before.endswith(("in ", "of ")):
                continue  # the verb "may"
        month = MONTHS[word[:3]]
        found.relative = m.group(1) is not None  # "last May" is placed against now, "in May" not
        found.add(m, _month_window(_month_year(m, month, now, _past(low, m)), month, m.group(0)))
    found.relative = False
    for m in re.finditer(r"\b(?:in|during|of|since|by|around|circa)\s+((?:19|20)\d{2})\b", low):
        year = int(m.group(1))
        found.add(
            m,
            TimeWindow(
                datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), m.group(0)
            ),
        )


def _past(low: str, m: re.Match[str]) -> bool:
    """Whether a month or day without a year is the last such one: yes, unless it is a deadline
    ("by October", "by 7 May"), which is the coming one."""
    return not low[max(0, m.start() - 3) : m.start()].endswith("by ")


def _month_year(m: re.Match[str], month: int, now: datetime, past: bool = True) -> int:
    """The year of a month expression: written, else this year's ("this May"), the next
    ("next May", a deadline "by May") or the last such month."""
    if m.group(3):
        return int(m.group(3))
    if m.group(1) == "this":
        return now.year
    if m.group(1) == "next":
        return _year_of_month(month, now, past=False)
    if m.group(1) == "last" and month >= now.month:
        return now.year - 1
    return _year_of_month(month, now, past=past)


def _read_relative(low: str, now: datetime, found: _Found) -> None:
    """Expressions relative to `now`: "3 days ago", "yesterday", "last week", "last Friday",
    "this summer", "recently"."""
    today = _day(now)
    found.relative = True
    for m in re.finditer(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", low):
        found.add(m, _ago(_count(m.group(1)), m.group(2), today, m.group(0)))
    for m in re.finditer(
        r"\b(the day before yesterday|yesterday|today|tonight|this morning|this evening)\b", low
    ):
        back = {"the day before yesterday": 2, "yesterday": 1}.get(m.group(1), 0)
        start = today - timedelta(days=back)
        found.add(m, TimeWindow(start, start + timedelta(days=1), m.group(0)))
    for m in re.finditer(
        r"\b(last|past|previous|this|next|coming)\s+(week|month|year|weekend)\b", low
    ):
        found.add(m, _relative_period(m.group(1), m.group(2), now, m.group(0)))
    for m in re.finditer(rf"\b(last|this|next|on)\s+{_WEEKDAY}\b", low):
        found.add(m, _weekday(m.group(1), WEEKDAYS[m.group(2)], today, m.group(0)))
    for m in re.finditer(
        r"\b(?:(last|this|next)\s+|in\s+the\s+|during\s+the\s+)(spring|summer|autumn|fall|winter)\b(?:\s+of\s+(\d{4}))?",
        low,
    ):
        year = int(m.group(3)) if m.group(3) else None
        found.relative = m.group(1) is not None  # "last summer"; "in the summer": the calendar's
        found.add(m, _season(m.group(1), m.group(2), year, now, m.group(0)))
    found.relative = True
    # "recently", "lately": the last month
    for m in re.finditer(r"\b(recently|lately|these days)\b", low):
        found.add(m, TimeWindow(today - timedelta(days=31), today + timedelta(days=1), m.group(0)))


def _day_window(year: int, month: int, day: int, expression: str) -> TimeWindow | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
    return TimeWindow(start, start + timedelta(days=1), expression)


def _ago(n: int, unit: str, today: datetime, expression: str) -> TimeWindow:
    # "3 weeks ago" is fuzzy: a window of one unit centred on the point in time.
    if unit == "day":
        start = today - timedelta(days=n)
        return TimeWindow(start, start + timedelta(days=1), expression)
    if unit in ("week", "weekend"):
        centre = today - timedelta(weeks=n)
        return TimeWindow(centre - timedelta(days=4), centre + timedelta(days=4), expression)
    if unit == "month":
        y, mth = _add_months(today.year, today.month, -n)
        return _month_window(y, mth, expression)
    year = today.year - n
    return TimeWindow(
        datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), expression
    )


def _relative_period(which: str, unit: str, now: datetime, expression: str) -> TimeWindow:
    today = _day(now)
    shift = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}[which]
    if unit == "week":
        if which == "past":  # "the past week": the last seven days
            return TimeWindow(today - timedelta(days=7), today + timedelta(days=1), expression)
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=shift)
        return TimeWindow(monday, monday + timedelta(days=7), expression)
    if unit == "weekend":
        saturday = today + timedelta(days=5 - today.weekday())  # this week's
        if shift < 0:
            saturday -= timedelta(days=7)
        elif shift > 0:
            saturday += timedelta(days=7)
        return TimeWindow(saturday, saturday + timedelta(days=2), expression)
    if unit == "month":
        if which == "past":
            return TimeWindow(today - timedelta(days=31), today + timedelta(days=1), expression)
        y, mth = _add_months(now.year, now.month, shift)
        return _month_window(y, mth, expression)
    year = now.year + shift
    if which == "past":
        return TimeWindow(today - timedelta(days=366), today + timedelta(days=1), expression)
    return TimeWindow(
        datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), expression
    )


def _weekday(which: str, weekday: int, today: datetime, expression: str) -> TimeWindow:
    back = (today.weekday() - weekday) % 7
    if which == "last":
        back = back or 7
        start = today - timedelta(days=back)
    elif which == "next":
        start = today + timedelta(days=(weekday - today.weekday()) % 7 or 7)
    elif which == "this":
        start = today + timedelta(days=weekday - today.weekday())
    else:  # "on Friday": the most recent one, today included
        start = today - timedelta(days=back)
    return TimeWindow(start, start + timedelta(days=1), expression)


def _season(
    which: str | None, season: str, year: int | None, now: datetime, expression: str
) -> TimeWindow:
    first, last = SEASONS[season]
    if year is None:
        year = now.year
        if which == "last" or (which is None and first > now.month and season != "winter"):
            year -= 1
        elif which == "next":
            year += 1
    start = datetime(year, first, 1, tzinfo=UTC)
    end_year = year + 1 if last <= first else year
    return TimeWindow(start, datetime(end_year, last, 1, tzinfo=UTC), expression)
