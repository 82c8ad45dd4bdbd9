"""The agent's CLI commands: `mneme chat`, `mneme demo`, `mneme recall`.

`register(app)` adds them to the `mneme` typer app of `graph.cli`. Each command opens the
process services once, runs the agent graph (compiled here with an in-memory checkpointer), waits
for background bookkeeping before exiting, and closes everything on the way out.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

SAMPLE = Path(__file__).parent / "data" / "sample_conversation.json"
DRAIN_TIMEOUT_S = 600.0

console = Console()


def progress_bar() -> Progress:
    """A progress bar for long work."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


def load_sample(path: Path = SAMPLE) -> dict[str, Any]:
    """The bundled sample conversation (sessions of turns, and recall questions)."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def session_start(session: dict[str, Any], now: datetime, tz: ZoneInfo) -> datetime:
    """When a sample session began: `days_ago` days before `now`, at its local `time`."""
    day = (now.astimezone(tz) - timedelta(days=int(session["days_ago"]))).date()
    return datetime.combine(day, time.fromisoformat(session["time"]), tzinfo=tz)


@asynccontextmanager
async def agent_process() -> AsyncIterator[Any]:
    """Open the process services and the bookkeeping queue; drain and close them after."""
    from memory.services import close_services, get_services
    from memory.settings import load_settings
    from nodes.background import close_queue, get_queue

    services = await get_services(load_settings())
    get_queue().start()  # the start-up sweep finishes what an earlier process left pending
    try:
        yield services
        try:
            async with asyncio.timeout(DRAIN_TIMEOUT_S):
                await get_queue().drain()
        except TimeoutError:
            console.print("[yellow]bookkeeping still running; the next sweep will finish it[/]")
    finally:
        await close_queue()
        await close_services()


def compiled_agent() -> Any:
    """The agent graph with an in-memory checkpointer (threads live as long as the process)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from graph.agent import builder

    return builder.compile(checkpointer=InMemorySaver())


async def ask(
    app: Any, text: str, *, user_id: str, thread_id: str, **context: Any
) -> dict[str, Any]:
    """Run one agent turn and return the final state."""
    result: dict[str, Any] = await app.ainvoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": thread_id}},
        context={"user_id": user_id, **context},
    )
    return result


def memories_table(memories: list[dict[str, Any]], now: datetime) -> Table:
    """The memories a reply used, with where they came from."""
    from nodes.respond import memory_line
    from nodes.temporal import days_ago, utc_from_iso

    table = Table(show_header=True, header_style="bold", expand=True, box=None)
    table.add_column("#", width=2)
    table.add_column("when", width=14)
    table.add_column("thread", width=12)
    table.add_column("score", width=5)
    table.add_column("memory")
    for m in memories:
        created = utc_from_iso(str(m["created_at"]))
        said = memory_line({**m, "fragments": []})
        fragment = (m.get("fragments") or [said])[0]
        text = escape(said[:160])
        if fragment and fragment not in said:
            text += f"\n[dim]matched: {escape(str(fragment)[:120])}[/]"
        via = " [dim](neighbour)[/]" if m.get("source") == "neighbour" else ""
        table.add_row(
            str(m.get("rank", "")),
            f"{created.date()} ({days_ago(now, created)})",
            str(m.get("thread_id", "")),
            f"{float(m.get('score', 0)):.2f}",
            text + via,
        )
    return table


async def ingest_sample(
    services: Any, sample: dict[str, Any], user_id: str, bar: Progress | None = None
) -> tuple[list[str], int]:
    """Remember every sample turn at its (relative) time; return the uids and how many were new."""
    from memory.episodes import remember
    from memory.schema import utcnow

    tz = ZoneInfo(sample.get("timezone", "UTC"))
    now = utcnow()
    turns = [(s, i, t) for s in sample["sessions"] for i, t in enumerate(s["turns"])]
    task = bar.add_task("remembering", total=len(turns)) if bar else None
    uids, new = [], 0
    for session, i, t in turns:
        at = session_start(session, now, tz) + timedelta(minutes=2 * i)
        result = await remember(
            services,
            tenant=user_id,
            thread_id=session["id"],
            user_text=t["user"],
            agent_text=t["agent"],
            at=at,
        )
        uids.append(result.uid)
        new += not result.duplicate
        if bar is not None and task is not None:
            bar.advance(task)
    return uids, new


