"""mneme's memory over REST, on the server's own app (`serve/webapp.py`, `http.app`).

Routes (typed request and response schemas, in the server's `/openapi.json`):

    POST   /memories               add a text or chat messages (through the durable write path)
    GET    /memories?q=&k=&kinds=  search (mneme's retrieval, no LLM)
    GET    /query/{store}?q=&k=    one store alone: graph (entities + traversal) or vector
    GET    /memories/{uid}         one episode or fact
    DELETE /memories/{uid}         delete it and what was derived from it alone
    PUT    /memories/{uid}/pin     pin an episode (never archived or forgotten, no decay)
    DELETE /memories/{uid}/pin     unpin it
    GET    /facts[?history=true]   current facts (or every version)
    GET    /facts/{uid}/history    a fact's versions
    GET    /beliefs                the agent's beliefs from this user's conversations
    GET    /concepts               concepts daily sleep formed (recurring turns, their loops)
    GET    /diary                  the agent's diary entries, one per day of conversation
    GET    /goals[?status=]        goals and where they stand (reassessed at deep sleep)
    GET    /emotions               emotions the caller's turns named, with their intensity
    GET    /users/{id}/export      everything held about the user
    POST   /users/{id}/import      replay an export as the user's memory
    DELETE /users/{id}             erase the user from both stores

The tenant is the authenticated identity (`serve/auth.py` runs on these routes: the same keys
and JWTs as the graphs, `enable_custom_route_auth`); a `user` query parameter or path id that
names anyone else is 403. On a server with no keys (loopback only) there is no identity, so
each call names its user (`?user=` or the path). Errors are 4xx with a message naming the field
(422 bad input, 404 unknown uid, 413 oversized, 403 another user); a store that is down is 503;
anything else is a 500 with an error id, whose traceback only the server log has.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Literal, TypeVar

from fastapi import APIRouter, Body, HTTPException, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from memory.retrieval.store_query import MAX_QUERY_K, QueryResult, StoreName, query_store
from memory.schema import GoalStatus
from memory.services import get_services
from memory.stores.base import StoreUnavailable
from memory.tenant import RULE, InvalidTenant, TenantId, tenant_id
from serve.api import (
    MAX_SEARCH_K,
    AddResult,
    BeliefView,
    ConceptView,
    Conflict,
    DeleteReport,
    DiaryView,
    EmotionView,
    EraseReport,
    FactView,
    GoalView,
    InvalidInput,
    Memory,
    MemoryExport,
    MemoryItem,
    Message,
    NotFound,
    SearchHit,
    TooLarge,
)

log = logging.getLogger("mneme.rest")
router = APIRouter(tags=["memory"])
T = TypeVar("T")

OPEN = "open"
"""The permission `serve/auth.py` gives every caller of a server without keys."""
UserParam = Annotated[
    str | None,
    Query(
        description="Whose memory: only needed on a server without API keys (else the caller's). "
        f"A user id is {RULE}.",
    ),
]
UidPath = Annotated[str, Path(min_length=1, max_length=512)]
UserPath = Annotated[str, Path(description=f"The caller's user id ({RULE}).")]


class AddRequest(BaseModel):
    """What to remember: a text (one turn), or chat messages (a user message and the assistant
    reply after it form one turn)."""

    model_config = ConfigDict(extra="forbid")

    messages: str | list[Message] = Field(min_length=1)
    when: datetime | None = Field(default=None, description="The first turn's time (default now).")
    thread: str = Field(default="api", min_length=1, max_length=512)


class SearchResponse(BaseModel):
    """The query and its results, best first."""

    query: str
    results: list[SearchHit]


def caller(request: Request, named: str | None) -> TenantId:
    """The tenant of this request: the authenticated identity; `named` must be it (else 403).
    Without keys (open, loopback only) the caller names the user. A named user that breaks the
    tenant rule (`memory.tenant`) is 422, never trimmed into someone else."""
    if named is not None:
        try:
            tenant_id(named, name="user")
        except InvalidTenant as exc:
            raise HTTPException(422, str(exc)) from None
    if OPEN in request.auth.scopes:
        if named is None:
            raise HTTPException(
                422, "user: this server has no API keys, so name the user (?user=ID)"
            )
        return TenantId(named)
    identity = TenantId(str(request.user.identity))  # checked when the key or JWT was read
    if named is not None and named != identity:
        raise HTTPException(403, "user names another user; you can reach only your own memory")
    return identity


async def answer(work: Callable[[Memory], Awaitable[T]]) -> T:
    """Run `work` on the process's memory, mapping what a caller can fix to 4xx."""
    try:
        return await work(Memory(await get_services()))
    except TooLarge as exc:
        raise HTTPException(413, str(exc)) from None
    except Conflict as exc:
        raise HTTPException(409, str(exc)) from None
    except InvalidInput as exc:
        raise HTTPException(422, str(exc)) from None
    except NotFound as exc:
        raise HTTPException(404, str(exc)) from None
    except StoreUnavailable:
        log.exception("memory store unavailable")
        raise HTTPException(503, "the memory store is unavailable; retry shortly") from None
    except HTTPException:
        raise
    except Exception:
        error_id = uuid.uuid4().hex[:12]
        log.exception("memory request failed (error id %s)", error_id)
        raise HTTPException(500, f"internal error (error id {error_id})") from None


