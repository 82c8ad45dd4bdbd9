"""The store interfaces (`base`) and their backends: the graph store on SQLite or Neo4j, the
vector index on Qdrant (server, local mode or Edge)."""
