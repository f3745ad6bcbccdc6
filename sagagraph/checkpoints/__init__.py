"""Checkpointers from a URL, and finding the sagas a checkpointer holds."""
