"""The one canonical schema: record types, enums, ids and normalisation, vector collections.

Both graph backends and the vector index take their definitions from here, so that a field exists
in one place: the backends map every record field from these models (`memory.stores.graph.fields`).
Each graph backend keeps its own DDL (tables, constraints, indexes) beside the SQL or Cypher that
uses it, in `memory/stores/sqlite/` and `memory/stores/neo4j/`. This module holds data only:
applying a schema is the explicit, idempotent `setup()` of each store.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 6
"""Bumped whenever a constraint, table or collection changes (in this module or in a backend's
DDL); stores refuse a newer one and migrate an older one in `setup()`. Version 2: the episodes'
(tenant, content_hash) uniqueness is gone (an episode's identity is its source, `episode_uid`);
facts are typed and bi-temporal, with subjects and causes; semantic features. Version 3: an
episode can be pinned; episodes retrieved together are linked (CO_RETRIEVED, with a weight).
Version 4: a concept's narrative loop names the emotion that recurs with it (`loop_emotion`).
Version 5: episodes no longer carry a `content_hash` (nothing read it). Version 6: an episode
records its source (`EpisodeSource`) and a fact its temporal precision (`FactPrecision`); older
facts take `unbounded` when their attribute is timeless by nature (`TIMELESS_ATTRIBUTES`), else
`relative`."""

UID_NAMESPACE = uuid.UUID("6f1c7c1e-3a0b-5c7e-9a53-6d6e656d6501")
"""uuid5 namespace for deterministic ids (vector points, derivatives)."""


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Return `value` as aware UTC; naive datetimes are taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def new_uid() -> str:
    """A fresh random uid (episodes, beliefs, facts)."""
    return str(uuid.uuid4())


NO_THREAD = "no-thread"
"""Thread id recorded for runs without a thread (stateless runs): no conversation, no sessions."""


def stable_uid(*parts: str) -> str:
    """A deterministic uid from its parts, so that re-running a stage upserts the same point."""
    return str(uuid.uuid5(UID_NAMESPACE, clean_text("\x1f".join(parts))))


_WS = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """Normalise text for dedup: NFKC, casefold, collapsed whitespace, stripped."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def episode_uid(tenant: str, thread_id: str, source: str) -> str:
    """An episode's identity: its tenant, thread and source message (id or position).

    A retry of the same turn gets the same uid (so writing it again is a no-op); the same words
    said again in another message are another episode, with their own time.
    """
    return stable_uid("episode", tenant, thread_id, source)


def clean_text(text: str) -> str:
    """Make text storable everywhere: lone surrogates become U+FFFD, NUL is dropped.

    Other control characters are kept verbatim; both graph backends and Qdrant store them.
    """
    # UTF-16 with surrogatepass re-pairs valid surrogate pairs; lone halves decode to U+FFFD.
    fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return fixed.replace("\x00", "")


# --------------------------------------------------------------------------- enums


class EpisodeStatus(StrEnum):
    """Bookkeeping progress of an episode; it only ever moves forward (see `STATUS_ORDER`)."""

    PENDING = "pending"
    STORED = "stored"
    INDEXED = "indexed"
    PROCESSED = "processed"


STATUS_ORDER: dict[EpisodeStatus, int] = {s: i for i, s in enumerate(EpisodeStatus)}


class ReasoningType(StrEnum):
    """How a message argues (ESS, docs/design.md section 6)."""

    EMPIRICAL = "empirical"
    LOGICAL = "logical"
    EXPERT = "expert"
    ANECDOTAL = "anecdotal"
    SOCIAL_PRESSURE = "social_pressure"
    EMOTIONAL_APPEAL = "emotional_appeal"
    DEBUNKED_CLAIM = "debunked_claim"
    NO_ARGUMENT = "no_argument"


MANIPULATIVE_TYPES = frozenset(
    {
        ReasoningType.SOCIAL_PRESSURE,
        ReasoningType.EMOTIONAL_APPEAL,
        ReasoningType.DEBUNKED_CLAIM,
        ReasoningType.ANECDOTAL,
    }
)


class EntityType(StrEnum):
    """Kinds of named things the graph tracks."""

    PERSON = "Person"
    PET = "Pet"
    PLACE = "Place"
    ORGANIZATION = "Organization"
    OBJECT = "Object"
    PROJECT = "Project"
    EVENT = "Event"


class FactKind(StrEnum):
    """What a knowledge proposition is about (typed memories)."""

    PREFERENCE = "preference"
    DECISION = "decision"
    GOAL = "goal"
    PLAN = "plan"
    EVENT = "event"
    RELATIONSHIP = "relationship"
    ATTRIBUTE = "attribute"
    """A property or setting of the subject: home, job, diet, a possession, a habit."""
    INSTRUCTION = "instruction"
    """A standing request about how the agent should behave ("keep answers short")."""


class EpisodeSource(StrEnum):
    """Where an episode's words came from (docs/adr/0145-source-and-precision.md)."""

    STATED = "stated"
    """The user's own words about themselves or the world (every turn, unless bookkeeping finds
    otherwise)."""
    THIRD_PARTY = "third_party"
    """Another person's words the user quoted, forwarded or reported ("Anna said that ..."):
    bookkeeping stores no fact about the user from it."""
    INFERRED = "inferred"
    """What an application's agent wrote down itself (a `MnemeStore` item), not the user's words."""


class FactPrecision(StrEnum):
    """How precisely a fact is placed in time (`memory.knowledge.precision.precision_of`)."""

    EXACT = "exact"
    """A day of the calendar ("on 3 March 2024")."""
    APPROXIMATE = "approximate"
    """A wider span of the calendar ("in the spring of 2019", "around 2019")."""
    RELATIVE = "relative"
    """Placed against the turn's time: "last week", "two years ago", or a statement about the
    present that holds as of the turn ("I live in Lisbon")."""
    UNBOUNDED = "unbounded"
    """Timeless by nature (`TIMELESS_ATTRIBUTES`): its stating turns do not decay in sleep."""


TIMELESS_ATTRIBUTES: dict[FactKind, frozenset[str]] = {
    FactKind.ATTRIBUTE: frozenset(
        {
            "birthday",
            "birth_date",
            "birthplace",
            "origin",
            "blood_type",
            "allergy",
            "allergies",
            "native_language",
            "mother_tongue",
            "eye_colour",
            "eye_color",
        }
    ),
    FactKind.RELATIONSHIP: frozenset(
        "mother father mom mum dad sister brother son daughter twin grandmother grandfather "
        "aunt uncle cousin niece nephew".split()
    ),
}
"""The attributes that hold for good once true, by the kind of fact that states them: a birth,
a body's constants, a blood relation. Keys are `attribute_key`s."""


def attribute_key(attribute: str) -> str:
    """An attribute as `TIMELESS_ATTRIBUTES` keys it: the part before any `:`, lower case,
    words joined by `_` ("Blood type" -> `blood_type`, "allergy:nuts" -> `allergy`)."""
    head = attribute.split(":", 1)[0].strip().lower()
    return re.sub(r"[\s\-]+", "_", head)


def is_timeless(kind: FactKind, attribute: str) -> bool:
    """True when a fact of this kind and attribute is timeless by nature."""
    return attribute_key(attribute) in TIMELESS_ATTRIBUTES.get(kind, frozenset())


USER_SUBJECT = "user"
"""The `Fact.subject` of what the user says about themselves in an agent conversation."""


class FeatureCategory(StrEnum):
    """The four kinds of semantic features of the agent's personality (the sponge's second store)."""

    VALUES = "values"
    """Values and opinions."""
    INTERESTS = "interests"
    STYLE = "style"
    """Communication style."""
    EXPERTISE = "expertise"


class EvidenceKind(StrEnum):
    """Direction of a provenance edge from an episode to a belief."""

    SUPPORTS = "SUPPORTS_BELIEF"
    CONTRADICTS = "CONTRADICTS_BELIEF"


# --------------------------------------------------------------------------- records


class Record(BaseModel):
    """Base of memory records: immutable once built, unknown fields rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")


SIGNAL_NAMES = ("specificity", "grounding", "rigor", "source_quality", "objectivity")


class ESS(Record):
    """Evidence Strength Score of a user message."""

    score: float = Field(ge=0.0, le=1.0)
    specificity: float = Field(ge=0.0, le=1.0)
    grounding: float = Field(ge=0.0, le=1.0)
    rigor: float = Field(ge=0.0, le=1.0)
    source_quality: float = Field(ge=0.0, le=1.0)
    objectivity: float = Field(ge=0.0, le=1.0)
    reasoning_type: ReasoningType = ReasoningType.NO_ARGUMENT

    def signals(self) -> dict[str, float]:
        """The five credibility signals by name."""
        return {name: float(getattr(self, name)) for name in SIGNAL_NAMES}


class Episode(Record):
    """One conversation turn (user text + agent reply), the unit of memory."""

    uid: str
    tenant: str
    thread_id: str
    content: str
    user_text: str
    agent_text: str
    created_at: datetime
    last_accessed: datetime | None = None
    access_count: int = 0
    ess: ESS | None = None
    status: EpisodeStatus = EpisodeStatus.PENDING
    archived: bool = False
    utility_score: float = 0.0
    salience: float = 0.5
    pinned: bool = False
    """Pinned by the user or an app: never archived, expired or forgotten; does not decay."""
    source: EpisodeSource = EpisodeSource.STATED
    """Where its words came from: the user's own, another person's, or an app's agent's."""


class NewEpisode(Record):
    """What a caller gives to create an episode; the store assigns nothing else."""

    uid: str = Field(default_factory=new_uid)
    tenant: str
    thread_id: str
    user_text: str
    agent_text: str
    created_at: datetime = Field(default_factory=utcnow)
    status: EpisodeStatus = EpisodeStatus.PENDING
    ess: ESS | None = None
    source: EpisodeSource = EpisodeSource.STATED

    @property
    def content(self) -> str:
        """The episode text as stored and hashed."""
        return episode_content(self.user_text, self.agent_text)


def episode_content(user_text: str, agent_text: str) -> str:
    """Join the two sides of a turn into the episode's content."""
    if agent_text:
        return f"User: {user_text}\nAgent: {agent_text}"
    return f"User: {user_text}"


class Neighbour(Record):
    """An episode near another on the tenant's TEMPORAL_NEXT chain (offset < 0: earlier)."""

    offset: int
    episode: Episode


class Topic(Record):
    """A subject an episode discusses."""

    slug: str


class Entity(Record):
    """A named thing mentioned in episodes."""

    tenant: str
    name: str
    type: EntityType


CO_MENTIONED = "co-mentioned"
"""The relation of a RELATED_TO edge between two entities one turn names together; the other
relations are what a fact states ("sister", "partner", "boss")."""


class EpisodeHit(Record):
    """An episode reached from seed entities; distance counts RELATED_TO hops (0: mentioned)."""

    episode_uid: str
    distance: int


class Belief(Record):
    """A view the agent holds on a topic, with its provenance summary."""

    uid: str = Field(default_factory=new_uid)
    tenant: str
    topic: str
    statement: str
    valence: float = Field(default=0.0, ge=-1.0, le=1.0)
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    evidence_count: int = 0
    contested: bool = False
    updated_at: datetime = Field(default_factory=utcnow)


class Evidence(Record):
    """A provenance edge from an episode to a belief."""

    episode_uid: str
    belief_uid: str
    kind: EvidenceKind
    strength: float = Field(ge=0.0, le=1.0)
    reasoning: str = ""
    created_at: datetime = Field(default_factory=utcnow)


class Fact(Record):
    """A knowledge proposition, bi-temporal: `valid_from`/`valid_to` say when it held in the
    world, `learned_at` when mneme was told; a superseded fact keeps `valid_to` and
    `superseded_by` (the fact that replaced or ended it). Nothing is deleted."""

    uid: str = Field(default_factory=new_uid)
    tenant: str
    text: str
    """The proposition, standing alone: names resolved, dates absolute, conditions kept."""
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    valid_from: datetime = Field(default_factory=utcnow)
    valid_to: datetime | None = None
    superseded_by: str | None = None
    kind: FactKind = FactKind.ATTRIBUTE
    subject: str = USER_SUBJECT
    """Whom or what it is about: `USER_SUBJECT`, a person's name, an entity."""
    attribute: str = ""
    """What about the subject it states (`home`, `work`, `favourite:band`); empty when it
    states nothing that a later fact could replace (most events)."""
    value: str = ""
    """The attribute's value (`Porto`); a later fact with the same subject and attribute and
    another value conflicts with this one."""
    learned_at: datetime | None = None
    """When the statement was made (its first source episode); None for facts written directly."""
    grounding: float = Field(default=1.0, ge=0.0, le=1.0)
    """How much of the proposition its source text supports, 0..1 (share of its content words
    found in the source window); facts under `GROUNDING_MIN` are never shown to a reply."""
    concepts: tuple[str, ...] = ()
    """Key concepts (a few words each), indexed with the text."""
    precision: FactPrecision = FactPrecision.RELATIVE
    """How precisely it is placed in time; an `unbounded` (timeless) fact's stating turns do not
    decay in sleep."""


class Cause(Record):
    """What led to a fact (a LED_TO edge into it): another fact or an episode."""

    kind: Literal["episode", "fact"]
    uid: str


GROUNDING_MIN = 0.6
"""Facts grounded less than this are kept but never injected into a reply."""


class Feature(Record):
    """A persistent semantic feature of the agent's personality, learned from strong evidence."""

    uid: str = Field(default_factory=new_uid)
    tenant: str
    category: FeatureCategory
    text: str
    strength: float = Field(default=0.5, ge=0.0, le=1.0)
    evidence_count: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class Concept(Record):
    """A cluster of turns (and the facts they state) that recurs across days: what the daily
    sleep level makes of related fragments (`memory.sleep.concepts`)."""

    uid: str
    tenant: str
    label: str
    """A few words naming it (offline: its most frequent shared topics and names)."""
    description: str = ""
    terms: tuple[str, ...] = ()
    """The topics and entity names its turns share, most frequent first."""
    episode_count: int = 0
    day_count: int = 0
    """Distinct UTC days its turns were said on."""
    first_seen: datetime
    last_seen: datetime
    loop: str = ""
    """A narrative loop: the weekday it keeps coming up on ("Monday"), empty when none."""
    loop_count: int = 0
    """How many distinct weeks it came up on that weekday."""
    loop_emotion: str = ""
    """The emotion word that recurs with the loop (`memory.sleep.concepts.loop_emotion_of`), empty
    when none does."""
    updated_at: datetime


class DiaryEntry(Record):
    """The agent's first-person note on one day of conversation (`memory.sleep.diary`)."""

    uid: str
    tenant: str
    day: str
    """The UTC day it is about, ISO (`2025-03-03`)."""
    text: str
    episode_count: int = 0
    concepts: tuple[str, ...] = ()
    """Labels of the concepts that came up that day."""
    created_at: datetime


class GoalStatus(StrEnum):
    """Where a goal stands (`memory.knowledge.goals` reassesses it at deep sleep)."""

    ACTIVE = "active"
    COMPLETED = "completed"
    ABANDONED = "abandoned"
    EVOLVED = "evolved"
    """Replaced by a newer goal fact about the same thing (the knowledge layer superseded it)."""


class Goal(Record):
    """What someone is working towards: one goal fact (TRACKS) with its status, and the reason
    and the episode the status rests on. uid = `stable_uid(tenant, "goal", fact_uid)`; the
    episodes that state it are the fact's sources (STATES)."""

    uid: str
    tenant: str
    fact_uid: str
    text: str
    """The goal fact's text."""
    subject: str = USER_SUBJECT
    """Whose goal it is (the fact's subject)."""
    status: GoalStatus = GoalStatus.ACTIVE
    reason: str = ""
    """Why it has this status (empty while active as stated)."""
    evidence_uid: str | None = None
    """The episode the status rests on (a turn saying it was done or given up, the newer goal's
    turn, the last mention); None while active as stated."""
    stated_at: datetime
    changed_at: datetime
    """When the status last changed (the run's time, simulated or not)."""


class Emotion(Record):
    """An emotion a person expressed in one episode (FELT_IN), from the salience appraisal's
    emotion words: one node per word, with the turn's emotion intensity.
    uid = `stable_uid(tenant, "emotion", episode_uid, name)`."""

    uid: str
    tenant: str
    episode_uid: str
    person: str = USER_SUBJECT
    """Who felt it, as facts name a subject: `USER_SUBJECT`, or the speaker of a `Name:` turn."""
    name: str
    """The emotion word, lower case (`stressed`, `excited`)."""
    intensity: float = Field(ge=0.0, le=1.0)
    felt_at: datetime
    """When the episode was said."""


class SessionSummary(Record):
    """A finished session of a thread (its turns with no idle gap, within one day) as one memory:
    the summary's text and topics, its time span and the episodes it summarises (`memory.write.sessions`).

    `uid` is `stable_uid(tenant, "session", thread_id, started_at)`, so rebuilding a session
    replaces its summary. `episode_uids` are the episodes the text was built from, oldest first;
    the store links the summary to each of them (SUMMARISES)."""

    uid: str
    tenant: str
    thread_id: str
    text: str
    topics: tuple[str, ...] = ()
    started_at: datetime
    ended_at: datetime
    episode_uids: tuple[str, ...] = ()
    method: str = "extractive"
    """How the text was made: `extractive` (sentence scoring) or `llm`."""
    created_at: datetime = Field(default_factory=utcnow)


class PersonalitySnapshot(Record):
    """One version of the personality narrative (the sponge)."""

    tenant: str
    version: int
    text: str
    created_at: datetime


# --------------------------------------------------------------------------- graph schema

GRAPH_LABELS = (
    "Episode",
    "Topic",
    "Entity",
    "Belief",
    "Fact",
    "Feature",
    "PersonalitySnapshot",
    "Concept",
    "DiaryEntry",
    "Summary",
)
GRAPH_RELATIONSHIPS = (
    "TEMPORAL_NEXT",
    "DISCUSSES",
    "MENTIONS",
    "RELATED_TO",
    "SUPPORTS_BELIEF",
    "CONTRADICTS_BELIEF",
    "STATES",
    "ABOUT",
    "LED_TO",
    "SHOWS",
    "PREVIOUS",
    "INCLUDES",
    "RECOUNTS",
    "SUMMARISES",
)

# --------------------------------------------------------------------------- vector schema

VectorKind = Literal["derivatives", "prospective", "features", "knowledge", "reveries", "summaries"]
VECTOR_KINDS: tuple[VectorKind, ...] = (
    "derivatives",
    "prospective",
    "features",
    "knowledge",
    "reveries",
    "summaries",
)
DENSE_VECTOR = "dense"
SPARSE_VECTOR = "sparse"

PAYLOAD_INDEXES: dict[str, Literal["keyword", "datetime", "bool", "float"]] = {
    "tenant": "keyword",  # created with is_tenant=True
    "episode_uid": "keyword",
    "created_at": "datetime",
    "archived": "bool",
    "salience": "float",
}
"""Payload fields indexed in every collection (server mode; local mode scans)."""


def collection_name(kind: VectorKind, fingerprint: str) -> str:
    """Qdrant collection for a kind of vector under one embedder, e.g. `derivatives__minilm_384`."""
    return f"{kind}__{fingerprint}"


def entity_key(name: str) -> str:
    """The identity of an entity within a tenant: its normalised name."""
    return normalise_text(name)


def topic_slug(topic: str) -> str:
    """A topic's slug: lower-case words joined by hyphens."""
    words = re.findall(r"\w+", normalise_text(topic))
    return "-".join(words)[:80] or "general"
