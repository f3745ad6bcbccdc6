"""Choreography: the same participants coordinated by events on a bus."""
