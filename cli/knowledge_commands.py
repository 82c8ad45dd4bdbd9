"""`mneme ingest`, `mneme facts`, `mneme recall`: putting conversations in, reading knowledge out.

`ingest` reads and checks a whole memeval file first (a malformed line, a turn over the
message limit, a date later than now or a thread id too long stops it before anything is
written, naming where and why), then writes every episode through the agent's write path:
the router's evidence score, `remember`, and the bookkeeping graph. `facts` lists what mneme
knows (current facts, or with `--history` the superseded ones too); `recall` searches memory
with the retrieval the agent runs. `--json` output shapes are stable (other tools read them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from cli.common import (
    USER_HELP,
    CommandError,
    checked_user,
    console,
    opened,
    progress_bar,
    run,
    safe,
)
from cli.remote import hit_as_candidate, through_server
from memory.schema import FactKind
from memory.settings import load_settings
from memory.stores.base import StoreLocked


def thread_of(conversation_id: str, session_id: str) -> str:
    """The stable thread id of an ingested session: conversation id and session id."""
    return f"{conversation_id}:{session_id}"


async def run_ingest(path: Path, user: str) -> dict[str, int]:
    """Ingest a memeval file as `user`'s episodes (idempotent); counts of what happened."""
    from bench.memeval import EvalInputError, placed, read_memeval
    from graph.bookkeeping import run_episode
    from memory.schema import episode_uid, utcnow
    from memory.services.usage import Usage
    from memory.write.episodes import remember
    from memory.write.limits import InvalidInput, check_turn
    from tasks.route import assess_turn

    try:
        conversations = read_memeval(path, questions=False)
    except EvalInputError as exc:
        raise CommandError(f"{exc}; nothing was ingested") from None
    settings = load_settings()
    todo = [(c, ep) for c in conversations for ep in placed(c) if ep.user_text or ep.agent_text]
    now = utcnow()
    for conv, ep in todo:  # the write path's limits, every turn before the first is written
        try:
            check_turn(
                "",
                limit=settings.max_message_bytes,
                thread_id=thread_of(conv.id, ep.session_id),
                user_text=ep.user_text,
                agent_text=ep.agent_text,
                at=ep.at,
                now=now,
            )
        except InvalidInput as exc:
            where = f"conversation {conversations.index(conv) + 1}, session {ep.session + 1}"
            raise CommandError(
                f"{path}: {where}, episode {ep.position + 1}: {exc}; nothing was ingested"
            ) from None
    counts = {"conversations": len(conversations), "episodes": 0, "new": 0, "failed": 0}
    async with opened(settings) as services:
        with progress_bar() as bar:
            task = bar.add_task("ingesting", total=len(todo))
            for conv, ep in todo:
                assessment = await assess_turn(ep.user_text, [], chat=services.chat, usage=Usage())
                thread = thread_of(conv.id, ep.session_id)
                done = await remember(
                    services,
                    tenant=user,
                    thread_id=thread,
                    user_text=ep.user_text,
                    agent_text=ep.agent_text,
                    at=ep.at,
                    ess=assessment.evidence.record() if ep.user_text.strip() else None,
                    uid=episode_uid(user, thread, f"turn:{ep.position}"),
                )
                counts["episodes"] += 1
                counts["new"] += not done.duplicate
                try:  # a re-run finishes what an interrupted one left (processed: no-op)
                    await run_episode(services, user, done.uid)
                except Exception as exc:
                    counts["failed"] += 1
                    console.print(
                        f"[yellow]bookkeeping of {done.uid} failed ({safe(str(exc))}); "
                        "`mneme sweep` retries it[/]"
                    )
                bar.advance(task)
        counts["facts"] = len(await services.graph.facts.list(user))
    return counts


REST_ONLY = ("attribute", "value")
"""Fields of the REST `FactView` that a `mneme facts --json` row does not have."""


