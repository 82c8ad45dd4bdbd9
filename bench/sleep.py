"""`mneme bench sleep`: a simulated year of one person's memory, with and without forgetting.

A seeded generator writes a year of turns: small talk, one-off details of a day, and a set of
important facts about the person (work, family, health, home, plans...) that recur in other
words over the year. Two tenants get the same turns through the real write path (`remember`
and the bookkeeping graph, offline heuristics, the real embedder and stores): `sleep` runs
deep sleep along the simulated clock, through the consolidation graph as every caller does
(`graph.consolidation.run_consolidation`: the lease, every deep stage, reflection included),
`awake` never consolidates (at the end it gets
the session-summary pass every consolidation level runs, so both hold summaries of the same
sessions and the vectors differ by what forgetting removed). Every simulated week both are
asked a few questions (mostly about the important facts, some about one-off details) and the
memories retrieved are marked accessed, as the agent's rerank node does.

The year also holds what months of use should change (`USE_GROUPS`): facts that change half way
(the person moves, changes car, job and language; asked "... now?" at the end, a hit is a turn
of the new value) and facts stated as often as the important ones but never asked before the
end. Each group's questions are scored at the end with several rankings on the same memory
(`VARIANTS`): the agent's (`SIMPLE`, what the weekly questions use unless `ranking` says
otherwise), with docs/design.md's state weights, with the relevance alone (no state, no hop
through a concept, no diversity), the state weights at half, added as they are, and each state
term alone (with diversity, without the hop), and the agent's with the newest statement of the
same thing first (`current`, ADR 0152); recall@10, recall@3 and MRR each (`use_recall`). The 12 important-fact
questions' recall@10 counts the old value's turns for the six facts that change.

At the end: vectors each tenant keeps (in all and by collection), recall@10 of one question
per important fact (a hit is any retrieved memory from a turn that stated the fact), the
beliefs with confidence above 0 and the current facts left without any evidence episode (must
be 0), and what consolidation did and cost (the reports' counts summed over the runs, the
reflections that got past triage and the beliefs they revised, the seconds of each stage). The embedder is wrapped in a cache so the second
tenant's identical texts are embedded once (the stores still get every write).
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from graph.bookkeeping import run_episode
from graph.consolidation import run_consolidation
from memory.embeddings.embedders import Embedder, Matrix, build_embedder
from memory.embeddings.install import preflight
from memory.retrieval.recipes import SIMPLE, Recipe, ablate, changed
from memory.retrieval.retrieve import retrieve
from memory.schema import VECTOR_KINDS, EpisodeStatus, NewEpisode, stable_uid
from memory.services import Services
from memory.settings import Settings, load_settings
from memory.sleep.salience import is_cornerstone
from memory.write.episodes import remember
from memory.write.sessions import summarise_sessions
from tasks.route import DEFAULT_N_RESULTS, heuristic_assessment


def offline_settings(base: Settings, where: Path, vectors: Path | None = None) -> Settings:
    """`base` on a throw-away offline memory in `where`: a SQLite graph, the vectors in an
    embedded index there (or at `vectors`, e.g. `:memory:`), no server, no chat endpoint."""
    return base.model_copy(
        update={
            "data_dir": where,
            "graph_backend": "sqlite",
            "sqlite_path": None,
            "neo4j_uri": None,
            "qdrant_path": vectors,
            "qdrant_url": None,
            "llm_base_url": None,
        }
    )


START = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
"""Day 0 of the simulated year (a Monday)."""


@dataclass(frozen=True, slots=True)
class Important:
    """A fact about the person that recurs, and the question that checks it is remembered."""

    key: str
    says: tuple[str, ...]
    question: str


IMPORTANT: tuple[Important, ...] = (
    Important(
        "job",
        (
            "I work as a pediatric nurse at St. Anne's hospital.",
            "Another night shift on the children's ward at St. Anne's, nursing wears me out.",
            "The new head nurse at St. Anne's changed our shift rota.",
        ),
        "Where do I work and what is my job?",
    ),
    Important(
        "allergy",
        (
            "I'm allergic to peanuts, badly.",
            "Had to send the satay back, my peanut allergy again.",
            "I always carry my EpiPen because of the peanut allergy.",
        ),
        "What am I allergic to?",
    ),
    Important(
        "husband",
        (
            "My husband Tomas is a carpenter.",
            "Tomas built us a new bookshelf in his workshop.",
            "Tomas and I celebrated our wedding anniversary.",
        ),
        "What is my husband's name and what does he do?",
    ),
    Important(
        "dog",
        (
            "Our dog Biscuit is a beagle.",
            "Biscuit the beagle chewed another shoe.",
            "Took Biscuit to the vet for his vaccinations.",
        ),
        "What is our dog called and what breed is he?",
    ),
    Important(
        "home",
        (
            "We live in Porto, near the river.",
            "Porto was foggy along the Douro this morning.",
            "Our flat in Porto needs a new boiler.",
        ),
        "Which city do we live in?",
    ),
    Important(
        "daughter",
        (
            "My daughter Lina turns seven on June 12.",
            "Lina lost her first tooth today.",
            "Planning Lina's birthday party for June 12.",
        ),
        "When is my daughter's birthday?",
    ),
    Important(
        "cello",
        (
            "I play the cello in a community orchestra.",
            "Orchestra rehearsal tonight, the cello part is hard.",
            "Restrung my cello before the concert.",
        ),
        "What instrument do I play?",
    ),
    Important(
        "marathon",
        (
            "I'm training for the Lisbon marathon in October.",
            "Ran 25 kilometres for my marathon training.",
            "Registered for the Lisbon marathon, bib number arrived.",
        ),
        "What race am I training for?",
    ),
    Important(
        "sister",
        (
            "My sister Ines lives in Berlin.",
            "Video call with Ines, Berlin is freezing.",
            "Ines is visiting us from Berlin next month.",
        ),
        "Where does my sister live?",
    ),
    Important(
        "japanese",
        (
            "I'm learning Japanese.",
            "My Japanese lesson covered kanji for numbers.",
            "Passed the first Japanese language test.",
        ),
        "What language am I learning?",
    ),
    Important(
        "medication",
        (
            "I take medication for my blood pressure every morning.",
            "Doctor adjusted my blood pressure pills.",
            "Forgot my blood pressure tablet, felt dizzy.",
        ),
        "What do I take medication for?",
    ),
    Important(
        "car",
        (
            "I drive an old blue Volvo.",
            "The Volvo needed new brakes.",
            "Washed the blue Volvo for the first time in months.",
        ),
        "What car do I drive?",
    ),
)

CHANGED: tuple[Important, ...] = (
    Important(
        "moved",
        (
            "We moved from Porto to Lyon last week, the boxes are everywhere.",
            "Our new flat in Lyon has a balcony over the Rhone.",
            "Lyon was sunny along the Rhone today, I love living here.",
        ),
        "Which city do we live in now?",
    ),
    Important(
        "new_car",
        (
            "Sold the old Volvo, we drive a red Kia now.",
            "The red Kia needed its first service.",
            "Parked the Kia near the station, it fits anywhere.",
        ),
        "What car do I drive now?",
    ),
    Important(
        "new_job",
        (
            "I left St. Anne's, I'm a school nurse at Escola Azul now.",
            "First week as the school nurse at Escola Azul, the kids are lovely.",
            "Escola Azul asked me to run a first aid class for the teachers.",
        ),
        "Where do I work now?",
    ),
    Important(
        "korean",
        (
            "I stopped the Japanese lessons, I'm learning Korean now.",
            "My Korean tutor taught me hangul today.",
            "Practising Korean with a podcast on my commute.",
        ),
        "What language am I learning now?",
    ),
    Important(
        "viola",
        (
            "I switched from the cello to the viola in the orchestra.",
            "The viola part in the new symphony is lovely.",
            "Bought a new bow for my viola.",
        ),
        "What instrument do I play now?",
    ),
    Important(
        "swimming",
        (
            "I gave up the marathon after my knee injury, I swim laps instead.",
            "Swam two kilometres at the municipal pool.",
            "My swimming coach fixed my breathing on the crawl.",
        ),
        "What sport do I train for now?",
    ),
)
"""Facts that change half way through the year (a first statement of the change, then
mentions): at the end, only a turn of the new value answers."""

UNUSED: tuple[Important, ...] = (
    Important(
        "bike",
        (
            "I ride a green folding bike to the market.",
            "Oiled the chain of my green folding bike.",
            "Got a flat tyre on the folding bike.",
        ),
        "What kind of bike do I ride?",
    ),
    Important(
        "pottery",
        (
            "I started a pottery class on Thursday evenings.",
            "Made a lopsided bowl at pottery class.",
            "My pottery teacher fired my first mug in the kiln.",
        ),
        "Which evening class do I take?",
    ),
    Important(
        "brother",
        (
            "My brother Rui is a pilot for a cargo airline.",
            "Rui flew to Nairobi again, cargo flights all week.",
            "Rui called from the airport between two flights.",
        ),
        "What does my brother do for a living?",
    ),
    Important(
        "garden",
        (
            "We rent an allotment garden by the railway line.",
            "Picked the first courgettes at the allotment.",
            "Weeded the allotment all Saturday morning.",
        ),
        "Where do we grow vegetables?",
    ),
    Important(
        "friend",
        (
            "My best friend Clara is a vet in Coimbra.",
            "Clara operated on a horse at her practice in Coimbra.",
            "Had coffee with Clara, she's exhausted from the clinic.",
        ),
        "What does my best friend do?",
    ),
    Important(
        "postcards",
        (
            "I collect old postcards of lighthouses.",
            "Found a 1920s lighthouse postcard at the flea market.",
            "My lighthouse postcard album is almost full.",
        ),
        "What do I collect?",
    ),
    Important(
        "dish",
        (
            "My favourite dish is bacalhau with chickpeas.",
            "Cooked bacalhau with chickpeas for the in-laws.",
            "Nothing beats a plate of bacalhau with chickpeas.",
        ),
        "What is my favourite dish?",
    ),
    Important(
        "food_bank",
        (
            "I volunteer at the food bank on Saturdays.",
            "Sorted tins at the food bank all morning.",
            "The food bank needs more volunteers before Christmas.",
        ),
        "Where do I volunteer?",
    ),
)
"""Facts stated as often as the important ones and never asked before the end: what use
does not reach, and a ranking that favours use must not bury."""

REPLACED = frozenset({"home", "car", "job", "japanese", "cello", "marathon"})
"""The important facts a `CHANGED` fact replaces (their weekly question is still asked)."""

USE_GROUPS: dict[str, tuple[Important, ...]] = {
    "used": tuple(f for f in IMPORTANT if f.key not in REPLACED),
    "changed": CHANGED,
    "unused": UNUSED,
}
"""The end-of-year question groups: asked weekly (and not changed), changed half way (their
old value asked weekly), never asked."""

SMALL_TALK = (
    "ok",
    "haha",
    "lol",
    "thanks!",
    "sure",
    "good morning",
    "good night",
    "how are you?",
    "cool",
    "nice",
    "sounds good",
    "yeah",
    "hmm",
    "right",
    "ok thanks",
    "see you",
    "that's funny",
    "no worries",
    "got it",
    "hi again",
)

_FOODS = ("pasta", "soup", "a sandwich", "sushi", "a salad", "tacos", "curry", "pizza", "rice")
_MEALS = ("lunch", "dinner", "breakfast")
_SHOWS = ("a crime series", "a cooking show", "an old western", "a documentary", "a comedy")
_WEATHER = ("rainy", "windy", "sunny", "grey", "hot", "cold")
_ERRANDS = (
    "picked up the dry cleaning",
    "bought new light bulbs",
    "paid the water bill",
    "returned a parcel",
    "fixed a squeaky door",
    "cleaned the fridge",
)
_TRANSPORT = ("the bus", "the tram", "the metro", "the train")
_DELAYS = ("late", "packed", "on time for once", "cancelled")


def _one_off(rng: random.Random) -> str:
    pick = rng.randrange(5)
    if pick == 0:
        return f"I had {rng.choice(_FOODS)} for {rng.choice(_MEALS)}."
    if pick == 1:
        return f"Watched {rng.choice(_SHOWS)} last night, it was {rng.choice(('ok', 'great', 'boring'))}."
    if pick == 2:
        return f"It's {rng.choice(_WEATHER)} here today."
    if pick == 3:
        return f"Today I {rng.choice(_ERRANDS)}."
    return f"{rng.choice(_TRANSPORT).capitalize()} was {rng.choice(_DELAYS)} this morning."


@dataclass(frozen=True, slots=True)
class Turn:
    """One generated turn."""

    day: float
    text: str
    kind: str
    """`small`, `detail` or an important fact's key."""


