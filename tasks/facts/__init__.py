"""The offline fact heuristic: first-person statements of a turn as typed propositions (patterns,
builders, lexicon, text), and the extraction's facts as propositions (propositions)."""
