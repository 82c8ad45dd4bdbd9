"""Unit-test fixtures: the network guard (autouse), a scripted chat model, offline mode, and
real embedded services installed as the agent's process services."""

from tests.unit.fake_chat import agent_services, fake_chat, no_network, offline

__all__ = ["agent_services", "fake_chat", "no_network", "offline"]