def generate(seed: int, episodes: int, days: int = 365) -> list[Turn]:
    """A seeded year: each important fact stated 3-5 times (first in the first month), the rest
    about 55% small talk and 45% one-off details, then the turns of the changed and unused
    facts (`_use_turns`), in time order."""
    rng = random.Random(seed)
    turns: list[Turn] = _use_turns(seed, days)
    for fact in IMPORTANT:
        mentions = rng.randint(3, 5)
        first = rng.uniform(0, 30)
        turns.append(Turn(first, fact.says[0], fact.key))
        for _ in range(mentions - 1):
            turns.append(Turn(rng.uniform(first, days), rng.choice(fact.says[1:]), fact.key))
    while len(turns) < episodes:
        day = rng.uniform(0, days)
        if rng.random() < 0.55:
            turns.append(Turn(day, rng.choice(SMALL_TALK), "small"))
        else:
            turns.append(Turn(day, _one_off(rng), "detail"))
    return sorted(turns, key=lambda t: t.day)


def _use_turns(seed: int, days: int) -> list[Turn]:
    """The turns of `CHANGED` (the change between 45% and 65% of the year, 2-3 mentions after
    it) and `UNUSED` (3-5 mentions, the first in the first month), from their own generator so
    the important facts' turns are the same with or without them."""
    rng = random.Random(seed * 1_000_003 + 11)
    out: list[Turn] = []
    for fact in CHANGED:
        change = rng.uniform(0.45 * days, 0.65 * days)
        out.append(Turn(change, fact.says[0], fact.key))
        for _ in range(rng.randint(2, 3)):
            out.append(Turn(rng.uniform(change, days), rng.choice(fact.says[1:]), fact.key))
    for fact in UNUSED:
        first = rng.uniform(0, 30)
        out.append(Turn(first, fact.says[0], fact.key))
        for _ in range(rng.randint(2, 4)):
            out.append(Turn(rng.uniform(first, days), rng.choice(fact.says[1:]), fact.key))
    return out


