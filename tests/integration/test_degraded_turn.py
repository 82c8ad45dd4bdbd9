"""Degraded, not failed (issue 29, item 8): with a store that cannot be opened, a turn is kept in
the outbox and the user still gets a reply, told plainly that memory is degraded, as with a
locked SQLite file. Each case is a real condition, the process's services opened from the
environment as a server's are (nothing installed, no fake store).

The cases:
- the graph store down: Neo4j at an address where nothing answers (the Neo4j backend);
- the SQLite file's directory read-only (a read-only bind mount when running as root, `chmod`
  else): the embedded default's graph store cannot be opened; with the whole data directory
  read-only the outbox cannot keep the turn either, and the reply says it was not saved;
- the embedded vector index held by another holder (Qdrant Edge's directory lock).

Before, each run failed at `route` (`route failed (StoreUnavailable)`, `(StoreLocked)`), with no
reply. Once the store is back (the vector index released), the next turn is filed and the
outbox drains the degraded one into memory, where search finds it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graph.agent import builder
from memory.services import Services, close_services, get_services, set_services
from memory.settings import get_settings
from memory.stores.base import StoreUnavailable
from memory.write.filing import drain_outbox
from memory.write.outbox import write_path
from serve.api import Memory

DEGRADED = "My long-term memory store is unavailable right now"


@pytest.fixture
async def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Path]:
    """The process settings from the environment, on a private data directory, offline."""
    for name in (
        "NEO4J_URI",
        "MNEME_GRAPH_BACKEND",
        "QDRANT_URL",
        "QDRANT_PATH",
        "MNEME_SQLITE_PATH",
        "MNEME_LLM_BASE_URL",
        "MNEME_LLM_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    data = tmp_path / "data"
    monkeypatch.setenv("MNEME_DATA_DIR", str(data))
    monkeypatch.setenv("MNEME_STORE_RETRY_S", "0")  # the store is tried again at once
    set_services(None)
    get_settings.cache_clear()
    try:
        yield data
    finally:
        await close_services()
        get_settings.cache_clear()


async def one_turn(text: str, thread: str = "t") -> dict[str, Any]:
    app = builder.compile(checkpointer=InMemorySaver())
    return await app.ainvoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": "alice"},
    )


def kept_but_degraded(out: dict[str, Any], data: Path) -> None:
    reply = out["messages"][-1].content
    assert DEGRADED in reply and "saved on this machine" in reply, reply
    assert out["episode"]["outcome"] == "outbox" and out["episode"]["reply_stored"] == "outbox"
    outbox, _ = write_path(get_settings().resolved_outbox_dir)
    assert outbox.state().depth == 2  # the user's side, then the whole turn with the reply


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_neo4j_down_the_turn_is_kept_and_answered(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEME_GRAPH_BACKEND", "neo4j")
    monkeypatch.setenv("NEO4J_URI", f"bolt://127.0.0.1:{free_port()}")  # nothing answers there
    get_settings.cache_clear()
    out = await one_turn("My cat is called Miso. What is my cat called?")
    kept_but_degraded(out, data)
    again = await one_turn("I also have a dog, Rex.", thread="t2")  # and the next one
    assert DEGRADED in again["messages"][-1].content


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """`path` read-only for this process: a read-only bind mount as root (which ignores file
    modes), its mode else."""
    if os.geteuid() != 0:
        path.chmod(0o555)
        try:
            yield
        finally:
            path.chmod(0o755)
        return
    if shutil.which("mount") is None:
        pytest.fail("running as root without `mount`: cannot make a directory read-only")
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], check=True)
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


async def test_a_read_only_graph_directory_the_turn_is_kept_and_answered(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph_dir = data.parent / "graph"  # the SQLite file's directory (MNEME_SQLITE_PATH)
    graph_dir.mkdir()
    monkeypatch.setenv("MNEME_SQLITE_PATH", str(graph_dir / "graph.sqlite3"))
    get_settings.cache_clear()
    await Memory(await get_services()).add("alice", "I live in Lyon.")  # a store with data
    await close_services()
    with read_only(graph_dir):
        with pytest.raises(StoreUnavailable, match="cannot open the SQLite graph file"):
            await get_services()  # the real condition: the store cannot be opened
        out = await one_turn("My cat is called Miso. What is my cat called?")
        kept_but_degraded(out, data)
    services = await get_services()  # writable again: the turn is filed
    report = await drain_outbox(services, submit=False)
    assert report.error is None and report.applied == 2
    episodes = await services.graph.episodes.get_many(
        "alice", await services.graph.episodes.list_uids("alice")
    )
    (cat,) = [e for e in episodes if "Miso" in e.user_text]
    assert DEGRADED in cat.agent_text


async def test_a_read_only_data_directory_the_reply_says_not_saved(data: Path) -> None:
    await Memory(await get_services()).add("alice", "I live in Lyon.")
    await close_services()
    get_settings().resolved_outbox_dir.mkdir(parents=True)
    with read_only(data):  # the outbox too: nothing can keep the turn
        out = await one_turn("My cat is called Miso. What is my cat called?")
    reply = out["messages"][-1].content
    assert out["episode"]["outcome"] == "not_remembered"
    assert "I could not save this message, so I will not remember it." in reply, reply
    assert "I'll remember" not in reply


async def test_the_vector_index_held_elsewhere_the_turn_is_kept_then_filed(data: Path) -> None:
    holder = await Services.open(get_settings(), sweep_interval_s=None)  # holds vectors/
    try:
        with pytest.raises(StoreUnavailable, match="already open in another process"):
            await get_services()
        out = await one_turn("My cat is called Miso. What is my cat called?")
        kept_but_degraded(out, data)
    finally:
        await holder.close()
    back = await one_turn("I also have a dog called Rex.", thread="t2")  # the index is free
    assert back["episode"]["outcome"] == "stored", back["episode"]
    assert DEGRADED not in back["messages"][-1].content
    services = await get_services()
    await drain_outbox(services, submit=False)
    texts = {
        e.user_text
        for e in await services.graph.episodes.get_many(
            "alice", await services.graph.episodes.list_uids("alice")
        )
    }
    assert texts == {
        "My cat is called Miso. What is my cat called?",
        "I also have a dog called Rex.",
    }
