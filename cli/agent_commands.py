"""The agent's commands: `mneme chat`, `mneme demo` (and the memories table `mneme recall`
prints).

Each opens the process services once (`cli.common.opened`), runs the agent graph compiled here
with an in-memory checkpointer, waits for background bookkeeping before exiting, and closes
everything on the way out. `chat` streams the reply token by token when an LLM is configured.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from datetime import datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import typer
from langchain_core.messages import AIMessageChunk
from rich.panel import Panel
from rich.progress import Progress
from rich.table import Table

from cli.common import (
    USER_HELP,
    checked_user,
    console,
    err,
    opened,
    printable,
    progress_bar,
    run,
    safe,
)

SAMPLE = Path(__file__).parent / "data" / "sample_conversation.json"


def load_sample(path: Path = SAMPLE) -> dict[str, Any]:
    """The bundled sample conversation (sessions of turns, and recall questions)."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def session_start(session: dict[str, Any], now: datetime, tz: ZoneInfo) -> datetime:
    """When a sample session began: `days_ago` days before `now`, at its local `time`."""
    day = (now.astimezone(tz) - timedelta(days=int(session["days_ago"]))).date()
    return datetime.combine(day, time.fromisoformat(session["time"]), tzinfo=tz)


def note_data_dir(settings: Any) -> None:
    """Say so when memory lives in an earlier version's `./.mneme`."""
    if settings.data_dir_note:
        console.print(f"[yellow]note:[/] {safe(settings.data_dir_note)}")


def compiled_agent() -> Any:
    """The agent graph with an in-memory checkpointer (threads live as long as the process)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from graph.agent import builder

    return builder.compile(checkpointer=InMemorySaver(), name="agent")


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


def ranked(memories: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Memories best first: by their rank (unranked ones last, in their order)."""
    return sorted(memories, key=lambda m: int(m.get("rank") or 10**6))


def memories_table(memories: list[dict[str, Any]], now: datetime) -> Table:
    """The memories a reply used, best first (by rank), with where they came from."""
    from tasks.offline_answer import memory_line
    from tasks.temporal import days_ago, utc_from_iso

    table = Table(show_header=True, header_style="bold", expand=True, box=None)
    table.add_column("#", width=2)
    table.add_column("when", width=14)
    table.add_column("thread", width=12)
    table.add_column("score", width=5)
    table.add_column("memory")
    for m in ranked(memories):
        created = utc_from_iso(str(m["created_at"]))
        said = memory_line({**m, "fragments": []})
        fragment = (m.get("fragments") or [said])[0]
        text = safe(said[:160])
        if fragment and fragment not in said:
            text += f"\n[dim]matched: {safe(str(fragment)[:120])}[/]"
        reached = m.get("source") in (
            "neighbour",
            "concept",
            "cornerstone",
        )  # not found by search itself
        via = f" [dim]({m['source']})[/]" if reached else ""
        table.add_row(
            str(m.get("rank", "")),
            f"{created.date()} ({days_ago(now, created)})",
            safe(m.get("thread_id", "")),
            f"{float(m.get('score', 0)):.2f}",
            text + via,
        )
    return table


async def ingest_sample(
    services: Any, sample: dict[str, Any], user_id: str, bar: Progress | None = None
) -> tuple[list[str], int]:
    """Remember every sample turn at its (relative) time; return the uids and how many were new."""
    from memory.schema import episode_uid, utcnow
    from memory.write.episodes import remember

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
            uid=episode_uid(user_id, session["id"], f"turn:{i}"),  # a re-run writes nothing
        )
        uids.append(result.uid)
        new += not result.duplicate
        if bar is not None and task is not None:
            bar.advance(task)
    return uids, new


async def process_all(services: Any, uids: list[str], user_id: str, bar: Progress | None) -> int:
    """Run the bookkeeping graph on each episode now; return how many failed."""
    from graph.bookkeeping import run_episode

    task = bar.add_task("bookkeeping", total=len(uids)) if bar else None
    failed = 0
    for uid in uids:
        try:
            await run_episode(services, user_id, uid)
        except Exception as exc:
            failed += 1
            console.print(f"[yellow]bookkeeping of {uid} failed: {safe(str(exc))}[/]")
        if bar is not None and task is not None:
            bar.advance(task)
    return failed


