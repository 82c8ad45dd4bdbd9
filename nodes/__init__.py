"""The agent's nodes: one module per node or LLM task, each a small async function of
(state, runtime) returning a partial update. Prompts, output schemas and heuristic fallbacks live
beside their node. Nodes never build store clients: they take them from `memory.services`.
"""
