"""The graphs' states: the agent's (messages plus what each node decided this turn) and the
bookkeeping graph's (one episode's progress), and the typed values of their channels.

Values are plain JSON-friendly data (TypedDicts of strings, numbers, lists) so that
checkpointers, the HTTP API and Studio show them as they are; Pydantic models stay at the LLM
boundary inside `tasks/`, and `route_state`, `evidence_state` and `found_state` turn a task's
answer into its channel's value. A channel's default, when a node runs before the node that
sets it (a hand-built state in a test, a node that failed), has one home here: `turn_of`,
`route_of`. This module imports nothing from `nodes/`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, cast

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from memory.retrieval.candidates import Candidate, Source
from memory.schema import Episode, ReasoningType
from memory.services.usage import merge_usage
from memory.stores.errors import NotFound
from tasks.content import Turn, read_turn
from tasks.ess import EvidenceScore, Urgency
from tasks.route import RouteDecision, RouteKind


def merge_stages(
    done: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The sleep stages' outputs so far, with those of the stage that just ran."""
    return {**done, **new}


# Field docstrings become descriptions in the schemas the server publishes (Studio shows them).
_DESCRIBED = ConfigDict(use_attribute_docstrings=True)


@with_config(_DESCRIBED)
class SearchPlan(TypedDict):
    """One search over memory the router asked for (`tasks.route.SearchPass`)."""

    query: str | None
    """The rewritten search query; null searches with the message as asked."""
    signal_weights: dict[str, float]
    """How much each credibility signal of a memory adds to its score (0-0.3 each)."""


@with_config(_DESCRIBED)
class Route(TypedDict):
    """The router's decision for the turn (`tasks.route.RouteDecision`, after the context's
    overrides)."""

    kind: RouteKind
    """NONE (no memory), SIMPLE, TEMPORAL, AGGREGATION or BELIEF_QUERY."""
    n_results: int | None
    """Memories the reply gets (the recipe's default once the router ran)."""
    temporal_expansion: bool
    """Also bring the turns just before and after each memory."""
    search_features: bool
    """Also search the agent's own semantic features."""
    passes: list[SearchPlan]
    """The searches to run (none: one search with the message as asked)."""


@with_config(_DESCRIBED)
class Evidence(TypedDict):
    """The Evidence Strength Score of the user's message (`tasks.ess.EvidenceScore`) and, once the
    gate ran, its verdict."""

    score: float
    """Overall evidence strength, 0-1."""
    specificity: float
    """Concrete, precise claims, 0-1."""
    grounding: float
    """Tied to observations, measurements or data, 0-1."""
    rigor: float
    """Careful method or reasoning, calibrated claims, 0-1."""
    source_quality: float
    """Credible, checkable sources or experts, 0-1."""
    objectivity: float
    """Free of emotion, pressure and loaded language, 0-1."""
    reasoning_type: ReasoningType
    """How the message argues."""
    topics: list[str]
    """Short topics the message bears on."""
    summary: str
    """One line: what the user claims or asks."""
    belief_update_recommended: bool
    """The scorer's own recommendation (the gate decides, `passed`)."""
    urgency: Urgency
    """low, medium or high."""
    manipulative: NotRequired[bool]
    """Set by the gate: the reasoning type freezes the sponge."""
    passed: NotRequired[bool]
    """Set by the gate: beliefs may move on this message."""


Outcome = Literal["stored", "outbox", "not_remembered", "refused", "empty", "conflict"]


@with_config(_DESCRIBED)
class Earlier(TypedDict, total=False):
    """How an earlier user message of the run was recorded, when not stored normally."""

    uid: str
    """Its episode's uid ('' when it was refused before one was made)."""
    outcome: Outcome
    """outbox, not_remembered, refused or conflict."""
    reason: str
    """Why."""


@with_config(_DESCRIBED)
class Recorded(TypedDict, total=False):
    """The episode this turn was stored as, and how the write went (`record`, then `remember`)."""

    outcome: Outcome
    """stored (graph store), outbox (kept locally until the store is back), not_remembered,
    refused (too large, or invalid), conflict (its id names an earlier message with other
    words: not written) or empty (no text)."""
    stored: bool
    """True when the user's message is durable (graph store or outbox)."""
    reason: str
    """Why it was not stored normally."""
    uid: str
    """The episode's uid (its source: tenant, thread, message id)."""
    thread_id: str
    """The thread the episode belongs to."""
    created_at: str
    """When the message was recorded (ISO 8601)."""
    chars: int
    """The message's size in bytes (UTF-8)."""
    removed_nul: int
    """NUL characters no store keeps, left out of the message."""
    duplicate: bool
    """True when the episode was already stored (a retried run)."""
    scheduled: bool
    """True when its bookkeeping was queued (else the sweep finishes it)."""
    reply_stored: bool | Literal["outbox"]
    """Whether the reply was attached (True), kept in the outbox, or lost (False)."""
    earlier: list[Earlier]
    """The run's earlier user messages (before the one the reply answers) not stored normally."""