class CachedEmbedder(Embedder):
    """An embedder that embeds each distinct text once (the bench's two tenants share texts)."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner.name, dim=inner.dim, batch_size=inner.batch_size)
        self.inner = inner
        self.cache: dict[str, Matrix] = {}

    async def close(self) -> None:
        """Close the wrapped embedder."""
        await self.inner.close()

    async def _embed_batch(self, texts: list[str]) -> Matrix:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            rows = await self.inner.embed_documents(todo)
            self.cache.update(zip(todo, rows, strict=True))
        return np.stack([self.cache[t] for t in texts])

    def _discover_dim(self) -> int:
        return self.inner.dim


@dataclass(slots=True)
class SleepReport:
    """The bench's figures."""

    episodes: int
    seed: int
    important_mentions: int
    vectors: dict[str, int] = field(default_factory=dict)
    vectors_by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    recall_at_10: dict[str, float] = field(default_factory=dict)
    misses: dict[str, list[str]] = field(default_factory=dict)
    use_recall: dict[str, dict[str, dict[str, dict[str, float]]]] = field(default_factory=dict)
    """tenant -> ranking (`VARIANTS`) -> group -> {"r@10", "r@3", "mrr"}."""
    ranking: str = "agent"
    unsupported: dict[str, int] = field(default_factory=dict)
    episodes_left: dict[str, int] = field(default_factory=dict)
    cornerstones: dict[str, int] = field(default_factory=dict)
    """tenant -> episodes left with at least `CORNERSTONE_CONNECTIONS` connections at the end."""
    consolidation: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly."""
        fewer = 1.0 - self.vectors.get("sleep", 0) / max(1, self.vectors.get("awake", 0))
        return {
            "episodes": self.episodes,
            "seed": self.seed,
            "important_mentions": self.important_mentions,
            "vectors": self.vectors,
            "vectors_by_kind": self.vectors_by_kind,
            "vectors_fewer": round(fewer, 4),
            "recall_at_10": self.recall_at_10,
            "misses": self.misses,
            "weekly_ranking": self.ranking,
            "use_recall": self.use_recall,
            "unsupported_beliefs_and_current_facts": self.unsupported,
            "episodes_left": self.episodes_left,
            "cornerstones": self.cornerstones,
            "consolidation": self.consolidation,
            "seconds": {k: round(v, 1) for k, v in self.seconds.items()},
            "machine": self.machine,
        }


DESIGN = changed(
    SIMPLE,
    {
        "priors.salience_weight": 0.3,
        "priors.recency_weight": 0.2,
        "priors.association_weight": 0.2,
    },
)
"""The agent's ranking with docs/design.md's state weights (salience 0.3, recency 0.2,
association 0.2), scaled by the relevance, once sleep has run."""

RANKINGS: dict[str, Recipe] = {
    "agent": SIMPLE,
    "design": DESIGN,
    "relevance": ablate(ablate(SIMPLE, "state"), "diversity"),
}
"""The rankings the weekly questions may use: the agent's (`SIMPLE`: the state weights at 0,
the hop through a concept, diversity), the design's state weights, and the relevance alone (no
hop, no diversity: the ranking before issue 32)."""

_NONE = ablate(SIMPLE, "state")
VARIANTS: dict[str, Recipe] = RANKINGS | {
    "half": changed(
        DESIGN,
        {
            "priors.salience_weight": 0.15,
            "priors.recency_weight": 0.1,
            "priors.association_weight": 0.1,
        },
    ),
    "additive": changed(DESIGN, {"priors.relative": False}),
    "salience": changed(_NONE, {"priors.salience_weight": 0.3}),
    "recency": changed(_NONE, {"priors.recency_weight": 0.2}),
    "association": changed(_NONE, {"priors.association_weight": 0.2}),
    "no_cornerstones": ablate(SIMPLE, "cornerstones"),
    "current": changed(SIMPLE, {"rerank.newest": True, "rerank.oldest": True}),
}
"""The rankings the end-of-year questions are scored with: the `RANKINGS`, the design's state
weights at half, added as they are (not scaled by the relevance), each state term alone, and
the agent's without the hop to a cornerstone, and the agent's with the newest statement of the
same thing first (`memory.retrieval.current`, on or off by default)."""


async def _ask(
    services: Services, tenant: str, question: str, now: datetime, recipe: Recipe = SIMPLE
) -> list[str]:
    found = await retrieve(services, tenant, question, recipe, now)
    uids = [s for c in found for s in c.sources]
    if uids:
        await services.graph.episodes.record_access(tenant, uids[:DEFAULT_N_RESULTS], now)
    return uids


async def use_recall(
    services: Services, tenant: str, recipe: Recipe, kinds: dict[str, str], now: datetime
) -> dict[str, dict[str, float]]:
    """Recall@10, recall@3 and the mean reciprocal rank (of the first hit, 0 beyond 10) of each
    `USE_GROUPS` group's questions with `recipe` at `now` (a hit: a memory from a turn of the
    question's fact among the first k sources retrieved)."""
    out: dict[str, dict[str, float]] = {}
    for group, facts in USE_GROUPS.items():
        at10 = at3 = 0
        reciprocal = 0.0
        for fact in facts:
            found = await retrieve(services, tenant, fact.question, recipe, now)
            top = [s for c in found for s in c.sources][:10]
            first = next((i for i, uid in enumerate(top) if kinds.get(uid) == fact.key), None)
            at10 += first is not None
            at3 += first is not None and first < 3
            reciprocal += 1.0 / (first + 1) if first is not None else 0.0
        n = len(facts)
        out[group] = {
            "r@10": round(at10 / n, 4),
            "r@3": round(at3 / n, 4),
            "mrr": round(reciprocal / n, 4),
        }
    return out


