"""The memory layer: stores, embeddings, the write path, retrieval and sleep; no LangGraph, no
prompts, never imports upward."""
