"""`mneme bench poison FILE...`: every offline bookkeeping computation on every turn of memeval
files, without stores: a turn that makes a heuristic raise (a poison pill) is counted and named.

Each turn becomes the episode the eval would store (`bench.memeval`'s pairing of user and
assistant turns), then goes through what bookkeeping computes offline: the heuristic extraction
and its schema, the derivatives, topic slugs, entity names, and the router's and the ESS's
heuristic answers. It is the fast check; `mneme eval retrieval FILE` is the end-to-end ingest,
whose summary counts episodes that failed bookkeeping.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.memeval import episodes_of, read_memeval
from memory.schema import Episode, episode_content
from tasks.belief_assessment import claim_of, heuristic_features
from tasks.extract import Extraction, derivatives_from, heuristic_extraction, topic_slugs
from tasks.facts.patterns import heuristic_facts
from tasks.facts.propositions import said_of
from tasks.route import heuristic_assessment


@dataclass(slots=True)
class PoisonReport:
    """Episodes checked and those that made a heuristic raise (uid-like label -> error)."""

    files: list[str] = field(default_factory=list)
    episodes: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def check_episode(user_text: str, agent_text: str) -> None:
    """Run every offline bookkeeping computation on one turn; raise what they raise."""
    content = episode_content(user_text, agent_text)
    episode = Episode(
        uid="poison",
        tenant="poison",
        thread_id="poison",
        content=content,
        user_text=user_text,
        agent_text=agent_text,
        created_at=datetime(2024, 1, 1, tzinfo=UTC),
    )
    extraction = Extraction.model_validate(heuristic_extraction(episode).model_dump(mode="json"))
    derivatives = derivatives_from(episode, extraction, fallback=True)
    if not derivatives:
        raise ValueError("no derivative to index")
    topic_slugs(extraction)
    evidence = heuristic_assessment(user_text).evidence
    heuristic_features(user_text, evidence.record(), claim_of(user_text))
    heuristic_facts(said_of(episode, []))


def bench_poison(paths: list[Path]) -> PoisonReport:
    """Check every episode of the given memeval files."""
    report = PoisonReport(files=[str(p) for p in paths])
    start = time.perf_counter()
    for path in paths:
        for conv in read_memeval(path):
            for s, session in enumerate(conv.sessions):
                for n, (ids, user_text, agent_text) in enumerate(episodes_of(session)):
                    if not user_text.strip() and not agent_text.strip():
                        continue
                    report.episodes += 1
                    try:
                        check_episode(user_text, agent_text)
                    except Exception as exc:
                        label = f"{path.name}:{conv.id}:{s}:{n}:{','.join(ids)}"
                        report.failed[label] = f"{type(exc).__name__}: {exc}"[:300]
    report.seconds = time.perf_counter() - start
    return report
