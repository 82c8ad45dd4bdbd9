"""`mneme beliefs` and `mneme snapshot`: what the agent thinks, why, and who it has become.

They read the graph store only (no embedder, no vector index), so they are quick and safe to run
beside a live agent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import typer
from rich.table import Table

from cli.common import USER_HELP, checked_user, console, run, safe
from memory.beliefs.evidence import belief_strength, list_active_beliefs
from memory.beliefs.sponge import SpongeStatus, status
from memory.schema import Belief, EvidenceKind, PersonalitySnapshot
from memory.settings import load_settings
from memory.stores.base import GraphStore

T = TypeVar("T")


def _run(main: Callable[[GraphStore], Awaitable[T]]) -> T:
    """Open the configured graph store, run `main`, close; errors become one line and exit 2."""
    from memory.services import build_graph_store

    async def wrapped() -> T:
        graph = build_graph_store(load_settings())
        try:
            await graph.ping()
            await graph.setup()
            return await main(graph)
        finally:
            await graph.close()

    return run(wrapped)


def _signed(value: float) -> str:
    colour = "green" if value > 0.05 else "red" if value < -0.05 else "white"
    return f"[{colour}]{value:+.2f}[/]"


async def belief_rows(graph: GraphStore, user: str) -> list[tuple[Belief, int, int]]:
    """Each belief with its supporting and contradicting evidence counts, strongest first."""
    rows = []
    for b in await list_active_beliefs(graph, user):
        edges = await graph.beliefs.evidence(user, b.uid, limit=10_000)
        pro = sum(1 for e in edges if e.kind is EvidenceKind.SUPPORTS)
        rows.append((b, pro, len(edges) - pro))
    rows.sort(key=lambda r: (-belief_strength(r[0].confidence, r[0].evidence_count), r[0].topic))
    return rows


def beliefs_table(rows: list[tuple[Belief, int, int]], sponge: SpongeStatus) -> Table:
    """The beliefs as a rich table."""
    table = Table(
        title="Beliefs",
        caption=f"{sponge.interactions} interactions, {sponge.since_reflection} since the last "
        f"reflection; shift {sponge.state.cumulative_shift:.3f}; "
        f"{len(sponge.state.insights)} insights waiting; {sponge.state.reflections} reflections",
    )
    for name, kw in (
        ("topic", {}),
        ("statement", {"overflow": "fold", "max_width": 60}),
        ("valence", {"justify": "right"}),
        ("confidence", {"justify": "right"}),
        ("strength", {"justify": "right"}),
        ("evidence +/-", {"justify": "right"}),
        ("contested", {"justify": "center"}),
        ("updated", {}),
    ):
        table.add_column(name, **kw)
    for b, pro, con in rows:
        table.add_row(
            safe(b.topic),
            safe(b.statement),
            _signed(b.valence),
            f"{b.confidence:.2f}",
            f"{belief_strength(b.confidence, b.evidence_count):.2f}",
            f"{b.evidence_count} ({pro}/{con})",
            "[yellow]yes[/]" if b.contested else "",
            b.updated_at.strftime("%Y-%m-%d %H:%M"),
        )
    return table


def snapshot_text(
    snapshots: list[PersonalitySnapshot], history: bool, sponge: SpongeStatus | None = None
) -> str:
    """The current snapshot, or every version newest first with its change in length; with the
    sponge's status, what reflection has done (the same counts `mneme beliefs` shows)."""
    if not snapshots:
        return (
            "No personality snapshot yet: the first conversation writes one (the starting "
            "personality), and reflection revises it."
        )
    shown = snapshots if history else snapshots[:1]
    parts = []
    for i, s in enumerate(shown):
        older = snapshots[i + 1] if i + 1 < len(snapshots) else None
        delta = f", {len(s.text) - len(older.text):+d} chars" if older else ""
        head = f"v{s.version}  {s.created_at.strftime('%Y-%m-%d %H:%M')} UTC  ({len(s.text)} chars{delta})"
        parts.append(f"[bold]{head}[/]\n{safe(s.text)}")
    if sponge is not None:
        revised = len(snapshots) - 1
        parts.append(
            f"[dim]{sponge.state.reflections} reflections so far; {revised} revised the snapshot "
            "(version 1 is the starting personality)[/]"
        )
    return "\n\n".join(parts)


def beliefs(user: str = typer.Option(..., "--user", callback=checked_user, help=USER_HELP)) -> None:
    """List the agent's beliefs: stance, confidence, evidence counts, contested flags."""

    async def main(graph: GraphStore) -> tuple[list[tuple[Belief, int, int]], SpongeStatus]:
        return await belief_rows(graph, user), await status(graph, user)

    rows, sponge = _run(main)
    if not rows:
        console.print(
            f"No beliefs yet for user {safe(repr(user))}: they form from evidence in chats."
        )
        return
    console.print(beliefs_table(rows, sponge))


def snapshot(
    user: str = typer.Option(..., "--user", callback=checked_user, help=USER_HELP),
    history: bool = typer.Option(False, "--history", help="Every version, newest first."),
) -> None:
    """Show the personality snapshot (the sponge), or its whole version history."""

    async def main(graph: GraphStore) -> tuple[list[PersonalitySnapshot], SpongeStatus]:
        return await graph.snapshots.history(user), await status(graph, user)

    snapshots, sponge = _run(main)
    console.print(snapshot_text(snapshots, history, sponge))
