"""mneme's memory as a Python API: add, search, get, pin, history, facts, beliefs, concepts,
diary, chapters, goals, emotions, delete, export, import and erase one user's memory, without running the agent.

```python
from serve.api import Memory

async with await Memory.open() as mem:          # the process settings (MNEME_*, NEO4J_*, ...)
    await mem.add("ada", "I moved to Porto last month")
    await mem.flush()                           # wait for bookkeeping (optional)
    hits = await mem.search("ada", "where does Ada live?")
```

Every call names the user (the tenant) first; nothing reads or writes another user's data.
`add` goes through the agent's durable write path (`memory.write.episodes.remember`) and queues the
episode's bookkeeping on the process queue, the one pipeline the agent uses; `search` is the
retrieval the agent runs (no LLM). The graph is the source of truth: `import_` replays the
exported episodes through that same write path and pipeline (as `mneme reindex` does), so
derived knowledge is rebuilt rather than copied. Errors a caller can fix are `InvalidInput`
(what was wrong, naming the field) and `NotFound` (an unknown uid, or another user's).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import datetime, timedelta
from types import TracebackType
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from graph import telemetry
from memory.beliefs.evidence import list_active_beliefs
from memory.beliefs.features import index_features
from memory.beliefs.sleep import journal as belief_journal
from memory.knowledge.facts import index_facts
from memory.knowledge.goals import release_episode as release_goals
from memory.knowledge.rules import point_id
from memory.retrieval.recipes import get_recipe, sized
from memory.retrieval.retrieve import retrieve
from memory.schema import (
    ESS,
    VECTOR_KINDS,
    Belief,
    Episode,
    EpisodeSource,
    Fact,
    FactPrecision,
    GoalStatus,
    episode_uid,
    new_uid,
    stable_uid,
    utcnow,
)
from memory.services import Services
from memory.settings import Settings, get_settings
from memory.sleep.chapters import Chapter, load_chapters, save_chapters
from memory.sleep.concepts import release_episode
from memory.sleep.pins import set_pinned
from memory.sleep.reveries import list_reveries, restore_reverie
from memory.stores.base import NotFound
from memory.tenant import InvalidTenant, TenantId, tenant_id
from memory.write.compression import ThreadLayers, all_layers, save_layers
from memory.write.episodes import Conflict, remember
from memory.write.filing import drain_outbox
from memory.write.imports import export_key, import_turn, uid_proof
from memory.write.limits import InvalidInput, TooLarge, check_time, check_turn
from memory.write.sessions import without_episode

__all__ = [
    "AddResult",
    "Conflict",
    "BeliefView",
    "ConceptView",
    "DeleteReport",
    "DiaryView",
    "EraseReport",
    "ExportedEpisode",
    "FactView",
    "InvalidInput",
    "Memory",
    "MemoryExport",
    "MemoryItem",
    "Message",
    "NotFound",
    "SearchHit",
    "TooLarge",
]

log = logging.getLogger(__name__)

DEFAULT_THREAD = "api"
EXPORT_FORMAT: Literal["mneme-export"] = "mneme-export"
EXPORT_VERSION: Literal[1] = 1
MAX_SEARCH_K = 100
"""The most results one `Memory.search` returns (REST `k`, MCP `recall`, the store's search)."""
Kind = Literal["episode", "fact"]


# --------------------------------------------------------------------------- value types


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Message(_Model):
    """One chat message to remember: a user turn, or the assistant's reply to the one before."""

    role: Literal["user", "assistant"]
    content: str = Field(max_length=4_000_000)
    id: str | None = Field(
        default=None,
        max_length=512,
        description="The message's own id: adding it again is a no-op (idempotent retries).",
    )


class AddResult(_Model):
    """The episodes `add` wrote (one per user turn with its reply), in order."""

    uids: list[str]
    duplicates: list[str] = Field(
        default_factory=list, description="Uids that were already remembered (written once)."
    )


class MemoryItem(_Model):
    """One stored memory: an episode (a turn) or a fact."""

    uid: str
    kind: Kind
    text: str
    created_at: datetime
    thread_id: str | None = None
    status: str | None = Field(default=None, description="An episode's bookkeeping status.")
    pinned: bool = Field(
        default=False, description="An episode kept whatever consolidation decides (`pin`)."
    )
    sources: list[str] = Field(default_factory=list, description="Episodes a fact comes from.")


class SearchHit(_Model):
    """One search result, best first."""

    uid: str
    kind: Kind
    text: str
    score: float
    created_at: datetime
    sources: list[str] = Field(default_factory=list)


class FactView(_Model):
    """A fact (one version of it) as callers see it."""

    uid: str
    text: str
    kind: str
    subject: str
    attribute: str
    value: str
    valid_from: datetime
    valid_to: datetime | None
    current: bool
    superseded_by: str | None
    confidence: float
    grounding: float
    sources: list[str]
    precision: str = FactPrecision.RELATIVE.value
    """How precisely it is placed in time: exact, approximate, relative or unbounded (timeless)."""


class BeliefView(_Model):
    """One of the agent's beliefs about a topic, shaped by what this user said."""

    uid: str
    topic: str
    statement: str
    valence: float
    confidence: float
    evidence_count: int
    contested: bool
    updated_at: datetime


class ConceptView(_Model):
    """A concept the daily sleep formed: turns that recur across days, and the facts they state."""

    uid: str
    label: str
    description: str
    terms: list[str]
    episode_count: int
    day_count: int
    first_seen: datetime
    last_seen: datetime
    loop: str = Field(description="The weekday it keeps coming up on; empty when none.")
    loop_count: int
    loop_emotion: str = Field(
        default="", description="The emotion that recurs with the loop; empty when none."
    )
    episodes: list[str]
    facts: list[str]


class DiaryView(_Model):
    """The agent's diary entry for one day (UTC), with the turns it recounts."""

    day: str
    text: str
    episode_count: int
    concepts: list[str]
    sources: list[str]
    written_at: datetime


class GoalView(_Model):
    """A goal: what someone works towards (its goal fact), where it stands and why."""

    uid: str
    fact_uid: str
    text: str
    subject: str
    status: GoalStatus
    reason: str
    evidence_uid: str | None = Field(description="The episode the status rests on.")
    stated_at: datetime
    changed_at: datetime


class EmotionView(_Model):
    """An emotion a person named in one turn, with the turn's intensity (0..1)."""

    episode_uid: str
    person: str
    name: str
    intensity: float
    felt_at: datetime


class DeleteReport(_Model):
    """What `delete` removed: the memory itself and what was derived from it alone."""

    uid: str
    kind: Kind
    facts_deleted: list[str] = Field(default_factory=list)
    facts_kept: list[str] = Field(
        default_factory=list, description="Facts this episode stated that other episodes state too."
    )
    features_deleted: list[str] = Field(default_factory=list)
    beliefs_deleted: list[str] = Field(default_factory=list)
    summaries_changed: list[str] = Field(
        default_factory=list,
        description="Session summaries rebuilt without this episode (or removed with it).",
    )


class EraseReport(_Model):
    """What `erase` removed (0 and 0 when the user had nothing)."""

    user: str
    graph_records: int
    vector_points: int


class ExportedEpisode(_Model):
    """An episode as exported: what was said, when, in which thread, and its evidence score."""

    uid: str
    thread_id: str
    user_text: str
    agent_text: str
    created_at: datetime
    ess: ESS | None = None
    pinned: bool = False
    source: EpisodeSource = EpisodeSource.STATED
    """Where its words came from: stated (the user's own), third_party, inferred (an app's)."""
    proof: str | None = Field(
        default=None,
        description="Proof that this installation exported this uid from this user "
        "(memory.write.imports): an import keeps the uid only with it, else derives one.",
    )


class ExportedReverie(_Model):
    """The faded impression a forgotten episode left (`memory.sleep.reveries`)."""

    episode_uid: str
    impression: str
    created_at: datetime
    faded_at: datetime
    neighbours: list[str] = Field(default_factory=list)


class MemoryExport(_Model):
    """Everything mneme holds about one user (the right of access). `import_` replays the
    episodes; the derived records are there to be read, and are rebuilt on import (concepts
    and the diary at the next daily sleep, emotions and goals by bookkeeping, goal statuses at
    the next deep sleep)."""

    format: Literal["mneme-export"] = EXPORT_FORMAT
    version: Literal[1] = EXPORT_VERSION
    user: str
    exported_at: datetime
    episodes: list[ExportedEpisode]
    facts: list[FactView] = Field(default_factory=list)
    beliefs: list[BeliefView] = Field(default_factory=list)
    belief_changes: list[dict[str, object]] = Field(
        default_factory=list,
        description="The belief journal: each change sleep made to a belief, and why.",
    )
    features: list[dict[str, object]] = Field(default_factory=list)
    snapshots: list[dict[str, object]] = Field(default_factory=list)
    concepts: list[ConceptView] = Field(default_factory=list)
    diary: list[DiaryView] = Field(default_factory=list)
    chapters: list[Chapter] = Field(default_factory=list)
    """The chapters deep sleep drew (spans, themes and how they moved); `import_` writes them
    back when the user has none."""
    goals: list[GoalView] = Field(default_factory=list)
    emotions: list[EmotionView] = Field(default_factory=list)
    summaries: list[dict[str, object]] = Field(default_factory=list)
    """Session summaries (text, topics, span, the episodes summarised), oldest first."""
    threads: list[ThreadLayers] = Field(default_factory=list)
    """Each thread's compressed layers (key exchanges, summary, impression), by thread id."""
    reveries: list[ExportedReverie] = Field(default_factory=list)
    """What forgotten episodes left, oldest memory first; `import_` writes them back."""


# --------------------------------------------------------------------------- helpers


def fact_view(fact: Fact, sources: Sequence[str]) -> FactView:
    """A stored fact as callers see it."""
    return FactView(
        uid=fact.uid,
        text=fact.text,
        kind=fact.kind.value,
        precision=fact.precision.value,
        subject=fact.subject,
        attribute=fact.attribute,
        value=fact.value,
        valid_from=fact.valid_from,
        valid_to=fact.valid_to,
        current=fact.superseded_by is None,
        superseded_by=fact.superseded_by,
        confidence=fact.confidence,
        grounding=fact.grounding,
        sources=sorted(sources),
    )


def belief_view(belief: Belief) -> BeliefView:
    """A stored belief as callers see it."""
    return BeliefView(**belief.model_dump(exclude={"tenant"}))


def _episode_item(episode: Episode) -> MemoryItem:
    return MemoryItem(
        uid=episode.uid,
        kind="episode",
        text=episode.content,
        created_at=episode.created_at,
        thread_id=episode.thread_id,
        status=episode.status.value,
        pinned=episode.pinned,
        sources=[episode.uid],
    )


def _check_user(user: str) -> TenantId:
    """The user as a tenant id (`memory.tenant`): refused with `InvalidInput`, never trimmed."""
    try:
        return tenant_id(user, name="user")
    except InvalidTenant as exc:
        raise InvalidInput(str(exc)) from None


def _check_uid(uid: str) -> str:
    if not isinstance(uid, str) or not uid.strip() or len(uid) > 512:
        raise InvalidInput("uid must be a non-empty string of at most 512 characters")
    return uid


def _when(value: object) -> datetime:
    """A caller's time as aware UTC (default now), no later than now plus the skew."""
    if value is None:
        return utcnow()
    if not isinstance(value, datetime):
        raise InvalidInput(f"when must be a date and time, not {type(value).__name__}")
    return check_time("when", value)


def _check_turn(where: str, limit: int, thread: str, user_text: str, agent_text: str) -> None:
    """`memory.write.limits.check_turn` with the API's field names (content, reply)."""
    try:
        check_turn(
            where,
            limit=limit,
            thread_id=thread,
            user_text=user_text,
            agent_text=agent_text,
            at=None,
        )
    except InvalidInput as exc:
        message = str(exc).replace(f"{where}.user_text", f"{where}.content")
        message = message.replace(f"{where}.agent_text", f"{where}.reply")
        message = message.replace(f"{where}.thread_id", "thread")
        raise type(exc)(message) from None


def _turns(
    messages: str | Sequence[Message | Mapping[str, object]],
) -> list[tuple[str, str, str | None]]:
    """(user text, assistant text, source id) per turn: a user message with the assistant reply
    that follows it; a reply with no user message before it is a turn of its own."""
    if isinstance(messages, str):
        return [(messages, "", None)]
    if not isinstance(messages, Sequence) or not messages:
        raise InvalidInput("messages must be a non-empty string or list of messages")
    parsed: list[Message] = []
    for i, m in enumerate(messages):
        try:
            parsed.append(m if isinstance(m, Message) else Message.model_validate(m))
        except ValueError as exc:
            raise InvalidInput(f"messages[{i}]: {_first_error(exc)}") from None
    turns: list[tuple[str, str, str | None]] = []
    for m in parsed:
        if m.role == "assistant" and turns and not turns[-1][1] and turns[-1][0]:
            user_text, _, source = turns[-1]
            turns[-1] = (user_text, m.content, source)
        elif m.role == "assistant":
            turns.append(("", m.content, m.id))
        else:
            turns.append((m.content, "", m.id))
    return turns


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
    return str(exc)


# --------------------------------------------------------------------------- the API


class Memory:
    """One process's access to mneme's memory, scoped by user on every call."""

    def __init__(self, services: Services, *, owns: bool = False) -> None:
        """Wrap open services (a server's, a test's); `owns`: `close()` closes them too. What
        `add` writes is bookkept by the pipeline the services were opened with (a server's
        lifespan and `Memory.open` give them the bookkeeping graph; without one it stays
        `pending` for the sweep of a process that has one)."""
        self.services = services
        self._owns = owns

    @classmethod
    async def open(cls, settings: Settings | None = None) -> Self:
        """Open the stores the settings name (default: the process settings from the
        environment) with the bookkeeping graph as their pipeline; `close()` (or `async with`)
        releases them."""
        from graph.bookkeeping import run_episode  # the graphs load only when memory is opened

        telemetry.configure()  # spans exported only when an OTLP endpoint is configured
        services = await Services.open(settings or get_settings(), pipeline=run_episode)
        return cls(services, owns=True)

    async def close(self) -> None:
        """Release the stores if this object opened them (queued bookkeeping stays `pending`
        for the next sweep: call `flush()` first to finish it)."""
        if self._owns:
            await self.services.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def flush(self) -> None:
        """Wait until every queued episode's bookkeeping has run (bound it with
        `asyncio.timeout`)."""
        await self.services.bookkeeping.drain()

    # ---- writes

    @telemetry.traced("create_memory")
    async def add(
        self,
        user: str,
        messages: str | Sequence[Message | Mapping[str, object]],
        *,
        when: datetime | None = None,
        thread: str = DEFAULT_THREAD,
    ) -> AddResult:
        """Remember a text (one turn) or chat messages (a user message and the assistant reply
        after it form one turn) as the user's episodes, durably, and queue their bookkeeping.

        `when` is the first turn's time (default now; later turns follow 1 ms apart), no later
        than now plus `memory.write.limits.FUTURE_SKEW`. A message with an `id` is idempotent:
        adding it again writes nothing (`duplicates`); adding an id already remembered with
        other words raises `Conflict` (nothing written for it, nor for the turns after it).
        Raises `InvalidInput` naming the field for an empty or oversized message (`TooLarge`), a
        bad thread or a future `when`; nothing is written then (every turn is checked before the
        first is).
        """
        tenant = _check_user(user)
        turns = _turns(messages)
        start = _when(when)
        limit = self.services.settings.max_message_bytes
        for i, (user_text, agent_text, _) in enumerate(turns):
            _check_turn(f"messages[{i}]", limit, thread, user_text, agent_text)
        check_time("when", start + timedelta(milliseconds=len(turns) - 1))
        result = AddResult(uids=[])
        for i, (user_text, agent_text, source) in enumerate(turns):
            try:
                done = await remember(
                    self.services,
                    tenant=tenant,
                    thread_id=thread,
                    user_text=user_text,
                    agent_text=agent_text,
                    at=start + timedelta(milliseconds=i),
                    uid=episode_uid(tenant, thread, source) if source else new_uid(),
                )
            except Conflict:
                raise Conflict(
                    f"messages[{i}].id {source!r} was already remembered with other words; an id "
                    "names one message: send the changed message under a new id"
                ) from None
            result.uids.append(done.uid)
            if done.duplicate:
                result.duplicates.append(done.uid)
            self.services.bookkeeping.submit(tenant, done.uid)
        return result

    async def pin(self, user: str, uid: str) -> MemoryItem:
        """Pin an episode: consolidation never archives, expires or forgets it, and it does not
        decay. An archived episode is restored (its vectors rebuilt by bookkeeping). Idempotent;
        raises `NotFound` for a uid that is not one of the user's episodes."""
        tenant = _check_user(user)
        return _episode_item(await set_pinned(self.services, tenant, _check_uid(uid), True))

    async def unpin(self, user: str, uid: str) -> MemoryItem:
        """Unpin an episode: an ordinary memory again. Idempotent; `NotFound` as for `pin`."""
        tenant = _check_user(user)
        return _episode_item(await set_pinned(self.services, tenant, _check_uid(uid), False))

    @telemetry.traced("delete_memory")
    async def delete(self, user: str, uid: str) -> DeleteReport:
        """Delete an episode and what was derived from it alone (its vectors, the facts,
        features and beliefs no other episode supports; facts it shared keep their other
        sources and are re-pointed; its session's summary is rebuilt from the session's other
        turns, or removed with its last one), or a fact (with its vector). Raises `NotFound` for a uid
        the user does not have. Vectors go first, the episode last, so a delete interrupted
        part way is finished by calling it again."""
        tenant = _check_user(user)
        _check_uid(uid)
        graph, vectors = self.services.graph, self.services.vectors
        episode = await graph.episodes.get(tenant, uid)
        if episode is None:
            if not await graph.facts.delete(tenant, uid):
                raise NotFound(f"no memory {uid!r} for this user")
            await vectors.delete_points("knowledge", tenant, [point_id(tenant, uid)])
            return DeleteReport(uid=uid, kind="fact", facts_deleted=[uid])
        report = DeleteReport(uid=uid, kind="episode")
        facts = await graph.facts.list(tenant, include_superseded=True)
        sources = await graph.facts.sources_many(tenant, [f.uid for f in facts])
        shared: list[Fact] = []
        for fact in facts:
            cited = sources.get(fact.uid, [])
            if uid in cited and len(cited) == 1:
                report.facts_deleted.append(fact.uid)
            elif uid in cited:
                report.facts_kept.append(fact.uid)
                shared.append(fact)
        features = await graph.features.list(tenant)
        feature_sources = {f.uid: await graph.features.sources(tenant, f.uid) for f in features}
        report.features_deleted = [k for k, v in feature_sources.items() if v == [uid]]
        for belief in await graph.beliefs.list(tenant):
            evidence = await graph.beliefs.evidence(tenant, belief.uid, limit=2)
            if evidence and all(e.episode_uid == uid for e in evidence):
                report.beliefs_deleted.append(belief.uid)

        await vectors.delete_by_episode(
            tenant, uid, kinds=[k for k in VECTOR_KINDS if k not in ("knowledge", "features")]
        )
        await vectors.delete_points(
            "knowledge", tenant, [point_id(tenant, f) for f in report.facts_deleted]
        )
        await vectors.delete_points(
            "features",
            tenant,
            [stable_uid(tenant, "feature-point", f) for f in report.features_deleted],
        )
        for fact_uid in report.facts_deleted:
            await graph.facts.delete(tenant, fact_uid)
        for feature_uid in report.features_deleted:
            await graph.features.delete(tenant, feature_uid)
        for belief_uid in report.beliefs_deleted:
            await graph.beliefs.delete(tenant, belief_uid)
        await release_episode(self.services, tenant, uid)
        await release_goals(self.services, tenant, uid, utcnow())
        report.summaries_changed = await graph.summaries.of_episode(tenant, uid)
        await without_episode(self.services, tenant, uid)  # rebuilt before the episode goes
        await graph.episodes.delete(tenant, uid)
        # Shared facts' points named this episode as their source when it was the first one.
        await index_facts(self.services, tenant, shared)
        if any(uid in v for v in feature_sources.values()):
            await index_features(self.services, tenant)
        return report

    @telemetry.traced("delete_memory_store")
    async def erase(self, user: str) -> EraseReport:
        """Delete every node, edge, state row and vector point of the user, in both stores.

        Queued bookkeeping and the outbox are finished first (so nothing of the user is written
        back afterwards), then the graph, then every vector collection. Idempotent; re-running
        it after a crash part way finishes it.
        """
        tenant = _check_user(user)
        await drain_outbox(self.services, submit=False)
        await self.flush()
        records = await self.services.graph.erase_tenant(tenant)
        points = 0
        for kind in VECTOR_KINDS:
            ids = [hit.id for hit in await self.services.vectors.scroll_points(kind, tenant)]
            if ids:
                await self.services.vectors.delete_points(kind, tenant, ids)
                points += len(ids)
        log.info("erased user %r: %d graph records, %d vector points", tenant, records, points)
        return EraseReport(user=tenant, graph_records=records, vector_points=points)

    async def import_(self, user: str, export: MemoryExport | Mapping[str, object]) -> AddResult:
        """Replay an export's episodes as the user's, in time order, through the write path and
        the bookkeeping pipeline (run here, one episode after another, as `mneme ingest` does),
        so facts, beliefs and vectors are rebuilt as they were built. Episodes the user already
        has are skipped (idempotent). An episode keeps its uid only when the user has it already
        or the export's proof shows this installation exported it from this user; any other gets
        a uid derived from this user (`memory.write.imports`), so an import never claims a uid
        another user will need, and answers alike whatever other users hold. The whole export is
        checked first (`memory.write.limits`: sizes, times, threads): one bad episode raises
        `InvalidInput` naming it (`TooLarge` for an oversized one) and nothing is written. Then
        the threads' layers are put back as exported (replacing those the replay built, with
        the uids the replay gave), the chapters written back (when the user has none) and the
        reveries written back (their blurred embeddings made from their impressions)."""
        tenant = _check_user(user)
        try:
            data = (
                export if isinstance(export, MemoryExport) else MemoryExport.model_validate(export)
            )
        except ValueError as exc:
            raise InvalidInput(f"export: {_first_error(exc)}") from None
        limit, now = self.services.settings.max_message_bytes, utcnow()
        for i, ep in enumerate(data.episodes):
            check_turn(
                f"episodes[{i}]",
                limit=limit,
                thread_id=ep.thread_id,
                user_text=ep.user_text,
                agent_text=ep.agent_text,
                at=ep.created_at,
                now=now,
            )
        for i, r in enumerate(data.reveries):  # written back after the replay: checked now too
            # (not its times: a sleep run with a simulated `--now` fades a memory in the future)
            if len(r.impression.encode("utf-8", "surrogatepass")) > limit:
                raise TooLarge(f"reveries[{i}].impression is over MNEME_MAX_MESSAGE_BYTES")
        pipeline = self.services.bookkeeping.pipeline
        if pipeline is None:
            raise RuntimeError(
                "import_ rebuilds memory through bookkeeping, and these services were opened "
                "without a pipeline: use Memory.open(), or Services.open(pipeline=run_episode)"
            )
        result = AddResult(uids=[])
        given: dict[str, str] = {}
        key = export_key(self.services.settings.data_dir)
        for ep in sorted(data.episodes, key=lambda e: (e.created_at, e.uid)):
            done = await import_turn(
                self.services,
                tenant,
                key,
                uid=ep.uid,
                proof=ep.proof,
                thread_id=ep.thread_id,
                user_text=ep.user_text,
                agent_text=ep.agent_text,
                created_at=ep.created_at,
                ess=ep.ess,
                source=ep.source,
            )
            result.uids.append(done.uid)
            given[ep.uid] = done.uid
            if done.duplicate:
                result.duplicates.append(done.uid)
            await pipeline(self.services, tenant, done.uid)
            if ep.pinned:
                await self.services.graph.episodes.set_pinned(tenant, done.uid, True)

        def mapped(uid: str) -> str:
            """The uid the replay gave; a forgotten turn's (a reverie's) as the turns' would be."""
            if uid in given:
                return given[uid]
            return uid if data.user == tenant else stable_uid(tenant, "imported", uid)

        async with self.services.locks.get("thread", tenant):
            for layers in data.threads:
                exchanges = [x.model_copy(update={"uid": mapped(x.uid)}) for x in layers.exchanges]
                covered = mapped(layers.covered_uid) if layers.covered_uid else None
                await save_layers(
                    self.services.graph,
                    tenant,
                    layers.model_copy(update={"exchanges": exchanges, "covered_uid": covered}),
                )
        if data.chapters and not await load_chapters(self.services.graph, tenant):
            await save_chapters(self.services.graph, tenant, data.chapters)
        for r in data.reveries:
            await restore_reverie(
                self.services,
                tenant,
                mapped(r.episode_uid),
                r.impression,
                r.created_at,
                r.faded_at,
                [mapped(n) for n in r.neighbours],
            )
        return result

    # ---- reads

    @telemetry.traced("search_memory")
    async def search(
        self,
        user: str,
        query: str,
        *,
        k: int = 10,
        kinds: Sequence[Kind] = ("episode", "fact"),
    ) -> list[SearchHit]:
        """The user's memories that best answer `query` (mneme's retrieval, no LLM), best
        first: `k` of the given kinds (1 to `MAX_SEARCH_K`), fewer when fewer match.
        Read-only (it does not count as an access)."""
        tenant = _check_user(user)
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query must be a non-empty string")
        if not isinstance(k, int) or not 1 <= k <= MAX_SEARCH_K:
            raise InvalidInput(f"k must be an integer from 1 to {MAX_SEARCH_K}")
        unknown = set(kinds) - {"episode", "fact"}
        if unknown or not kinds:
            raise InvalidInput("kinds must name 'episode' and/or 'fact'")
        recipe = sized(get_recipe("SIMPLE"), k)  # k of each kind, where the recipe returns fewer
        found = await retrieve(self.services, tenant, query, recipe, utcnow())
        hits = [
            SearchHit(
                uid=c.uid or c.episode_uid,
                kind=c.kind,
                text=c.content,
                score=round(float(c.score), 6),
                created_at=c.created_at,
                sources=list(c.sources),
            )
            for c in found
            if c.kind in kinds
        ]
        return hits[:k]

    async def get(self, user: str, uid: str) -> MemoryItem:
        """One memory by uid: an episode or a fact. Raises `NotFound` (also for another
        user's uid)."""
        tenant = _check_user(user)
        _check_uid(uid)
        episode = await self.services.graph.episodes.get(tenant, uid)
        if episode is not None:
            return _episode_item(episode)
        fact = await self.services.graph.facts.get(tenant, uid)
        if fact is None:
            raise NotFound(f"no memory {uid!r} for this user")
        return MemoryItem(
            uid=fact.uid,
            kind="fact",
            text=fact.text,
            created_at=fact.learned_at or fact.valid_from,
            sources=await self.services.graph.facts.sources(tenant, uid),
        )

    async def history(self, user: str, uid: str) -> list[FactView]:
        """Every version of a fact, oldest first: what it superseded, itself, what superseded
        it. Raises `NotFound` unless `uid` is one of the user's facts."""
        tenant = _check_user(user)
        _check_uid(uid)
        graph = self.services.graph
        if await graph.facts.get(tenant, uid) is None:
            raise NotFound(f"no fact {uid!r} for this user")
        facts = {f.uid: f for f in await graph.facts.list(tenant, include_superseded=True)}
        before = {f.superseded_by: f.uid for f in facts.values() if f.superseded_by}
        chain = [uid]
        while chain[0] in before and before[chain[0]] not in chain:
            chain.insert(0, before[chain[0]])
        while (nxt := facts[chain[-1]].superseded_by) in facts and nxt not in chain:
            chain.append(nxt)
        sources = await graph.facts.sources_many(tenant, chain)
        return [fact_view(facts[u], sources.get(u, [])) for u in chain]

    async def facts(self, user: str, *, history: bool = False) -> list[FactView]:
        """The user's current facts (with `history`, superseded ones too), oldest first."""
        tenant = _check_user(user)
        graph = self.services.graph
        facts = await graph.facts.list(tenant, include_superseded=history)
        sources = await graph.facts.sources_many(tenant, [f.uid for f in facts])
        return [fact_view(f, sources.get(f.uid, [])) for f in facts]

    async def beliefs(self, user: str) -> list[BeliefView]:
        """The agent's beliefs shaped by this user's conversations, by topic."""
        tenant = _check_user(user)
        return [belief_view(b) for b in await list_active_beliefs(self.services.graph, tenant)]

    async def concepts(self, user: str) -> list[ConceptView]:
        """The concepts daily sleep formed from the user's turns, oldest first, with their
        narrative loop and members (empty until `mneme consolidate --level daily` has run)."""
        tenant = _check_user(user)
        graph = self.services.graph
        views = []
        for c in await graph.concepts.list(tenant):
            members = await graph.concepts.members(tenant, c.uid)
            row = c.model_dump(exclude={"tenant", "updated_at"})
            views.append(ConceptView(**row, episodes=members.episodes, facts=members.facts))
        return views

    async def diary(self, user: str) -> list[DiaryView]:
        """The agent's diary of its days with the user, oldest day first (written by daily
        sleep)."""
        tenant = _check_user(user)
        graph = self.services.graph
        return [
            DiaryView(
                day=e.day,
                text=e.text,
                episode_count=e.episode_count,
                concepts=list(e.concepts),
                sources=await graph.diary.sources(tenant, e.uid),
                written_at=e.created_at,
            )
            for e in await graph.diary.list(tenant)
        ]

    async def chapters(self, user: str) -> list[Chapter]:
        """The chapters of the user's time with the agent, oldest first, each with its themes
        and how they moved (written by deep sleep; empty before the first)."""
        return await load_chapters(self.services.graph, _check_user(user))

    async def goals(self, user: str, status: GoalStatus | str | None = None) -> list[GoalView]:
        """The user's goals (of one status, or all), oldest first, with the reason and evidence
        of their status (reassessed at deep sleep)."""
        tenant = _check_user(user)
        if status is not None and status not in set(GoalStatus):
            known = ", ".join(s.value for s in GoalStatus)
            raise InvalidInput(f"unknown goal status {status!r}; use one of {known}")
        wanted = None if status is None else GoalStatus(status)
        return [
            GoalView(**g.model_dump(exclude={"tenant"}))
            for g in await self.services.graph.goals.list(tenant, wanted)
        ]

    async def emotions(self, user: str) -> list[EmotionView]:
        """The emotions the user's turns named, oldest first."""
        tenant = _check_user(user)
        return [
            EmotionView(**e.model_dump(exclude={"tenant", "uid"}))
            for e in await self.services.graph.emotions.list(tenant)
        ]

    async def export(self, user: str) -> MemoryExport:
        """Everything mneme holds about the user: episodes (oldest first), every fact version
        with its sources, beliefs and the journal of their changes, features, personality
        snapshots, concepts, the diary, the chapters, goals, emotions, session summaries, the
        threads' compressed layers and the reveries forgotten episodes left."""
        tenant = _check_user(user)
        graph = self.services.graph
        uids = await graph.episodes.list_uids(tenant)
        episodes = sorted(
            await graph.episodes.get_many(tenant, uids), key=lambda e: (e.created_at, e.uid)
        )
        key = export_key(self.services.settings.data_dir)
        features = []
        for f in await graph.features.list(tenant):
            row = f.model_dump(mode="json", exclude={"tenant"})
            row["sources"] = await graph.features.sources(tenant, f.uid)
            features.append(row)
        return MemoryExport(
            user=tenant,
            exported_at=utcnow(),
            episodes=[
                ExportedEpisode(
                    uid=e.uid,
                    thread_id=e.thread_id,
                    user_text=e.user_text,
                    agent_text=e.agent_text,
                    created_at=e.created_at,
                    ess=e.ess,
                    pinned=e.pinned,
                    source=e.source,
                    proof=uid_proof(key, tenant, e.uid),
                )
                for e in episodes
            ],
            facts=await self.facts(tenant, history=True),
            beliefs=await self.beliefs(tenant),
            belief_changes=[asdict(c) for c in await belief_journal(self.services, tenant)],
            features=features,
            snapshots=[
                s.model_dump(mode="json", exclude={"tenant"})
                for s in await graph.snapshots.history(tenant)
            ],
            concepts=await self.concepts(tenant),
            diary=await self.diary(tenant),
            chapters=await self.chapters(tenant),
            goals=await self.goals(tenant),
            emotions=await self.emotions(tenant),
            summaries=[
                s.model_dump(mode="json", exclude={"tenant"})
                for s in await graph.summaries.list(tenant)
            ],
            threads=await all_layers(graph, tenant),
            reveries=[
                ExportedReverie.model_validate(r)
                for r in await list_reveries(self.services, tenant)
            ],
        )
