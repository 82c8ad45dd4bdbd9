"""Knowledge that stays true: facts with history, their rules, goals and emotions."""
