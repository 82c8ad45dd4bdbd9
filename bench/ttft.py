"""`mneme bench turn --slow-llm S`: time to the reply's first token, as `mneme chat` streams it,
with a chat model that takes S seconds to answer anything (`bench.slow_llm`, on 127.0.0.1).

A small memory is filled offline (a few told turns, bookkept by the heuristics), then the same
questions are asked through the agent graph with the slow model configured, rerank forced on
(`rerank_simple`, the worst case), once with the turn's latency budget (MNEME_TURN_BUDGET_S, or
`budget_s`) and once without one (0: every call may wait MNEME_LLM_TIMEOUT_S). For each: the time
from sending the message to the first token of the reply, and how route and rerank ended.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.slow_llm import slow_llm
from bench.turn import embedded_settings
from bench.write import machine, percentiles
from memory.services import ChatModels, Services, use_services
from memory.settings import load_settings

TOLD = [
    "I run every Monday with my club along the river.",
    "My sister Maya is getting married in Porto in June.",
    "I switched from coffee to green tea last month.",
    "I'm training for the Brest half marathon in October.",
]
ASKED = [
    "What did I tell you about my running?",
    "Where is my sister's wedding?",
    "What do I drink now instead of coffee?",
]


async def _fill(settings: Any) -> None:
    from graph.bookkeeping import run_episode
    from memory.embeddings.install import preflight
    from memory.write.episodes import remember

    services = await Services.open(settings, chat=ChatModels.offline_for(settings))
    preflight(services.embedder)
    try:
        for i, text in enumerate(TOLD):
            done = await remember(
                services, tenant="bench", thread_id=f"told-{i}", user_text=text, agent_text="Noted."
            )
            await run_episode(services, "bench", done.uid)
    finally:
        await services.close()


async def _ask(settings: Any, label: str) -> dict[str, Any]:
    from langchain_core.messages import AIMessageChunk
    from langgraph.checkpoint.memory import InMemorySaver

    from graph.agent import builder

    services = await Services.open(settings, sweep_interval_s=None)
    app: Any = builder.compile(checkpointer=InMemorySaver())
    firsts: list[float] = []
    outcomes: dict[str, dict[str, int]] = {}
    try:
        with use_services(services):
            for i, question in enumerate(ASKED):
                config = {"configurable": {"thread_id": f"{label}-{i}"}}
                sent = time.perf_counter()
                first = None
                async for message, meta in app.astream(
                    {"messages": [{"role": "user", "content": question}]},
                    config,
                    context={"user_id": "bench", "rerank_simple": True},
                    stream_mode="messages",
                ):
                    if (
                        first is None
                        and meta.get("langgraph_node") == "respond"
                        and isinstance(message, AIMessageChunk)
                        and message.content
                    ):
                        first = time.perf_counter() - sent
                state = (await app.aget_state(config)).values
                firsts.append((first if first is not None else time.perf_counter() - sent) * 1000)
                for task in ("route", "rerank"):
                    outcome = (state["usage"]["tasks"].get(task) or {}).get("outcome", "not run")
                    counts = outcomes.setdefault(task, {})
                    counts[outcome] = counts.get(outcome, 0) + 1
    finally:
        await services.close()
    p50, p95 = percentiles(firsts)
    return {"label": label, "ttft_ms": firsts, "p50_ms": p50, "p95_ms": p95, "outcomes": outcomes}


async def bench_ttft(
    *, delay_s: float, budget_s: float | None, console: Console
) -> list[dict[str, Any]]:
    """Fill, then ask with and without the turn budget; print a table and return its rows."""
    base = load_settings()
    budget = base.turn_budget_s if budget_s is None else budget_s
    rows = []
    async with slow_llm(delay_s) as (url, app):
        with tempfile.TemporaryDirectory(prefix="mneme-bench-ttft-") as tmp:
            settings = embedded_settings(Path(tmp), llm_base_url=url, llm_api_key=None)
            console.print(f"filling {len(TOLD)} turns offline ...")
            await _fill(settings)
            for label, seconds in ((f"budget {budget:g} s", budget), ("no budget", 0.0)):
                if label == "no budget" and budget == 0:
                    continue
                console.print(f"asking {len(ASKED)} questions, {label} ...")
                run = settings.model_copy(update={"turn_budget_s": seconds})
                rows.append(await _ask(run, label))
        requests = app.state.requests
    table = Table(
        title=f"time to first token, chat model answering after {delay_s:g} s "
        f"(MNEME_LLM_TIMEOUT_S={base.llm_timeout_s:g})"
    )
    for col in ("turn budget", "p50 s", "p95 s", "route", "rerank"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            r["label"],
            f"{r['p50_ms'] / 1000:.1f}",
            f"{r['p95_ms'] / 1000:.1f}",
            ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"]["route"].items())),
            ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"]["rerank"].items())),
        )
    console.print(table)
    console.print(machine())
    console.print(
        f"{requests} requests reached the stub. The stub never calls a function, so route and "
        "rerank fall back to their heuristics either way: without a budget each waits for its "
        "answer (and a retry), with one they stop waiting when the turn's budget is spent."
    )
    return rows
