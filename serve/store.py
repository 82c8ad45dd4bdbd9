"""`MnemeStore`: mneme as a LangGraph `BaseStore`, so any graph, `create_react_agent(...,
store=...)` or langmem's memory tools can keep their long-term memory in mneme.

    store = MnemeStore(await Memory.open())          # inside a running event loop
    await store.aput(("ada", "memories"), "tea", {"text": "Ada drinks green tea"})
    await store.asearch(("ada",), query="what does Ada drink?")

- **The first namespace label is the tenant**: every item of `("ada", ...)` is one of ada's
  memories, and nothing crosses tenants. `MnemeStore(memory, tenant="ada")` binds the store to
  one user (what a server does with the authenticated identity): any other first label is an
  `InvalidNamespaceError`.
- **An item is an episode**: its key and value as JSON (verbatim; lone surrogates become
  U+FFFD) are the episode's text, in a thread named by the namespace, with a uid derived from (tenant,
  namespace, key). A put writes it through mneme's durable write path and queues its
  bookkeeping, so items become facts and searchable fragments like any turn, and the agent's own
  retrieval finds them. Its source is `inferred`: an agent wrote it down, the user did not say it. Putting a key again replaces the item (the old episode and what was
  derived from it alone are deleted first); `delete` does the same without a new one.
- **search(query=...) is mneme's retrieval** over the tenant's memory, keeping the items under
  the namespace prefix, scored by retrieval (best first); an item is found once its bookkeeping
  ran. Without a query, items are listed newest first. `filter` matches top-level value fields
  (equality, or `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`).
- `created_at` and `updated_at` are both the time of the item's last put. TTLs are not
  supported (`supports_ttl` is False; a put with a `ttl` is a ValueError), and every item is
  indexed as a whole, as every memory is: a put's `index` field list is accepted (those fields
  are indexed, with the rest), `index=False` is a ValueError.
- `server_store` is the store LangGraph Server uses (`store.path` in langgraph.json).

Listing and filtering read the tenant's store episodes (one graph read each, cost linear in
how many items the tenant has); `get` reads one episode.
"""

from __future__ import annotations

import json
import operator
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.batch import AsyncBatchedBaseStore

from memory.schema import Episode, EpisodeSource, stable_uid
from memory.services import get_services
from memory.tenant import InvalidTenant, TenantId, tenant_id
from memory.write.episodes import remember
from memory.write.limits import InvalidInput, check_turn
from serve.api import Memory

THREAD_PREFIX = "store:"
"""Thread ids of store items: the prefix, then the namespace as a JSON list."""
MAX_KEY_CHARS = 512

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


def _tenant(label: str) -> TenantId:
    """A namespace's first label as the tenant (`memory.tenant`), refused, never trimmed."""
    try:
        return tenant_id(label, name="the namespace's first label (the user)")
    except InvalidTenant as exc:
        raise InvalidNamespaceError(str(exc)) from None


def _thread(namespace: tuple[str, ...]) -> str:
    return THREAD_PREFIX + json.dumps(list(namespace), ensure_ascii=False)


def _namespace_of(thread_id: str) -> tuple[str, ...] | None:
    if not thread_id.startswith(THREAD_PREFIX):
        return None
    labels = json.loads(thread_id[len(THREAD_PREFIX) :])
    return tuple(str(label) for label in labels)


def item_uid(namespace: tuple[str, ...], key: str) -> str:
    """The episode uid of the item at (namespace, key)."""
    return stable_uid("store-item", json.dumps(list(namespace), ensure_ascii=False), key)


def _dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)


def item_text(key: str, value: dict[str, Any]) -> str:
    """The text an item is remembered as (its key and JSON value): what the size limit counts.
    `TypeError` / `ValueError` when the value is not JSON."""
    return _dumps({"key": key, "value": value})


