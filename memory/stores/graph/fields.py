"""The field list of each record model, read once from the Pydantic model itself.

Row mappers (`memory.stores.sqlite.rows`), property maps (`memory.stores.neo4j.props`) and input
cleaning (`memory.stores.graph.inputs`) all iterate over `fields_of(Model)`, so a field added to
a record in `memory.schema` needs no edit here or in any mapper; each backend converts a field by
its `FieldKind`. Data only: nothing here touches a store.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from datetime import datetime
from enum import Enum, StrEnum
from functools import cache
from typing import Union, get_args, get_origin

from memory.schema import Record


class FieldKind(StrEnum):
    """How a backend converts a field's value (each backend maps every kind)."""

    TEXT = "text"
    """`str`: cleaned on the way in, stored as is."""
    DATETIME = "datetime"
    """Aware UTC `datetime`."""
    ENUM = "enum"
    """A `StrEnum` member, stored as its value."""
    BOOL = "bool"
    RECORD = "record"
    """A nested `Record` (the ESS of an episode)."""
    NUMBER = "number"
    """`int` or `float`, stored as is."""
    TEXT_LIST = "text_list"
    """`tuple[str, ...]`: cleaned item by item, stored as a list (SQLite: JSON text)."""


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a record model: its name, kind, Python type and whether it may be None."""

    name: str
    kind: FieldKind
    type: type
    optional: bool


@cache
def fields_of(model: type[Record]) -> tuple[FieldSpec, ...]:
    """The fields of a record model in declaration order; unknown annotations are an error."""
    return tuple(_spec(name, info.annotation) for name, info in model.model_fields.items())


def _spec(name: str, annotation: object) -> FieldSpec:
    optional = False
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        optional = len(members) < len(get_args(annotation))
        if len(members) != 1:
            raise TypeError(f"field {name}: only `X` or `X | None` fields can be stored")
        annotation = members[0]
    if get_origin(annotation) is tuple:
        if get_args(annotation) != (str, ...):
            raise TypeError(f"field {name}: only `tuple[str, ...]` sequences can be stored")
        return FieldSpec(name, FieldKind.TEXT_LIST, tuple, optional)
    if not isinstance(annotation, type):
        raise TypeError(f"field {name}: {annotation!r} is not a storable type")
    return FieldSpec(name, _kind(name, annotation), annotation, optional)


def _kind(name: str, cls: type) -> FieldKind:
    # Order matters: a StrEnum is a str, a bool is an int.
    if issubclass(cls, Enum):
        return FieldKind.ENUM
    if issubclass(cls, bool):
        return FieldKind.BOOL
    if issubclass(cls, str):
        return FieldKind.TEXT
    if issubclass(cls, datetime):
        return FieldKind.DATETIME
    if issubclass(cls, Record):
        return FieldKind.RECORD
    if issubclass(cls, int | float):
        return FieldKind.NUMBER
    raise TypeError(f"field {name}: no store knows how to keep a {cls.__name__}")
