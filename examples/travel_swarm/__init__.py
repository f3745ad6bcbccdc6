"""Travel swarm: a supervisor hands a trip to a flight, a hotel and a billing agent.

Each agent is an LLM agent (``create_agent``) calling tools over a SQLite "partner API";
``partners.py`` holds the partners, ``flight.py``, ``hotel.py`` and ``billing.py`` one agent
each, ``supervisor.py`` the saga (deterministic order, or the LLM router behind its guard),
``script.py`` and ``scripted_model.py`` the offline model that plays the agents, and ``run.py``
a starter. When billing fails (INSUFFICIENT_FUNDS) the hotel's tool calls are undone, then the
flight's, newest first, and every partner ends as it began.
"""
