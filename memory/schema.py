"""The one canonical schema: record types, enums, graph constraints and vector collections.

Both graph backends and the vector index take their definitions from here, so that a field or an
index exists in one place. This module holds data only: applying it is the explicit, idempotent
`setup()` of each store.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1
"""Bumped whenever a constraint, table or collection changes; stores refuse a newer one."""

UID_NAMESPACE = uuid.UUID("6f1c7c1e-3a0b-5c7e-9a53-6d6e656d6501")
"""uuid5 namespace for deterministic ids (vector points, derivatives)."""

HASH_PREFIX_CHARS = 500


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


def stable_uid(*parts: str) -> str:
    """A deterministic uid from its parts, so that re-running a stage upserts the same point."""
    return str(uuid.uuid5(UID_NAMESPACE, clean_text("\x1f".join(parts))))


_WS = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """Normalise text for dedup: NFKC, casefold, collapsed whitespace, stripped."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def content_hash(text: str) -> str:
    """sha256 of the normalised text's first 500 characters (dedup key per tenant)."""
    head = normalise_text(text)[:HASH_PREFIX_CHARS]
    return hashlib.sha256(head.encode("utf-8", "surrogatepass")).hexdigest()


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
    """How a message argues (ESS, DESIGN section 6)."""

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
    PLACE = "Place"
    ORGANIZATION = "Organization"
    OBJECT = "Object"
    PROJECT = "Project"
    EVENT = "Event"


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
    content_hash: str


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


class EntityHit(Record):
    """An entity reached by traversal, `distance` hops from the nearest seed."""

    entity: Entity
    distance: int


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
    """A knowledge proposition; superseded facts keep `valid_to` and `superseded_by`."""

    uid: str = Field(default_factory=new_uid)
    tenant: str
    text: str
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    valid_from: datetime = Field(default_factory=utcnow)
    valid_to: datetime | None = None
    superseded_by: str | None = None


class PersonalitySnapshot(Record):
    """One version of the personality narrative (the sponge)."""

    tenant: str
    version: int
    text: str
    created_at: datetime


# --------------------------------------------------------------------------- graph schema

GRAPH_LABELS = ("Episode", "Topic", "Entity", "Belief", "Fact", "PersonalitySnapshot")
GRAPH_RELATIONSHIPS = (
    "TEMPORAL_NEXT",
    "DISCUSSES",
    "MENTIONS",
    "RELATED_TO",
    "SUPPORTS_BELIEF",
    "CONTRADICTS_BELIEF",
    "STATES",
    "PREVIOUS",
)

NEO4J_SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT episode_uid IF NOT EXISTS FOR (n:Episode) REQUIRE n.uid IS UNIQUE",
    "CREATE CONSTRAINT episode_hash IF NOT EXISTS FOR (n:Episode) "
    "REQUIRE (n.tenant, n.content_hash) IS UNIQUE",
    "CREATE CONSTRAINT topic_key IF NOT EXISTS FOR (n:Topic) REQUIRE (n.tenant, n.slug) IS UNIQUE",
    "CREATE CONSTRAINT entity_key IF NOT EXISTS FOR (n:Entity) REQUIRE (n.tenant, n.key) IS UNIQUE",
    "CREATE CONSTRAINT belief_uid IF NOT EXISTS FOR (n:Belief) REQUIRE n.uid IS UNIQUE",
    "CREATE CONSTRAINT belief_topic IF NOT EXISTS FOR (n:Belief) REQUIRE (n.tenant, n.topic) IS UNIQUE",
    "CREATE CONSTRAINT fact_uid IF NOT EXISTS FOR (n:Fact) REQUIRE n.uid IS UNIQUE",
    "CREATE CONSTRAINT snapshot_key IF NOT EXISTS FOR (n:PersonalitySnapshot) "
    "REQUIRE (n.tenant, n.version) IS UNIQUE",
    "CREATE CONSTRAINT tenant_id IF NOT EXISTS FOR (n:Tenant) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT meta_key IF NOT EXISTS FOR (n:MnemeMeta) REQUIRE n.key IS UNIQUE",
    "CREATE CONSTRAINT tenant_state_key IF NOT EXISTS FOR (n:TenantState) "
    "REQUIRE (n.tenant, n.key) IS UNIQUE",
    "CREATE INDEX episode_tenant_time IF NOT EXISTS FOR (n:Episode) ON (n.tenant, n.created_at)",
    "CREATE INDEX episode_tenant_status IF NOT EXISTS FOR (n:Episode) ON (n.tenant, n.status)",
    "CREATE INDEX episode_status IF NOT EXISTS FOR (n:Episode) ON (n.status)",
    "CREATE INDEX fact_tenant IF NOT EXISTS FOR (n:Fact) ON (n.tenant)",
)
"""Neo4j Community constraints and indexes (property uniqueness is Community; node keys are not)."""