async def _unsupported(services: Services, tenant: str) -> int:
    graph, n = services.graph, 0
    for belief in await graph.beliefs.list(tenant):
        if belief.confidence > 0 and not await graph.beliefs.evidence(tenant, belief.uid):
            n += 1
    facts = await graph.facts.list(tenant)
    sources = await graph.facts.sources_many(tenant, [f.uid for f in facts])
    return n + sum(1 for f in facts if not sources.get(f.uid))


async def _vectors(services: Services, tenant: str) -> dict[str, int]:
    return {kind: await services.vectors.count(kind, tenant) for kind in VECTOR_KINDS}


Progress = Callable[[str, int, int], None]


def add_up(totals: dict[str, Any], report: dict[str, Any]) -> None:
    """Add one deep run's report to the year's totals: its counts, whether triage sent its
    reflection on to the deep reflection, the beliefs it revised, the seconds of each stage."""
    for key, value in report.items():
        if isinstance(value, int) and not isinstance(value, bool):
            totals[key] = totals.get(key, 0) + value
    totals["runs"] = totals.get("runs", 0) + 1
    reflection = report.get("reflection") or {}
    totals["reflections"] = totals.get("reflections", 0) + int(bool(reflection.get("reflected")))
    totals["reflection_revisions"] = totals.get("reflection_revisions", 0) + int(
        reflection.get("revisions") or 0
    )
    stages = totals.setdefault("stage_seconds", {})
    for stage, seconds in (report.get("stages") or {}).items():
        stages[stage] = round(stages.get(stage, 0.0) + float(seconds), 3)


