"""The write path: durable episodes, the outbox, quarantine, derivatives, thread compression, session summaries, reindex."""
