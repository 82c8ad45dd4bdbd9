"""LLM tasks: each module holds a prompt, its Pydantic output schema, the offline answer to the
same schema and the call (`tasks.llm`); no node functions, and nothing from `nodes/`."""
