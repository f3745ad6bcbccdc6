"""Travel booking: book a flight, reserve a hotel, charge the wallet; undo in reverse on failure.

``stores.py`` holds the three services' SQLite stores, ``participants.py`` the steps and their
compensations, ``saga.py`` the saga definition, ``run.py`` a starter that prints what happened.
"""