async def bench_sleep(
    *,
    episodes: int = 2000,
    seed: int = 7,
    deep_every_days: int = 30,
    settings: Settings | None = None,
    work: Path | None = None,
    progress: Progress | None = None,
    ranking: str = "agent",
) -> SleepReport:
    """Run the simulated year in a fresh embedded memory under `work` (a temporary directory);
    the weekly questions retrieve with `RANKINGS[ranking]`."""
    weekly = RANKINGS[ranking]
    turns = generate(seed, episodes)
    base = settings or load_settings()
    own = work is None
    where = work or Path(tempfile.mkdtemp(prefix="mneme-sleep-"))
    config = offline_settings(base, where)
    built = build_embedder(config)
    preflight(built)  # a missing model: one line with the fix, before any work
    embedder = CachedEmbedder(built)
    report = SleepReport(
        episodes=len(turns),
        seed=seed,
        important_mentions=sum(1 for t in turns if t.kind not in ("small", "detail")),
        ranking=ranking,
    )
    rng = random.Random(seed + 1)
    sources: dict[str, dict[str, str]] = {"sleep": {}, "awake": {}}  # uid -> kind
    totals: dict[str, int] = {}
    slept_s = 0.0
    services = await Services.open(
        config, embedder=embedder, pipeline=run_episode, sweep_interval_s=None
    )
    started = time.perf_counter()
    try:
        week = 0
        next_deep = float(deep_every_days)
        details = [t.text for t in turns if t.kind == "detail"]
        for n, turn in enumerate(turns, start=1):
            while turn.day >= (week + 1) * 7:  # the week's questions, then maybe a deep sleep
                week += 1
                now = START + timedelta(days=week * 7)
                asked = [f.question for f in rng.sample(IMPORTANT, 3)]
                if details:
                    asked.append(rng.choice(details))
                for tenant in ("sleep", "awake"):
                    for question in asked:
                        await _ask(services, tenant, question, now, weekly)
                if week * 7 >= next_deep:
                    next_deep += deep_every_days
                    t0 = time.perf_counter()
                    done = await run_consolidation(services, "sleep", "deep", now.isoformat())
                    slept_s += time.perf_counter() - t0
                    add_up(totals, done["report"])
            at = START + timedelta(days=turn.day)
            ess = heuristic_assessment(turn.text).evidence.record()
            for tenant in ("sleep", "awake"):
                result = await remember(
                    services,
                    tenant=tenant,
                    thread_id=f"day-{int(turn.day)}",
                    user_text=turn.text,
                    agent_text="",
                    at=at,
                    ess=ess,
                    uid=None,
                )
                await run_episode(services, tenant, result.uid)
                sources[tenant][result.uid] = turn.kind
            if progress and (n % 20 == 0 or n == len(turns)):
                progress("simulated year", n, len(turns))
        end = START + timedelta(days=365)
        t0 = time.perf_counter()
        done = await run_consolidation(services, "sleep", "deep", end.isoformat())
        slept_s += time.perf_counter() - t0
        add_up(totals, done["report"])
        report.seconds["year"] = time.perf_counter() - started
        report.seconds["consolidation"] = slept_s
        # The deep pass summarises every finished session, the last of each thread included;
        # without it a thread's last session is never summarised. Summarising is not
        # forgetting, so `awake` gets the same session pass: both tenants then hold summaries
        # of the same sessions, and the vectors compared differ by what forgetting removed.
        await summarise_sessions(services, "awake", end)
        final = end + timedelta(days=1)
        for tenant in ("sleep", "awake"):
            hits, misses = 0, []
            for fact in IMPORTANT:
                found = await retrieve(services, tenant, fact.question, SIMPLE, final)
                top = [s for c in found for s in c.sources][:10]
                if any(sources[tenant].get(uid) == fact.key for uid in top):
                    hits += 1
                else:
                    misses.append(fact.key)
            report.recall_at_10[tenant] = hits / len(IMPORTANT)
            report.misses[tenant] = misses
            report.use_recall[tenant] = {
                name: await use_recall(services, tenant, recipe, sources[tenant], final)
                for name, recipe in VARIANTS.items()
            }
            kinds = await _vectors(services, tenant)
            report.vectors_by_kind[tenant] = kinds
            report.vectors[tenant] = sum(kinds.values())
            report.unsupported[tenant] = await _unsupported(services, tenant)
            report.episodes_left[tenant] = await services.graph.episodes.count(tenant)
            linked = await services.graph.episodes.connections(tenant, list(sources[tenant]))
            report.cornerstones[tenant] = sum(1 for n in linked.values() if is_cornerstone(n))
        calls = services.chat.totals.snapshot()  # every request of the bench, offline none
        report.consolidation = totals | {"llm_calls": sum(t["calls"] for t in calls.values())}
    finally:
        await services.close()
        if own:
            shutil.rmtree(where, ignore_errors=True)
    one, five, _ = os.getloadavg()
    report.machine = {"cpus": os.cpu_count(), "load_1m": round(one, 2), "load_5m": round(five, 2)}
    return report


