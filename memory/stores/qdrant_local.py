"""qdrant-client's embedded local mode: opening a directory and taming its warnings.

Local mode keeps every point in this process and searches by brute force, evaluating payload
filters (the tenant!) and sparse scores in Python point by point, inside the event loop: fine for
a few thousand points per collection, about a second per fused search at 10k, unusable at 100k.
Bigger memories belong on a Qdrant server (QDRANT_URL). Only one process can hold a local
directory (a file lock).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from qdrant_client import AsyncQdrantClient

from memory.stores.base import StoreUnavailable

log = logging.getLogger(__name__)

_LARGE_LOCAL = "Local mode is not recommended for collections with more than"


@contextmanager
def large_local_warning(location: str) -> Iterator[None]:
    """Turn qdrant-client's "local mode is not for large collections" warning into a log line.

    Other warnings pass through unchanged.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        if _LARGE_LOCAL in str(w.message):
            log.warning(
                "the local Qdrant at %s holds over 20k points of one kind and searches by brute "
                "force; for a large memory run a Qdrant server and set QDRANT_URL",
                location,
            )
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def open_local(location: str) -> AsyncQdrantClient:
    """Open local mode; a directory held by another process becomes `StoreUnavailable`."""
    try:
        if location == ":memory:":
            return AsyncQdrantClient(location=":memory:")
        with large_local_warning(location):
            return AsyncQdrantClient(path=location)
    except RuntimeError as exc:
        if "already accessed" not in str(exc):
            raise
        raise StoreUnavailable(
            f"the local Qdrant directory {location} is already open in another process (a "
            f"running `mneme` or `langgraph dev`?); only one process can open a local Qdrant "
            f"directory at a time. Stop the other process, or run a Qdrant server and set "
            f"QDRANT_URL so that several processes can share it"
        ) from None
    except OSError as exc:
        raise StoreUnavailable(
            f"cannot open the local Qdrant directory {location}: {exc}; set QDRANT_PATH (or "
            f"MNEME_DATA_DIR) to a writable directory"
        ) from None
