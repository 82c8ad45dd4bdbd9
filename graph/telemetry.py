"""OpenTelemetry spans of memory work, exported to any OTLP endpoint when one is configured.

Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set: then
`configure` builds a tracer provider of mneme's own (service name `OTEL_SERVICE_NAME`, default
`mneme`) with a batch exporter over OTLP/HTTP. Off, nothing is built, no handler is installed
and `operation` returns a shared null context: no cost.

What is traced, following the OpenTelemetry GenAI semantic conventions for memory operations
(`gen_ai.operation.name` = `create_memory`, `update_memory`, `search_memory`, `delete_memory`,
`delete_memory_store`; `gen_ai.provider.name` = `mneme`; `gen_ai.memory.store.id`,
`gen_ai.memory.record.id`, `gen_ai.memory.record.count`, `gen_ai.retrieval.top_k`,
`error.type`):

- every run of the served graphs (a LangChain callback handler installed for the process):
  the agent (`invoke_agent agent`; its `record` node is `create_memory`, `retrieve`
  `search_memory`, `remember` `update_memory`, the others spans of their own), bookkeeping
  (`bookkeeping`, one span per stage) and sleep (`sleep`, one span per stage, the level on the
  run's span), with counts from what each node returned (numbers, lengths of lists) as
  `mneme.*` attributes and latencies as the spans' durations;
- the Python API's memory operations (`serve.api.Memory`: add, search, delete, erase).

No memory text, query, user id or key is put in an attribute unless the operator opts in with
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (the GenAI conventions' switch): then
searches carry `gen_ai.memory.query.text` and operations their user as
`gen_ai.memory.namespace`.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer

PROVIDER = "mneme"
STORE_ID = "mneme"
"""`gen_ai.memory.store.id`: one store per deployment (its stores are chosen by the settings)."""
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
AGENT_NODES = {"record": "create_memory", "retrieve": "search_memory", "remember": "update_memory"}
"""The agent's nodes that are memory operations, by the GenAI conventions' names."""
ROOTS = {"agent": "invoke_agent agent", "bookkeeping": "bookkeeping", "consolidation": "sleep"}
_WORDS = frozenset({"status", "level", "kind", "outcome"})
"""Output fields whose short string value (a status, a level) is no memory text."""


class _State:
    """What `configure` turned on for the process (one instance, `_state`)."""

    tracer: Tracer | None = None
    """The tracer spans are started with; None while tracing is off."""
    capture: bool = False
    """Whether the operator opted in to memory text in spans."""
    handler_var: ContextVar[Any] | None = None
    """The context variable the span handler is registered under (installed once)."""


_state = _State()

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def enabled() -> bool:
    """True when spans are being recorded and exported."""
    return _state.tracer is not None


def capture_content() -> bool:
    """True when the operator opted in to memory text in spans."""
    return _state.capture


def configure(exporter: SpanExporter | None = None) -> bool:
    """Turn tracing on when an OTLP endpoint is configured (or `exporter` is given: tests);
    idempotent. True when tracing is on."""
    if _state.tracer is not None:
        return True
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if exporter is None and not endpoint:
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME") or "mneme"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    else:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    _state.capture = os.environ.get(CAPTURE_CONTENT, "").strip().lower() in ("1", "true", "yes")
    _state.tracer = provider.get_tracer("mneme")
    _install_graph_handler()
    return True


def reset() -> None:
    """Turn tracing off again (tests)."""
    _state.tracer, _state.capture = None, False


def _base(operation: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": PROVIDER,
        "gen_ai.memory.store.id": STORE_ID,
    }


@contextlib.contextmanager
def operation(
    name: str, *, user: str | None = None, query: str | None = None, **attributes: Any
) -> Iterator[Span | None]:
    """A span for one memory operation (`search_memory`, ...): `name STORE_ID`, the GenAI
    attributes plus `attributes`; the user and the query only with content capture on. Yields
    None when tracing is off."""
    tracer = _state.tracer
    if tracer is None:
        yield None
        return
    attrs = {**_base(name), **{k: v for k, v in attributes.items() if v is not None}}
    if _state.capture and user is not None:
        attrs["gen_ai.memory.namespace"] = user
    if _state.capture and query is not None:
        attrs["gen_ai.memory.query.text"] = query
    with tracer.start_as_current_span(f"{name} {STORE_ID}", attributes=attrs) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            raise


def traced(name: str) -> Callable[[F], F]:
    """Decorate an async `Memory` method `(self, user, ...)` as the memory operation `name`;
    the result's size is its `gen_ai.memory.record.count`."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        async def run(self: Any, user: str, *args: Any, **kwargs: Any) -> Any:
            if _state.tracer is None:
                return await method(self, user, *args, **kwargs)
            query = args[0] if name == "search_memory" and args else kwargs.get("query")
            with operation(name, user=user, query=query, **_request(kwargs)) as span:
                result = await method(self, user, *args, **kwargs)
                if span is not None:
                    count = _count(result)
                    if count is not None:
                        span.set_attribute("gen_ai.memory.record.count", count)
                return result

        return run  # type: ignore[return-value]

    return decorate


