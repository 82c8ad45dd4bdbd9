"""`mneme bench directives [FILE]`: which turns become a standing instruction and which a belief,
offline (no LLM), against labels: precision and recall of each.

Each line of the file (default `bench/data/directives.jsonl`) is one user turn with two labels:
`directive` (it should become a standing instruction) and `belief` (it should become one of the
agent's beliefs). A turn is taken as the episode the agent would store (no earlier turn), then:

- directive accepted: what the `knowledge` stage stores without a model (the offline fact
  heuristic, `tasks.facts.patterns.heuristic_facts`, made propositions by
  `tasks.facts.propositions.propositions`) holds at least one `instruction` fact;
- belief accepted: the `beliefs` stage's provenance (`tasks.provenance.belief_provenance`) with
  the turn's offline ESS (`tasks.route.heuristic_assessment`), run on a fresh tenant of a
  throw-away embedded memory (SQLite + Qdrant in memory, the configured embedder), leaves at
  least one active belief.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.sleep import offline_settings
from memory.beliefs.evidence import list_active_beliefs
from memory.embeddings.embedders import build_embedder
from memory.schema import Episode, FactKind, NewEpisode
from memory.services import Services
from memory.services.usage import Usage
from memory.settings import Settings, load_settings
from tasks.facts.patterns import heuristic_facts
from tasks.facts.propositions import propositions, said_of
from tasks.provenance import belief_provenance
from tasks.route import heuristic_assessment

DEFAULT = Path(__file__).parent / "data" / "directives.jsonl"
WHEN = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)


@dataclass(slots=True)
class Score:
    """Counts of one decision against its labels."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    wrong: list[str] = field(default_factory=list)

    def add(self, label: bool, got: bool, name: str) -> None:
        """Count one turn; name it when the decision was wrong."""
        if label and got:
            self.tp += 1
        elif got:
            self.fp += 1
            self.wrong.append(f"{name} (accepted)")
        elif label:
            self.fn += 1
            self.wrong.append(f"{name} (missed)")
        else:
            self.tn += 1

    def as_dict(self) -> dict[str, Any]:
        """The counts, precision and recall (None when undefined), and the wrong turns."""
        accepted, positive = self.tp + self.fp, self.tp + self.fn
        return {
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "precision": round(self.tp / accepted, 3) if accepted else None,
            "recall": round(self.tp / positive, 3) if positive else None,
            "wrong": self.wrong,
        }


def read_turns(path: Path) -> list[dict[str, Any]]:
    """The labelled turns of a file (one JSON object a line)."""
    turns = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            row = json.loads(line)
            if not isinstance(row.get("text"), str) or not {"directive", "belief"} <= set(row):
                raise ValueError(f"line {n}: needs text, directive and belief")
            turns.append(row)
    return turns


def new_episode(text: str, n: int) -> NewEpisode:
    """The turn as the agent records it (no reply yet), with its offline ESS."""
    return NewEpisode(
        uid=f"directives-{n}",
        tenant=f"directives-{n}",
        thread_id=f"directives-{n}",
        user_text=text,
        agent_text="",
        created_at=WHEN,
        ess=heuristic_assessment(text).evidence.record(),
    )


def directive_accepted(episode: Episode) -> bool:
    """True when the `knowledge` stage, offline, would file the turn as a standing instruction:
    the heuristic's facts as the stage turns them into propositions."""
    said = said_of(episode, [])
    facts = propositions(heuristic_facts(said), said, episode.content)
    return any(p.kind is FactKind.INSTRUCTION for p in facts)


async def bench_directives(
    path: Path = DEFAULT, settings: Settings | None = None
) -> dict[str, Any]:
    """Both decisions on every turn of the file, scored against its labels."""
    turns = read_turns(path)
    base = settings or load_settings()
    where = Path(tempfile.mkdtemp(prefix="mneme-directives-"))
    config = offline_settings(base, where, Path(":memory:"))
    services = await Services.open(config, embedder=build_embedder(config), sweep_interval_s=None)
    directive, belief = Score(), Score()
    started = time.perf_counter()
    try:
        for n, row in enumerate(turns, start=1):
            name = str(row.get("id") or n)
            new = new_episode(row["text"], n)
            await services.graph.episodes.create(new)
            episode = await services.graph.episodes.get(new.tenant, new.uid)
            if episode is None:
                raise RuntimeError(f"turn {name} was not stored")
            directive.add(bool(row["directive"]), directive_accepted(episode), name)
            await belief_provenance(services, episode, usage=Usage())
            held = await list_active_beliefs(services.graph, episode.tenant)
            belief.add(bool(row["belief"]), bool(held), name)
    finally:
        await services.close()
    return {
        "file": str(path),
        "turns": len(turns),
        "directive": directive.as_dict(),
        "belief": belief.as_dict(),
        "seconds": round(time.perf_counter() - started, 1),
    }
