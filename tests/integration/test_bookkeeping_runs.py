"""One bookkeeping run reads its episode once and carries it in the graph's state; a run killed
after any stage and run again leaves the stores as one uninterrupted run does."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from graph.bookkeeping import builder, run_episode
from memory.schema import VECTOR_KINDS, episode_uid
from memory.services import Services, use_services
from memory.write.episodes import remember
from nodes.context import Context
from serve.api import Memory
from tasks.ess import heuristic_ess

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
TURNS = [
    "Hi, I'm Ada. I live in Leeds and I work as a nurse at Saint James's hospital.",
    "A 2023 meta-analysis of 40 randomised trials published in The Lancet found that regular "
    "cycling cuts cardiovascular mortality by 20 percent, so I cycle to work now.",
]
"""Two turns of one thread: the second has a window (the first) and evidence that passes the
ESS gate, so every stage of the graph, features included, has work to do."""
STAGES = [
    "load",
    "extract",
    "index",
    "beliefs",
    "features",
    "knowledge",
    "thread",
    "sessions",
    "link",
    "salience",
]
EPISODE_READS = ("get", "get_many")


@contextmanager
def counting(store: Any, names: tuple[str, ...]) -> Iterator[Counter[str]]:
    """Count the calls of the store's `names` methods within the block (the store stays real)."""
    calls: Counter[str] = Counter()
    originals = {name: getattr(store, name) for name in names}

    def counted(name: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return await originals[name](*args, **kwargs)

        return call

    for name in names:
        setattr(store, name, counted(name))
    try:
        yield calls
    finally:
        for name in names:
            delattr(store, name)  # the class's method again


async def told(services: Services, tenant: str, n: int) -> str:
    """Write turn `n` of the thread (as the agent does: its ESS stored) and return its uid."""
    done = await remember(
        services,
        tenant=tenant,
        thread_id="t",
        user_text=TURNS[n],
        agent_text="Noted.",
        at=T0 + timedelta(minutes=n),
        ess=heuristic_ess(TURNS[n]).record(),
        uid=episode_uid(tenant, "t", f"msg:{n}"),
    )
    return done.uid


async def snapshot(services: Services, tenant: str) -> dict[str, Any]:
    """What bookkeeping wrote for `tenant`: the export, the episodes' scores and statuses, and
    the vector points of every kind."""
    exported = (await Memory(services).export(tenant)).model_dump(
        mode="json", exclude={"exported_at"}
    )
    for belief in exported["beliefs"]:  # a belief's uid is new when it is created (`new_uid`)
        belief.pop("uid")
    uids = await services.graph.episodes.list_uids(tenant)
    episodes = [
        e.model_dump(mode="json") for e in await services.graph.episodes.get_many(tenant, uids)
    ]
    vectors = {kind: await services.vectors.count(kind, tenant) for kind in VECTOR_KINDS}
    return {"export": exported, "episodes": episodes, "vectors": vectors}


async def test_a_run_reads_its_episode_once(services: Services) -> None:
    await run_episode(services, "ada", await told(services, "ada", 0))
    second = await told(services, "ada", 1)
    with counting(services.graph.episodes, EPISODE_READS) as calls:
        state = await run_episode(services, "ada", second)
    assert state["features"]["created"] and state["facts"]  # every stage had work
    assert state["status"] == "processed"
    # `load` reads the episode (it was read by every stage: 11 reads); `knowledge` reads the
    # window's earlier turn; moving a belief checks, under the beliefs lock, that the episode
    # is still there (one check per belief moved).
    moved = sum(1 for b in state["beliefs"] if b["applied"])
    assert calls == {"get": 1 + moved, "get_many": 1}


async def test_a_run_killed_after_any_stage_is_finished_by_the_next(services: Services) -> None:
    memory = Memory(services)
    for n in range(len(TURNS)):
        await run_episode(services, "ada", await told(services, "ada", n))
    expected = await snapshot(services, "ada")
    assert expected["vectors"]["derivatives"] and expected["export"]["facts"]

    for stage in STAGES:
        await memory.erase("ada")
        await run_episode(services, "ada", await told(services, "ada", 0))
        uid = await told(services, "ada", 1)
        killed = builder.compile(checkpointer=InMemorySaver(), interrupt_after=[stage])
        with use_services(services):  # the process dies after `stage`: its state is lost
            await killed.ainvoke(
                {"episode_uid": uid},
                {"configurable": {"thread_id": f"killed-{stage}"}},
                context=Context(user_id="ada"),
            )
        await run_episode(services, "ada", uid)  # the sweep's run
        assert await snapshot(services, "ada") == expected, f"killed after {stage}"