def _request(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    return {"gen_ai.retrieval.top_k": kwargs["k"]} if isinstance(kwargs.get("k"), int) else {}


def _count(result: Any) -> int | None:
    if isinstance(result, list | tuple):
        return len(result)
    uids = getattr(result, "uids", None)
    if isinstance(uids, list | tuple):
        return len(uids)
    records = getattr(result, "graph_records", None)  # an erase
    if isinstance(records, int):
        return records
    return 1 if isinstance(getattr(result, "uid", None), str) else None  # one record deleted


def counts(output: Any, prefix: str = "mneme") -> dict[str, Any]:
    """The numbers in a node's output as span attributes: numbers and flags as they are, lists
    and mappings as their length, one level of nested numbers; never free text."""
    out: dict[str, Any] = {}
    if not isinstance(output, Mapping):
        return out
    for key, value in output.items():
        name = f"{prefix}.{key}"
        if isinstance(value, bool | int | float):
            out[name] = value
        elif isinstance(value, str):
            if key in _WORDS and len(value) <= 32:
                out[name] = value
        elif isinstance(value, list | tuple):
            out[f"{name}.count"] = len(value)
        elif isinstance(value, Mapping) and prefix == "mneme":
            out |= counts(value, name)
    return out


# --------------------------------------------------------------------------- graph runs


def _install_graph_handler() -> None:
    """Give every LangChain/LangGraph run of the process the span handler (once)."""
    if _state.handler_var is not None:
        return
    from langchain_core.tracers.context import register_configure_hook

    # One handler for every run of the process, in every context (a default, not a `set`: the
    # server's request tasks do not inherit the context this runs in).
    _state.handler_var = ContextVar("mneme_otel_handler", default=_GraphSpans())  # noqa: B039
    register_configure_hook(_state.handler_var, inheritable=True)


def _graph_handler_class() -> type:
    from langchain_core.callbacks import BaseCallbackHandler

    class GraphSpans(BaseCallbackHandler):
        """Spans for graph runs and their nodes (see the module docstring)."""

        run_inline = True
        raise_error = False

        def __init__(self) -> None:
            self.spans: dict[UUID, tuple[Span, str, str]] = {}
            """run id -> (its span, the graph it belongs to, the node or '' for a graph)."""

        def on_chain_start(
            self,
            serialized: dict[str, Any] | None,
            inputs: dict[str, Any] | Any,
            *,
            run_id: UUID,
            parent_run_id: UUID | None = None,
            metadata: dict[str, Any] | None = None,
            name: str | None = None,
            **kwargs: Any,
        ) -> None:
            tracer = _state.tracer
            if tracer is None:
                return
            node = (metadata or {}).get("langgraph_node")
            parent = self.spans.get(parent_run_id) if parent_run_id else None
            if parent is None and node is None and name in ROOTS:
                graph = str(name)
                self.spans[run_id] = (_graph_span(tracer, graph, inputs), graph, "")
                return
            if parent is None or parent[2] or node is None or name != node:
                return  # not a node of a traced graph (a runnable inside a node, a subgraph)
            parent_span, graph, _ = parent
            span = _node_span(tracer, parent_span, graph, node, inputs)
            self.spans[run_id] = (span, graph, node)

        def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
            found = self.spans.pop(run_id, None)
            if found is None:
                return
            span, graph, node = found
            if node:
                span.set_attributes(counts(outputs))
                if graph == "agent" and isinstance(outputs, Mapping):
                    _agent_outputs(span, node, outputs)
            span.end()

        def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
            found = self.spans.pop(run_id, None)
            if found is None:
                return
            from opentelemetry.trace import Status, StatusCode

            span = found[0]
            span.set_attribute("error.type", type(error).__name__)
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
            span.end()

    return GraphSpans


def _GraphSpans() -> Any:
    return _graph_handler_class()()


def _graph_span(tracer: Tracer, graph: str, inputs: Any) -> Span:
    """The span of one run of the served graph `graph` (a sleep's carries its level)."""
    span_name, attrs = ROOTS[graph], {"mneme.graph": graph}
    if graph == "agent":
        attrs |= {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": graph}
    if graph == "consolidation" and isinstance(inputs, Mapping):
        level = inputs.get("level")
        if isinstance(level, str) and len(level) <= 16:
            attrs["mneme.sleep.level"] = level
            span_name = f"sleep {level}"
    return tracer.start_span(span_name, attributes=attrs)


def _node_span(tracer: Tracer, parent: Span, graph: str, node: str, inputs: Any) -> Span:
    """The span of one node of a traced graph's run: a memory operation's for the agent's."""
    from opentelemetry import trace

    context = trace.set_span_in_context(parent)
    attrs = {"mneme.graph": graph, "mneme.node": node}
    if graph == "agent" and node in AGENT_NODES:
        op = AGENT_NODES[node]
        attrs |= _base(op)
        if op == "search_memory" and _state.capture and isinstance(inputs, Mapping):
            text = (inputs.get("turn") or {}).get("text")
            if isinstance(text, str):
                attrs["gen_ai.memory.query.text"] = text
        span_name = f"{op} {STORE_ID}"
    elif graph == "agent":
        span_name = node
    else:
        span_name = f"{ROOTS[graph]} {node}"
        attrs["mneme.stage"] = node
    return tracer.start_span(span_name, context=context, attributes=attrs)


def _agent_outputs(span: Span, node: str, outputs: Mapping[str, Any]) -> None:
    """The record count and id of the agent's memory nodes, from what they returned."""
    if node == "record":
        episode = outputs.get("episode") or {}
        span.set_attribute("gen_ai.memory.record.count", int(bool(episode.get("stored"))))
        if episode.get("uid"):
            span.set_attribute("gen_ai.memory.record.id", str(episode["uid"]))
    if node == "retrieve":
        found_ = outputs.get("candidates") or []
        span.set_attribute("gen_ai.memory.record.count", len(found_))
