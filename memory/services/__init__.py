"""Process infrastructure: the one `Services` object and its parts.

- `core`: `Services` (stores, embedder, chat models, queue, locks) and the accessor
  `get_services()` / `use_services()` / `close_services()`, and `available()` (the services, or
  none while the stores cannot be opened: a turn goes on degraded);
- `chat`: the chat clients by tier (no prompts: those live in `tasks/`);
- `usage`: LLM usage accounting per node and per process;
- `queue`: the bounded background bookkeeping queue and its periodic sweep (running the
  pipeline `Services.open` was given);
- `locks`: per-tenant locks of read-modify-write sequences.

This room may import the rest of `memory/`; nothing here imports `nodes/` or `graph/`.
"""

from memory.services.chat import ChatModels, Tier
from memory.services.core import (
    Available,
    Services,
    available,
    build_graph_store,
    close_services,
    get_services,
    set_services,
    use_services,
)

__all__ = [
    "Available",
    "ChatModels",
    "Services",
    "Tier",
    "available",
    "build_graph_store",
    "close_services",
    "get_services",
    "set_services",
    "use_services",
]
