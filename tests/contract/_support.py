"""Helpers shared by the contract tests: a fixed clock and an episode builder."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.schema import NewEpisode

T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
"""A fixed instant with microseconds, so that round trips are checked to the microsecond."""


def at(minutes: float) -> datetime:
    """T0 shifted by some minutes."""
    return T0 + timedelta(minutes=minutes)


def new_episode(
    tenant: str,
    text: str,
    minutes: float = 0,
    *,
    uid: str | None = None,
    agent_text: str = "noted",
    thread_id: str = "thread-1",
) -> NewEpisode:
    """A NewEpisode at T0 + minutes, with an explicit uid when given."""
    extra = {"uid": uid} if uid is not None else {}
    return NewEpisode(
        tenant=tenant,
        thread_id=thread_id,
        user_text=text,
        agent_text=agent_text,
        created_at=at(minutes),
        **extra,
    )
