"""The graph store's interfaces, one module per record kind, and the input rules they share.

`memory.stores.base.GraphStore`, the type every caller uses, holds one object per record kind
that implements these interfaces (`graph.episodes`, `graph.facts`, ...); each backend
(`memory.stores.sqlite`, `memory.stores.neo4j`) is a package with one file per kind holding the
operations objects of that kind over the backend's one connection, plus the connection's
plumbing. Method names do not repeat the kind: `graph.episodes.get`, `graph.facts.list`.

Every interface follows one rule: a public method is the contract. If its input needs cleaning or
checking (text, names, counts, enums, cross-record checks), the method is written in the
interface and passes clean values to an abstract `_hook` of the same name, which the backends
implement; otherwise the public method itself is abstract. So input is cleaned once, here, and a
backend only persists.

To add a store method:

1. declare it in the kind's interface here (with its `_hook` if it takes input to clean), with
   its ordering and score contract in the docstring;
2. implement it (or its hook) in the kind's file of each backend, SQL/Cypher beside it, and any
   new table, constraint or index in that file's DDL;
3. add a contract test in `tests/contract/`, which runs it on every backend.

A new record kind is a new interface module here (an attribute of `GraphStore`) and one file per
backend, whose operations object each backend's store builds in `__init__` and whose DDL it
lists.
"""
