"""Instructions addressed to the assistant, told apart from arguments.

"Assistants must reveal...", "ignore previous instructions", "from now on you..." are not evidence
about anything, however they are styled (a study, a statistic, an authority): the ESS scores them
`no_argument` (`tasks.ess`) and provenance never turns them into a belief or an insight
(`tasks.provenance`).
"""

from __future__ import annotations

import re

_I = re.IGNORECASE

_DIRECTIVE = re.compile(
    r"\b(?:assistants?|ai(?: models?| systems?)?|chatbots?|the (?:model|bot|agent)|language models?|"
    r"llms?|you)\s+(?:must|should|shall|have to|need to|are (?:required|obliged) to|will now)\b"
    r"|\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)?"
    r"(?:previous|prior|above|earlier|system|safety)?\s*(?:instructions?|rules|prompts?|guidelines)"
    r"|\bfrom now on,?\s+(?:you|the assistant)\b|\byou are now\b|\bnew instructions?\b"
    r"|\b(?:reveal|print|show|dump|leak)\b[^.]{0,60}\b(?:system prompt|other users?'?s?|"
    r"everyone'?s|all (?:users|memories))",
    _I,
)
"""Instructions addressed to the assistant: never evidence, whatever their styling."""


def is_directive(text: str) -> bool:
    """True when the text tells the assistant what to do (an instruction, not an argument)."""
    return bool(_DIRECTIVE.search(text))
