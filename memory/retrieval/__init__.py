"""Retrieval: one `retrieve` driven by a recipe, its fusion, boosts, facts surface and candidates."""
