"""mneme's memory as an MCP server (`mneme mcp`): tools `remember`, `recall`, `facts`,
`beliefs`, `forget`, `pin_memory` and `unpin_memory`, each acting on one user, the
connection's.

- **stdio** (`mneme mcp`): the process is the connection. Its user is the one behind the key in
  `MNEME_MCP_KEY` (an API key or JWT, checked like the server's), or, on a machine with no keys
  configured, `--user` (the CLI's local trust: whoever runs it already has the data directory).
- **streamable HTTP** (`mneme mcp --http PORT`): every request must carry `Authorization:
  Bearer <key>`; the key's user is the user of every tool call of that request. Without keys
  configured it refuses to start, rather than serve anyone's memory to anyone.

The tools call `serve.api.Memory` (the same write path, retrieval and deletes as the Python API
and REST). Errors a caller can fix come back as tool errors naming what was wrong; anything else
is "internal error" with an error id the server log has.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from memory.settings import Settings
from memory.tenant import InvalidTenant, TenantId, tenant_id
from serve.api import (
    AddResult,
    BeliefView,
    DeleteReport,
    FactView,
    InvalidInput,
    Memory,
    MemoryItem,
    NotFound,
    SearchHit,
)
from serve.apikeys import AuthFailure, load_keyring

log = logging.getLogger("mneme.mcp")
T = TypeVar("T")

REMEMBER_WAIT_S = 30.0
"""How long `remember` waits for the bookkeeping that makes the memory recallable."""

_user: ContextVar[str | None] = ContextVar("mneme_mcp_user", default=None)


class McpSetupError(RuntimeError):
    """The MCP server cannot start as asked; the message says why and what to do."""


class _Opened:
    """The process's `Memory`, opened on first use in the server's event loop."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.memory: Memory | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> Memory:
        async with self._lock:
            if self.memory is None:
                self.memory = await Memory.open(self.settings)
        return self.memory

    async def close(self) -> None:
        if self.memory is not None:
            await self.memory.flush()
            await self.memory.close()


def build_server(opened: _Opened) -> MCPServer[Any]:
    """The MCP server with mneme's seven tools over `opened`'s memory."""
    server: MCPServer[Any] = MCPServer(
        name="mneme",
        instructions=(
            "Long-term memory of the user this connection belongs to. `remember` what is worth "
            "keeping, `recall` before answering questions about the past, `facts` for what is "
            "currently known, `forget` a memory by uid, `pin_memory` a turn that must never fade."
        ),
    )

    async def call(work: Callable[[Memory, str], Awaitable[T]]) -> T:
        user = _user.get()
        if user is None:
            raise ToolError("no user for this connection; authenticate with your key")
        try:
            return await work(await opened.get(), user)
        except (InvalidInput, NotFound) as exc:
            raise ToolError(str(exc)) from None
        except Exception:
            error_id = uuid.uuid4().hex[:12]
            log.exception("mcp tool failed (error id %s)", error_id)
            raise ToolError(f"internal error (error id {error_id})") from None

    async def add_and_wait(memory: Memory, user: str, text: str) -> AddResult:
        added = await memory.add(user, text, thread="mcp")
        with contextlib.suppress(TimeoutError):  # durable already; bookkeeping finishes later
            async with asyncio.timeout(REMEMBER_WAIT_S):
                await memory.flush()
        return added

    @server.tool()
    async def remember(text: str) -> AddResult:
        """Remember something the user said or that should be kept about them (recallable
        when this returns)."""
        return await call(lambda m, u: add_and_wait(m, u, text))

    @server.tool()
    async def recall(query: str, k: int = 5) -> list[SearchHit]:
        """Search the user's memory (turns and facts), best first."""
        return await call(lambda m, u: m.search(u, query, k=k))

    @server.tool()
    async def facts(history: bool = False) -> list[FactView]:
        """What is known about the user now (with history: superseded versions too)."""
        return await call(lambda m, u: m.facts(u, history=history))

    @server.tool()
    async def beliefs() -> list[BeliefView]:
        """The assistant's beliefs formed from this user's conversations."""
        return await call(lambda m, u: m.beliefs(u))

    @server.tool()
    async def forget(uid: str) -> DeleteReport:
        """Delete one memory (a turn, with what only it supports, or a fact) by uid."""
        return await call(lambda m, u: m.delete(u, uid))

    @server.tool()
    async def pin_memory(uid: str) -> MemoryItem:
        """Pin one of the user's turns by uid: sleep never archives, expires or forgets it, and
        it does not decay (an archived one is restored)."""
        return await call(lambda m, u: m.pin(u, uid))

    @server.tool()
    async def unpin_memory(uid: str) -> MemoryItem:
        """Unpin one of the user's turns by uid: an ordinary memory again."""
        return await call(lambda m, u: m.unpin(u, uid))

    return server


def stdio_user(settings: Settings, key: str | None, user: str | None) -> TenantId:
    """The user of a stdio connection: the key's, else `--user` when no keys are configured."""
    ring = load_keyring(settings)
    if key:
        try:
            return TenantId(ring.identify(key))  # a key's user follows the tenant rule
        except AuthFailure as exc:
            raise McpSetupError(f"MNEME_MCP_KEY: {exc}") from None
    if not ring.empty:
        raise McpSetupError(
            "API keys are configured: set MNEME_MCP_KEY to your key (it decides the user)"
        )
    if user is None:
        raise McpSetupError("name the user with --user ID (or set MNEME_MCP_KEY)")
    try:
        return tenant_id(user, name="--user")
    except InvalidTenant as exc:
        raise McpSetupError(str(exc)) from None


async def serve_stdio(settings: Settings, user: str) -> None:
    """Serve the tools over stdio for `user` until the client disconnects."""
    opened = _Opened(settings)
    token = _user.set(user)
    try:
        await build_server(opened).run_stdio_async()
    finally:
        _user.reset(token)
        await opened.close()


class _BearerUser:
    """ASGI middleware: 401 without a valid key; else the key's user for the request."""

    def __init__(self, app: Any, settings: Settings) -> None:
        self.app = app
        self.ring = load_keyring(settings)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        try:
            if scheme.lower() != "bearer":
                raise AuthFailure("missing credential")
            user = self.ring.identify(token)
        except AuthFailure as exc:
            body = f"{exc}; send `Authorization: Bearer <key>`".encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        token_ = _user.set(user)
        try:
            await self.app(scope, receive, send)
        finally:
            _user.reset(token_)


async def serve_http(settings: Settings, host: str, port: int) -> None:
    """Serve the tools over streamable HTTP at `/mcp`, each request bound to its key's user."""
    import uvicorn

    if load_keyring(settings).empty:
        raise McpSetupError(
            "no API keys configured: `mneme keys add --user ID` (MNEME_API_KEYS_FILE) before "
            "serving memory over HTTP"
        )
    opened = _Opened(settings)
    # Stateless: every request is authenticated on its own, so no session outlives its key.
    app = build_server(opened).streamable_http_app(stateless_http=True, host=host)
    config = uvicorn.Config(_BearerUser(app, settings), host=host, port=port, log_level="info")
    try:
        await uvicorn.Server(config).serve()
    finally:
        await opened.close()