async def process_all(services: Any, uids: list[str], user_id: str, bar: Progress | None) -> int:
    """Run bookkeeping on each episode now; return how many failed."""
    from nodes.bookkeeping import process_episode

    task = bar.add_task("bookkeeping", total=len(uids)) if bar else None
    failed = 0
    for uid in uids:
        try:
            await process_episode(services, user_id, uid)
        except Exception as exc:
            failed += 1
            console.print(f"[yellow]bookkeeping of {uid} failed: {exc}[/]")
        if bar is not None and task is not None:
            bar.advance(task)
    return failed


async def run_demo(user_id: str, show_usage: bool) -> int:
    """Ingest the sample, run bookkeeping, ask the recall questions; return the misses."""
    from memory.schema import utcnow
    from nodes.llm import get_chat_models

    sample = load_sample()
    mode = "offline (heuristics)" if get_chat_models().offline else "with an LLM"
    async with agent_process() as services:
        console.print(
            f"[bold]mneme demo[/] - user [cyan]{user_id}[/], graph {services.graph.backend}, "
            f"vectors {services.settings.resolved_qdrant_location}, {mode}"
        )
        with progress_bar() as bar:
            uids, new = await ingest_sample(services, sample, user_id, bar)
            await process_all(services, uids, user_id, bar)
        console.print(
            f"{len(uids)} turns in {len(sample['sessions'])} conversations "
            f"({new} new, {len(uids) - new} already remembered)\n"
        )
        app = compiled_agent()
        misses = 0
        for n, q in enumerate(sample["questions"], start=1):
            state = await ask(
                app,
                q["question"],
                user_id=user_id,
                thread_id=f"demo-q{n}",
                timezone=sample.get("timezone", "UTC"),
            )
            answer = str(state["messages"][-1].content)
            hit = any(e.lower() in answer.lower() for e in q.get("expect", []))
            misses += not hit
            mark = "[green]recalled[/]" if hit else "[yellow]not recalled[/]"
            body = Table.grid(expand=True)
            body.add_row(f"[bold]{escape(answer)}[/]")
            if state.get("memories"):
                body.add_row(memories_table(state["memories"], utcnow()))
            else:
                body.add_row("[dim]no memories used[/]")
            if show_usage:
                usage = state.get("usage") or {}
                body.add_row(
                    f"[dim]route {state['route']['kind']}; LLM calls "
                    f"{usage.get('llm_calls', 0)}, fallbacks {usage.get('fallbacks', 0)}[/]"
                )
            console.print(
                Panel(body, title=f"Q{n}: {escape(q['question'])}  {mark}", title_align="left")
            )
        total = len(sample["questions"])
        console.print(f"\n[bold]{total - misses}/{total}[/] questions answered from memory.")
    return misses


async def run_chat(
    user_id: str,
    thread_id: str,
    timezone: str,
    show_memories: bool,
    read: Callable[[str], str] = input,
) -> None:
    """A read-eval-print loop over the agent."""
    from memory.schema import utcnow

    async with agent_process():
        app = compiled_agent()
        console.print(
            f"[bold]mneme chat[/] as [cyan]{user_id}[/] (thread {thread_id}). Type /quit to leave."
        )
        while True:
            try:
                text = await asyncio.to_thread(read, "you> ")
            except (EOFError, KeyboardInterrupt):
                break
            if text.strip() in ("/quit", "/exit"):
                break
            state = await ask(app, text, user_id=user_id, thread_id=thread_id, timezone=timezone)
            console.print(f"[bold magenta]mneme>[/] {escape(str(state['messages'][-1].content))}")
            if show_memories and state.get("memories"):
                console.print(memories_table(state["memories"], utcnow()))


