"""Durability: SIGKILL a process while bookkeeping is half done; on restart the sweep completes
every episode, with no duplicate episodes, vectors or graph links."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from graph.bookkeeping import run_episode
from memory.embeddings.embedders import Embedder
from memory.schema import EpisodeStatus
from memory.services import Services
from memory.write.contextual import contextualise
from tasks.extract import derivatives_from, heuristic_extraction
from tests.conftest import make_settings
from tests.e2e.conftest import BIN, ROOT, child_env, start

pytestmark = pytest.mark.slow

TURNS = 8
HANG_AFTER = 3

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path

    from graph.agent import builder
    from graph.bookkeeping import run_episode
    from langgraph.checkpoint.memory import InMemorySaver
    from memory.services import Services, set_services
    from memory.settings import get_settings
    from memory.stores.sqlite.topics import SqliteTopics

    marker = Path(sys.argv[1])
    real_link = SqliteTopics.link
    linked = 0

    async def link_then_hang(self, tenant, uid, slugs):
        global linked
        if linked >= {hang_after}:
            marker.write_text(uid)  # indexed, not yet linked: half done
            await asyncio.Event().wait()
        linked += 1
        return await real_link(self, tenant, uid, slugs)

    SqliteTopics.link = link_then_hang

    async def main():
        # The application's composition root: its services run the bookkeeping graph.
        set_services(await Services.open(get_settings(), pipeline=run_episode))
        app = builder.compile(checkpointer=InMemorySaver())
        for i in range({turns}):
            text = f"Note {{i}}: my locker number at the Vienna gym is {{100 + i}}."
            await app.ainvoke({{"messages": [{{"role": "user", "content": text}}]}},
                              {{"configurable": {{"thread_id": "t"}}}},
                              context={{"user_id": "dur"}})
        Path(str(marker) + ".turns").write_text("done")
        await asyncio.Event().wait()

    asyncio.run(main())
    """
).format(turns=TURNS, hang_after=HANG_AFTER)


def wait_for_half_done(proc: subprocess.Popen[bytes], marker: Path, log: Path) -> None:
    """Wait until the child ran every turn and hangs inside an episode's bookkeeping."""
    deadline = time.monotonic() + 240
    while not (marker.exists() and Path(f"{marker}.turns").exists()):
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"child did not reach the half-done point:\n{log.read_text()[-4000:]}")
        time.sleep(0.2)


async def test_sigkill_mid_bookkeeping_then_sweep(
    tmp_path: Path, embedder: Embedder, processes
) -> None:
    data = tmp_path / "data"
    marker = tmp_path / "half-done"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    log = tmp_path / "child.log"
    proc = start([str(BIN / "python"), str(script), str(marker)], child_env(data), ROOT, log)
    processes.append(proc)
    wait_for_half_done(proc, marker, log)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)

    settings = make_settings(tmp_path, qdrant_path=data / "vectors", data_dir=data)
    services = await Services.open(
        settings, embedder=embedder, pipeline=run_episode, sweep_interval_s=None
    )
    try:
        before = await services.graph.episodes.list_by_status("dur", list(EpisodeStatus))
        assert len(before) == TURNS
        counts = {s: sum(e.status == s for e in before) for s in EpisodeStatus}
        assert counts[EpisodeStatus.PROCESSED] == HANG_AFTER
        assert counts[EpisodeStatus.INDEXED] == 1  # killed between index and link
        assert counts[EpisodeStatus.PENDING] == TURNS - HANG_AFTER - 1  # queued, lost with it

        report = await services.bookkeeping.sweep_once()
        assert report.ok and len(report.done) == TURNS - HANG_AFTER

        after = await services.graph.episodes.list_by_status("dur", list(EpisodeStatus))
        assert len(after) == TURNS
        assert all(e.status == EpisodeStatus.PROCESSED for e in after)
        assert len({e.uid for e in after}) == TURNS
        # offline: each turn's contextual derivatives (splitter chunks + context) and their
        # deterministic questions, exactly once
        expected_d = expected_q = 0
        for e in after:
            base = derivatives_from(e, heuristic_extraction(e), fallback=True)
            derivs = (await contextualise(services.graph, e, base)).derivatives
            expected_d += len(derivs)
            expected_q += sum(len(d.questions) for d in derivs)
        assert await services.vectors.count("derivatives", "dur") == expected_d
        assert await services.vectors.count("prospective", "dur") == expected_q
        uids = await services.vectors.scroll_episode_uids("derivatives", "dur")
        assert uids == {e.uid for e in after}
        for episode in after:
            topics = await services.graph.topics.of_episode("dur", episode.uid)
            assert len(topics) == len(set(topics)) and topics
            entities = await services.graph.entities.of_episode("dur", episode.uid)
            assert len({e.name for e in entities}) == len(entities)

        again = await services.bookkeeping.sweep_once()
        assert again.done == []  # nothing left: a second sweep is a no-op
        assert await services.vectors.count("derivatives", "dur") == expected_d
    finally:
        await services.close()
