"""LangGraph wiring only: the agent, bookkeeping and consolidation graphs, and the errors a
served run reports.

Import the graphs from their modules (`graph.agent`, `graph.bookkeeping`, `graph.consolidation`);
this package imports nothing on its own.
"""