@router.post("/memories", status_code=201, response_model=AddResult)
async def add_memories(
    request: Request, body: Annotated[AddRequest, Body()], user: UserParam = None
) -> AddResult:
    """Remember a text or chat messages; bookkeeping runs in the background."""
    tenant = caller(request, user)
    return await answer(lambda m: m.add(tenant, body.messages, when=body.when, thread=body.thread))


@router.get("/memories", response_model=SearchResponse)
async def search_memories(
    request: Request,
    q: Annotated[str, Query(min_length=1, max_length=4096, description="What to look for.")],
    k: Annotated[int, Query(ge=1, le=MAX_SEARCH_K)] = 10,
    kinds: Annotated[list[Literal["episode", "fact"]] | None, Query()] = None,
    user: UserParam = None,
) -> SearchResponse:
    """Search the caller's memory, best first."""
    tenant = caller(request, user)
    found = await answer(
        lambda m: m.search(tenant, q, k=k, kinds=tuple(kinds or ("episode", "fact")))
    )
    return SearchResponse(query=q, results=found)


@router.get("/query/{store}", response_model=QueryResult)
async def query_one_store(
    request: Request,
    store: Annotated[
        StoreName, Path(description="graph: entities + traversal; vector: similarity")
    ],
    q: Annotated[str, Query(min_length=1, max_length=4096, description="What to look for.")],
    k: Annotated[int, Query(ge=1, le=MAX_QUERY_K)] = 10,
    user: UserParam = None,
) -> QueryResult:
    """One store alone: the graph side (entity names in the query, then a traversal to the
    episodes that mention them) or the vector side (dense similarity), best first."""
    tenant = caller(request, user)
    if not q.strip():
        raise HTTPException(422, "q: the query is blank")
    return await answer(lambda m: query_store(m.services, tenant, store, q, k))


@router.get("/memories/{uid}", response_model=MemoryItem)
async def get_memory(request: Request, uid: UidPath, user: UserParam = None) -> MemoryItem:
    """One episode or fact of the caller's (404 for anyone else's)."""
    tenant = caller(request, user)
    return await answer(lambda m: m.get(tenant, uid))


@router.delete("/memories/{uid}", response_model=DeleteReport)
async def delete_memory(request: Request, uid: UidPath, user: UserParam = None) -> DeleteReport:
    """Delete an episode and what was derived from it alone, or a fact."""
    tenant = caller(request, user)
    return await answer(lambda m: m.delete(tenant, uid))


