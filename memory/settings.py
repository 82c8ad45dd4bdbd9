"""Process settings, read from the environment once (never at import time).

Everything that says *where* things live (paths, URIs, keys) is here; everything that says *how a
run behaves* (user id, recipe, budgets) is the per-run `Context` of the agent graph. Invalid or
contradictory settings raise `ConfigError` at start with a message that names the variable and
the fix.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_CACHE_DIR = Path("~/.cache/mneme")
EmbeddingRuntime = Literal["auto", "onnx", "torch"]
EMBEDDING_RUNTIMES: tuple[EmbeddingRuntime, ...] = ("auto", "onnx", "torch")


LEGACY_DATA_DIR = Path(".mneme")
"""Where versions before the per-user default kept memory: the working directory's `.mneme`."""


def platform_data_dir() -> Path:
    """The platform's per-user data directory for mneme (e.g. `~/.local/share/mneme`)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("mneme", appauthor=False))


def default_data_dir() -> Path:
    """The per-user data directory, or an existing `./.mneme` of an earlier version."""
    if (LEGACY_DATA_DIR / "graph.sqlite3").is_file():
        return LEGACY_DATA_DIR.resolve()
    return platform_data_dir()


class ConfigError(ValueError):
    """Settings are invalid or contradict each other; the message names the variable and the fix."""


def _env(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class Settings(BaseSettings):
    """Where mneme keeps its memory and which models it talks to."""

    model_config = SettingsConfigDict(
        env_prefix="MNEME_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
    )

    data_dir: Path = Field(
        default_factory=lambda: default_data_dir(), validation_alias=_env("MNEME_DATA_DIR")
    )
    """Directory for the embedded stores (SQLite graph file, the vector index): the platform's
    per-user data directory (e.g. `~/.local/share/mneme`), whatever the working directory; a
    `./.mneme` left by an earlier version is used while it is there (`data_dir_note` says so)."""
    cache_dir: Path = Field(default=DEFAULT_CACHE_DIR, validation_alias=_env("MNEME_CACHE_DIR"))
    """Derived files that can be rebuilt at any time (the embedding model's ONNX graph)."""

    graph_backend: Literal["sqlite", "neo4j"] | None = Field(
        default=None, validation_alias=_env("MNEME_GRAPH_BACKEND")
    )
    """`sqlite` (embedded default) or `neo4j`; unset means neo4j when NEO4J_URI is set."""

    sqlite_path: Path | None = Field(default=None, validation_alias=_env("MNEME_SQLITE_PATH"))
    """SQLite graph file; default `<data_dir>/graph.sqlite3`."""

    neo4j_uri: str | None = Field(
        default=None, validation_alias=_env("NEO4J_URI", "MNEME_NEO4J_URI")
    )
    neo4j_user: str = Field(
        default="neo4j", validation_alias=_env("NEO4J_USER", "MNEME_NEO4J_USER")
    )
    neo4j_password: SecretStr | None = Field(
        default=None, validation_alias=_env("NEO4J_PASSWORD", "MNEME_NEO4J_PASSWORD")
    )
    neo4j_database: str = Field(
        default="neo4j", validation_alias=_env("NEO4J_DATABASE", "MNEME_NEO4J_DATABASE")
    )

    qdrant_path: Path | None = Field(
        default=None, validation_alias=_env("QDRANT_PATH", "MNEME_QDRANT_PATH")
    )
    """The embedded vector index's directory (Qdrant Edge), default `<data_dir>/vectors`; or
    `:memory:` for qdrant-client's in-memory local mode (tests, throw-away notebooks)."""
    qdrant_url: str | None = Field(
        default=None, validation_alias=_env("QDRANT_URL", "MNEME_QDRANT_URL")
    )
    """A Qdrant server (`http://host:6333`), or several nodes of one cluster separated by commas
    (a node that cannot be reached is skipped for the next)."""
    qdrant_api_key: SecretStr | None = Field(
        default=None, validation_alias=_env("QDRANT_API_KEY", "MNEME_QDRANT_API_KEY")
    )
    qdrant_prefer_grpc: bool = Field(
        default=False, validation_alias=_env("QDRANT_PREFER_GRPC", "MNEME_QDRANT_PREFER_GRPC")
    )
    """Send searches and writes to the server over gRPC (faster on large batches)."""
    qdrant_grpc_port: int = Field(
        default=6334,
        ge=1,
        le=65535,
        validation_alias=_env("QDRANT_GRPC_PORT", "MNEME_QDRANT_GRPC_PORT"),
    )
    """The server's gRPC port (the same on every node of a cluster)."""
    qdrant_shards: int = Field(default=1, ge=1, validation_alias=_env("MNEME_QDRANT_SHARDS"))
    """Shards of each collection mneme creates on a server (a cluster: as many as nodes)."""
    qdrant_replication: int = Field(
        default=1, ge=1, validation_alias=_env("MNEME_QDRANT_REPLICATION")
    )
    """Copies of each shard on different nodes of a cluster (2: one node may be down)."""
    qdrant_write_consistency: int = Field(
        default=1, ge=1, validation_alias=_env("MNEME_QDRANT_WRITE_CONSISTENCY")
    )
    """Replicas that must apply a write before the server acknowledges it (docs/deployment.md
    says why 1)."""
    qdrant_per_tenant_hnsw: bool = Field(
        default=True, validation_alias=_env("MNEME_QDRANT_PER_TENANT_HNSW")
    )
    """Collections created on a server build an HNSW graph per tenant and no global one (every
    search filters on one tenant); false: Qdrant's default global graph."""
    qdrant_tenant_shards: bool = Field(
        default=False, validation_alias=_env("MNEME_QDRANT_TENANT_SHARDS")
    )
    """Collections created on a server use custom sharding: every tenant in a `shared` shard
    key until `mneme shards promote` gives a very large one shards of its own (needs Qdrant in
    distributed mode)."""

    embedding_model: str = Field(
        default=DEFAULT_EMBEDDING_MODEL, validation_alias=_env("MNEME_EMBEDDING_MODEL")
    )
    """Local sentence-transformers model (directory or hub name), or the endpoint's model name.

    Models other than the default may need the torch extra (see `embedding_runtime`)."""
    embedding_base_url: str | None = Field(
        default=None, validation_alias=_env("MNEME_EMBEDDING_BASE_URL")
    )
    """OpenAI-compatible embeddings endpoint; unset means a local model."""
    embedding_api_key: SecretStr | None = Field(
        default=None, validation_alias=_env("MNEME_EMBEDDING_API_KEY", "OPENAI_API_KEY")
    )
    embedding_dim: int | None = Field(default=None, validation_alias=_env("MNEME_EMBEDDING_DIM"))
    """Expected dimension; required for an endpoint, checked against a local model."""
    embedding_batch_size: int = Field(
        default=64, validation_alias=_env("MNEME_EMBEDDING_BATCH_SIZE")
    )
    embedding_threads: int = Field(default=1, validation_alias=_env("MNEME_EMBEDDING_THREADS"))
    """CPU threads of the local model (1 keeps latency steady on a busy machine)."""
    embedding_runtime: EmbeddingRuntime = Field(
        default="auto", validation_alias=_env("MNEME_EMBEDDING_RUNTIME")
    )
    """How the local model runs: `auto` runs a plain BERT + mean pooling model directory (the
    default model is one) on ONNX Runtime from its safetensors weights and any other model on
    sentence-transformers + PyTorch; `onnx` refuses the latter; `torch` always uses PyTorch.
    PyTorch needs the torch extra (`pip install 'mneme-agent[torch]'`)."""

    llm_base_url: str | None = Field(default=None, validation_alias=_env("MNEME_LLM_BASE_URL"))
    """OpenAI-compatible chat endpoint; unset (and no OPENAI_API_KEY) means offline mode."""
    llm_api_key: SecretStr | None = Field(
        default=None, validation_alias=_env("MNEME_LLM_API_KEY", "OPENAI_API_KEY")
    )
    llm_model_fast: str = Field(
        default="gpt-4o-mini", validation_alias=_env("MNEME_LLM_MODEL_FAST")
    )
    llm_model_structured: str = Field(
        default="gpt-4o-mini", validation_alias=_env("MNEME_LLM_MODEL_STRUCTURED")
    )
    llm_model_respond: str = Field(
        default="gpt-4o-mini", validation_alias=_env("MNEME_LLM_MODEL_RESPOND")
    )
    llm_timeout_s: float = Field(default=30.0, validation_alias=_env("MNEME_LLM_TIMEOUT_S"))
    turn_budget_s: float = Field(default=8.0, ge=0, validation_alias=_env("MNEME_TURN_BUDGET_S"))
    """Seconds the stages before a reply (route, rerank) may wait for the chat model in one
    turn, together, counted from the turn's start; past it each answers with its offline
    heuristic, and the turn says so once. 0: no budget (each call waits up to
    MNEME_LLM_TIMEOUT_S). The reply itself is not limited by it."""

    core_identity: str | None = Field(default=None, validation_alias=_env("MNEME_CORE_IDENTITY"))
    """Who the agent is, beneath its evolving personality snapshot (unset: the reply prompt's
    own, `tasks.respond.DEFAULT_CORE_IDENTITY`). The operator's to set (a process setting), never
    a caller's: a run's context cannot change it."""

    connect_timeout_s: float = Field(default=2.0, validation_alias=_env("MNEME_CONNECT_TIMEOUT_S"))
    """How long a store may take to answer at start before we say it is down."""

    api_keys: SecretStr | None = Field(default=None, validation_alias=_env("MNEME_API_KEYS"))
    """API keys of the served graphs for tests and development: `user_id:key` pairs, comma
    separated (kept only as their sha256 in memory). Real deployments use the keys file."""
    api_keys_file: Path | None = Field(default=None, validation_alias=_env("MNEME_API_KEYS_FILE"))
    """File of API keys, one `sha256hex user_id` a line (`mneme keys add --user U` writes it);
    unset: `<data_dir>/api-keys`, read when it exists (`resolved_api_keys_file`). A file named
    here must exist."""
    jwt_secret: SecretStr | None = Field(default=None, validation_alias=_env("MNEME_JWT_SECRET"))
    """HS256 secret of bearer JWTs (their `sub` is the user id); unset disables JWTs."""
    jwt_audience: str | None = Field(default=None, validation_alias=_env("MNEME_JWT_AUDIENCE"))
    """The `aud` a JWT must carry (required when MNEME_JWT_SECRET is set)."""

    server_url: str | None = Field(default=None, validation_alias=_env("MNEME_SERVER_URL"))
    """A running mneme server (e.g. `http://127.0.0.1:2025`) that read commands (`mneme recall`,
    `facts`, `doctor`) go through while it holds the embedded vector index; unset: they stop
    with the fix instead."""
    server_key: SecretStr | None = Field(default=None, validation_alias=_env("MNEME_SERVER_KEY"))
    """The API key those commands send to MNEME_SERVER_URL (its user must be `--user`);
    unneeded for a server without keys (loopback only)."""

    max_message_bytes: int = Field(
        default=262_144, validation_alias=_env("MNEME_MAX_MESSAGE_BYTES")
    )
    """Largest message (UTF-8 bytes, per side of a turn) accepted; larger is refused unwritten."""
    store_retry_s: float = Field(default=30.0, validation_alias=_env("MNEME_STORE_RETRY_S"))
    """After the graph store fails a write, turns go straight to the outbox for this long."""
    max_attempts: int = Field(default=5, validation_alias=_env("MNEME_MAX_ATTEMPTS"))
    """Bookkeeping attempts of one episode before it is quarantined."""
    session_gap_h: float = Field(default=6.0, validation_alias=_env("MNEME_SESSION_GAP_H"))
    """Idle hours that end a session of a thread (a session also ends with its UTC day); each
    finished session gets a summary (`memory.write.sessions`)."""

    sleep_schedule: bool = Field(default=True, validation_alias=_env("MNEME_SLEEP_SCHEDULE"))
    """The server runs consolidation for every tenant that is due (`serve/schedule.py`), at the
    levels' cadence below. On by default: sleep is how memory ages, expires and forgets
    (docs/adr/0138-sleep-on-by-default.md); only the server's lifespan reads it, so the CLI's
    one-shot commands never sleep unless asked (`mneme consolidate`). False turns it off."""
    sleep_micro_s: float = Field(default=3600.0, gt=0, validation_alias=_env("MNEME_SLEEP_MICRO_S"))
    """Seconds between micro runs of a tenant (salience, utility, co-retrieval links)."""
    sleep_daily_s: float = Field(
        default=86400.0, gt=0, validation_alias=_env("MNEME_SLEEP_DAILY_S")
    )
    """Seconds between daily runs (micro + expiry)."""
    sleep_deep_s: float = Field(default=604800.0, gt=0, validation_alias=_env("MNEME_SLEEP_DEEP_S"))
    """Seconds between deep runs (daily + forgetting, beliefs, apperception)."""
    sleep_check_s: float = Field(default=300.0, gt=0, validation_alias=_env("MNEME_SLEEP_CHECK_S"))
    """How often the scheduled server looks for tenants that are due."""
    bookkeeping_lease_s: float = Field(
        default=30.0, ge=3, validation_alias=_env("MNEME_BOOKKEEPING_LEASE_S")
    )
    """Length of a tenant's bookkeeping lease (`memory.services.queue`): one process bookkeeps a
    tenant at a time; a killed process's lease frees this long after it last renewed it."""
    sleep_lease_s: float = Field(default=120.0, ge=3, validation_alias=_env("MNEME_SLEEP_LEASE_S"))
    """Length of a tenant's consolidation lease (`memory.sleep.leases`): a run renews it every third
    of this, so a killed process's lease frees this long after it last renewed."""

    @field_validator("embedding_runtime", mode="before")
    @classmethod
    def _check_runtime(cls, value: object) -> object:
        runtime = value.strip().lower() if isinstance(value, str) else value
        if runtime not in EMBEDDING_RUNTIMES:
            raise ConfigError(
                f"MNEME_EMBEDDING_RUNTIME={value!r} is not one of {', '.join(EMBEDDING_RUNTIMES)}; "
                f"unset it to use auto (ONNX Runtime when the model allows it, else PyTorch)"
            )
        return runtime

    @model_validator(mode="after")
    def _check(self) -> Settings:
        self._check_stores()
        self._check_services()
        self._check_limits()
        return self

    def _check_stores(self) -> None:
        """Refuse a graph or vector store setting that contradicts another or cannot work."""
        if self.graph_backend == "neo4j" and not self.neo4j_uri:
            raise ConfigError(
                "MNEME_GRAPH_BACKEND=neo4j but NEO4J_URI is not set; set NEO4J_URI "
                "(e.g. bolt://127.0.0.1:7687) or unset MNEME_GRAPH_BACKEND to use the embedded store"
            )
        if self.graph_backend == "sqlite" and self.neo4j_uri:
            raise ConfigError(
                "MNEME_GRAPH_BACKEND=sqlite contradicts NEO4J_URI; unset NEO4J_URI to use the "
                "embedded store, or unset MNEME_GRAPH_BACKEND to use Neo4j"
            )
        if self.neo4j_uri and not self.neo4j_uri.startswith(
            ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")
        ):
            raise ConfigError(
                f"NEO4J_URI={self.neo4j_uri!r} is not a Bolt URI; use bolt://host:7687 or neo4j://host"
            )
        if self.qdrant_url and self.qdrant_path is not None:
            raise ConfigError(
                "QDRANT_URL and QDRANT_PATH are both set; unset QDRANT_PATH to use the server, "
                "or unset QDRANT_URL to use local mode"
            )
        if self.qdrant_url and not all(
            u.strip().startswith(("http://", "https://"))
            for u in self.qdrant_url.split(",")
            if u.strip()
        ):
            raise ConfigError(
                f"QDRANT_URL={self.qdrant_url!r} must start with http:// or https:// (several "
                f"nodes of one cluster: separated by commas, each with its scheme)"
            )
        if self.qdrant_write_consistency > self.qdrant_replication:
            raise ConfigError(
                f"MNEME_QDRANT_WRITE_CONSISTENCY={self.qdrant_write_consistency} exceeds "
                f"MNEME_QDRANT_REPLICATION={self.qdrant_replication}: a write cannot be applied by "
                f"more replicas than there are; lower it (1 is the default)"
            )

    def _check_services(self) -> None:
        """Refuse a server, embedding or auth setting that cannot work."""
        if self.server_url and not self.server_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"MNEME_SERVER_URL={self.server_url!r} must start with http:// or https://"
            )
        if self.embedding_base_url and not self.embedding_dim:
            raise ConfigError(
                "MNEME_EMBEDDING_BASE_URL is set but MNEME_EMBEDDING_DIM is not; set it to the "
                "model's output dimension (e.g. 1536) so collections are named and checked"
            )
        if self.embedding_dim is not None and self.embedding_dim <= 0:
            raise ConfigError("MNEME_EMBEDDING_DIM must be a positive integer")
        if self.embedding_batch_size <= 0:
            raise ConfigError("MNEME_EMBEDDING_BATCH_SIZE must be a positive integer")
        if self.embedding_threads <= 0:
            raise ConfigError("MNEME_EMBEDDING_THREADS must be a positive integer")
        if self.connect_timeout_s <= 0:
            raise ConfigError("MNEME_CONNECT_TIMEOUT_S must be positive")
        if self.jwt_secret and not self.jwt_audience:
            raise ConfigError(
                "MNEME_JWT_SECRET is set but MNEME_JWT_AUDIENCE is not; set the audience your "
                "issuer puts in `aud` so tokens minted for other services are refused"
            )

    def _check_limits(self) -> None:
        """Refuse a size, retry or time limit out of its range."""
        if not 1024 <= self.max_message_bytes <= 4_000_000:
            raise ConfigError("MNEME_MAX_MESSAGE_BYTES must be between 1024 and 4000000")
        if self.store_retry_s < 0:
            raise ConfigError("MNEME_STORE_RETRY_S must be zero or positive")
        if self.max_attempts < 1:
            raise ConfigError("MNEME_MAX_ATTEMPTS must be at least 1")
        if not 0 < self.session_gap_h <= 24:
            raise ConfigError("MNEME_SESSION_GAP_H must be more than 0 and at most 24 (hours)")

    @property
    def resolved_graph_backend(self) -> Literal["sqlite", "neo4j"]:
        """The graph backend in force: explicit choice, else neo4j when NEO4J_URI is set."""
        if self.graph_backend:
            return self.graph_backend
        return "neo4j" if self.neo4j_uri else "sqlite"

    @property
    def resolved_sqlite_path(self) -> Path:
        """The SQLite graph file in force."""
        return self.sqlite_path or self.data_dir / "graph.sqlite3"

    @property
    def vector_backend(self) -> Literal["qdrant-edge", "qdrant"]:
        """`qdrant` (qdrant-client: a server, or its in-memory local mode) or `qdrant-edge`
        (the embedded default: the Qdrant engine in this process)."""
        if self.qdrant_url or self.resolved_qdrant_location == ":memory:":
            return "qdrant"
        return "qdrant-edge"

    @property
    def resolved_qdrant_location(self) -> str:
        """The server URL, `:memory:`, or the embedded index's directory."""
        if self.qdrant_url:
            return self.qdrant_url
        if self.qdrant_path is not None and str(self.qdrant_path) == ":memory:":
            return ":memory:"
        return str(self.qdrant_path or self.data_dir / "vectors")

    @property
    def legacy_local_mode_dir(self) -> Path:
        """Where versions before the Qdrant Edge backend kept qdrant-client local-mode files."""
        return self.data_dir / "qdrant"

    @property
    def data_dir_note(self) -> str | None:
        """A note when memory lives in an earlier version's `./.mneme` (else None)."""
        if self.data_dir == LEGACY_DATA_DIR.resolve() and "MNEME_DATA_DIR" not in os.environ:
            return (
                f"using the memory in {self.data_dir} (the working directory's .mneme, from an "
                f"earlier version); move it to "
                f"{platform_data_dir()} or set MNEME_DATA_DIR to keep using it from any directory"
            )
        return None

    @property
    def resolved_outbox_dir(self) -> Path:
        """Where turns the graph store could not take wait (one file per process)."""
        return self.data_dir / "outbox"

    @property
    def resolved_api_keys_file(self) -> Path:
        """The keys file in force: MNEME_API_KEYS_FILE, else `<data_dir>/api-keys`."""
        return self.api_keys_file or self.data_dir / "api-keys"

    @property
    def keys_file_to_read(self) -> Path | None:
        """The keys file the server reads: the one named (which must exist), else the default
        one when `mneme keys add` has made it, else None."""
        if self.api_keys_file is not None:
            return self.api_keys_file
        default = self.resolved_api_keys_file
        return default if default.is_file() else None

    @property
    def auth_configured(self) -> bool:
        """True when API keys or a JWT secret bind callers to users (else loopback-only open)."""
        return bool(self.api_keys or self.keys_file_to_read or self.jwt_secret)

    @property
    def llm_configured(self) -> bool:
        """True when a chat endpoint or an OpenAI key is configured (else offline mode)."""
        return bool(self.llm_base_url or self.llm_api_key)


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment (and `.env`), raising `ConfigError` with a fix."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ConfigError:
        raise
    except ValidationError as exc:
        for err in exc.errors():
            ctx = err.get("ctx") or {}
            inner = ctx.get("error")
            if isinstance(inner, ConfigError):
                raise inner from None
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "settings"
        raise ConfigError(
            f"invalid setting {loc.upper()}: {first['msg']}; fix the environment variable "
            f"(see .env.example)"
        ) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process settings, read once on first call."""
    return load_settings()
