"""The saga kernel."""
