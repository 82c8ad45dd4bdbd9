"""The process the fault bench kills: real agent turns on the embedded stores, with faults.

`python -m bench.fault_child DATA_DIR ACKS FAULTS FIRST LAST` runs turns FIRST..LAST-1 of one
thread through the real agent graph (offline), each message carrying its own id, and appends
`i <uid> <outcome>` to ACKS after the reply came back (an acknowledged turn). While the file
`FAULTS/graph` exists every graph write raises `StoreUnavailable`; while `FAULTS/vectors`
exists every vector upsert raises. The parent SIGKILLs this process at random moments.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from memory.stores.base import StoreUnavailable


def turn_text(i: int) -> str:
    """The message of turn i (each one different, so a lost or doubled turn is visible)."""
    return f"Note {i}: my locker at the Vienna gym is number {1000 + i}, row {i % 7}."


def install_faults(services: Any, faults: Path, suffix: str = "") -> None:
    """Make graph writes and vector upserts fail while their fault file exists (`graph` and
    `vectors`, each followed by `suffix`: one process's own faults among several)."""
    graph, vectors = services.graph, services.vectors

    def failing(obj: Any, name: str, flag: str) -> None:
        real = getattr(obj, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            if (faults / flag).exists():
                raise StoreUnavailable(f"injected fault: {flag} down")
            return await real(*args, **kwargs)

        setattr(obj, name, call)

    for name in ("create", "attach_reply", "set_status", "set_ess"):
        failing(graph.episodes, name, f"graph{suffix}")
    failing(vectors, "upsert", f"vectors{suffix}")


async def main(data: Path, acks: Path, faults: Path, first: int, last: int) -> None:
    """Run the turns, acknowledging each after its reply."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from graph.agent import builder
    from graph.bookkeeping import run_episode
    from memory.services import Services, close_services, set_services
    from memory.settings import get_settings

    services = await Services.open(get_settings(), pipeline=run_episode)
    set_services(services)  # what the agent's nodes get
    install_faults(services, faults)
    services.bookkeeping.start()  # drains the outbox and sweeps what a killed run left
    app: Any = builder.compile(checkpointer=InMemorySaver())
    with acks.open("a", encoding="utf-8") as out:
        for i in range(first, last):
            message = HumanMessage(content=turn_text(i), id=f"m{i}")
            state = await app.ainvoke(
                {"messages": [message]},
                {"configurable": {"thread_id": "fault-thread"}},
                context={"user_id": "fault"},
            )
            episode = state.get("episode") or {}
            out.write(f"{i} {episode.get('uid')} {episode.get('outcome')}\n")
            out.flush()
            os.fsync(out.fileno())
    (faults / "done").write_text("done")
    await asyncio.sleep(3600)  # keep bookkeeping running until the parent stops us
    await close_services()


if __name__ == "__main__":
    data, acks, faults = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    asyncio.run(main(data, acks, faults, int(sys.argv[4]), int(sys.argv[5])))
