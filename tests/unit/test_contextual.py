"""Contextual derivatives: speaker labels, third-person paraphrases, absolute dates."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.schema import Episode
from memory.write.contextual import relative_dates, speaker_label, third_person


def test_speaker_label() -> None:
    assert speaker_label("Caroline: I went to a support group.") == (
        "Caroline",
        "I went to a support group.",
    )
    assert speaker_label("Mary Ann Lee: hi") == ("Mary Ann Lee", "hi")
    assert speaker_label("I went there: it was great") == (None, "I went there: it was great")
    assert speaker_label("Note: buy milk") == (None, "Note: buy milk")
    assert speaker_label("https://example.com") == (None, "https://example.com")


def test_third_person() -> None:
    text = "I'm happy: my sister and I went, and you loved your gift, didn't you?"
    assert third_person(text, "Ana", "Ben") == (
        "Ana is happy: Ana's sister and Ana went, and Ben loved Ben's gift, didn't Ben?"
    )
    assert third_person("Did you go?", "Ana") == "Did you go?"  # no addressee: "you" stays


def test_relative_dates_get_their_day() -> None:
    at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    episode = Episode(
        uid="e",
        tenant="t",
        thread_id="s",
        content="x",
        user_text="x",
        agent_text="",
        created_at=at,
    )
    assert relative_dates("I went yesterday", episode) == "I went yesterday (7 May 2023)"
    assert relative_dates("last year was hard", episode) == "last year (2022) was hard"
    assert relative_dates("two weeks ago", episode).startswith("two weeks ago (the week of ")
    assert relative_dates("nothing here", episode) == "nothing here"
