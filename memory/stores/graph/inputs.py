"""Input rules every graph backend shares, applied once by the per-kind interfaces.

The interfaces in `memory.stores.graph` call these before a backend sees a value, so a backend
only persists: text is already cleaned, names already keyed, counts already checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from memory.schema import Record, clean_text, entity_key
from memory.stores.graph.fields import FieldKind, fields_of

R = TypeVar("R", bound=Record)

IDENTIFIERS = frozenset({"uid", "tenant", "superseded_by"})
"""Text fields that name records rather than hold text (as do fields ending in `_uid`); they are
matched as given, so cleaning them on a write would make them unfindable by the raw value."""


def is_identifier(name: str) -> bool:
    """True for a field that holds an id, which is stored as given rather than cleaned."""
    return name in IDENTIFIERS or name.endswith("_uid")


def clean_record(record: R) -> R:
    """A copy of `record` with `clean_text` applied to every text field (and text list item)
    but identifiers."""
    changes: dict[str, object] = {}
    for spec in fields_of(type(record)):
        value = getattr(record, spec.name)
        if spec.kind is FieldKind.TEXT and value is not None and not is_identifier(spec.name):
            cleaned = clean_text(value)
            if cleaned != value:
                changes[spec.name] = cleaned
        elif spec.kind is FieldKind.TEXT_LIST and value:
            items = tuple(clean_text(v) for v in value)
            if items != value:
                changes[spec.name] = items
    return record.model_copy(update=changes) if changes else record


def count(name: str, value: int) -> int:
    """Check that a count (k, hops, limit, n) is a non-negative int and return it.

    Checked here rather than left to the backend: SQLite reads LIMIT -1 as "no limit".
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def distinct(values: Iterable[str]) -> list[str]:
    """The values in first-seen order, each once."""
    return list(dict.fromkeys(values))


def name_key(name: str) -> str:
    """The key of an entity named `name` (cleaned, then normalised)."""
    return entity_key(clean_text(name))


def name_keys(names: Iterable[str]) -> list[str]:
    """The distinct keys of entities named `names`, in first-seen order."""
    return distinct(name_key(n) for n in names)