@router.put("/memories/{uid}/pin", response_model=MemoryItem)
async def pin_memory(request: Request, uid: UidPath, user: UserParam = None) -> MemoryItem:
    """Pin an episode: consolidation never archives or forgets it, and it does not decay."""
    tenant = caller(request, user)
    return await answer(lambda m: m.pin(tenant, uid))


@router.delete("/memories/{uid}/pin", response_model=MemoryItem)
async def unpin_memory(request: Request, uid: UidPath, user: UserParam = None) -> MemoryItem:
    """Unpin an episode: an ordinary memory again."""
    tenant = caller(request, user)
    return await answer(lambda m: m.unpin(tenant, uid))


@router.get("/facts", response_model=list[FactView])
async def list_facts(
    request: Request, history: bool = False, user: UserParam = None
) -> list[FactView]:
    """The caller's current facts (with `history`, every version), oldest first."""
    tenant = caller(request, user)
    return await answer(lambda m: m.facts(tenant, history=history))


@router.get("/facts/{uid}/history", response_model=list[FactView])
async def fact_history(request: Request, uid: UidPath, user: UserParam = None) -> list[FactView]:
    """Every version of one of the caller's facts, oldest first."""
    tenant = caller(request, user)
    return await answer(lambda m: m.history(tenant, uid))


@router.get("/beliefs", response_model=list[BeliefView])
async def list_beliefs(request: Request, user: UserParam = None) -> list[BeliefView]:
    """The agent's beliefs formed from the caller's conversations, by topic."""
    tenant = caller(request, user)
    return await answer(lambda m: m.beliefs(tenant))


@router.get("/concepts", response_model=list[ConceptView])
async def list_concepts(request: Request, user: UserParam = None) -> list[ConceptView]:
    """The concepts daily sleep formed from the caller's turns, with their narrative loops."""
    tenant = caller(request, user)
    return await answer(lambda m: m.concepts(tenant))


@router.get("/diary", response_model=list[DiaryView])
async def list_diary(request: Request, user: UserParam = None) -> list[DiaryView]:
    """The agent's diary of its days with the caller, oldest day first."""
    tenant = caller(request, user)
    return await answer(lambda m: m.diary(tenant))


@router.get("/goals", response_model=list[GoalView])
async def list_goals(
    request: Request,
    user: UserParam = None,
    status: Annotated[GoalStatus | None, Query(description="Only goals with this status.")] = None,
) -> list[GoalView]:
    """The caller's goals, oldest first, with the reason and evidence of their status."""
    tenant = caller(request, user)
    return await answer(lambda m: m.goals(tenant, status))


@router.get("/emotions", response_model=list[EmotionView])
async def list_emotions(request: Request, user: UserParam = None) -> list[EmotionView]:
    """The emotions the caller's turns named, oldest first."""
    tenant = caller(request, user)
    return await answer(lambda m: m.emotions(tenant))


@router.get("/users/{user_id}/export", response_model=MemoryExport)
async def export_user(request: Request, user_id: UserPath) -> MemoryExport:
    """Everything mneme holds about the caller (the path must name the caller)."""
    tenant = caller(request, user_id)
    return await answer(lambda m: m.export(tenant))


@router.post("/users/{user_id}/import", response_model=AddResult)
async def import_user(
    request: Request, user_id: UserPath, body: Annotated[MemoryExport, Body()]
) -> AddResult:
    """Replay an export as the caller's memory (idempotent; runs bookkeeping before answering)."""
    tenant = caller(request, user_id)
    return await answer(lambda m: m.import_(tenant, body))


@router.delete("/users/{user_id}", response_model=EraseReport)
async def erase_user(request: Request, user_id: UserPath) -> EraseReport:
    """Erase every record and vector of the caller, in both stores (idempotent)."""
    tenant = caller(request, user_id)
    return await answer(lambda m: m.erase(tenant))
