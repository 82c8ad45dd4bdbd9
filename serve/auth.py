"""Who may call the served graphs, and whose memory each call reaches (`auth` in langgraph.json).

`authenticate` turns a bearer API key (or a JWT, when `MNEME_JWT_SECRET` is set) into the user
id it belongs to (`serve.apikeys`). That identity is the tenant of everything the caller does:

- threads get `owner` metadata when created, and every read, search, update, delete and run on
  a thread is filtered on it, so another user's thread is "not found";
- a run's context `user_id` is set to the identity; a context naming anyone else is refused
  (403), an unknown context key or a bad value is refused (422, naming the field), and a message
  over `MNEME_MAX_MESSAGE_BYTES` is refused (413), all before the run is created;
- crons are owned and bound like runs; store namespaces must start with the identity;
- assistants are the deployment's graphs: readable, not creatable or editable by callers;
- anything not listed is denied (a default-deny handler).

Without any key configured the server is open, but only to loopback clients, and it says so at
start-up (`serve/webapp.py`); an open run still needs `user_id` in its context.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from langgraph_sdk import Auth

from memory.settings import get_settings
from nodes.context import ContextError, context_of
from serve.apikeys import AuthFailure, KeyRing, load_keyring

auth = Auth()

OWNER = "owner"
"""Metadata key naming the user a thread, run or cron belongs to."""
OPEN_IDENTITY = "local-open-access"
"""The identity of every caller of a server with no keys (loopback only)."""
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost", "testclient"})
_RESERVED = ("__", "langgraph_", "checkpoint_", "thread_id", "run_id", "assistant_id", "graph_id")
"""Keys the server itself mirrors into a run's configurable; not the caller's context."""


def _fail(status: int, detail: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(status_code=status, detail=detail)


@lru_cache(maxsize=1)
def keyring() -> KeyRing:
    """The process's credentials, read once from the settings."""
    return load_keyring(get_settings())


def _header(headers: dict[bytes, bytes], name: bytes) -> str:
    value = headers.get(name) or b""
    return value.decode("latin-1").strip()


def credential_of(headers: dict[bytes, bytes]) -> str:
    """The bearer token of `Authorization`, else the `x-api-key` header ('' when neither)."""
    authorization = _header(headers, b"authorization")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return _header(headers, b"x-api-key")


@auth.authenticate
async def authenticate(
    headers: dict[bytes, bytes], scope: dict[str, Any]
) -> Auth.types.MinimalUserDict:
    """The caller's user id from its API key or JWT; 401 without a valid one."""
    ring = keyring()
    if ring.empty:
        client = (scope.get("client") or ("",))[0]
        if client not in LOOPBACK:
            raise _fail(403, "this server has no API keys configured and answers loopback only")
        return {"identity": OPEN_IDENTITY, "permissions": ["open"]}
    try:
        user = ring.identify(credential_of(headers))
    except AuthFailure as exc:
        raise Auth.exceptions.HTTPException(
            status_code=401,
            detail=f"{exc}; send `Authorization: Bearer <key>`",
            headers={"WWW-Authenticate": "Bearer"},
        ) from None
    return {"identity": user, "permissions": ["user"]}


def _is_open(ctx: Auth.types.AuthContext) -> bool:
    return "open" in ctx.permissions


