"""The graphs' states: the agent's (messages plus what each node decided this turn) and the
bookkeeping graph's (one episode's progress).

Values are plain JSON-friendly data (dicts, lists, strings) so that checkpointers, the HTTP API
and Studio show them as they are; Pydantic models stay at the LLM boundary inside `nodes/`.
This module imports nothing from `nodes/`.
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from memory.services.usage import merge_usage

# Field docstrings become descriptions in the schemas the server publishes (Studio shows them).
_DESCRIBED = ConfigDict(use_attribute_docstrings=True)


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

    turn: dict[str, Any]
    """The user's message as the nodes see it: text, truncation, dropped content parts."""

    route: dict[str, Any]
    """The router's decision (`tasks.route.RouteDecision` as a dict)."""

    temporal: dict[str, Any]
    """Temporal context: local time, part of day, gaps since the previous conversations."""

    candidates: list[dict[str, Any]]
    """Memories found by retrieval, best first, with scores and provenance."""

    memories: list[dict[str, Any]]
    """Memories kept by the rerank for the reply, best first."""

    beliefs: list[dict[str, Any]]
    """The agent's beliefs that bear on a BELIEF_QUERY turn."""

    features: list[dict[str, Any]]
    """The agent's semantic features related to the turn, when the router asked for them."""
    reveries: list[dict[str, Any]]
    """Faded impressions of forgotten memories near the turn (`memory.sleep.reveries`)."""
    diary: list[dict[str, Any]]
    """The diary entries of the days the turn asks about (`memory.retrieval.diary`)."""

    ess: dict[str, Any]
    """Evidence Strength Score of the user's message and whether the gate passed."""

    sponge: dict[str, Any]
    """What the sponge did this turn: an insight recorded, or frozen and why."""

    episode: dict[str, Any]
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
    """A consolidation run: its checked input and what it did."""

    at: str
    """The run's time, checked (ISO 8601, UTC)."""
    report: dict[str, Any]
    """`memory.sleep.consolidation.Report.summary()`."""
    usage: Annotated[dict[str, Any], merge_usage]
    """LLM calls and tokens spent (forgetting batches, concept naming, diary; zero offline)."""