async def run_demo(user_id: str, show_usage: bool) -> tuple[int, int]:
    """Ingest the sample, run bookkeeping, ask the recall questions; return the questions not
    answered from memory and the turns whose bookkeeping failed."""
    from memory.schema import utcnow

    sample = load_sample()
    async with opened(bookkeeping=True) as services:
        mode = "offline (heuristics)" if services.chat.offline else "with an LLM"
        console.print(
            f"[bold]mneme demo[/] - user [cyan]{user_id}[/], memory in "
            f"{safe(str(services.settings.data_dir))} (graph {services.graph.backend}, vectors "
            f"{services.vectors.backend}), {mode}"
        )
        note_data_dir(services.settings)
        with progress_bar() as bar:
            uids, new = await ingest_sample(services, sample, user_id, bar)
            failed = await process_all(services, uids, user_id, bar)
        console.print(
            f"{len(uids)} turns in {len(sample['sessions'])} conversations "
            f"({new} new, {len(uids) - new} already remembered)\n"
        )
        app = compiled_agent()
        misses = strict = 0
        for n, q in enumerate(sample["questions"], start=1):
            state = await ask(
                app,
                q["question"],
                user_id=user_id,
                thread_id=f"demo-q{n}",
                timezone=sample.get("timezone", "UTC"),
            )
            answer = str(state["messages"][-1].content)
            expect = [e.lower() for e in q.get("expect", [])]
            hit = all(e in answer.lower() for e in expect)
            used = ranked(state.get("memories") or [])
            first_right = bool(used) and all(e in str(used[0]["content"]).lower() for e in expect)
            misses += not hit
            strict += first_right
            mark = "[green]recalled[/]" if hit else "[yellow]not recalled[/]"
            mark += "" if first_right else " [yellow](first memory is not the answer)[/]"
            body = Table.grid(expand=True)
            body.add_row(f"[bold]{safe(answer)}[/]")
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
                Panel(body, title=f"Q{n}: {safe(q['question'])}  {mark}", title_align="left")
            )
        total = len(sample["questions"])
        console.print(
            f"\n[bold]{total - misses}/{total}[/] questions answered from memory; "
            f"[bold]{strict}/{total}[/] with the right memory first (the strict check)."
        )
    return misses, failed


async def stream_reply(app: Any, text: str, *, user_id: str, thread_id: str, **context: Any) -> Any:
    """Run one turn, printing the reply's tokens as the respond node produces them; the final
    state. A spinner shows until the first token (or the whole reply, offline) arrives."""
    config = {"configurable": {"thread_id": thread_id}}
    printed = False
    status = console.status("[dim]thinking…[/]", spinner="dots")
    status.start()
    try:
        async for mode, chunk in app.astream(
            {"messages": [{"role": "user", "content": text}]},
            config,
            context={"user_id": user_id, **context},
            stream_mode=["messages"],
        ):
            message, meta = chunk
            if mode != "messages" or meta.get("langgraph_node") != "respond":
                continue
            if not isinstance(message, AIMessageChunk):
                continue  # the node's finished message repeats the streamed tokens
            piece = message.content if isinstance(message.content, str) else ""
            if not piece:
                continue
            if not printed:
                status.stop()
                console.print("[bold magenta]mneme>[/] ", end="")
                printed = True
            console.print(printable(piece), end="", markup=False, highlight=False, soft_wrap=True)
    finally:
        status.stop()
    state = await app.aget_state(config)
    if printed:
        console.print()
    else:
        reply = str(state.values["messages"][-1].content)
        console.print(f"[bold magenta]mneme>[/] {safe(reply)}")
    return state.values


CHAT_COMMAND = re.compile(r"^/[A-Za-z][\w-]*$")
"""A chat line that is one slash word is a command for the REPL, not a message."""

CHAT_HELP = (
    "Commands: /help (this list), /memories (show or hide the memories each reply used), "
    "/quit. Anything else is said to mneme and remembered."
)


