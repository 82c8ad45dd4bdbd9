"""Records to Neo4j properties and back, derived from each record model's fields (`fields_of`).

A property is named after its field. Conversions by kind: datetimes are native DateTime values in
UTC (nanosecond precision, so Python's microseconds round-trip exactly, and range indexes order
them chronologically), enums their value, text lists native lists, nested records flat under `<field>_<subfield>` (an
episode's ESS is `ess_score`, `ess_specificity`, ..., so Cypher can filter on its signals). A None
value is a missing property: `SET n = $props` leaves it out and `SET n += $props` removes it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar, cast

from neo4j.time import DateTime as Neo4jDateTime

from memory.schema import Record, as_utc
from memory.stores.errors import StoreError
from memory.stores.graph.fields import FieldKind, FieldSpec, fields_of

R = TypeVar("R", bound=Record)
Props = dict[str, Any]


def dt(value: Any) -> datetime:
    """A stored datetime back as an aware UTC datetime."""
    if isinstance(value, Neo4jDateTime):
        return as_utc(value.to_native())
    if isinstance(value, datetime):
        return as_utc(value)
    raise StoreError(f"expected a datetime in the graph, found {value!r}")


def _encode(spec: FieldSpec, value: object) -> object:
    if value is None:
        return None
    if spec.kind is FieldKind.DATETIME:
        return as_utc(cast(datetime, value))
    if spec.kind is FieldKind.ENUM:
        return cast(Enum, value).value
    if spec.kind is FieldKind.TEXT_LIST:
        return list(cast(tuple[str, ...], value))
    return value


def _put(props: Props, prefix: str, spec: FieldSpec, value: object) -> None:
    if spec.kind is FieldKind.RECORD:
        sub = cast(type[Record], spec.type)
        for inner in fields_of(sub):
            part = None if value is None else getattr(value, inner.name)
            _put(props, f"{prefix}{spec.name}_", inner, part)
    else:
        props[prefix + spec.name] = _encode(spec, value)


def to_props(record: Record, *, exclude: Collection[str] = ()) -> Props:
    """The record's fields as node or relationship properties, but those in `exclude`."""
    props: Props = {}
    for spec in fields_of(type(record)):
        if spec.name not in exclude:
            _put(props, "", spec, getattr(record, spec.name))
    return props


def field_props(model: type[Record], name: str, value: object) -> Props:
    """The properties of one field of `model` (several for a nested record)."""
    props: Props = {}
    _put(props, "", next(s for s in fields_of(model) if s.name == name), value)
    return props


def _get(props: Mapping[str, Any], prefix: str, spec: FieldSpec) -> object:
    if spec.kind is FieldKind.RECORD:
        sub = cast(type[Record], spec.type)
        inner = {f.name: _get(props, f"{prefix}{spec.name}_", f) for f in fields_of(sub)}
        if all(v is None for v in inner.values()):
            return None
        return sub.model_validate(inner)
    value = props.get(prefix + spec.name)
    if value is None:
        return None
    if spec.kind is FieldKind.DATETIME:
        return dt(value)
    if spec.kind is FieldKind.ENUM:
        return spec.type(value)
    if spec.kind is FieldKind.BOOL:
        return bool(value)
    if spec.kind is FieldKind.TEXT_LIST:
        return tuple(value)
    return value


def from_props(model: type[R], props: Mapping[str, Any], **extra: object) -> R:
    """A record from a property map (other properties are ignored).

    A missing property reads as None, or as the field's default when None is not allowed (a
    node written before the field existed); `extra` supplies fields the map does not hold.
    """
    values: dict[str, object] = {}
    for spec in fields_of(model):
        if spec.name not in extra:
            value = _get(props, "", spec)
            if value is not None or spec.optional:
                values[spec.name] = value
    return model.model_validate(values | extra)