def _owned(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Auth.types.FilterType | None:
    """Stamp the owner on the value's metadata and return the filter every read applies."""
    if _is_open(ctx):
        return None
    metadata = value.get("metadata")
    if isinstance(metadata, dict):
        metadata[OWNER] = ctx.user.identity  # in place: the server keeps its own reference
    else:
        value["metadata"] = {OWNER: ctx.user.identity}
    return {OWNER: ctx.user.identity}


def _text_bytes(content: Any) -> int:
    if isinstance(content, str):
        return len(content.encode("utf-8", "surrogatepass"))
    if isinstance(content, list):
        return sum(_text_bytes(p.get("text", "") if isinstance(p, dict) else p) for p in content)
    return len(json.dumps(content, default=str).encode())


def check_message_sizes(payload: Any, limit: int) -> None:
    """Raise 413 when a message in a run's input is over `limit` UTF-8 bytes."""
    messages = payload.get("messages") if isinstance(payload, dict) else None
    if messages is None:
        return
    if not isinstance(messages, list):
        messages = [messages]
    for i, message in enumerate(messages):
        content = message.get("content", "") if isinstance(message, dict) else message
        size = _text_bytes(content)
        if size > limit:
            raise _fail(
                413,
                f"input.messages[{i}] is {size:,} bytes; at most {limit:,} are accepted "
                "(MNEME_MAX_MESSAGE_BYTES); split it into several messages",
            )


def check_item_size(value: dict[str, Any], limit: int) -> None:
    """Raise 413 when a store item (`PUT /store/items`) is over `limit` UTF-8 bytes, counted as
    the store remembers it (`serve.store.item_text`)."""
    from serve.store import item_text

    item = value.get("value")
    if not isinstance(item, dict):
        return
    try:
        size = len(item_text(str(value.get("key", "")), item).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError):
        return  # not JSON: the store says so (400)
    if size > limit:
        raise _fail(
            413,
            f"value is {size:,} bytes; at most {limit:,} can be remembered in one item "
            "(MNEME_MAX_MESSAGE_BYTES); split it",
        )


def check_schedule(schedule: Any) -> None:
    """Raise 422 unless `schedule` is a valid cron expression (the server would fail on it)."""
    from croniter import croniter

    try:
        valid = isinstance(schedule, str) and bool(schedule.strip()) and croniter.is_valid(schedule)
    except Exception:
        valid = False
    if not valid:
        raise _fail(422, "schedule must be a cron expression such as '0 9 * * *'")


def bind_context(ctx: Auth.types.AuthContext, kwargs: dict[str, Any]) -> None:
    """Make the run's context name the caller; refuse another user (403) or a bad context (422)."""
    context = kwargs.get("context")
    if context is None:
        context = {}
    if not isinstance(context, dict):
        raise _fail(422, "context must be an object of Context fields")
    caller = {k: v for k, v in context.items() if not str(k).startswith(_RESERVED)}
    if not _is_open(ctx):
        named = caller.get("user_id")
        if named is not None and named != ctx.user.identity:
            raise _fail(403, "context.user_id names another user; omit it or use your own id")
        caller["user_id"] = ctx.user.identity
    try:
        context_of(caller)
    except ContextError as exc:
        raise _fail(422, str(exc)) from None
    except TypeError:
        raise _fail(422, "context has a field of the wrong type") from None
    context.update(caller)
    kwargs["context"] = context
    configurable = (kwargs.get("config") or {}).get("configurable")
    if isinstance(configurable, dict) and "user_id" in configurable:
        configurable["user_id"] = caller["user_id"]


@auth.on
async def deny_by_default(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Anything without its own handler below is refused."""
    return False


@auth.on.threads
async def threads(
    ctx: Auth.types.AuthContext, value: dict[str, Any]
) -> Auth.types.FilterType | None:
    """Threads belong to their creator: stamped on create and update, filtered everywhere."""
    return _owned(ctx, value)


@auth.on.threads.create_run
async def create_run(
    ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate
) -> Auth.types.FilterType | None:
    """A run acts as its caller: context bound, input checked, on the caller's threads only."""
    kwargs = value.get("kwargs") or {}
    check_message_sizes(kwargs.get("input"), get_settings().max_message_bytes)
    command = kwargs.get("command")
    if isinstance(command, dict):
        check_message_sizes(command.get("update"), get_settings().max_message_bytes)
    bind_context(ctx, kwargs)
    return _owned(ctx, value)  # type: ignore[arg-type]


@auth.on.crons
async def crons(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Auth.types.FilterType | None:
    """Crons are owned like threads; a new cron's run payload is bound like a run."""
    if ctx.action in ("create", "update") and ("schedule" in value or ctx.action == "create"):
        check_schedule(value.get("schedule"))
    payload = value.get("payload")
    if isinstance(payload, dict):
        check_message_sizes(payload.get("input"), get_settings().max_message_bytes)
        bind_context(ctx, payload)
    return _owned(ctx, value)


@auth.on.assistants
async def assistants(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> bool:
    """The deployment's graphs can be read and searched, never created or changed by callers."""
    if ctx.action in ("read", "search"):
        return True
    raise _fail(403, "assistants are fixed by the deployment")


@auth.on.store()
async def store(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> bool:
    """A store namespace starts with its user's id; searches default to the caller's own. An
    item over `MNEME_MAX_MESSAGE_BYTES` is 413 (the store refuses it too)."""
    check_item_size(value, get_settings().max_message_bytes)
    if _is_open(ctx):
        return True
    namespace = tuple(value.get("namespace") or ())
    if not namespace and ctx.action in ("search", "list_namespaces"):
        value["namespace"] = (ctx.user.identity,)
        return True
    if not namespace or namespace[0] != ctx.user.identity:
        raise _fail(403, "store namespaces start with your user id")
    return True
