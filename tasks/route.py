"""The router's task (docs/design.md section 2): how to search memory for a turn, and the evidence
strength of its message, in one structured call on the fast tier.

`TurnAssessment` pairs the route (NONE, SIMPLE, TEMPORAL, AGGREGATION or BELIEF_QUERY, with the
retrieval parameters) with the ESS of `tasks.ess`, so a turn makes one foreground call instead
of two. The keyword route and the cue-based ESS answer the same schema offline or when the model
fails; `assess_turn` runs the call (`mneme eval` scores ingested turns with it too).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, field_validator

from memory.services import ChatModels, Tier
from memory.services.usage import Usage
from tasks.ess import RULES as ESS_RULES
from tasks.ess import SYSTEM_LEAD as ESS_LEAD
from tasks.ess import EvidenceScore, consistent, heuristic_ess
from tasks.llm import structured

RouteKind = Literal["NONE", "SIMPLE", "TEMPORAL", "AGGREGATION", "BELIEF_QUERY"]
MAX_WEIGHT = 0.3

DEFAULT_N_RESULTS = 7
"""Memories a reply gets when neither the run's context nor the router says (docs/design.md:
7), but for the kinds in `N_RESULTS_OF_KIND`."""
N_RESULTS_OF_KIND: dict[str, int] = {"AGGREGATION": 10}
"""A kind's own default: an answer that combines many memories gets more of them."""


class SignalWeights(BaseModel):
    """How much each credibility signal of a memory adds to its search score (0-0.3 each)."""

    specificity: float = 0.0
    grounding: float = 0.0
    rigor: float = 0.0
    source_quality: float = 0.0
    objectivity: float = 0.0

    @field_validator("*", mode="before")
    @classmethod
    def _bounded(cls, value: Any) -> float:
        # Bounds are part of the contract, not something to bounce back to a small model.
        return min(MAX_WEIGHT, max(0.0, float(value or 0.0)))


class SearchPass(BaseModel):
    """One search over memory."""

    query: str | None = Field(default=None, description="Rewritten search query; null = as asked")
    signal_weights: SignalWeights = Field(default_factory=SignalWeights)


class RouteDecision(BaseModel):
    """How to use memory for this turn."""

    kind: RouteKind = Field(description="NONE, SIMPLE, TEMPORAL, AGGREGATION or BELIEF_QUERY")
    n_results: int | None = Field(
        default=None, ge=1, le=20, description="Memories to bring back (1-20); null = default"
    )
    temporal_expansion: bool = Field(
        default=False, description="Also bring the turns just before and after each memory"
    )
    search_features: bool = Field(
        default=False,
        description="Also search the assistant's own features (values, interests, style, expertise)",
    )
    passes: list[SearchPass] = Field(default_factory=list, max_length=3)


class TurnAssessment(BaseModel):
    """The router's one call: how to search memory, and the evidence strength of the message."""

    route: RouteDecision
    evidence: EvidenceScore


ROUTE_RULES = """Decide how the assistant should search its long-term memory of past \
conversations with this user before answering the latest message.

kind:
- NONE: greetings, thanks, chit-chat, or requests that need no memory at all.
- SIMPLE: the answer may depend on one fact the user told before (names, preferences, plans).
- TEMPORAL: the message is about when something happened, order of events, or a time span \
("last week", "before my trip", "when did I").
- AGGREGATION: the answer combines many memories ("how many", "all the", "list every").
- BELIEF_QUERY: the user asks what the assistant itself thinks or believes about a topic.

n_results: how many memories to bring back (1-20), or null for the usual number.
temporal_expansion: true when neighbouring turns would help (TEMPORAL questions).
search_features: true when the message is about the assistant itself: its views, interests, \
what it knows, how it talks.
passes: up to 3 searches. Give each a short rewritten query in the user's words (for \
AGGREGATION, one sub-question per pass). signal_weights (0-0.3) favour memories that are \
specific, grounded, rigorous, well sourced or objective; leave them at 0 unless it matters."""

SYSTEM = f"""You route a memory-augmented assistant and weigh the evidence in what the user \
says. Answer two things about the latest user message in one call.

`route`: {ROUTE_RULES}

`evidence`: {ESS_LEAD}
{ESS_RULES}

Call the function `TurnAssessment`."""

