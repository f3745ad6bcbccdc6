"""Food order: create the order, reserve inventory, take payment, confirm; undo in reverse.

``stores.py`` holds the kitchen's three SQLite stores, ``participants.py`` the steps (built
with ``sagagraph.participant``; confirming has a no-op compensation), ``saga.py`` the saga
definition, ``run.py`` a starter that prints what happened.
"""
