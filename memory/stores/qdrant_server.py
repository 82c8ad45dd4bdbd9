"""What is particular to a Qdrant server or cluster: connecting, failing over, collection layout.

`QDRANT_URL` names one server, or several nodes of one cluster separated by commas: any node of a
Qdrant cluster answers any request (it forwards to the shards' owners), so `Endpoints` sends
every call to the node in use and moves to the next when that one cannot be reached (refused,
reset, timed out, or answering 502/503/504), without waiting for a load balancer. The API key
travels in the `api-key` header (REST) or metadata (gRPC); `QDRANT_PREFER_GRPC` sends data calls
over gRPC (`QDRANT_GRPC_PORT`, 6334 by default) and keeps REST for the rest, as qdrant-client does.

`Layout` is how new collections are made on a server (existing ones are left as they are;
`mneme doctor` shows what they have): shards, replication factor and write consistency for a
cluster, and the tenancy settings of docs/deployment.md (every search filters on the tenant, so
the global HNSW graph is off, `m: 0`, and a graph per tenant is built instead, `payload_m`,
from the `is_tenant` keyword index). Nothing here talks to local mode.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urlsplit

import httpx
from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from memory.stores.errors import StoreUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")

RETRYABLE_HTTP = frozenset({502, 503, 504})
"""Statuses a node answers when it cannot serve now (another node may)."""
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True, slots=True)
class Layout:
    """How this process creates collections on a server (an existing collection keeps its own)."""

    shards: int = 1
    """Shards per collection (`shard_number`): more than one spreads a collection over nodes."""
    replication_factor: int = 1
    """Copies of each shard on different nodes (a cluster; 2 survives one node down)."""
    write_consistency: int = 1
    """Replicas that must apply a write before it is acknowledged (docs/deployment.md: 1, with
    Qdrant recovering a replica that missed writes when its node returns)."""
    per_tenant_hnsw: bool = True
    """Build HNSW graphs per tenant (`payload_m` on the `is_tenant` index) and no global one
    (`m: 0`): every search of mneme filters on one tenant."""
    payload_m: int = 16
    """Links per node in each tenant's graph (Qdrant's default `m`)."""
    tenant_shards: bool = False
    """Custom sharding (`qdrant_shards`): every tenant in the `shared` shard key until it is
    promoted to shards of its own; needs Qdrant in distributed mode."""

    def create_args(self) -> dict[str, object]:
        """Keyword arguments of `create_collection` for this layout."""
        args: dict[str, object] = {
            "shard_number": self.shards,
            "replication_factor": self.replication_factor,
            "write_consistency_factor": self.write_consistency,
        }
        if self.tenant_shards:  # shards are made per shard key (`qdrant_shards`)
            args["sharding_method"] = models.ShardingMethod.CUSTOM
        if self.per_tenant_hnsw:
            args["hnsw_config"] = models.HnswConfigDiff(m=0, payload_m=self.payload_m)
        return args


@dataclass(frozen=True, slots=True)
class Connection:
    """How to reach a server: its nodes, key and transport."""

    urls: tuple[str, ...]
    api_key: str | None = None
    prefer_grpc: bool = False
    grpc_port: int = 6334
    layout: Layout = field(default_factory=Layout)

    @classmethod
    def parse(cls, location: str, **kwargs: object) -> Connection:
        """A connection to the comma-separated node URLs of `location`."""
        urls = tuple(u.strip().rstrip("/") for u in location.split(",") if u.strip())
        if not urls or not all(u.startswith(("http://", "https://")) for u in urls):
            raise ValueError(
                f"QDRANT_URL={location!r}: give http(s)://host:port, or several nodes of one "
                f"cluster separated by commas"
            )
        return cls(urls, **kwargs)  # type: ignore[arg-type]

    def client(self, url: str, timeout_s: int) -> AsyncQdrantClient:
        """A client of one node (the key in headers: see `warn_plain_http`)."""
        return AsyncQdrantClient(
            url=url,
            headers={"api-key": self.api_key} if self.api_key else None,
            prefer_grpc=self.prefer_grpc,
            grpc_port=self.grpc_port,
            timeout=timeout_s,
            check_compatibility=False,  # it warns on failure; we check with a real call
        )

    def warn_plain_http(self) -> None:
        """Log once that the key crosses the network in clear (qdrant-client would warn on every
        client, which `filterwarnings = error` turns into a failure; loopback is exempt)."""
        if not self.api_key:
            return
        exposed = [u for u in self.urls if u.startswith("http://") and _host(u) not in LOOPBACK]
        if exposed:
            log.warning(
                "QDRANT_API_KEY is sent unencrypted to %s; use https:// outside a private network",
                ", ".join(exposed),
            )


def _host(url: str) -> str:
    return urlsplit(url).hostname or ""


def unreachable(exc: BaseException) -> bool:
    """True when a call failed because the node could not serve it (another node may)."""
    if isinstance(exc, ResponseHandlingException):
        return isinstance(exc.source, httpx.TransportError)
    if isinstance(exc, UnexpectedResponse):
        return exc.status_code in RETRYABLE_HTTP
    if isinstance(exc, httpx.TransportError):
        return True
    try:
        import grpc
    except ImportError:  # pragma: no cover - grpcio is a dependency of qdrant-client
        return False
    if isinstance(exc, grpc.aio.AioRpcError):
        return exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    return False


def refused_key(exc: BaseException) -> bool:
    """True when the server refused the API key (HTTP 401/403, gRPC UNAUTHENTICATED)."""
    if isinstance(exc, UnexpectedResponse):
        return exc.status_code in (401, 403)
    try:
        import grpc
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, grpc.aio.AioRpcError) and exc.code() in (
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
    )


def describe(exc: BaseException) -> str:
    """A short reason for a failed call, without the client's internals."""
    if isinstance(exc, ResponseHandlingException):
        exc = exc.source
    if isinstance(exc, UnexpectedResponse):
        return f"HTTP {exc.status_code}"
    try:
        import grpc

        if isinstance(exc, grpc.aio.AioRpcError):
            return f"gRPC {exc.code().name}"
    except ImportError:  # pragma: no cover
        pass
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class Endpoints:
    """Clients of every node in `QDRANT_URL` (or the one local client) and the one in use."""

    def __init__(self, clients: list[tuple[str, AsyncQdrantClient]]) -> None:
        """Wrap clients in the order to try them; the first is used until it fails."""
        self._clients = clients
        self._current = 0
        self.failovers = 0
        """How many times a call moved to another node (for tests and the doctor)."""

    @property
    def url(self) -> str:
        """The node in use."""
        return self._clients[self._current][0]

    @property
    def urls(self) -> list[str]:
        """Every node, in order."""
        return [url for url, _ in self._clients]

    @property
    def client(self) -> AsyncQdrantClient:
        """The client of the node in use."""
        return self._clients[self._current][1]

    async def call(self, fn: Callable[[AsyncQdrantClient], Awaitable[T]]) -> T:
        """Run `fn` on the node in use, moving to the next node while a node cannot serve it;
        `StoreUnavailable` when none can. Every call mneme makes is idempotent (upserts by id,
        deletes by filter), so a call retried on another node does nothing twice.

        Each call tries every node once, in order from the one in use when it began, and moves
        the node in use past a node that failed only if no concurrent call has moved it since:
        calls failing on one dead node at once each advanced it before, so it went round to the
        dead node again and a call could meet that node on every try and fail with live nodes
        left (`tests/integration/test_qdrant_server.py`)."""
        reasons: list[str] = []
        n = len(self._clients)
        start = self._current
        for step in range(n):
            i = (start + step) % n
            url, client = self._clients[i]
            try:
                result = await fn(client)
            except Exception as exc:
                if not unreachable(exc):
                    raise
                reasons.append(f"{url}: {describe(exc)}")
                if n > 1 and self._current == i:
                    self._current = (i + 1) % n
                    self.failovers += 1
                    log.warning(
                        "Qdrant node %s cannot serve (%s); trying %s", url, reasons[-1], self.url
                    )
                continue
            if step:
                self._current = i  # it answered: use it next
            return result
        raise StoreUnavailable(
            f"no Qdrant node answers ({'; '.join(reasons)}); check QDRANT_URL and that the "
            f"server (or a node of the cluster) runs"
        )

    async def each(
        self, fn: Callable[[AsyncQdrantClient], Awaitable[T]]
    ) -> list[tuple[str, T | BaseException]]:
        """Run `fn` on every node, no failover: each node's own answer (or its error)."""
        answers = await asyncio.gather(
            *(fn(client) for _, client in self._clients), return_exceptions=True
        )
        return [(url, a) for (url, _), a in zip(self._clients, answers, strict=True)]

    async def close(self) -> None:
        """Close every client."""
        for _, client in self._clients:
            await client.close()


