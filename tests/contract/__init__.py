"""The contract suite: every GraphStore operation against every backend."""
