"""Sleep (consolidation): salience, expiry and forgetting, concepts, co-retrieval links, the diary, reveries, schedule, leases, pins."""