@contextmanager
def logs_to_file(path: Path) -> Iterator[Path]:
    """Send the process's log records to `path` instead of the terminal for the block, so that
    no warning is printed over the `you>` prompt; the terminal handlers come back after."""
    root = logging.getLogger()
    terminal = [
        h
        for h in root.handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for h in terminal:
        root.removeHandler(h)
    root.addHandler(handler)
    try:
        yield path
    finally:
        root.removeHandler(handler)
        handler.close()
        for h in terminal:
            root.addHandler(h)


def slow_note(state: dict[str, Any]) -> str | None:
    """One line when the turn's stages answered without the model, else None."""
    tasks = (state.get("usage") or {}).get("tasks") or {}
    late = sorted(name for name, t in tasks.items() if t.get("outcome") == "budget")
    failed = sorted(name for name, t in tasks.items() if t.get("outcome") == "error")
    if late:
        return (
            f"({' and '.join(late)} answered without the model: it was slower than the turn's "
            "latency budget, MNEME_TURN_BUDGET_S)"
        )
    if failed:
        return f"({' and '.join(failed)} answered without the model: the endpoint failed)"
    return None


async def run_chat(
    user_id: str,
    thread_id: str,
    timezone: str,
    show_memories: bool,
    read: Callable[[str], str] = input,
) -> None:
    """A read-eval-print loop over the agent."""
    from memory.schema import utcnow

    async with opened(bookkeeping=True) as services, AsyncExitStack() as stack:
        log_file = stack.enter_context(
            logs_to_file(services.settings.data_dir / "logs" / "chat.log")
        )
        with console.status("[dim]loading the embedding model…[/]", spinner="dots"):
            await services.embedder.embed_query("warm up")
        app = compiled_agent()
        console.print(
            f"[bold]mneme chat[/] as [cyan]{safe(user_id)}[/] (thread {safe(thread_id)}), "
            f"memory in {safe(str(services.settings.data_dir))}, log in {safe(str(log_file))}. "
            "/help lists commands."
        )
        note_data_dir(services.settings)
        while True:
            try:
                text = await asyncio.to_thread(read, "you> ")
            except (EOFError, KeyboardInterrupt):
                break
            command = text.strip()
            if command in ("/quit", "/exit"):
                break
            if not command:
                continue
            if CHAT_COMMAND.match(command):  # commands are not memories: never sent or stored
                if command == "/memories":
                    show_memories = not show_memories
                    console.print(f"memories shown: {'on' if show_memories else 'off'}")
                else:
                    known = command == "/help"
                    console.print(
                        ("" if known else f"unknown command {safe(command)}. ") + CHAT_HELP
                    )
                continue
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > services.settings.max_message_bytes:
                err.print(
                    f"[bold red]error:[/] the message is {size:,} bytes; at most "
                    f"{services.settings.max_message_bytes:,} can be remembered "
                    "(MNEME_MAX_MESSAGE_BYTES): split it; nothing was written"
                )
                continue
            state = await stream_reply(
                app, text, user_id=user_id, thread_id=thread_id, timezone=timezone
            )
            note = slow_note(state)
            if note:
                console.print(f"[dim]{safe(note)}[/]")
            if show_memories and state.get("memories"):
                console.print(memories_table(state["memories"], utcnow()))


def demo(
    user: str = typer.Option("demo", "--user", callback=checked_user, help=USER_HELP),
    usage: bool = typer.Option(False, "--usage", help="Show route and LLM calls per answer."),
) -> None:
    """Remember a bundled multi-session conversation, then ask it recall questions; exit 1 when
    a question is not answered from memory or a turn's bookkeeping failed."""
    misses, failed = run(lambda: run_demo(user, usage))
    if misses or failed:
        problems = (
            [f"{misses} question{'s' * (misses != 1)} not answered from memory"] if misses else []
        )
        problems += [f"bookkeeping failed on {failed} turn{'s' * (failed != 1)}"] if failed else []
        err.print(
            f"[bold red]error:[/] the demo did not work: {', '.join(problems)}; "
            "`mneme doctor` checks the install and the stores",
            soft_wrap=True,
        )
        raise typer.Exit(1)


def chat(
    user: str = typer.Option(..., "--user", "-u", callback=checked_user, help=USER_HELP),
    thread: str = typer.Option(None, "--thread", help="Conversation id (default: a new one)."),
    timezone: str = typer.Option("UTC", "--tz", help="Your IANA timezone."),
    memories: bool = typer.Option(False, "--memories", help="Show the memories each reply used."),
) -> None:
    """Talk to the agent in the terminal."""
    from nodes.context import Context, ContextError

    try:
        Context(user_id=user, timezone=timezone)
    except ContextError as exc:
        raise typer.BadParameter(str(exc)) from None
    run(lambda: run_chat(user, thread or f"cli-{uuid.uuid4().hex[:8]}", timezone, memories))