SQLITE_SCHEMA: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS episodes (
        uid TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        content TEXT NOT NULL,
        user_text TEXT NOT NULL,
        agent_text TEXT NOT NULL,
        created_at TEXT NOT NULL,
        last_accessed TEXT,
        access_count INTEGER NOT NULL DEFAULT 0,
        ess TEXT,
        status TEXT NOT NULL,
        archived INTEGER NOT NULL DEFAULT 0,
        utility_score REAL NOT NULL DEFAULT 0,
        salience REAL NOT NULL DEFAULT 0.5,
        content_hash TEXT NOT NULL,
        UNIQUE (tenant, content_hash)
    )""",
    "CREATE INDEX IF NOT EXISTS episodes_tenant_time ON episodes (tenant, created_at, uid)",
    "CREATE INDEX IF NOT EXISTS episodes_tenant_status ON episodes (tenant, status)",
    "CREATE INDEX IF NOT EXISTS episodes_status ON episodes (status)",
    """CREATE TABLE IF NOT EXISTS temporal_next (
        tenant TEXT NOT NULL,
        src TEXT NOT NULL UNIQUE REFERENCES episodes(uid) ON DELETE CASCADE,
        dst TEXT NOT NULL UNIQUE REFERENCES episodes(uid) ON DELETE CASCADE,
        PRIMARY KEY (src, dst)
    )""",
    """CREATE TABLE IF NOT EXISTS topics (
        tenant TEXT NOT NULL, slug TEXT NOT NULL, PRIMARY KEY (tenant, slug)
    )""",
    """CREATE TABLE IF NOT EXISTS discusses (
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        slug TEXT NOT NULL,
        PRIMARY KEY (episode_uid, slug),
        FOREIGN KEY (tenant, slug) REFERENCES topics(tenant, slug) ON DELETE CASCADE
    )""",
    "CREATE INDEX IF NOT EXISTS discusses_topic ON discusses (tenant, slug)",
    """CREATE TABLE IF NOT EXISTS entities (
        tenant TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,
        PRIMARY KEY (tenant, key)
    )""",
    """CREATE TABLE IF NOT EXISTS mentions (
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        entity_key TEXT NOT NULL,
        PRIMARY KEY (episode_uid, entity_key),
        FOREIGN KEY (tenant, entity_key) REFERENCES entities(tenant, key) ON DELETE CASCADE
    )""",
    "CREATE INDEX IF NOT EXISTS mentions_entity ON mentions (tenant, entity_key)",
    """CREATE TABLE IF NOT EXISTS related_to (
        tenant TEXT NOT NULL, src_key TEXT NOT NULL, dst_key TEXT NOT NULL, relation TEXT NOT NULL,
        PRIMARY KEY (tenant, src_key, dst_key),
        FOREIGN KEY (tenant, src_key) REFERENCES entities(tenant, key) ON DELETE CASCADE,
        FOREIGN KEY (tenant, dst_key) REFERENCES entities(tenant, key) ON DELETE CASCADE
    )""",
    "CREATE INDEX IF NOT EXISTS related_dst_src ON related_to (tenant, dst_key, src_key)",
    """CREATE TABLE IF NOT EXISTS beliefs (
        uid TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        topic TEXT NOT NULL,
        statement TEXT NOT NULL,
        valence REAL NOT NULL,
        confidence REAL NOT NULL,
        evidence_count INTEGER NOT NULL DEFAULT 0,
        contested INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL,
        UNIQUE (tenant, topic)
    )""",
    """CREATE TABLE IF NOT EXISTS evidence (
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        belief_uid TEXT NOT NULL REFERENCES beliefs(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        kind TEXT NOT NULL,
        strength REAL NOT NULL,
        reasoning TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (episode_uid, belief_uid)
    )""",
    "CREATE INDEX IF NOT EXISTS evidence_belief ON evidence (belief_uid, strength)",
    """CREATE TABLE IF NOT EXISTS facts (
        uid TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        text TEXT NOT NULL,
        confidence REAL NOT NULL,
        valid_from TEXT NOT NULL,
        valid_to TEXT,
        superseded_by TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS facts_tenant ON facts (tenant, valid_from)",
    """CREATE TABLE IF NOT EXISTS states (
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        fact_uid TEXT NOT NULL REFERENCES facts(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        PRIMARY KEY (episode_uid, fact_uid)
    )""",
    "CREATE INDEX IF NOT EXISTS states_fact ON states (fact_uid)",
    """CREATE TABLE IF NOT EXISTS tenant_state (
        tenant TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tenant, key)
    )""",
    """CREATE TABLE IF NOT EXISTS snapshots (
        tenant TEXT NOT NULL,
        version INTEGER NOT NULL,
        text TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (tenant, version)
    )""",
)
"""SQLite DDL: tables mirror the graph; edges are tables keyed by both ends."""


# --------------------------------------------------------------------------- vector schema

VectorKind = Literal["derivatives", "prospective", "features", "knowledge", "reveries"]
VECTOR_KINDS: tuple[VectorKind, ...] = (
    "derivatives",
    "prospective",
    "features",
    "knowledge",
    "reveries",
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
