"""The `mneme` command line: one Typer app assembled from the command modules of this package.

Every command reads settings from the environment, opens the services it needs once, closes
them on the way out, and turns settings and store errors into one readable line and exit code 2
(`cli.common.run`).
"""

from __future__ import annotations

import logging

import typer
from typer.core import TyperOption

from cli import (
    agent_commands,
    belief_commands,
    bench_commands,
    diary_commands,
    eval_commands,
    forget_commands,
    goal_commands,
    keys_commands,
    knowledge_commands,
    mcp_commands,
    outbox_commands,
    pin_commands,
    shard_commands,
    sleep_commands,
    store_commands,
)
from cli.common import err, safe
from memory.variables import unknown_variables

_display_type = TyperOption.display_type_rich


def _no_type_for_flags(self: TyperOption, ctx: object) -> str | None:
    """A flag takes no value, so its help shows no type (typer 0.29 prints `<bool>` for every
    flag, `--help` included)."""
    return None if self.is_flag else _display_type(self, ctx)  # type: ignore[arg-type]


TyperOption.display_type_rich = _no_type_for_flags  # type: ignore[method-assign]

app = typer.Typer(
    name="mneme",
    help="mneme: a LangGraph agent with long-term, human-like memory.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log at INFO level."),
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    for warning in unknown_variables():
        err.print(f"[yellow]warning:[/] {safe(warning)}", soft_wrap=True)


app.command()(agent_commands.demo)
app.command()(agent_commands.chat)
app.command()(knowledge_commands.recall)
app.command()(knowledge_commands.ingest)
app.command()(knowledge_commands.facts)
app.command()(belief_commands.beliefs)
app.command()(belief_commands.snapshot)
app.command()(store_commands.setup)
app.command()(store_commands.doctor)
app.command()(store_commands.sweep)
app.command()(store_commands.reindex)
app.command()(store_commands.optimize)
app.command()(mcp_commands.mcp)
app.command()(sleep_commands.consolidate)
app.command()(sleep_commands.fidelity)
app.command()(diary_commands.concepts)
app.command()(diary_commands.diary)
app.command()(pin_commands.pin)
app.command()(pin_commands.unpin)
app.command()(forget_commands.forget)
app.command()(goal_commands.goals)

eval_app = typer.Typer(help="Evaluations of the memory (numbers, not tests).")
eval_app.command("retrieval")(eval_commands.retrieval)
eval_app.command("answers")(eval_commands.answers)
eval_app.command("convert")(eval_commands.convert)
app.add_typer(eval_app, name="eval")

outbox_app = typer.Typer(help="Outbox records the graph store refused (the dead letter).")
outbox_app.command("list")(outbox_commands.list_)
outbox_app.command("replay")(outbox_commands.replay)
outbox_app.command("drop")(outbox_commands.drop)
app.add_typer(outbox_app, name="outbox")

keys_app = typer.Typer(help="API keys of the served graphs (each bound to one user).")
keys_app.command("add")(keys_commands.add)
app.add_typer(keys_app, name="keys")

bench_app = typer.Typer(help="Benchmarks of the memory layer (numbers, not tests).")
bench_app.command("write")(bench_commands.write)
bench_app.command("search")(bench_commands.search)
bench_app.command("turn")(bench_commands.turn)
bench_app.command("retrieve")(bench_commands.retrieve)
bench_app.command("faults")(bench_commands.faults)
bench_app.command("poison")(bench_commands.poison)
bench_app.command("rest")(bench_commands.rest)
bench_app.command("sleep")(bench_commands.sleep)
bench_app.command("cluster")(bench_commands.cluster)
bench_app.command("replicas")(bench_commands.replicas)
bench_app.command("directives")(bench_commands.directives)
app.add_typer(bench_app, name="bench")

shards_app = typer.Typer(help="Tenant shards on a Qdrant cluster: list, promote a large tenant.")
shards_app.command("list")(shard_commands.list_shards)
shards_app.command("promote")(shard_commands.promote)
app.add_typer(shards_app, name="shards")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