@with_config(_DESCRIBED)
class Found(TypedDict):
    """A memory retrieval brought back (`memory.retrieval.candidates.Candidate` as JSON)."""

    episode_uid: str
    """The episode it is, or (for a fact) its first source episode."""
    score: float
    """Final retrieval score (higher is better)."""
    similarity: float | None
    """Best dense cosine similarity of any of its points (null: not measured)."""
    created_at: str
    """When it was said (ISO 8601)."""
    thread_id: str
    """The thread it belongs to."""
    content: str
    """The episode as stored (user and agent text), or the fact's text."""
    fragments: list[str]
    """Matched exact derivative texts, best first."""
    questions: list[str]
    """Prospective questions that matched, best first."""
    source: Source
    """How it was found: search, neighbour, entity or cause."""
    neighbour_of: str | None
    """For a neighbour: the episode it neighbours."""
    offset: int
    """Position relative to `neighbour_of` (negative: earlier)."""
    signals: dict[str, float]
    """The credibility signals of the episode's evidence score."""
    relevance: float
    """Fused relevance before the final ranking."""
    proximity: float
    """Graph proximity from the query's entities, 0-1."""
    in_window: bool
    """Created inside a time window the question names."""
    salience: float
    """The episode's salience."""
    association: float
    """The best relevance among the candidates it is linked to (co-retrieval, concept); 0 while
    memory's state does not weigh (`memory.retrieval.state`)."""
    kind: Literal["episode", "fact"]
    """An episode, or a fact."""
    uid: str
    """Its own uid: the episode's, or the fact's."""
    sources: list[str]
    """The episodes it comes from."""
    sides: dict[str, float]
    """Each side's own score, for an episode with both sides."""
    fact: dict[str, Any] | None
    """For a fact: its kind, subject, attribute, validity, successor and grounding."""
    rank: NotRequired[int]
    """On a memory the rerank kept: its place in the rerank order (1 is the best)."""
    said: str
    """Where its words came from: stated (the user's own), third_party or inferred."""
    replaces: str
    """The uid of the memory whose place it took as the newest (or oldest) statement of the
    same thing; "" when none."""
    detail: NotRequired[str]
    """On a memory the reply used: how the prompt showed it (detailed, brief, or fact)."""


def route_state(decision: RouteDecision) -> Route:
    """The router's decision as the `route` channel holds it."""
    return cast(Route, decision.model_dump())


def evidence_state(score: EvidenceScore) -> Evidence:
    """The evidence score as the `ess` channel holds it (before the gate's verdict)."""
    return cast(Evidence, score.model_dump(mode="json"))


def found_state(candidate: Candidate) -> Found:
    """A retrieval candidate as the `candidates` channel holds it."""
    return cast(Found, candidate.as_dict())


def route_of(state: AgentState) -> Route:
    """The turn's route; before the router ran, SIMPLE with the recipe's defaults and the message
    as its one query (the one home of that default)."""
    return state.get("route") or route_state(RouteDecision(kind="SIMPLE"))


def episode_of(state: BookkeepingState, tenant: str) -> Episode:
    """The run's episode, as `load` read it (a stage never reads it again: each one is
    idempotent, and a run after a crash loads it anew), if it is the run's user's (`tenant`,
    from the context). The state is the caller's to set (`command: {goto, update}`), so an
    episode of anyone else is `NotFound`, as `load` would say: a stage writes only to the
    memory of the user the run is for."""
    episode = Episode.model_validate(state["episode"])
    if episode.tenant != tenant:
        raise NotFound(f"episode {episode.uid!r} of tenant {tenant!r} does not exist")
    return episode


def turn_of(state: AgentState) -> Turn:
    """The user's turn as `record` read it; before it ran, the turn of an empty thread."""
    return state.get("turn") or read_turn([])


@with_config(_DESCRIBED)
class InputState(TypedDict):
    """What a caller sends: the new message(s)."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The new message(s) of the user, e.g. [{"role": "user", "content": "I moved to Porto"}]."""