# --------------------------------------------------------------------------- payload indexes


def payload_index(field: str, kind: str) -> models.PayloadSchemaParams:
    """The server's payload index of `field`: the tenant one `is_tenant` (co-located storage,
    and the only field HNSW builds graphs for), every other one used by filters alone."""
    if field == "tenant":
        return models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
    if kind == "keyword":
        return models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, enable_hnsw=False)
    if kind == "datetime":
        return models.DatetimeIndexParams(type=models.DatetimeIndexType.DATETIME, enable_hnsw=False)
    if kind == "bool":
        return models.BoolIndexParams(type=models.BoolIndexType.BOOL, enable_hnsw=False)
    if kind == "float":
        return models.FloatIndexParams(type=models.FloatIndexType.FLOAT, enable_hnsw=False)
    if kind == "integer":
        return models.IntegerIndexParams(
            type=models.IntegerIndexType.INTEGER, lookup=True, range=False, enable_hnsw=False
        )
    raise ValueError(f"no payload index of type {kind!r}")


# --------------------------------------------------------------------------- cluster health


@dataclass(frozen=True, slots=True)
class ClusterHealth:
    """What `mneme doctor` says of a Qdrant cluster: fine or not, and why, in a sentence."""

    ok: bool
    detail: str


async def cluster_health(endpoints: Endpoints, names: list[str]) -> ClusterHealth | None:
    """Peers, raft leader and every replica of `names`' shards (None: not a cluster).

    Unwell when there is no leader, a replica is not `Active` (dead, or still recovering from a
    node that was down), a node of QDRANT_URL does not answer, or two replicas of one shard
    hold different numbers of points (counted by each node for its own replicas; while writes
    go on, a count may lag for a moment).
    """
    status = await endpoints.call(lambda c: c.cluster_status())
    if getattr(status, "status", "disabled") != "enabled":
        return None
    peers = dict(getattr(status, "peers", {}))
    leader = getattr(getattr(status, "raft_info", None), "leader", None)
    problems: list[str] = [] if leader is not None else ["no raft leader"]
    counts: dict[tuple[str, int], dict[int, int]] = {}
    shape: set[tuple[int, int]] = set()
    for name in names:
        info = await endpoints.call(lambda c, name=name: c.collection_cluster_info(name))  # type: ignore[misc]
        replicas: dict[int, int] = {}
        for shard in [*info.local_shards, *info.remote_shards]:
            replicas[shard.shard_id] = replicas.get(shard.shard_id, 0) + 1
            state = str(getattr(shard.state, "value", shard.state))
            if state != "Active":
                peer = getattr(shard, "peer_id", info.peer_id)
                problems.append(f"{name} shard {shard.shard_id} on peer {peer}: {state}")
        if info.shard_transfers:
            problems.append(f"{name}: {len(info.shard_transfers)} shard transfer(s) under way")
        shape.add((len(replicas), max(replicas.values(), default=0)))
        for url, answer in await endpoints.each(
            lambda c, name=name: c.collection_cluster_info(name)  # type: ignore[misc]
        ):
            if isinstance(answer, BaseException):
                problems.append(f"node {url} does not answer ({describe(answer)})")
                continue
            for shard in answer.local_shards:
                counts.setdefault((name, shard.shard_id), {})[answer.peer_id] = shard.points_count
    for (name, shard_id), by_peer in sorted(counts.items()):
        if len(set(by_peer.values())) > 1:
            problems.append(
                f"{name} shard {shard_id}: replicas hold {sorted(by_peer.values())} points"
            )
    layout = ", ".join(f"{s} shards x {r} replicas" for s, r in sorted(shape)) or "no collections"
    head = f"{len(peers)} peers, raft leader {leader}; {len(names)} collections, {layout}"
    if problems:
        return ClusterHealth(False, f"{head}; " + "; ".join(sorted(set(problems))[:8]))
    return ClusterHealth(True, f"{head}; every replica Active, replica point counts agree")
