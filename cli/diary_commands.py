"""`mneme concepts` and `mneme diary`: what daily sleep made of one person's days.

They read the graph store only (no embedder, no vector index), like `mneme beliefs`.
"""

from __future__ import annotations

import json
from datetime import date

import typer
from rich.markup import escape

from cli.belief_commands import _run as with_graph
from cli.common import USER_HELP, checked_user, console
from memory.stores.base import GraphStore


def concepts(
    user: str = typer.Option(..., "--user", callback=checked_user, help=USER_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the concepts as JSON."),
) -> None:
    """Show the concepts daily sleep formed (turns that recur across days) and their loops."""

    async def main(graph: GraphStore) -> list[dict[str, object]]:
        rows = []
        for c in await graph.concepts.list(user):
            members = await graph.concepts.members(user, c.uid)
            row = c.model_dump(mode="json", exclude={"tenant"})
            rows.append(row | {"episodes": members.episodes, "facts": members.facts})
        return rows

    rows = with_graph(main)
    if as_json:
        console.print_json(json.dumps(rows))
        return
    if not rows:
        console.print("no concepts yet (run `mneme consolidate --level daily`)")
    for row in rows:
        loop = f", on {row['loop']}s ({row['loop_count']} weeks)" if row["loop"] else ""
        if row["loop_emotion"]:
            loop += f", {escape(str(row['loop_emotion']))}"
        console.print(
            f"[bold]{escape(str(row['label']))}[/] ({row['episode_count']} turns on "
            f"{row['day_count']} days{loop})"
        )
        console.print(f"  {escape(str(row['description']))}")


def diary(
    user: str = typer.Option(..., "--user", callback=checked_user, help=USER_HELP),
    day: str | None = typer.Option(None, "--day", help="Only this day (YYYY-MM-DD, UTC)."),
    as_json: bool = typer.Option(False, "--json", help="Print the entries as JSON."),
) -> None:
    """Show the agent's diary of its days with the user (written by daily sleep)."""
    if day is not None:
        try:
            day = date.fromisoformat(day.strip()).isoformat()
        except ValueError:
            raise typer.BadParameter(
                f"{day!r} is not a day; e.g. 2024-06-01", param_hint="--day"
            ) from None

    async def main(graph: GraphStore) -> list[dict[str, object]]:
        return [
            e.model_dump(mode="json", exclude={"tenant"})
            for e in await graph.diary.list(user)
            if day is None or e.day == day
        ]

    rows = with_graph(main)
    if as_json:
        console.print_json(json.dumps(rows))
        return
    if not rows:
        console.print("no diary entries" + (f" for {escape(day)}" if day else ""))
    for row in rows:
        console.print(f"[bold]{row['day']}[/] {escape(str(row['text']))}")