def fact_rows(facts: list[Any], sources: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Facts in the `mneme facts --json` shape."""
    return [
        {
            "uid": f.uid,
            "text": f.text,
            "kind": f.kind.value,
            "subject": f.subject,
            "valid_from": f.valid_from.isoformat(),
            "valid_to": f.valid_to.isoformat() if f.valid_to else None,
            "current": f.superseded_by is None,
            "superseded_by": f.superseded_by,
            "confidence": f.confidence,
            "grounding": f.grounding,
            "sources": sources.get(f.uid, []),
            "precision": f.precision.value,
        }
        for f in facts
    ]


async def run_facts(user: str, history: bool) -> list[dict[str, Any]]:
    """The user's facts (current ones, or all with `history`), oldest first; through the
    running server (`cli/remote.py`) when it holds the stores."""
    settings = load_settings()
    try:
        async with opened(settings) as services:
            facts = await services.graph.facts.list(user, include_superseded=history)
            sources = await services.graph.facts.sources_many(user, [f.uid for f in facts])
    except StoreLocked as locked:
        params = {"user": user, "history": str(history).lower()}
        views = await through_server(settings, locked, "/facts", params)
        return [{k: v for k, v in view.items() if k not in REST_ONLY} for view in views]
    return fact_rows(facts, sources)


def facts_table(rows: list[dict[str, Any]]) -> Table:
    """Facts as a table: since when, kind, about whom, the proposition and its validity."""
    table = Table(show_header=True, header_style="bold", expand=True, box=None)
    for name, width in (("since", 10), ("kind", 12), ("subject", 12), ("grounded", 8)):
        table.add_column(name, width=width)
    table.add_column("fact")
    for r in rows:
        text = safe(r["text"])
        if not r["current"]:
            text = f"[dim]{text} (until {str(r['valid_to'])[:10]})[/]"
        table.add_row(
            str(r["valid_from"])[:10],
            r["kind"],
            safe(r["subject"]),
            f"{r['grounding']:.2f}",
            text,
        )
    return table


async def run_recall(
    query: str, user: str, recipe_name: str, limit: int = 100
) -> list[dict[str, Any]]:
    """Search memory directly (no LLM): the candidates, best first, as dicts. Through the
    running server (`cli/remote.py`) when it holds the stores: its search, `limit` results."""
    from memory.retrieval.recipes import get_recipe
    from memory.retrieval.retrieve import retrieve
    from memory.schema import utcnow

    settings = load_settings()
    try:
        async with opened(settings) as services:
            found = await retrieve(services, user, query, get_recipe(recipe_name), utcnow())
    except StoreLocked as locked:
        if recipe_name.upper() != "SIMPLE":
            raise CommandError(
                f"--recipe {recipe_name}: a running server holds the stores and searches "
                f"with SIMPLE only; drop --recipe, or stop the server"
            ) from None
        params = {"q": query, "k": limit, "user": user}
        answer = await through_server(settings, locked, "/memories", params)
        return [hit_as_candidate(hit) for hit in answer["results"]]
    return [c.as_dict() for c in found]


def recall_json(query: str, candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """The `mneme recall --json` shape: the query and its results, best first."""
    return {
        "query": query,
        "results": [
            {
                "kind": c["kind"],
                "uid": c["uid"],
                "text": c["content"],
                "score": round(float(c["score"]), 6),
                "sources": c["sources"],
            }
            for c in candidates
        ],
    }


def ingest(
    file: Annotated[Path, typer.Argument(help="A memeval .jsonl file (see docs/memeval.md).")],
    user: Annotated[str, typer.Option("--user", "-u", callback=checked_user, help=USER_HELP)],
) -> None:
    """Remember every turn of a memeval file as the user's episodes, in order (idempotent)."""
    counts = run(lambda: run_ingest(file, user))
    console.print(
        f"{counts['episodes']} episodes from {counts['conversations']} conversations "
        f"({counts['new']} new, {counts['episodes'] - counts['new']} already remembered, "
        f"{counts['failed']} failed bookkeeping); {counts['facts']} current facts"
    )
    if counts["failed"]:
        raise typer.Exit(1)


def facts(
    user: str = typer.Option(..., "--user", "-u", callback=checked_user, help=USER_HELP),
    history: bool = typer.Option(False, "--history", help="Also show superseded facts."),
    kind: str = typer.Option(
        "",
        "--kind",
        help="Only facts of this kind, e.g. `instruction` for the user's standing instructions "
        "(remove one with `mneme forget UID`; `--json` shows the uids).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (a list of facts)."),
) -> None:
    """What mneme knows about the user: current facts, or their whole history."""
    kinds = {k.value for k in FactKind}
    if kind and kind not in kinds:
        raise typer.BadParameter(f"one of {', '.join(sorted(kinds))}", param_hint="--kind")
    rows = [r for r in run(lambda: run_facts(user, history)) if not kind or r["kind"] == kind]
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=1))
    elif rows:
        console.print(facts_table(rows))
    else:
        console.print(f"no facts in {safe(user)}'s memory yet")


def recall(
    query: str = typer.Argument(..., help="What to look for."),
    user: str = typer.Option("demo", "--user", "-u", callback=checked_user, help=USER_HELP),
    recipe: str = typer.Option("SIMPLE", "--recipe", help="SIMPLE, TEMPORAL or AGGREGATION."),
    n: int = typer.Option(7, "--n", min=1, max=20, help="How many turns (facts come beside)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: the query and its results."),
) -> None:
    """Search memory directly (no LLM) and show what comes back (turns and facts) and from
    where; `--n` bounds the turns, facts come beside them."""
    from cli.agent_commands import memories_table
    from memory.retrieval.recipes import get_recipe
    from memory.schema import utcnow

    try:
        chosen = get_recipe(recipe)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    found = run(lambda: run_recall(query, user, recipe, limit=n))
    episodes = [c for c in found if c["kind"] == "episode"]
    keep = {
        c["uid"] for c in episodes[: n + 2 * chosen.time.neighbours * chosen.time.neighbour_seeds]
    }
    shown = [c for c in found if c["kind"] != "episode" or c["uid"] in keep]
    if as_json:
        typer.echo(json.dumps(recall_json(query, shown), ensure_ascii=False, indent=1))
        return
    if not shown:
        console.print(f"nothing in {safe(user)}'s memory matches {safe(repr(query))}")
        return
    rows = [{**c, "rank": i} for i, c in enumerate(shown, start=1)]
    console.print(memories_table(rows, utcnow()))
