"""The base of every kind's interface: each public method checks the tenant it is given.

A store never cleans a tenant id (`memory.tenant`): a call with an id that breaks the rule raises
`InvalidTenant` before the backend sees it, whether the id is a `tenant` argument or the
`tenant` of the record the call writes. The surfaces check first and answer the caller; this is
the same rule again below them, so no path can reach the data with an id no surface accepts.

The check is installed on each public coroutine method a class defines (interface or backend),
when the class is created, so a new store method is checked without anyone remembering to.
"""

from __future__ import annotations

import functools
import inspect
from abc import ABC
from collections.abc import Awaitable, Callable
from typing import Any

from memory.tenant import tenant_id

Method = Callable[..., Awaitable[Any]]


def checks_tenant(method: Method) -> Method:
    """`method` with its tenant checked first: the `tenant` parameter (None only where the
    signature allows it: the maintenance views), else the `tenant` of its first argument (the
    record it writes). A method with neither is returned as it is."""
    params = list(inspect.signature(method).parameters.values())
    names = [p.name for p in params]
    if "tenant" in names:
        index = names.index("tenant")
        optional = "None" in str(params[index].annotation)

        @functools.wraps(method)
        async def by_argument(*args: Any, **kwargs: Any) -> Any:
            value = args[index] if len(args) > index else kwargs.get("tenant")
            if value is not None or not optional:
                tenant_id(value)
            return await method(*args, **kwargs)

        by_argument.__checks_tenant__ = True  # type: ignore[attr-defined]
        return by_argument
    if len(params) < 2:
        return method
    first = names[1]

    @functools.wraps(method)
    async def by_record(*args: Any, **kwargs: Any) -> Any:
        record = args[1] if len(args) > 1 else kwargs.get(first)
        value = getattr(record, "tenant", None)
        if value is not None:
            tenant_id(value)
        return await method(*args, **kwargs)

    by_record.__checks_tenant__ = True  # type: ignore[attr-defined]
    return by_record


class KindStore(ABC):  # noqa: B024 - the base of the abstract kind interfaces
    """An interface of one record kind whose public methods refuse a tenant id that breaks the
    rule (`InvalidTenant`), in every subclass."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, value in list(vars(cls).items()):
            if (
                name.startswith("_")
                or not inspect.iscoroutinefunction(value)
                or getattr(value, "__isabstractmethod__", False)
                or getattr(value, "__checks_tenant__", False)
            ):
                continue
            setattr(cls, name, checks_tenant(value))
