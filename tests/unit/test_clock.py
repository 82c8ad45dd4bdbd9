"""The agent's clock (`memory.clock`): the machine's time unless a context set another."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from memory import clock


async def test_a_set_time_holds_in_its_context_and_the_tasks_it_starts() -> None:
    then = datetime(2024, 5, 3, 9, 0, tzinfo=UTC)
    with clock.at(then):
        assert clock.now() == then

        async def read() -> datetime:
            return clock.now()

        assert await asyncio.create_task(read()) == then
    assert abs(clock.now() - datetime.now(UTC)) < timedelta(seconds=5)


def test_a_naive_time_is_taken_as_utc() -> None:
    with clock.at(datetime(2024, 5, 3, 9, 0)) as fixed:
        assert fixed.tzinfo is not None and clock.now() == fixed
