"""Records to SQLite rows and back, derived from each record model's fields (`fields_of`).

A column is named after its field. Conversions by kind: datetimes are fixed-width ISO-8601 UTC
strings (`2024-05-01T12:00:00.000000+00:00`, so string order is time order and indexes on them
sort chronologically), enums their value, booleans 0/1, nested records and text lists JSON text; text and numbers
are stored as they are. Statements built here splice in only table and field names from our own
code (the kind modules build them once, at import); every value is a bound parameter.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import Enum
from typing import TypeVar, cast

from memory.schema import Record, as_utc
from memory.stores.graph.fields import FieldKind, FieldSpec, fields_of

R = TypeVar("R", bound=Record)
Row = sqlite3.Row | Mapping[str, object]


def ts(value: datetime) -> str:
    """A datetime as stored: fixed-width ISO-8601 in UTC (naive means UTC)."""
    return as_utc(value).isoformat(timespec="microseconds")


def dt(value: str) -> datetime:
    """A stored datetime back as an aware UTC datetime."""
    return datetime.fromisoformat(value)


def json_list(values: Sequence[str]) -> str:
    """A list of strings as one JSON parameter, read in SQL with json_each()."""
    # Lists travel as one JSON parameter read back with json_each(), so no query is ever built
    # from the number of values.
    return json.dumps(list(values), ensure_ascii=False)


def _encode(spec: FieldSpec, value: object) -> object:
    if value is None:
        return None
    if spec.kind is FieldKind.DATETIME:
        return ts(cast(datetime, value))
    if spec.kind is FieldKind.ENUM:
        return cast(Enum, value).value
    if spec.kind is FieldKind.BOOL:
        return int(cast(bool, value))
    if spec.kind is FieldKind.RECORD:
        return cast(Record, value).model_dump_json()
    if spec.kind is FieldKind.TEXT_LIST:
        return json_list(cast(tuple[str, ...], value))
    return value


def _decode(spec: FieldSpec, value: object) -> object:
    if value is None:
        return None
    if spec.kind is FieldKind.DATETIME:
        return dt(cast(str, value))
    if spec.kind is FieldKind.ENUM:
        return spec.type(value)
    if spec.kind is FieldKind.BOOL:
        return bool(value)
    if spec.kind is FieldKind.RECORD:
        return cast(type[Record], spec.type).model_validate_json(cast(str, value))
    if spec.kind is FieldKind.TEXT_LIST:
        return tuple(json.loads(cast(str, value)))
    return value


def to_row(record: Record, **extra: object) -> dict[str, object]:
    """The record's fields as column values (plus `extra` columns that are not fields)."""
    row = {s.name: _encode(s, getattr(record, s.name)) for s in fields_of(type(record))}
    return row | extra


def encode(model: type[Record], name: str, value: object) -> object:
    """The column value of one field of `model` (for statements that set a single field)."""
    spec = next(s for s in fields_of(model) if s.name == name)
    return _encode(spec, value)


def from_row(model: type[R], row: Row, **extra: object) -> R:
    """A record from a row holding a column per field (other columns are ignored).

    `extra` supplies fields the row does not hold.
    """
    values = {s.name: _decode(s, row[s.name]) for s in fields_of(model) if s.name not in extra}
    return model.model_validate(values | extra)


def columns(model: type[Record], extra: Sequence[str] = ()) -> list[str]:
    """The column names of a record model (its field names), then the `extra` ones."""
    return [s.name for s in fields_of(model)] + list(extra)


def insert_sql(
    table: str, model: type[Record], extra: Sequence[str] = (), *, verb: str = "INSERT"
) -> str:
    """`verb INTO table (cols) VALUES (:cols)` for every field of `model` plus `extra` columns."""
    cols = columns(model, extra)
    names = ", ".join(cols)
    marks = ", ".join(f":{c}" for c in cols)
    return f"{verb} INTO {table} ({names}) VALUES ({marks})"
