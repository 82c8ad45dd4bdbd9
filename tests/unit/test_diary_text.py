"""The offline diary entry reads as written by someone: a day is "mostly about" only what came up
more than once (as the user wrote it, names capitalised), facts are whole sentences (one full
stop each), conversations and exchanges are counted apart, and what stayed is something told
rather than a question."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from memory.schema import Episode, NewEpisode
from memory.sleep.diary import compose
from memory.stores.graph.episodes import episode_record

T0 = datetime(2026, 4, 6, 9, 0, tzinfo=UTC)


def turn(i: int, user: str, thread: str = "t1") -> Episode:
    return episode_record(
        NewEpisode(
            uid=f"e{i}",
            tenant="ada",
            thread_id=thread,
            user_text=user,
            agent_text="Noted.",
            created_at=T0 + timedelta(minutes=i),
        )
    )


def test_an_entry_reads_as_written() -> None:
    turns = [
        turn(1, "My favourite place in April is Brest, especially the harbour."),
        turn(2, "We walked along the harbour in Brest again."),
        turn(3, "What time is it?", thread="t2"),
    ]
    terms = {
        "e1": ["april", "especially", "favourite", "brest", "harbour"],
        "e2": ["brest", "harbour", "walked"],
        "e3": ["time"],
    }
    learned = ["The user likes Brest..", "The user walked along the harbour"]
    text = compose(date(2026, 4, 6), turns, terms, [], learned, [])
    assert text == (
        "Monday 06 April 2026. We talked twice (3 exchanges). It was mostly about Brest and "
        'harbour. What stayed with me: "My favourite place in April is Brest, especially the '
        'harbour." I learned two things: The user likes Brest. The user walked along the harbour.'
    )


def test_a_single_turn_day() -> None:
    text = compose(
        date(2026, 4, 6), [turn(1, "I moved to Utrecht.")], {"e1": ["utrecht"]}, [], [], []
    )
    assert (
        text == 'Monday 06 April 2026. We talked once. What stayed with me: "I moved to Utrecht."'
    )
