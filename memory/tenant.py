r"""The tenant: whose memory a call reads and writes, and the one rule a tenant id follows.

A tenant id is a `TenantId`, a `str` that passed `tenant_id`. The rule is the same at every
entry (the `Memory` API, REST, MCP, the LangGraph store's namespaces, the agent's context, the
CLI's `--user`, API keys and JWT subjects, the benchmarks) and in both stores below them (every
graph-store call and every vector-index read, delete and upsert checks it again):

- 1 to `MAX_CHARS` (128) characters (code points);
- no control character (Unicode category Cc: NUL, ESC, DEL, the C1 controls), no format
  character (Cf: zero-width space, byte-order mark, bidirectional overrides), no line or
  paragraph separator (Zl, Zp) and no lone surrogate (Cs);
- no whitespace at either end (spaces inside are kept: `"Ada Lovelace"` is one id);
- in Unicode normal form NFC, so that one name has one spelling.

An id that breaks the rule is refused with `InvalidTenant`, never cleaned, stripped or
normalised: a cleaned id names someone else (`"alice\x00"` without its NUL is `"alice"`), and
an id accepted in two spellings is two people (`" ada"` and `"ada"`). Ids are compared exactly,
so `"Ada"` and `"ada"` are two tenants. Each surface turns `InvalidTenant` into its own error
(422 over HTTP, a tool error over MCP, a usage error on the command line).
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable
from typing import NewType

TenantId = NewType("TenantId", str)
"""A tenant id that follows the rule (made by `tenant_id`)."""

MAX_CHARS = 128
"""The longest tenant id, in characters."""

REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode categories no tenant id holds: controls, format characters, surrogates, line and
paragraph separators."""

RULE = (
    f"1-{MAX_CHARS} characters, no control or invisible format characters, no whitespace at "
    "either end, in Unicode NFC"
)
"""The rule in one line, for error messages and help texts."""


class InvalidTenant(ValueError):
    """A tenant id that breaks the rule; the message says which part."""


def problem(value: object) -> str | None:
    """Why `value` is not a tenant id (a short phrase), or None when it is one."""
    if not isinstance(value, str):
        return f"is a {type(value).__name__}, not a string"
    return _problem(value)


@functools.lru_cache(maxsize=4096)
def _problem(value: str) -> str | None:
    # Cached: every store call checks its tenant again, and a process sees few tenants.
    if not value:
        return "is empty"
    if len(value) > MAX_CHARS:
        return f"is {len(value)} characters long; at most {MAX_CHARS} are allowed"
    for i, char in enumerate(value):
        category = unicodedata.category(char)
        if category in REFUSED_CATEGORIES:
            return f"holds the {_kind(category)} U+{ord(char):04X} at position {i}"
    if value != value.strip():
        return "starts or ends with whitespace"
    if not unicodedata.is_normalized("NFC", value):
        return "is not in Unicode normal form NFC"
    return None


def tenant_id(value: object, *, name: str = "tenant") -> TenantId:
    """`value` as a `TenantId`; `InvalidTenant` (naming `name`, the caller's word for it) when it
    breaks the rule. Never changes the value."""
    why = problem(value)
    if why is not None:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise InvalidTenant(f"{name} {shown} {why}; a user id is {RULE}")
    assert isinstance(value, str)
    return TenantId(value)


def valid_ids(ids: Iterable[str]) -> list[TenantId]:
    """The ids among `ids` that follow the rule, in order. For maintenance loops over every
    tenant a store holds: an id written before the rule existed (a store of an older mneme) is
    one no call may name, so it is skipped there and reported by `mneme doctor`."""
    return [TenantId(i) for i in ids if problem(i) is None]


def _kind(category: str) -> str:
    return {
        "Cc": "control character",
        "Cf": "format character",
        "Cs": "lone surrogate",
        "Zl": "line separator",
        "Zp": "paragraph separator",
    }[category]
