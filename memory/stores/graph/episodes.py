"""Episodes and their per-tenant TEMPORAL_NEXT chain: the contract, and its input rules.

Public methods are the contract callers use. A public method whose input needs cleaning or
checking is written here and hands clean values to the abstract `_hook` of the same name, which
each backend implements; a public method that needs nothing is abstract itself.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.schema import (
    ESS,
    STATUS_ORDER,
    Episode,
    EpisodeSource,
    EpisodeStatus,
    Neighbour,
    NewEpisode,
    as_utc,
    clean_text,
    episode_content,
)
from memory.stores.graph.concepts import Groups
from memory.stores.graph.coretrieval import STRONG_LINK, pairs
from memory.stores.graph.inputs import clean_record, count, distinct
from memory.stores.graph.kind import KindStore


@dataclass(frozen=True, slots=True)
class CreateResult:
    """Outcome of `create`: the uid and whether that episode existed (a retried write)."""

    uid: str
    duplicate: bool


@dataclass(frozen=True, slots=True)
class ThreadLinks:
    """What `thread_links` found among a set of episodes."""

    adjacent: dict[str, tuple[str | None, str | None]]
    """uid -> (previous, next): its neighbours on the chain that are in the set and of its
    thread (None where not); only the uids with at least one."""
    paired: set[str]
    """The uids of `adjacent` that hold a message and the reply to it (user and agent text,
    each with more than whitespace): a turn whose answer is inside it."""


def episode_record(new: NewEpisode) -> Episode:
    """The episode as stored: texts cleaned, content joined, time in UTC."""
    clean = clean_record(new)
    carried = {name: getattr(clean, name) for name in NewEpisode.model_fields}
    content = episode_content(clean.user_text, clean.agent_text)
    carried |= {"created_at": as_utc(clean.created_at), "status": EpisodeStatus(clean.status)}
    return Episode(content=content, **carried)


def movable_from(status: EpisodeStatus, only_forward: bool) -> list[EpisodeStatus]:
    """The statuses an episode may move to `status` from (never from `status` itself)."""
    return [
        s
        for s in EpisodeStatus
        if s != status and (not only_forward or STATUS_ORDER[s] < STATUS_ORDER[status])
    ]


class EpisodeStore(KindStore):
    """Episodes in time order: create, read, the chain, status, access and scores, and what an
    episode is connected to (the reads of consolidation and of the daily sleep level)."""

    async def create(self, episode: NewEpisode) -> CreateResult:
        """Persist an episode in one transaction and link it into the tenant's TEMPORAL_NEXT chain.

        The chain is ordered by (created_at, uid): an episode older than the tail is inserted in
        its place. An episode's identity is its uid: when the tenant already has that uid (a
        retried write), nothing is written and `duplicate=True`; the same content under another
        uid is another episode. A uid taken by another tenant raises `StoreError`.
        """
        return await self._insert(episode_record(episode))

    @abstractmethod
    async def _insert(self, episode: Episode) -> CreateResult:
        """Insert the episode and splice it into the chain, unless its uid exists."""

    async def attach_reply(self, tenant: str, uid: str, agent_text: str) -> bool:
        """Set the agent's side of a turn recorded before the reply; True if the episode exists.

        Content and content hash follow. An episode already past `pending` goes back to `stored`
        (bookkeeping runs again over the whole turn and prunes the vectors of the first pass);
        a `pending` one stays `pending`. Writing the same reply again changes nothing.
        """
        return await self._attach_reply(tenant, uid, clean_text(agent_text))

    @abstractmethod
    async def _attach_reply(self, tenant: str, uid: str, agent_text: str) -> bool:
        """In one transaction: unless agent_text is already this, set it with content
        (`episode_content`), and move a status past `pending` to `stored`."""

    @abstractmethod
    async def get(self, tenant: str, uid: str) -> Episode | None:
        """The episode with this uid, or None."""

    async def get_many(self, tenant: str, uids: Sequence[str]) -> list[Episode]:
        """The episodes among `uids` that exist, in the order of `uids` (repeats repeated)."""
        wanted = distinct(uids)
        if not wanted:
            return []
        found = {e.uid: e for e in await self._get_many(tenant, wanted)}
        return [found[uid] for uid in uids if uid in found]

    @abstractmethod
    async def _get_many(self, tenant: str, uids: list[str]) -> list[Episode]:
        """The existing episodes among the distinct, non-empty `uids`, in any order."""

    async def neighbours(self, tenant: str, uid: str, k: int) -> list[Neighbour]:
        """Up to k episodes before and k after `uid` on the chain, by offset (-k..-1, 1..k)."""
        return (await self.neighbours_many(tenant, [uid], k)).get(uid, [])

    async def thread_links(self, tenant: str, uids: Sequence[str]) -> ThreadLinks:
        """The TEMPORAL_NEXT links between episodes of `uids` that are of one thread (the turn
        before and after each in its conversation, when that one is in the set too), and which
        of the linked episodes are two-sided; one read. Another tenant's episodes and unknown
        uids have none."""
        wanted = distinct(uids)
        if not wanted:
            return ThreadLinks({}, set())
        adjacent: dict[str, tuple[str | None, str | None]] = {}
        paired: set[str] = set()
        for src, dst, src_paired, dst_paired in await self._thread_links(tenant, wanted):
            adjacent[src] = (adjacent.get(src, (None, None))[0], dst)
            adjacent[dst] = (src, adjacent.get(dst, (None, None))[1])
            if src_paired:
                paired.add(src)
            if dst_paired:
                paired.add(dst)
        return ThreadLinks(adjacent, paired)

    @abstractmethod
    async def _thread_links(
        self, tenant: str, uids: list[str]
    ) -> list[tuple[str, str, bool, bool]]:
        """(src, dst, src two-sided, dst two-sided) for each src -> dst link of the chain with
        both ends among `uids` (non-empty, distinct), of the tenant and of one thread."""

    async def neighbours_many(
        self, tenant: str, uids: Sequence[str], k: int
    ) -> dict[str, list[Neighbour]]:
        """`neighbours` of several episodes in one read: for each existing uid among
        `uids`, up to k episodes before and k after it on the chain, by offset."""
        wanted = distinct(uids)
        if count("k", k) == 0 or not wanted:
            return {}
        return await self._neighbours_many(tenant, wanted, k)

    @abstractmethod
    async def _neighbours_many(
        self, tenant: str, uids: list[str], k: int
    ) -> dict[str, list[Neighbour]]:
        """The neighbours of each of `uids` (non-empty, distinct) that has any, by offset."""

    async def in_thread(
        self,
        tenant: str,
        thread_id: str,
        *,
        after: tuple[datetime, str] | None = None,
        limit: int = 200,
    ) -> list[Episode]:
        """Episodes of one thread, oldest first by (created_at, uid), up to `limit`; with
        `after`, only those strictly after that (created_at, uid) cursor."""
        limit = count("limit", limit)
        if limit == 0:
            return []
        cursor = None if after is None else (as_utc(after[0]), str(after[1]))
        return await self._in_thread(tenant, clean_text(thread_id), cursor, limit)

    @abstractmethod
    async def _in_thread(
        self, tenant: str, thread_id: str, after: tuple[datetime, str] | None, limit: int
    ) -> list[Episode]:
        """Up to `limit` (at least 1) episodes of the thread after the cursor, oldest first."""

    async def set_status(
        self,
        tenant: str,
        uid: str,
        status: EpisodeStatus,
        *,
        only_forward: bool = True,
    ) -> bool:
        """Set the status; with `only_forward` a move backwards is ignored. True if it changed."""
        status = EpisodeStatus(status)
        return await self._set_status(tenant, uid, status, movable_from(status, only_forward))

    @abstractmethod
    async def _set_status(
        self, tenant: str, uid: str, status: EpisodeStatus, movable: list[EpisodeStatus]
    ) -> bool:
        """Set `status` if the episode's current status is in `movable`; True if it changed."""

    async def list_by_status(
        self, tenant: str | None, statuses: Sequence[EpisodeStatus], limit: int = 1000
    ) -> list[Episode]:
        """Episodes in any of `statuses`, oldest first (created_at, uid).

        `tenant=None` is the maintenance view across tenants (the sweep and `mneme doctor`);
        nothing on a user's read path passes None.
        """
        wanted = [EpisodeStatus(s) for s in statuses]
        limit = count("limit", limit)
        if not wanted:
            return []
        return await self._list_by_status(tenant, wanted, limit)

    @abstractmethod
    async def _list_by_status(
        self, tenant: str | None, statuses: list[EpisodeStatus], limit: int
    ) -> list[Episode]:
        """Up to `limit` episodes in the non-empty `statuses`, by (created_at, uid)."""

    @abstractmethod
    async def list_uids(self, tenant: str | None) -> list[str]:
        """Every episode uid (of one tenant, or all for maintenance), sorted."""

    @abstractmethod
    async def list_tenants(self) -> list[str]:
        """Tenants that have any episode, sorted (maintenance only)."""

    async def record_access(self, tenant: str, uids: Sequence[str], at: datetime) -> None:
        """Increment access_count and set last_accessed for each existing uid (once per call),
        and, in the same transaction, link each pair of the first `MAX_LINKED` of them as
        retrieved together (`memory.stores.graph.coretrieval`): a new link or count + 1, last_at = at,
        weight = ln(1 + count). Pairs with an episode the tenant lacks are skipped."""
        wanted = distinct(uids)
        if wanted:
            await self._record_access(tenant, wanted, as_utc(at), pairs(wanted))

    @abstractmethod
    async def _record_access(
        self, tenant: str, uids: list[str], at: datetime, pairs: list[tuple[str, str]]
    ) -> None:
        """Count one access at `at` on each existing episode among the distinct `uids` and
        strengthen the link of each (a, b) pair (a < b) whose two episodes exist."""

    @abstractmethod
    async def set_ess(self, tenant: str, uid: str, ess: ESS) -> None:
        """Store the Evidence Strength Score of an episode."""

    @abstractmethod
    async def set_source(self, tenant: str, uid: str, source: EpisodeSource) -> None:
        """Record where an episode's words came from (nothing happens for a uid not the
        tenant's)."""

    async def update_scores(
        self,
        tenant: str,
        uid: str,
        *,
        salience: float | None = None,
        utility_score: float | None = None,
        archived: bool | None = None,
    ) -> None:
        """Update the given bookkeeping scores of an episode; None leaves a field as it is."""
        if salience is None and utility_score is None and archived is None:
            return
        await self._update_scores(
            tenant,
            uid,
            None if salience is None else float(salience),
            None if utility_score is None else float(utility_score),
            None if archived is None else bool(archived),
        )

    @abstractmethod
    async def _update_scores(
        self,
        tenant: str,
        uid: str,
        salience: float | None,
        utility_score: float | None,
        archived: bool | None,
    ) -> None:
        """Set the scores that are not None on the episode, if it exists."""

    async def set_pinned(self, tenant: str, uid: str, pinned: bool) -> Episode | None:
        """Pin (or unpin) an episode; the episode as it now is, or None if the tenant has none.

        A pinned episode is never archived, expired or forgotten by consolidation and its
        salience does not decay. Pinning an archived episode restores it in the same
        transaction: `archived` is cleared and an indexed status goes back to `stored`, so
        bookkeeping (the caller submits it, or the sweep finds it) rebuilds its vectors.
        """
        return await self._set_pinned(tenant, uid, bool(pinned))

    @abstractmethod
    async def _set_pinned(self, tenant: str, uid: str, pinned: bool) -> Episode | None:
        """In one transaction: set `pinned`; when pinning, clear `archived` and move an archived
        indexed/processed episode back to `stored`. The episode after, or None."""

    @abstractmethod
    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete an episode and its edges, re-linking the chain around it. True if it existed."""

    @abstractmethod
    async def count(self, tenant: str) -> int:
        """Number of episodes of the tenant."""

    async def recent_activity(self, tenant: str, n: int) -> list[datetime]:
        """The created_at of the tenant's `n` newest episodes, oldest first (read from an index)."""
        if count("n", n) == 0:
            return []
        return (await self._recent_activity(tenant, n))[::-1]

    @abstractmethod
    async def _recent_activity(self, tenant: str, n: int) -> list[datetime]:
        """The created_at of the `n` (at least 1) newest episodes, newest first, off an index."""

    async def connections(
        self, tenant: str, uids: Sequence[str], *, min_link_weight: float = STRONG_LINK
    ) -> dict[str, int]:
        """For each existing episode among `uids`: its number of edges to topics (DISCUSSES),
        entities (MENTIONS), facts (STATES) and beliefs (evidence), each counted once, plus
        its co-retrieval links (either end) of weight >= `min_link_weight`."""
        wanted = distinct(uids)
        if not wanted:
            return {}
        return await self._connections(tenant, wanted, float(min_link_weight))

    @abstractmethod
    async def _connections(
        self, tenant: str, uids: list[str], min_link_weight: float
    ) -> dict[str, int]:
        """Edge counts of the existing episodes among the distinct, non-empty `uids`."""

    async def sole_evidence(self, tenant: str, uids: Sequence[str]) -> set[str]:
        """The episodes among `uids` that sleep protects as evidence: the only evidence episode
        of a belief with confidence above 0, the only episode stating a current (not superseded)
        fact, or an episode stating a current timeless fact (precision `unbounded`), whose
        words stay true however old they grow."""
        wanted = distinct(uids)
        return await self._sole_evidence(tenant, wanted) if wanted else set()

    @abstractmethod
    async def _sole_evidence(self, tenant: str, uids: list[str]) -> set[str]:
        """The sole-evidence episodes among the distinct, non-empty `uids`."""

    async def terms(self, tenant: str, uids: Sequence[str]) -> dict[str, list[str]]:
        """For each existing episode among `uids`: the slugs of its topics and the keys of the
        entities it mentions, together, sorted and each once."""
        wanted = distinct(uids)
        return await self._terms(tenant, wanted) if wanted else {}

    @abstractmethod
    async def _terms(self, tenant: str, uids: list[str]) -> dict[str, list[str]]:
        """Terms of the existing episodes among the distinct, non-empty `uids`."""

    @abstractmethod
    async def groups(self, tenant: str, uid: str) -> Groups:
        """The concepts that include the episode and the diary entries that recount it."""
