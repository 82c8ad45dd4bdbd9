"""The graphs' nodes: node functions only, each a small async function of (state, runtime)
returning a partial update, and the typed state (`nodes.state`) and run context (`nodes.context`)
they share. A node runs its LLM task (`tasks/`: prompt, schema, offline answer) and never builds
store clients: it takes them from `memory.services`.
"""
