"""The per-run `Context` of the agent graph (`context_schema`): who is talking and how to run.

Process settings (where the stores live, which endpoint serves the models) come from
`memory.settings`; this dataclass holds what may change from one run to the next, and LangGraph
Studio renders it as a form. It must stay JSON-friendly: plain strings, numbers and booleans.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import ConfigDict

from memory.tenant import InvalidTenant, TenantId, tenant_id

THREAD_BUDGETS = (
    ("thread_exchange_tokens", 100, 16000),
    ("thread_summary_tokens", 50, 8000),
    ("thread_impression_tokens", 20, 4000),
)
"""The compressed thread's budget fields and their bounds."""

RecipeChoice = Literal["auto", "SIMPLE", "TEMPORAL", "AGGREGATION"]


class ContextError(ValueError):
    """The run's context is invalid; the message names the field and the fix."""


@dataclass(kw_only=True)
class Context:
    """How one run of the agent behaves and whose memory it uses."""

    # The field docstrings below become the descriptions of the JSON schema the server publishes
    # (`/assistants/{id}/schemas`), which LangGraph Studio shows beside each field.
    __pydantic_config__ = ConfigDict(use_attribute_docstrings=True)

    user_id: str
    """The tenant: whose memories this run reads and writes. Different ids never share memory.
    Required; 1-128 characters, no control or invisible characters, no whitespace at either end,
    in Unicode NFC (refused otherwise, never trimmed). A served run's user is the authenticated
    caller (`serve/auth.py`)."""

    timezone: str = "UTC"
    """IANA timezone of the user (e.g. `Europe/Paris`), for part of day and gaps."""

    recipe: RecipeChoice = "auto"
    """Retrieval recipe; `auto` lets the router decide per turn."""

    n_results: int | None = None
    """Memories given to the reply (1-20); unset lets the router decide (default 7)."""

    memory_token_budget: int = 2000
    """Upper bound on the tokens of recalled memories in the reply prompt."""

    thread_exchange_tokens: int = 2000
    """Token budget of the thread's key exchanges: turns past the last 10 messages, reduced to
    their important sentences. Over it, the oldest are folded into the summary."""

    thread_summary_tokens: int = 500
    """Token budget of the thread's summary (themes, decisions, facts, dated points). Over it,
    the least important points fall into the impression."""

    thread_impression_tokens: int = 200
    """Token budget of the thread's impression: the overall sense of its oldest part."""

    max_reply_tokens: int = 512
    """Upper bound on the tokens of the reply."""

    rerank_simple: bool = True
    """Rerank SIMPLE turns too (set False to skip the rerank call on simple lookups)."""

    model_fast: str | None = None
    """Chat model for cheap decisions (routing); unset uses MNEME_LLM_MODEL_FAST."""

    model_structured: str | None = None
    """Chat model for structured extraction (rerank, ESS); unset uses MNEME_LLM_MODEL_STRUCTURED."""

    model_respond: str | None = None
    """Chat model that writes the reply; unset uses MNEME_LLM_MODEL_RESPOND."""

    def __post_init__(self) -> None:
        check_types(self)
        try:
            tenant_id(self.user_id, name="context.user_id")
        except InvalidTenant as exc:
            raise ContextError(f"{exc}; e.g. {{'user_id': 'alice'}}") from None
        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ContextError(
                f"context.timezone={self.timezone!r} is not an IANA timezone; use e.g. "
                "'Europe/Paris' or 'UTC'"
            ) from None
        if self.recipe not in ("auto", "SIMPLE", "TEMPORAL", "AGGREGATION"):
            raise ContextError(
                f"context.recipe={self.recipe!r} is unknown; use auto, SIMPLE, TEMPORAL or "
                "AGGREGATION"
            )
        if self.n_results is not None and not 1 <= self.n_results <= 20:
            raise ContextError(f"context.n_results={self.n_results} must be between 1 and 20")
        if not 100 <= self.memory_token_budget <= 32000:
            raise ContextError(
                f"context.memory_token_budget={self.memory_token_budget} must be 100-32000"
            )
        for name, low, high in THREAD_BUDGETS:
            if not low <= getattr(self, name) <= high:
                raise ContextError(f"context.{name}={getattr(self, name)} must be {low}-{high}")
        if not 16 <= self.max_reply_tokens <= 8192:
            raise ContextError(f"context.max_reply_tokens={self.max_reply_tokens} must be 16-8192")

    @property
    def tenant(self) -> TenantId:
        """The tenant of this run: `user_id`, checked by the tenant rule (`memory.tenant`)."""
        return TenantId(self.user_id)

    @property
    def tz(self) -> ZoneInfo:
        """The user's timezone."""
        return ZoneInfo(self.timezone)


_TYPES: dict[str, tuple[type, ...]] = {
    "user_id": (str,),
    "timezone": (str,),
    "recipe": (str,),
    "n_results": (int, type(None)),
    "memory_token_budget": (int,),
    "thread_exchange_tokens": (int,),
    "thread_summary_tokens": (int,),
    "thread_impression_tokens": (int,),
    "max_reply_tokens": (int,),
    "rerank_simple": (bool,),
    "model_fast": (str, type(None)),
    "model_structured": (str, type(None)),
    "model_respond": (str, type(None)),
}


def check_types(ctx: Context) -> None:
    """Raise `ContextError` naming the first field whose value has the wrong type."""
    for name, types in _TYPES.items():
        value = getattr(ctx, name)
        wrong = not isinstance(value, types) or (
            isinstance(value, bool) and bool not in types  # True is an int to Python, not to us
        )
        if wrong:
            expected = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise ContextError(
                f"context.{name} must be {expected}, got {type(value).__name__} {value!r:.40}"
            )


def context_of(value: object) -> Context:
    """The run's context: a `Context` or a dict of its fields; `user_id` is required."""
    if value is None:
        raise ContextError("the run has no context; pass at least {'user_id': ...}")
    if isinstance(value, Context):
        return value
    if isinstance(value, dict):
        known = set(Context.__dataclass_fields__)
        unknown = sorted(str(k) for k in set(value) - known)
        if unknown:
            raise ContextError(
                f"unknown context field(s) {unknown}; known fields are {sorted(known)}"
            )
        if "user_id" not in value:
            raise ContextError("context.user_id is required, e.g. {'user_id': 'alice'}")
        return Context(**value)
    raise ContextError(f"context must be a mapping of Context fields, got {type(value).__name__}")