async def run_recall(query: str, user_id: str, recipe_name: str, n: int) -> int:
    """Search memory directly (no LLM) and print what comes back; return the count."""
    from memory.recipes import get_recipe, with_overrides
    from memory.retrieval import retrieve
    from memory.schema import utcnow

    recipe = with_overrides(get_recipe(recipe_name), n_results=n)
    async with agent_process() as services:
        found = await retrieve(services, user_id, query, recipe, utcnow())
        found = found[: n + (2 * recipe.neighbours * recipe.neighbour_seeds)]
        rows = [{**c.as_dict(), "rank": i} for i, c in enumerate(found, start=1)]
        if rows:
            console.print(memories_table(rows, utcnow()))
        else:
            console.print(f"nothing in {user_id}'s memory matches {query!r}")
    return len(found)


def _bench_group(app: typer.Typer) -> typer.Typer | None:
    for group in app.registered_groups:
        if group.name == "bench" and isinstance(group.typer_instance, typer.Typer):
            return group.typer_instance
    return None


def register(app: typer.Typer) -> None:
    """Add `chat`, `demo`, `recall` (and `bench turn`) to the `mneme` app."""

    def run(main: Any) -> Any:
        from graph.cli import run as run_command

        return run_command(main)

    @app.command()
    def demo(
        user: str = typer.Option("demo", "--user", help="Tenant the sample is remembered for."),
        usage: bool = typer.Option(False, "--usage", help="Show route and LLM calls per answer."),
    ) -> None:
        """Remember a bundled multi-session conversation, then ask it recall questions."""
        run(lambda: run_demo(user, usage))

    @app.command()
    def chat(
        user: str = typer.Option(..., "--user", "-u", help="Whose memory to use (the tenant)."),
        thread: str = typer.Option(None, "--thread", help="Conversation id (default: a new one)."),
        timezone: str = typer.Option("UTC", "--tz", help="Your IANA timezone."),
        memories: bool = typer.Option(
            False, "--memories", help="Show the memories each reply used."
        ),
    ) -> None:
        """Talk to the agent in the terminal."""
        from graph.context import Context, ContextError

        try:
            Context(user_id=user, timezone=timezone)
        except ContextError as exc:
            raise typer.BadParameter(str(exc)) from None
        run(lambda: run_chat(user, thread or f"cli-{uuid.uuid4().hex[:8]}", timezone, memories))

    @app.command()
    def recall(
        query: str = typer.Argument(..., help="What to look for."),
        user: str = typer.Option("demo", "--user", "-u", help="Whose memory to search."),
        recipe: str = typer.Option("SIMPLE", "--recipe", help="SIMPLE, TEMPORAL or AGGREGATION."),
        n: int = typer.Option(7, "--n", min=1, max=20, help="How many memories."),
    ) -> None:
        """Search memory directly (no LLM) and show what comes back and from where."""
        from memory.recipes import get_recipe

        try:
            get_recipe(recipe)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
        run(lambda: run_recall(query, user, recipe, n))

    bench = _bench_group(app)
    if bench is not None and not any(c.name == "turn" for c in bench.registered_commands):

        @bench.command("turn")
        def bench_turn(
            sizes: str = typer.Option("1000,10000", help="Comma-separated episode counts."),
            turns: int = typer.Option(50, help="Agent turns per size."),
        ) -> None:
            """Per-turn time in the memory layer (no LLM, no embedding) at the given sizes."""
            from bench.turn import bench_turn as main

            parsed = [int(s) for s in sizes.split(",") if s.strip()]
            run(lambda: main(sizes=parsed, turns=turns, console=console))
