"""Reading text without a model: the sparse encoder, time expressions, what a question asks, bare questions, relations, chunking."""