_GREETING = re.compile(
    r"^\s*(hi|hello|hey|yo|hiya|good (morning|afternoon|evening|night)|thanks?( you)?|thx|ok(ay)?|"
    r"cool|great|nice|bye|goodbye|see you|cheers)\b[\s!.,?]*\w{0,12}[\s!.?]*$",
    re.IGNORECASE,
)
_BELIEF = re.compile(
    r"\b(what do you (think|believe|feel)|your (opinion|view|take|stance)|do you (believe|"
    r"agree|think)|how do you feel about)\b",
    re.IGNORECASE,
)
_AGGREGATE = re.compile(
    r"\b(how many|how much|all (the|of|my)|every|list|total|in total|summari[sz]e|overall|"
    r"each of|which .* have i)\b",
    re.IGNORECASE,
)
_TEMPORAL = re.compile(
    r"\b(when|yesterday|today|last (week|month|year|time|night)|ago|before|after|first|"
    r"earlier|recently|since|until|(this|next) (week|month|year)|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|"
    r"september|october|november|december|date|what day|how long)\b",
    re.IGNORECASE,
)


_ABOUT_YOU = re.compile(
    r"\b(you|your|yourself)\b.{0,40}\b(interest\w*|like|enjoy|know|think|believe|value\w*|"
    r"care|style|opinion\w*|views?|expert\w*|good at|passionate|favou?rite)\b|"
    r"\b(what|who) are you\b|\btell me about yourself\b",
    re.IGNORECASE,
)


def heuristic_route(text: str) -> RouteDecision:
    """Route by keywords: small talk skips memory, time words expand, counting aggregates,
    questions about the assistant search its features. One pass, the message: no sub-queries
    offline (an AGGREGATION route keeps 10 memories instead of 7)."""
    stripped = text.strip()
    if not stripped or (_GREETING.match(stripped) and len(stripped) < 40):
        return RouteDecision(kind="NONE", n_results=1)
    passes = [SearchPass(query=None)]
    about_you = bool(_ABOUT_YOU.search(stripped))
    if _BELIEF.search(stripped):
        return RouteDecision(kind="BELIEF_QUERY", passes=passes, search_features=True)
    if about_you:
        return RouteDecision(kind="SIMPLE", passes=passes, search_features=True)
    if _AGGREGATE.search(stripped):
        return RouteDecision(kind="AGGREGATION", passes=passes)
    if _TEMPORAL.search(stripped):
        return RouteDecision(kind="TEMPORAL", temporal_expansion=True, passes=passes)
    return RouteDecision(kind="SIMPLE", passes=passes)


def heuristic_assessment(text: str) -> TurnAssessment:
    """The offline answer of the shared call: the keyword route and the cue-based ESS."""
    return TurnAssessment(route=heuristic_route(text), evidence=heuristic_ess(text))


def route_prompt(text: str, recent: list[str]) -> list[SystemMessage | HumanMessage]:
    """The prompt of the shared call: the last few messages for context, then the message."""
    history = "\n".join(f"- {line}" for line in recent) or "(none)"
    return [
        SystemMessage(content=SYSTEM),
        HumanMessage(
            content=f"Recent messages:\n{history}\n\nLatest user message:\n<message>\n{text}\n"
            "</message>"
        ),
    ]


def result_count(route: Mapping[str, Any]) -> int:
    """How many memories the reply gets: the route's `n_results` (the run context's choice,
    else the router's; `nodes.route.apply_context` resolves it once), else its kind's default.
    The one home of the count: the rerank trims to it and the eval marks that many accessed."""
    count = route.get("n_results")
    if count:
        return int(count)
    return N_RESULTS_OF_KIND.get(str(route.get("kind") or "SIMPLE"), DEFAULT_N_RESULTS)


async def assess_turn(
    text: str,
    recent: list[str],
    *,
    chat: ChatModels,
    usage: Usage,
    model: str | None = None,
) -> TurnAssessment:
    """The router's one call on a message: its route and its evidence score (heuristics when
    offline or failing). `mneme eval` scores ingested turns with it too."""
    if not text.strip():
        return TurnAssessment(
            route=RouteDecision(kind="NONE", n_results=1), evidence=heuristic_ess("")
        )
    value = await structured(
        "route",
        TurnAssessment,
        route_prompt(text, recent),
        fallback=lambda: heuristic_assessment(text),
        chat=chat,
        usage=usage,
        tier=Tier.FAST,
        model=model,
        max_tokens=768,
    )
    return value.model_copy(update={"evidence": consistent(value.evidence, text)})
