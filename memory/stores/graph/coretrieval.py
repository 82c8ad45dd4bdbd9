"""Co-retrieval links between episodes (CO_RETRIEVED): the contract and its input rules.

Links are written by `record_access` (the episode store), in the transaction that counts the
access (`pairs`); this store reads them and lets the micro level of consolidation reweigh and
prune them (`memory.sleep.coretrieval`, which holds the weight rule). A link joins two episodes of one tenant, stored once as (a, b) with
a < b, and goes when either episode is deleted.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memory.stores.graph.inputs import distinct
from memory.stores.graph.kind import KindStore

MAX_LINKED = 10
"""Only the first this many episodes of one access are linked (at most 45 pairs a turn)."""

STRONG_LINK = 1.0
"""A link counts as a connection from this weight: retrieved together at least twice (ln 3 =
1.10), recently. Once is often coincidence (ten results of one search); twice is association."""


@dataclass(frozen=True, slots=True)
class Link:
    """Two episodes retrieved together: `a` < `b` (uids), with the link's evidence and weight."""

    a: str
    b: str
    count: int
    last_at: datetime
    weight: float


class _Row(Protocol):
    def __getitem__(self, key: str, /) -> Any: ...


def link_from(row: _Row, last_at: datetime) -> Link:
    """A link from a backend's row (a, b, count, weight by name) and its time, converted."""
    return Link(
        a=str(row["a"]),
        b=str(row["b"]),
        count=int(row["count"]),
        last_at=last_at,
        weight=float(row["weight"]),
    )


def pairs(uids: Sequence[str]) -> list[tuple[str, str]]:
    """Each unordered pair of the first `MAX_LINKED` distinct uids, as (smaller, larger), sorted."""
    first = list(dict.fromkeys(u for u in uids if u))[:MAX_LINKED]
    return sorted({(min(x, y), max(x, y)) for i, x in enumerate(first) for y in first[i + 1 :]})


def _pair(a: str, b: str) -> tuple[str, str]:
    if not a or not b or a == b:
        raise ValueError(f"a link joins two different episodes, not {a!r} and {b!r}")
    return (min(a, b), max(a, b))


class CoRetrievalStore(KindStore):
    """Reads, reweighing and pruning of the links between episodes retrieved together."""

    async def reweigh(
        self,
        tenant: str,
        weights: Mapping[tuple[str, str], float],
        drop: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Set the weight of existing links and delete the `drop` ones, in one transaction;
        a pair is either order, and a pair with no link is ignored."""
        clean = {_pair(a, b): float(w) for (a, b), w in weights.items()}
        gone = sorted({_pair(a, b) for a, b in drop})
        if clean or gone:
            await self._reweigh(tenant, clean, gone)

    @abstractmethod
    async def _reweigh(
        self, tenant: str, weights: dict[tuple[str, str], float], drop: list[tuple[str, str]]
    ) -> None:
        """Set the weights and delete the links of (a, b) pairs with a < b, in one transaction."""

    @abstractmethod
    async def _list(self, tenant: str, uids: list[str] | None) -> list[Link]:
        """The tenant's links, all or touching the non-empty `uids`, in any order."""

    async def list(self, tenant: str, uids: Sequence[str] | None = None) -> list[Link]:
        """The tenant's links (with `uids`, those touching any of them), sorted by (a, b)."""
        wanted = None if uids is None else distinct(uids)
        if wanted == []:
            return []
        return sorted(await self._list(tenant, wanted), key=lambda x: (x.a, x.b))
