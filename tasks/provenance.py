"""Belief provenance of one episode (docs/design.md sections 3 and 6): the belief-assessment task
(`tasks.belief_assessment`) applied to it; the bookkeeping stage `beliefs` runs it.

When the episode's stored ESS recommends an update (strong enough, arguing, not manipulative),
the belief assessment says which beliefs the message bears on, how (supports / contradicts)
and how strongly; each becomes a provenance edge and a bounded move of the belief
(`memory.beliefs.evidence.apply_evidence`); the insight is kept for reflection and the belief
shift is added to the sponge's trigger. The same call proposes the semantic features the message
shows (written by the `features` stage, `nodes.features`). A manipulative or weak episode changes
nothing: the sponge stays frozen for it. Neither does a message that is an instruction to the
assistant or a claim about what it may disclose or do with other people's data
(`tasks.directives.not_a_belief`), checked again on each of the model's entries, its insight
and its features: a belief is about the world. Every write is idempotent per (episode, belief), so a sweep re-running the stage
gives the same store state.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from memory.beliefs.evidence import EvidenceOutcome, apply_evidence, recommends_update
from memory.beliefs.sponge import add_insight, add_shift, status
from memory.schema import ESS, MANIPULATIVE_TYPES, Episode
from memory.services import Services
from memory.services.usage import Usage
from tasks.belief_assessment import assess_beliefs
from tasks.directives import not_a_belief

log = logging.getLogger("mneme.provenance")


def frozen(ess: ESS | None) -> bool:
    """True when the message argues manipulatively: the sponge is frozen for the turn."""
    return ess is not None and ess.reasoning_type in MANIPULATIVE_TYPES


@dataclass(slots=True)
class ProvenanceResult:
    """What the stage did to one episode."""

    ran: bool
    """False when the ESS did not recommend an update: no edge, no move, no insight."""
    frozen: bool = False
    """True for manipulative reasoning: the sponge is frozen and reflection does not run."""
    outcomes: list[EvidenceOutcome] = field(default_factory=list)
    insight: str = ""
    shift: float = 0.0
    reflection_due: bool = False
    features: list[dict[str, object]] = field(default_factory=list)
    """Semantic features the message shows (category, text, strength), from the same call."""
    counters: list[str] = field(default_factory=list)
    """Uids of features the message explicitly refutes."""

    def summary(self) -> list[dict[str, object]]:
        """JSON-friendly lines: topic, edge kind, valence and confidence before and after."""
        return [
            {
                "topic": o.after.topic,
                "kind": o.kind.value,
                "applied": o.applied,
                "created": o.created,
                "valence": [o.before.valence, o.after.valence],
                "confidence": [o.before.confidence, o.after.confidence],
            }
            for o in self.outcomes
        ]


async def belief_provenance(
    services: Services, episode: Episode, *, usage: Usage, model: str | None = None
) -> ProvenanceResult:
    """Write the episode's provenance edges and move the beliefs it bears on."""
    tenant = episode.tenant
    # An instruction, or a claim about what the assistant may do with others' data, moves
    # nothing, whatever ESS was stored for it (one stored before this rule, or a model's).
    refused = not_a_belief(episode.user_text)
    if refused or not recommends_update(episode.ess) or episode.ess is None:
        if frozen(episode.ess):
            return ProvenanceResult(ran=False, frozen=True)
        # Small talk and weak evidence move nothing but still count toward the ~20 interactions.
        due = (await status(services.graph, tenant)).due()
        return ProvenanceResult(ran=False, reflection_due=due)
    assessment = await assess_beliefs(
        services, tenant, episode.user_text, episode.ess, usage=usage, model=model
    )
    outcomes = []
    for a in assessment.assessments:
        if not_a_belief(f"{a.statement} {a.topic} {a.reasoning}"):
            continue  # an instruction, or a rule about disclosing data, is never a view
        outcomes.append(
            await apply_evidence(
                services,
                tenant,
                episode.uid,
                a.topic,
                a.direction,
                a.strength,
                statement=a.statement or None,
                quality=episode.ess.score,
                reasoning=a.reasoning,
                at=episode.created_at,
            )
        )
    shift = round(sum(o.shift for o in outcomes if o.applied), 6)
    if shift > 0:
        await add_shift(services, tenant, shift)
    if assessment.insight and not not_a_belief(assessment.insight):
        await add_insight(
            services,
            tenant,
            assessment.insight,
            episode_uid=episode.uid,
            at=episode.created_at,
        )
    due = (await status(services.graph, tenant)).due()
    log.debug(
        "provenance %s: %d beliefs, shift %.3f, reflection due %s",
        episode.uid,
        len(outcomes),
        shift,
        due,
    )
    return ProvenanceResult(
        True,
        False,
        outcomes,
        assessment.insight,
        shift,
        due,
        [
            f.model_dump(mode="json")
            for f in assessment.features
            if not not_a_belief(f.text, of_assistant=True)
        ],
        list(assessment.counters),
    )