def _matches(value: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    for field, wanted in (flt or {}).items():
        have = value.get(field)
        if isinstance(wanted, dict) and wanted and all(k in _OPS for k in wanted):
            try:
                if not all(_OPS[op](have, arg) for op, arg in wanted.items()):
                    return False
            except TypeError:  # incomparable types (a string against a number) do not match
                return False
        elif have != wanted:
            return False
    return True


def _starts_with(namespace: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return namespace[: len(prefix)] == prefix


def _label_match(labels: tuple[str, ...], path: tuple[str, ...]) -> bool:
    return len(labels) >= len(path) and all(
        p in ("*", x) for p, x in zip(path, labels[: len(path)], strict=True)
    )


class MnemeStore(AsyncBatchedBaseStore):
    """A LangGraph store over mneme's memory; namespace[0] is the tenant. Construct it inside
    the event loop its `Memory` runs on; the sync methods work from other threads. Without a
    `memory`, the process's (`get_services()`) is opened on first use."""

    supports_ttl = False

    def __init__(self, memory: Memory | None = None, *, tenant: str | None = None) -> None:
        super().__init__()
        self._memory = memory
        self.tenant = None if tenant is None else tenant_id(tenant)

    @property
    def memory(self) -> Memory:
        """The memory this store reads and writes."""
        if self._memory is None:
            raise RuntimeError("the process's memory opens on the store's first operation")
        return self._memory

    # ---- plumbing

    def _tenant_of(self, namespace: tuple[str, ...]) -> TenantId:
        if not namespace or not all(isinstance(label, str) and label for label in namespace):
            raise InvalidNamespaceError(
                f"namespace {namespace!r} must be non-empty labels; the first is the user"
            )
        if self.tenant is not None and namespace[0] != self.tenant:
            raise InvalidNamespaceError(
                "this store is bound to one user: namespaces must start with that user's id"
            )
        if len(_thread(namespace)) > MAX_KEY_CHARS:
            raise InvalidNamespaceError(f"namespace is longer than {MAX_KEY_CHARS} characters")
        return _tenant(namespace[0])

    def _item(self, episode: Episode, score: float | None = None) -> Item | SearchItem | None:
        namespace = _namespace_of(episode.thread_id)
        if namespace is None:
            return None
        envelope = json.loads(episode.user_text)
        kwargs: dict[str, Any] = {
            "value": envelope["value"],
            "key": envelope["key"],
            "namespace": namespace,
            "created_at": episode.created_at,
            "updated_at": episode.created_at,
        }
        if score is None:
            return Item(**kwargs)
        return SearchItem(**kwargs, score=score)

    async def _items(self, tenant: str, prefix: tuple[str, ...]) -> list[Episode]:
        graph = self.memory.services.graph
        episodes = await graph.episodes.get_many(tenant, await graph.episodes.list_uids(tenant))
        out = []
        for episode in episodes:
            namespace = _namespace_of(episode.thread_id)
            if namespace is not None and _starts_with(namespace, prefix):
                out.append(episode)
        return out

    # ---- operations

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; each result in its place."""
        if self._memory is None:
            self._memory = Memory(await get_services())
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, PutOp):
                await self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        return results

    async def _get(self, op: GetOp) -> Item | None:
        tenant = self._tenant_of(op.namespace)
        episode = await self.memory.services.graph.episodes.get(
            tenant, item_uid(op.namespace, op.key)
        )
        item = None if episode is None else self._item(episode)
        return item if isinstance(item, Item) else None

    async def _put(self, op: PutOp) -> None:
        tenant = self._tenant_of(op.namespace)
        if not isinstance(op.key, str) or not op.key or len(op.key) > MAX_KEY_CHARS:
            raise ValueError(f"key must be a non-empty string of at most {MAX_KEY_CHARS} chars")
        # ValueErrors, so that the server's store API answers 400 naming the field.
        if op.ttl is not None:
            raise ValueError("ttl: MnemeStore does not support TTLs; omit ttl (or pass None)")
        if op.index is False:
            raise ValueError(
                "index: every MnemeStore item is indexed (it becomes memory the agent recalls); "
                "index=False is not supported, omit it"
            )
        uid = item_uid(op.namespace, op.key)
        text = None
        if op.value is not None:
            if not isinstance(op.value, dict):
                raise ValueError("value must be a dict (JSON object)")
            try:
                text = item_text(op.key, op.value)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"value must be JSON: {exc}") from None
            # The write path's limits (the message size), checked before the old item goes.
            try:
                check_turn(
                    "item",
                    limit=self.memory.services.settings.max_message_bytes,
                    thread_id=_thread(op.namespace),
                    user_text=text,
                    agent_text="",
                    at=None,
                )
            except InvalidInput as exc:
                raise type(exc)(str(exc).replace("item.user_text", "value")) from None
        if await self.memory.services.graph.episodes.get(tenant, uid) is not None:
            await self.memory.delete(tenant, uid)
        if text is None:
            return
        await remember(
            self.memory.services,
            tenant=tenant,
            thread_id=_thread(op.namespace),
            user_text=text,
            uid=uid,
            source=EpisodeSource.INFERRED,  # what an app's agent wrote down, not the user's words
        )
        self.memory.services.bookkeeping.submit(tenant, uid)

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        tenant = self._tenant_of(prefix)
        found: list[tuple[Episode, float]]
        if op.query:
            hits = await self.memory.search(tenant, op.query, k=100, kinds=("episode",))
            graph = self.memory.services.graph
            episodes = {
                e.uid: e for e in await graph.episodes.get_many(tenant, [h.uid for h in hits])
            }
            found = [(episodes[h.uid], h.score) for h in hits if h.uid in episodes]
            found = [(e, s) for e, s in found if _in_prefix(e, prefix)]
        else:
            items = await self._items(tenant, prefix)
            items.sort(key=lambda e: (e.created_at, e.uid), reverse=True)
            found = [(e, 0.0) for e in items]
        out: list[SearchItem] = []
        for episode, score in found:
            item = self._item(episode, score if op.query else None)
            if item is not None and _matches(item.value, op.filter):
                out.append(
                    item
                    if isinstance(item, SearchItem)
                    else SearchItem(
                        namespace=item.namespace,
                        key=item.key,
                        value=item.value,
                        created_at=item.created_at,
                        updated_at=item.updated_at,
                    )
                )
        return out[op.offset : op.offset + op.limit]

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefixes = [c.path for c in op.match_conditions or () if c.match_type == "prefix"]
        suffixes = [c.path for c in op.match_conditions or () if c.match_type == "suffix"]
        if self.tenant is not None:
            tenant = self.tenant
        elif prefixes and prefixes[0] and prefixes[0][0] != "*":
            tenant = _tenant(prefixes[0][0])
        else:
            raise InvalidNamespaceError(
                "list_namespaces needs a prefix naming the user (its first label)"
            )
        spaces: set[tuple[str, ...]] = set()
        for episode in await self._items(tenant, (tenant,)):
            namespace = _namespace_of(episode.thread_id)
            assert namespace is not None
            if not all(_label_match(namespace, p) for p in prefixes):
                continue
            if not all(_label_match(namespace[::-1], s[::-1]) for s in suffixes):
                continue
            spaces.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        ordered = sorted(spaces)
        return ordered[op.offset : op.offset + op.limit]


@asynccontextmanager
async def server_store() -> AsyncIterator[MnemeStore]:
    """The store of LangGraph Server (`store.path` in langgraph.json): every user's memory in
    this process. The server's auth handler (`serve/auth.py`, `@auth.on.store`) makes each
    call's namespace start with the caller's id; the webapp's lifespan opens and closes the
    process services."""
    yield MnemeStore()


def _in_prefix(episode: Episode, prefix: tuple[str, ...]) -> bool:
    namespace = _namespace_of(episode.thread_id)
    return namespace is not None and _starts_with(namespace, prefix)


__all__ = ["MnemeStore", "item_text", "item_uid", "server_store"]
