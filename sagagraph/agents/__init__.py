"""Participants: the protocol, the paper agents, their stores, paper loading, model factory."""
