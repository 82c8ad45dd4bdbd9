"""LangGraph wiring only: state, context, the agent and bookkeeping graphs, the CLI.

Import the graphs from their modules (`graph.agent`, `graph.bookkeeping`); this package
imports nothing on its own so that `nodes.context` stays cheap to import from `nodes/`.
"""