async def bench_deep_scale(
    episodes: int = 10_000, *, seed: int = 7, settings: Settings | None = None
) -> dict[str, Any]:
    """Deep consolidation of `episodes` generated turns written straight to the graph as
    processed (no bookkeeping: no vectors, topics or facts), one year after the first: the
    cost of the pass itself (rescoring, classification, archiving, forgetting) and its LLM calls."""
    turns = generate(seed, episodes)
    base = settings or load_settings()
    where = Path(tempfile.mkdtemp(prefix="mneme-sleep-scale-"))
    config = offline_settings(base, where)
    services = await Services.open(config, sweep_interval_s=None)
    try:
        t0 = time.perf_counter()
        for i, turn in enumerate(turns):
            await services.graph.episodes.create(
                NewEpisode(
                    uid=stable_uid("scale", str(i)),
                    tenant="scale",
                    thread_id=f"day-{int(turn.day)}",
                    user_text=turn.text,
                    agent_text="",
                    created_at=START + timedelta(days=turn.day),
                    status=EpisodeStatus.PROCESSED,
                    ess=heuristic_assessment(turn.text).evidence.record(),
                )
            )
        written = time.perf_counter() - t0
        t0 = time.perf_counter()
        year = (START + timedelta(days=366)).isoformat()
        done = await run_consolidation(services, "scale", "deep", year)
        slept = time.perf_counter() - t0
        calls = services.chat.totals.snapshot()
    finally:
        await services.close()
        shutil.rmtree(where, ignore_errors=True)
    one, five, _ = os.getloadavg()
    return {
        "episodes": len(turns),
        "write_seconds": round(written, 1),
        "deep_seconds": round(slept, 1),
        "report": done["report"],
        "llm_calls": sum(t["calls"] for t in calls.values()),
        "machine": {"cpus": os.cpu_count(), "load_1m": round(one, 2), "load_5m": round(five, 2)},
    }
