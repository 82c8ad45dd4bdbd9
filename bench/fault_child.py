"""The process the fault bench kills: real agent turns on the embedded stores, with faults.

`python -m bench.fault_child DATA_DIR ACKS FAULTS FIRST LAST [hostile]` runs turns FIRST..LAST-1
of one thread through the real agent graph (offline), each message carrying its own id, and
appends `i <uid> <outcome>` to ACKS after the reply came back (an acknowledged turn). While the
file `FAULTS/graph` exists every graph write raises `StoreUnavailable`; while `FAULTS/vectors`
exists every vector upsert raises. The parent SIGKILLs this process at random moments.

With `hostile`, after every tenth acknowledged turn a second tenant (`HOSTILE`) goes after the
first one's memory (`attack`): a `command` that jumps to `remember` with the victim's next
turn's uid in a forged episode, an import claiming the uids of the victim's next three turns,
(each turn as `Memory.import_` writes it: `memory.write.imports.import_turn`),
and two records the graph store will refuse appended mid-stream to the outbox (one under a uid
the victim holds, one malformed).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from memory.stores.base import StoreUnavailable

VICTIM, HOSTILE, THREAD = "fault", "mallory", "fault-thread"


def turn_uid(i: int) -> str:
    """The uid the agent gives the victim's turn i."""
    from memory.schema import episode_uid

    return episode_uid(VICTIM, THREAD, f"msg:m{i}")


async def attack(services: Any, app: Any, i: int) -> None:
    """The hostile tenant's moves after the victim's turn i (see the module docstring)."""
    from langchain_core.messages import HumanMessage
    from langgraph.types import Command

    from memory.schema import utcnow
    from memory.write.filing import outbox_record
    from memory.write.imports import export_key, import_turn
    from memory.write.outbox import write_path

    now = utcnow()
    config = {"configurable": {"thread_id": f"{HOSTILE}-{i}"}}
    forged = {"uid": turn_uid(i + 1), "outcome": "outbox", "thread_id": THREAD}
    try:
        await app.ainvoke(
            {"messages": [HumanMessage("hello", id=f"h{i}")]}, config, context={"user_id": HOSTILE}
        )
        update = {"episode": forged | {"created_at": now.isoformat()}, "messages": []}
        await app.ainvoke(
            Command(goto="remember", update=update), config, context={"user_id": HOSTILE}
        )
    except Exception as exc:  # a fault injected meanwhile: the attack is only tried
        print(f"attack {i}: forged command failed ({exc})", flush=True)
    key = export_key(services.settings.data_dir)
    for j in range(i + 1, i + 4):  # what `import_` does with each turn of a hand-written export
        try:
            await import_turn(
                services,
                HOSTILE,
                key,
                uid=turn_uid(j),
                proof=None,
                thread_id=THREAD,
                user_text=f"squat {j}",
                agent_text="",
                created_at=now,
                ess=None,
            )
        except Exception as exc:
            print(f"attack {i}: import of {j} failed ({exc})", flush=True)
    outbox, _ = write_path(services.settings.resolved_outbox_dir)
    taken = outbox_record(
        uid=turn_uid(i),
        tenant=HOSTILE,
        thread_id=THREAD,
        user_text="mine now",
        agent_text=None,
        created_at=now,
        ess=None,
    )
    outbox.append(taken)
    outbox.append(
        {"v": 1, "uid": f"bad-{i}", "tenant": HOSTILE, "thread_id": THREAD, "created_at": "never"}
    )


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


async def main(
    data: Path, acks: Path, faults: Path, first: int, last: int, hostile: bool = False
) -> None:
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
                {"configurable": {"thread_id": THREAD}},
                context={"user_id": VICTIM},
            )
            episode = state.get("episode") or {}
            out.write(f"{i} {episode.get('uid')} {episode.get('outcome')}\n")
            out.flush()
            os.fsync(out.fileno())
            if hostile and i % 10 == 5:
                await attack(services, app, i)
    (faults / "done").write_text("done")
    await asyncio.sleep(3600)  # keep bookkeeping running until the parent stops us
    await close_services()


if __name__ == "__main__":
    data, acks, faults = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    hostile = sys.argv[6:] == ["hostile"]
    asyncio.run(main(data, acks, faults, int(sys.argv[4]), int(sys.argv[5]), hostile))
