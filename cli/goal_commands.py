"""`mneme goals`: what one person is working towards and where each goal stands.

It reads the graph store only (no embedder, no vector index), like `mneme concepts`.
"""

from __future__ import annotations

import json

import typer
from rich.markup import escape

from cli.belief_commands import _run as with_graph
from cli.common import USER_HELP, checked_user, console
from memory.schema import GoalStatus
from memory.stores.base import GraphStore


def goals(
    user: str = typer.Option(..., "--user", callback=checked_user, help=USER_HELP),
    status: str | None = typer.Option(
        None, "--status", help="Only goals with this status: active, completed, abandoned, evolved."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the goals as JSON."),
) -> None:
    """Show the person's goals: active, completed, abandoned or evolved (decided at deep
    sleep), with the reason and the turn each status rests on."""
    wanted = _status(status)

    async def main(graph: GraphStore) -> list[dict[str, object]]:
        return [
            g.model_dump(mode="json", exclude={"tenant"})
            for g in await graph.goals.list(user, wanted)
        ]

    rows = with_graph(main)
    if as_json:
        console.print_json(json.dumps(rows))
        return
    if not rows:
        console.print("no goals" + (f" {wanted.value}" if wanted else ""))
    for row in rows:
        reason = f": {escape(str(row['reason']))}" if row["reason"] else ""
        console.print(f"[bold]{row['status']}[/] {escape(str(row['text']))}{reason}")


def _status(value: str | None) -> GoalStatus | None:
    if value is None:
        return None
    try:
        return GoalStatus(value.strip().lower())
    except ValueError:
        known = ", ".join(s.value for s in GoalStatus)
        raise typer.BadParameter(
            f"{value!r} is not a goal status; use one of {known}", param_hint="--status"
        ) from None
