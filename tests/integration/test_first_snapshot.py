"""The sponge exists from the first turn: the first processed episode writes version 1 of the
personality snapshot (the starting personality); later ones leave it to reflection."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cli.belief_commands import snapshot_text
from graph.bookkeeping import run_episode
from memory.beliefs.sponge import status
from memory.services import Services
from memory.write.episodes import remember
from tasks.respond import DEFAULT_SNAPSHOT

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


async def test_the_first_episode_writes_the_starting_snapshot(services: Services) -> None:
    assert await services.graph.snapshots.current("sam") is None
    for n, text in enumerate(["Hi, I'm Sam.", "I live in Leeds."]):
        done = await remember(
            services, tenant="sam", thread_id="t", user_text=text, at=T0 + timedelta(minutes=n)
        )
        await run_episode(services, "sam", done.uid)
    history = await services.graph.snapshots.history("sam")
    assert [(s.version, s.text) for s in history] == [(1, DEFAULT_SNAPSHOT)]
    assert history[0].created_at == T0
    assert await services.graph.snapshots.current("someone-else") is None
    shown = snapshot_text(history, False, await status(services.graph, "sam"))
    assert "0 reflections so far; 0 revised the snapshot" in shown