@with_config(_DESCRIBED)
class AgentState(TypedDict, total=False):
    """Everything the agent loop reads and writes during a turn."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation of this thread (user and agent messages)."""

    turn: Turn
    """The user's message as the nodes see it: text, truncation, dropped content parts."""

    route: Route
    """The router's decision (`tasks.route.RouteDecision`, after the context's overrides)."""

    temporal: dict[str, Any]
    """Temporal context: local time, part of day, gaps since the previous conversations."""

    candidates: list[Found]
    """Memories found by retrieval, best first, with scores and provenance."""

    memories: list[Found]
    """Memories kept by the rerank for the reply, best first."""

    beliefs: list[dict[str, Any]]
    """The agent's beliefs that bear on a BELIEF_QUERY turn."""

    features: list[dict[str, Any]]
    """The agent's semantic features related to the turn, when the router asked for them."""
    reveries: list[dict[str, Any]]
    """Faded impressions of forgotten memories near the turn (`memory.sleep.reveries`)."""
    diary: list[dict[str, Any]]
    """The diary entries of the days the turn asks about (`memory.retrieval.diary`)."""
    chapters: list[dict[str, Any]]
    """The chapters a question about the person's course over time is about
    (`memory.retrieval.chapters`), oldest first."""

    ess: Evidence
    """Evidence Strength Score of the user's message and whether the gate passed."""

    episode: Recorded
    """The episode this turn was stored as: uid, duplicate, bookkeeping scheduled."""

    usage: Annotated[dict[str, Any], merge_usage]
    """LLM calls, fallbacks and tokens of this turn (reset at the start of each turn)."""


@with_config(_DESCRIBED)
class BookkeepingInput(TypedDict):
    """Which episode to process (whose it is comes from the run's context)."""

    episode_uid: str
    """The uid of one of the caller's episodes (as the agent's state reports it)."""


@with_config(_DESCRIBED)
class BookkeepingState(TypedDict, total=False):
    """Progress of one episode through bookkeeping."""

    episode_uid: str
    episode: dict[str, Any]
    """The episode as `load` read it (`memory.schema.Episode` as JSON): the run's one read of it,
    which every later stage takes from here (`episode_of`)."""
    status: str
    """The episode's status after the last step."""
    extraction: dict[str, Any]
    """Chunks, questions, topics and entities (`tasks.extract.Extraction` as a dict)."""
    fallback: bool
    """True when the extraction is the heuristic one."""
    window: list[str]
    """Uids of the episodes before this one in its thread that the extraction saw."""
    known: dict[str, str]
    """The known facts shown to the model, id in the prompt (`K1`) to fact uid."""
    facts: dict[str, Any]
    """What the knowledge stage did: facts stored, cited and superseded."""
    derivatives: int
    """Derivative points indexed."""
    questions: int
    """Prospective questions indexed."""
    topics: list[str]
    entities: list[str]
    beliefs: list[dict[str, Any]]
    """Beliefs the episode moved (empty when its ESS did not recommend an update)."""
    reflected: bool
    """True when the episode's provenance fired the reflection trigger and reflection ran."""
    notes: list[str]
    """Stages that failed on this episode and what was done instead (empty when none)."""
    proposed_features: list[dict[str, Any]]
    """Semantic features the belief assessment proposed (empty unless the ESS passed)."""
    feature_counters: list[str]
    """Uids of features the message explicitly refuted."""
    features: dict[str, Any]
    """What the features stage did: features created, updated and deleted."""
    salience: float
    """The episode's salience when it was processed (`memory.sleep.salience`)."""
    emotions: list[str]
    """The emotions the turn named (`memory.knowledge.emotions`), by name."""
    goals_created: int
    """Goal nodes created for goal facts the turn states (`memory.knowledge.goals`)."""
    thread: dict[str, Any]
    """What the thread stage did: turns moved down the thread's compressed layers, folded."""
    sessions: int
    """Session summaries the sessions stage wrote (sessions of the thread this turn finished)."""
    usage: Annotated[dict[str, Any], merge_usage]
    """LLM calls and tokens spent on this episode."""


@with_config(_DESCRIBED)
class ConsolidationInput(TypedDict, total=False):
    """Which level to run and at what time (whose memory comes from the run's context)."""

    level: str
    """`micro`, `daily` or `deep` (default `micro`)."""
    now: str | None
    """ISO 8601 time to consolidate at (simulates the passage of time); unset is now."""


@with_config(_DESCRIBED)
class ConsolidationState(ConsolidationInput, total=False):
    """A consolidation run: its checked input, what each stage did, the report."""

    at: str
    """The run's time, checked (ISO 8601, UTC)."""
    stages: Annotated[dict[str, dict[str, Any]], merge_stages]
    """What each stage that ran did, by stage, in the order they ran (report fields, seconds)."""
    report: dict[str, Any]
    """`memory.sleep.report.Report.summary()`: the stages' outputs folded together."""
    usage: Annotated[dict[str, Any], merge_usage]
    """LLM calls and tokens spent (forgetting batches, concept naming, diary, goals, reflection,
    session summaries; zero offline)."""
