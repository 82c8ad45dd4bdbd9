"""The agent's beliefs and personality: evidence, revision, sleep decay, the sponge, semantic features, apperception."""
