"""LLM tasks: each module holds a prompt, its Pydantic output schema and the offline answer to the same schema; no node functions, no LangGraph."""
