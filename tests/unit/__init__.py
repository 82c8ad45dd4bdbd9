"""Unit tests: no server, no network; a scripted fake chat model where a model is asked."""
