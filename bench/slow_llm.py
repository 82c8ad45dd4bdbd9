"""A slow OpenAI-compatible chat endpoint on 127.0.0.1, for measuring what a slow local model
costs a turn (`mneme bench turn --slow-llm S`, tests/e2e/test_latency_budget.py).

Every `/v1/chat/completions` request waits `delay_s` seconds before its first byte, then answers
with plain text (streamed as server-sent events when the request asks for a stream). It never
calls a function, so the structured tasks (route, rerank) get no usable answer and fall back to
their heuristics, as they do with a model that is slow and poor at function calling; the reply
streams the text. Nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

REPLY = "I am a slow stub model, answering after a delay."


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_app(delay_s: float) -> Any:
    """The stub's ASGI app; `app.state.requests` counts the completions asked for."""
    app = FastAPI()
    app.state.requests = 0

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "slow-stub", "object": "model"}]}

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> Any:
        body = await request.json()
        app.state.requests += 1
        await asyncio.sleep(delay_s)
        model = str(body.get("model") or "slow-stub")
        created = int(time.time())
        if not body.get("stream"):
            return JSONResponse(
                {
                    "id": "chatcmpl-stub",
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": REPLY},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            )

        async def events() -> AsyncIterator[str]:
            for i, word in enumerate(REPLY.split(" ")):
                delta = (
                    {"role": "assistant", "content": word} if i == 0 else {"content": " " + word}
                )
                chunk = {
                    "id": "chatcmpl-stub",
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                }
                yield f"data: {json.dumps(chunk)}\n\n"
            done = {
                "id": "chatcmpl-stub",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
            yield f"data: {json.dumps(done)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return app


@asynccontextmanager
async def slow_llm(delay_s: float) -> AsyncIterator[tuple[str, Any]]:
    """Serve the stub on a free loopback port for the block: (its base URL, its app)."""
    import uvicorn

    app = build_app(delay_s)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    task = asyncio.create_task(server.serve(), name="slow-llm")
    try:
        while not server.started:
            if task.done():
                task.result()  # the server failed to start: say why
            await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/v1", app
    finally:
        server.should_exit = True
        await task
